import { Alert, Anchor, Badge, Button, Card, Code, Group, NumberInput, Select, SimpleGrid, Stack, Switch, Table, Tabs, Text, TextInput, Title } from '@mantine/core';
import { useForm } from '@mantine/form';
import { useDebouncedValue } from '@mantine/hooks';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';
import { errorMessage } from '../api/errors';
import {
  captureMutation,
  connectionsQuery,
  httpGetMutation,
  interfacesQuery,
  neighboursQuery,
  pingMutation,
  SUPPORT_BUNDLE_URL,
  tcpConnectMutation,
  tracerouteMutation,
} from '../api/queries/diagnostics';
import { useCan } from '../auth/useCurrentUser';
import type { HttpGetResult, TcpConnectResult, ToolRun } from '../client/types.gen';
import { useServerErrors } from '../components/useServerErrors';

export default function DiagnosticsPage() {
  const canOperate = useCan('commit');
  const isAdmin = useCan('manageUsers');
  if (!canOperate) return <Alert color="gray" title="Operators and administrators only">Your role cannot run diagnostics.</Alert>;
  return (
    <Stack>
      <Title order={2}>Diagnostics</Title>
      <Text c="dimmed" size="sm">
        Run from this node, with the arguments checked by the API: each tool has a time limit, and nothing here changes the configuration.
      </Text>
      <Tabs defaultValue="tools" keepMounted={false}>
        <Tabs.List>
          <Tabs.Tab value="tools">Tools</Tabs.Tab>
          <Tabs.Tab value="connections">IPVS connections</Tabs.Tab>
          <Tabs.Tab value="neighbours">Neighbours</Tabs.Tab>
          <Tabs.Tab value="capture">Packet capture</Tabs.Tab>
          {isAdmin && <Tabs.Tab value="bundle">Support bundle</Tabs.Tab>}
        </Tabs.List>
        <Tabs.Panel value="tools" pt="sm">
          <SimpleGrid cols={{ base: 1, lg: 2 }}>
            <PingCard />
            <TracerouteCard />
            <TcpConnectCard />
            <HttpGetCard />
          </SimpleGrid>
        </Tabs.Panel>
        <Tabs.Panel value="connections" pt="sm">
          <ConnectionsTab />
        </Tabs.Panel>
        <Tabs.Panel value="neighbours" pt="sm">
          <NeighboursTab />
        </Tabs.Panel>
        <Tabs.Panel value="capture" pt="sm">
          <CaptureCard />
        </Tabs.Panel>
        {isAdmin && (
          <Tabs.Panel value="bundle" pt="sm">
            <Card withBorder maw={700}>
              <Stack>
                <Text size="sm">
                  One tar.gz with versions, the rendered configuration (secrets removed), recent logs, the IPVS table with counters, the HA status and
                  the last apply results: attach it when asking for help.
                </Text>
                <Anchor href={SUPPORT_BUNDLE_URL} download>
                  Download the support bundle
                </Anchor>
              </Stack>
            </Card>
          </Tabs.Panel>
        )}
      </Tabs>
    </Stack>
  );
}

function ToolCard({ title, children }: { title: string; children: ReactNode }) {
  return (
    <Card withBorder aria-label={title} component="section">
      <Stack gap="xs">
        <Title order={4}>{title}</Title>
        {children}
      </Stack>
    </Card>
  );
}

function RunOutput({ run }: { run: ToolRun }) {
  return (
    <Stack gap={4}>
      <Text size="sm">
        <Badge color={run.exit_code === 0 ? 'green' : 'red'} variant="light">
          {run.timed_out ? 'timed out' : `exit ${run.exit_code}`}
        </Badge>{' '}
        {Math.round(run.duration_ms)} ms · <Code>{run.command.join(' ')}</Code>
      </Text>
      <Code block data-testid="tool-output">
        {run.output}
      </Code>
    </Stack>
  );
}

function FormError({ message }: { message: string | null }) {
  return message ? <Alert color="red">{message}</Alert> : null;
}

function PingCard() {
  const run = useMutation(pingMutation());
  const form = useForm({ initialValues: { host: '', count: 4 } });
  const formError = useServerErrors(form, run.error);
  return (
    <ToolCard title="Ping">
      <form onSubmit={form.onSubmit((values) => run.mutate(values))}>
        <Group align="end">
          <TextInput label="Host" placeholder="IP address or name" {...form.getInputProps('host')} w={220} />
          <NumberInput label="Count" min={1} max={10} {...form.getInputProps('count')} w={90} />
          <Button type="submit" loading={run.isPending}>
            Ping
          </Button>
        </Group>
      </form>
      <FormError message={formError} />
      {run.data && <RunOutput run={run.data} />}
    </ToolCard>
  );
}

