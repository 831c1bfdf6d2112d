import { Alert, Anchor, Badge, Button, Card, Code, Group, NumberInput, Select, SimpleGrid, Stack, Switch, Table, Tabs, Text, TextInput, Title } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
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
import { DataTable } from '../components/DataTable';
import { ToolForm } from '../components/ToolForm';

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

const HOST_FIELD = { label: 'Host', placeholder: 'IP address or name', w: 220 };

function PingCard() {
  return (
    <ToolForm
      title="Ping"
      mutation={pingMutation()}
      initialValues={{ host: '', count: 4 }}
      fields={(form) => (
        <>
          <TextInput {...HOST_FIELD} {...form.getInputProps('host')} />
          <NumberInput label="Count" min={1} max={10} {...form.getInputProps('count')} w={90} />
        </>
      )}
      submitLabel="Ping"
      result={(run) => <RunOutput run={run} />}
    />
  );
}

function TracerouteCard() {
  return (
    <ToolForm
      title="Traceroute"
      mutation={tracerouteMutation()}
      initialValues={{ host: '', max_hops: 15 }}
      fields={(form) => (
        <>
          <TextInput {...HOST_FIELD} {...form.getInputProps('host')} />
          <NumberInput label="Max hops" min={1} max={30} {...form.getInputProps('max_hops')} w={100} />
        </>
      )}
      submitLabel="Trace"
      result={(run) => <RunOutput run={run} />}
    />
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
  return (
    <ToolForm
      title="TCP connect"
      mutation={tcpConnectMutation()}
      initialValues={{ host: '', port: 80, timeout_seconds: 3 }}
      fields={(form) => (
        <>
          <TextInput {...HOST_FIELD} {...form.getInputProps('host')} />
          <NumberInput label="Port" min={1} max={65535} {...form.getInputProps('port')} w={100} />
        </>
      )}
      submitLabel="Connect"
      result={(result) => <TcpResult result={result} />}
    />
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
  return (
    <ToolForm
      title="HTTP(S) GET"
      mutation={httpGetMutation()}
      initialValues={{ url: '', verify_tls: true, timeout_seconds: 5 }}
      fields={(form) => (
        <>
          <TextInput label="URL" placeholder="http://10.0.0.5/health" {...form.getInputProps('url')} w={300} />
          <Switch label="Verify TLS" {...form.getInputProps('verify_tls', { type: 'checkbox' })} />
        </>
      )}
      submitLabel="Get"
      result={(result) => <HttpResult result={result} />}
    />
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
      <DataTable
        label="IPVS connections"
        columns={['Protocol', 'Client', 'Virtual', 'Backend', 'State', 'Expires']}
        rows={data?.data}
        rowKey={(row) => `${row.protocol}-${row.client}-${row.client_port}-${row.virtual}-${row.virtual_port}`}
        cells={(row) => (
          <>
            <Table.Td>{row.protocol}</Table.Td>
            <Table.Td className="mono">{endpoint(row.client, row.client_port)}</Table.Td>
            <Table.Td className="mono">{endpoint(row.virtual, row.virtual_port)}</Table.Td>
            <Table.Td className="mono">{endpoint(row.backend, row.backend_port)}</Table.Td>
            <Table.Td>{row.state}</Table.Td>
            <Table.Td>{row.expires_seconds} s</Table.Td>
          </>
        )}
        minWidth={760}
        dense
        paging={{ offset, size: PAGE, count: data?.count, onOffset: setOffset }}
      />
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
      <DataTable
        label="Neighbours"
        columns={['Address', 'Interface', 'Link-layer address', 'State']}
        rows={table.data?.data}
        rowKey={(row) => `${row.interface}-${row.address}`}
        cells={(row) => (
          <>
            <Table.Td className="mono">{row.address}</Table.Td>
            <Table.Td>{row.interface}</Table.Td>
            <Table.Td className="mono">{row.lladdr ?? '—'}</Table.Td>
            <Table.Td>
              {row.states.join(', ')}
              {row.router && ' (router)'}
            </Table.Td>
          </>
        )}
        minWidth={600}
        dense
      />
    </Stack>
  );
}

function CaptureCard() {
  const interfaces = useQuery(interfacesQuery());
  return (
    <ToolForm
      title="Packet capture"
      mutation={captureMutation()}
      initialValues={{ interface: '', count: 100, seconds: 10, filter: '' }}
      fields={(form) => (
        <>
          <Select label="Interface" data={interfaces.data?.names ?? []} {...form.getInputProps('interface')} w={160} searchable />
          <NumberInput label="Packets" min={1} max={1000} {...form.getInputProps('count')} w={100} />
          <NumberInput label="Seconds" min={1} max={60} {...form.getInputProps('seconds')} w={100} />
          <TextInput label="Filter" placeholder="tcp port 80 and host 10.0.0.5" {...form.getInputProps('filter')} w={280} />
        </>
      )}
      submitLabel="Capture"
      result={(bytes) => <Text size="sm">Downloaded {bytes} bytes.</Text>}
    >
      <Text size="sm" c="dimmed">
        At most 1000 packets and 60 seconds; the capture downloads as a pcap file for Wireshark or tcpdump -r.
      </Text>
    </ToolForm>
  );
}