function TracerouteCard() {
  const run = useMutation(tracerouteMutation());
  const form = useForm({ initialValues: { host: '', max_hops: 15 } });
  const formError = useServerErrors(form, run.error);
  return (
    <ToolCard title="Traceroute">
      <form onSubmit={form.onSubmit((values) => run.mutate(values))}>
        <Group align="end">
          <TextInput label="Host" placeholder="IP address or name" {...form.getInputProps('host')} w={220} />
          <NumberInput label="Max hops" min={1} max={30} {...form.getInputProps('max_hops')} w={100} />
          <Button type="submit" loading={run.isPending}>
            Trace
          </Button>
        </Group>
      </form>
      <FormError message={formError} />
      {run.data && <RunOutput run={run.data} />}
    </ToolCard>
  );
}

function ms(value: number | null | undefined): string {
  return value === null || value === undefined ? '—' : `${value.toFixed(1)} ms`;
}

function TcpResult({ result }: { result: TcpConnectResult }) {
  return (
    <Text size="sm" data-testid="tcp-result">
      <Badge color={result.connected ? 'green' : 'red'} variant="light">
        {result.connected ? 'connected' : 'failed'}
      </Badge>{' '}
      {result.address ?? result.host}:{result.port} · resolve {ms(result.resolve_ms)} · connect {ms(result.connect_ms)}
      {result.error && ` · ${result.error}`}
    </Text>
  );
}

function TcpConnectCard() {
  const run = useMutation(tcpConnectMutation());
  const form = useForm({ initialValues: { host: '', port: 80, timeout_seconds: 3 } });
  const formError = useServerErrors(form, run.error);
  return (
    <ToolCard title="TCP connect">
      <form onSubmit={form.onSubmit((values) => run.mutate(values))}>
        <Group align="end">
          <TextInput label="Host" placeholder="IP address or name" {...form.getInputProps('host')} w={220} />
          <NumberInput label="Port" min={1} max={65535} {...form.getInputProps('port')} w={100} />
          <Button type="submit" loading={run.isPending}>
            Connect
          </Button>
        </Group>
      </form>
      <FormError message={formError} />
      {run.data && <TcpResult result={run.data} />}
    </ToolCard>
  );
}

function HttpResult({ result }: { result: HttpGetResult }) {
  return (
    <Stack gap={2} data-testid="http-result">
      <Text size="sm">
        <Badge color={result.status && result.status < 400 ? 'green' : 'red'} variant="light">
          {result.status ?? 'no answer'}
        </Badge>{' '}
        {result.reason} {result.http_version}
      </Text>
      <Text size="sm">
        connect {ms(result.connect_ms)} · TLS {ms(result.tls_ms)} · first byte {ms(result.first_byte_ms)} · total {ms(result.total_ms)}
        {result.body_bytes !== null && result.body_bytes !== undefined && ` · ${result.body_bytes} bytes`}
      </Text>
      {result.redirects?.map((url) => (
        <Text size="sm" key={url}>
          followed → {url}
        </Text>
      ))}
      {result.redirect_not_followed && <Text size="sm">not followed (another host) → {result.redirect_not_followed}</Text>}
      {result.error && (
        <Text size="sm" c="red">
          {result.error}
        </Text>
      )}
    </Stack>
  );
}

function HttpGetCard() {
  const run = useMutation(httpGetMutation());
  const form = useForm({ initialValues: { url: '', verify_tls: true, timeout_seconds: 5 } });
  const formError = useServerErrors(form, run.error);
  return (
    <ToolCard title="HTTP(S) GET">
      <form onSubmit={form.onSubmit((values) => run.mutate(values))}>
        <Group align="end">
          <TextInput label="URL" placeholder="http://10.0.0.5/health" {...form.getInputProps('url')} w={300} />
          <Switch label="Verify TLS" {...form.getInputProps('verify_tls', { type: 'checkbox' })} />
          <Button type="submit" loading={run.isPending}>
            Get
          </Button>
        </Group>
      </form>
      <FormError message={formError} />
      {run.data && <HttpResult result={run.data} />}
    </ToolCard>
  );
}

const PAGE = 50;

function ConnectionsTab() {
  const [service, setService] = useState('');
  const [backend, setBackend] = useState('');
  const [client, setClient] = useState('');
  const [offset, setOffset] = useState(0);
  const [filters] = useDebouncedValue({ service, backend, client }, 300);
  const page = useQuery(
    connectionsQuery({ service: filters.service || undefined, backend: filters.backend || undefined, client: filters.client || undefined, offset, limit: PAGE }),
  );
  const data = page.data;
  const edit = (set: (value: string) => void) => (e: React.ChangeEvent<HTMLInputElement>) => {
    set(e.currentTarget.value);
    setOffset(0);
  };
  return (
    <Stack>
      <Group align="end">
        <TextInput label="Service" placeholder="VIP or VIP:port" value={service} onChange={edit(setService)} w={200} />
        <TextInput label="Backend" placeholder="address or address:port" value={backend} onChange={edit(setBackend)} w={200} />
        <TextInput label="Client" placeholder="client address" value={client} onChange={edit(setClient)} w={180} />
        <Button variant="default" onClick={() => void page.refetch()}>
          Refresh
        </Button>
      </Group>
      {page.error && <Alert color="red">{errorMessage(page.error)}</Alert>}
      {data && !data.available && <Alert color="gray">{data.reason}</Alert>}
      {data?.available && (
        <Group gap="xs" data-testid="connection-counts">
          <Text size="sm">
            {data.count} of {data.total} connections
          </Text>
          {Object.entries(data.states).map(([state, count]) => (
            <Badge key={state} variant="light">
              {state} {count}
            </Badge>
          ))}
        </Group>
      )}
      <Card withBorder padding={0}>
        <Table.ScrollContainer minWidth={760}>
          <Table verticalSpacing={4} fz="sm" aria-label="IPVS connections">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Protocol</Table.Th>
                <Table.Th>Client</Table.Th>
                <Table.Th>Virtual</Table.Th>
                <Table.Th>Backend</Table.Th>
                <Table.Th>State</Table.Th>
                <Table.Th>Expires</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {data?.data.map((row) => (
                <Table.Tr key={`${row.protocol}-${row.client}-${row.client_port}-${row.virtual}-${row.virtual_port}`}>
                  <Table.Td>{row.protocol}</Table.Td>
                  <Table.Td className="mono">{endpoint(row.client, row.client_port)}</Table.Td>
                  <Table.Td className="mono">{endpoint(row.virtual, row.virtual_port)}</Table.Td>
                  <Table.Td className="mono">{endpoint(row.backend, row.backend_port)}</Table.Td>
                  <Table.Td>{row.state}</Table.Td>
                  <Table.Td>{row.expires_seconds} s</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      </Card>
      <Group>
        <Button variant="default" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
          Previous
        </Button>
        <Button variant="default" disabled={!data || offset + PAGE >= data.count} onClick={() => setOffset(offset + PAGE)}>
          Next
        </Button>
      </Group>
    </Stack>
  );
}

function endpoint(address: string, port: number): string {
  return address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
}

function NeighboursTab() {
  const table = useQuery(neighboursQuery());
  return (
    <Stack>
      {table.error && <Alert color="red">{errorMessage(table.error)}</Alert>}
      <Card withBorder padding={0}>
        <Table.ScrollContainer minWidth={600}>
          <Table verticalSpacing={4} fz="sm" aria-label="Neighbours">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Address</Table.Th>
                <Table.Th>Interface</Table.Th>
                <Table.Th>Link-layer address</Table.Th>
                <Table.Th>State</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {table.data?.data.map((row) => (
                <Table.Tr key={`${row.interface}-${row.address}`}>
                  <Table.Td className="mono">{row.address}</Table.Td>
                  <Table.Td>{row.interface}</Table.Td>
                  <Table.Td className="mono">{row.lladdr ?? '—'}</Table.Td>
                  <Table.Td>
                    {row.states.join(', ')}
                    {row.router && ' (router)'}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      </Card>
    </Stack>
  );
}

function CaptureCard() {
  const interfaces = useQuery(interfacesQuery());
  const run = useMutation(captureMutation());
  const form = useForm({ initialValues: { interface: '', count: 100, seconds: 10, filter: '' } });
  const formError = useServerErrors(form, run.error);
  return (
    <ToolCard title="Packet capture">
      <Text size="sm" c="dimmed">
        At most 1000 packets and 60 seconds; the capture downloads as a pcap file for Wireshark or tcpdump -r.
      </Text>
      <form onSubmit={form.onSubmit((values) => run.mutate(values))}>
        <Group align="end">
          <Select label="Interface" data={interfaces.data?.names ?? []} {...form.getInputProps('interface')} w={160} searchable />
          <NumberInput label="Packets" min={1} max={1000} {...form.getInputProps('count')} w={100} />
          <NumberInput label="Seconds" min={1} max={60} {...form.getInputProps('seconds')} w={100} />
          <TextInput label="Filter" placeholder="tcp port 80 and host 10.0.0.5" {...form.getInputProps('filter')} w={280} />
          <Button type="submit" loading={run.isPending}>
            Capture
          </Button>
        </Group>
      </form>
      <FormError message={formError} />
      {run.data !== undefined && <Text size="sm">Downloaded {run.data} bytes.</Text>}
    </ToolCard>
  );
}
