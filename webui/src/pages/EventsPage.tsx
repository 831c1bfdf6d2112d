import { Badge, Card, Group, Select, Stack, Switch, Table, Tabs, Text, TextInput, Title } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { auditQuery } from '../api/queries/audit';
import { eventsQuery } from '../api/queries/telemetry';
import { dateTime } from '../lib/format';

export default function EventsPage() {
  return (
    <Stack>
      <Title order={2}>Events & audit</Title>
      <Tabs defaultValue="events" keepMounted={false}>
        <Tabs.List>
          <Tabs.Tab value="events">Data-plane events</Tabs.Tab>
          <Tabs.Tab value="audit">Audit log</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="events" pt="sm">
          <EventsTab />
        </Tabs.Panel>
        <Tabs.Panel value="audit" pt="sm">
          <AuditTab />
        </Tabs.Panel>
      </Tabs>
    </Stack>
  );
}

// The kinds the API records (api/src/fulcrum/telemetry/hub.py).
const EVENT_KINDS = [
  { value: 'backend_down', label: 'Backend down' },
  { value: 'backend_up', label: 'Backend up' },
  { value: 'service_down', label: 'Service lost quorum' },
  { value: 'service_up', label: 'Service has quorum' },
  { value: 'vrrp_state', label: 'VRRP role change' },
];

const SEVERITY_COLOR = { info: 'blue', warning: 'yellow', critical: 'red' } as const;

function EventsTab() {
  const [kind, setKind] = useState<string | null>(null);
  const [service, setService] = useState('');
  const [debounced] = useDebouncedValue(service, 300);
  const events = useQuery(eventsQuery({ kind: kind ?? undefined, service: debounced || undefined }));
  return (
    <Stack>
      <Group wrap="wrap">
        <Select
          aria-label="Event kind"
          placeholder="Any kind"
          data={EVENT_KINDS}
          value={kind}
          onChange={setKind}
          clearable
          w={180}
        />
        <TextInput aria-label="Service" placeholder="Service name" value={service} onChange={(e) => setService(e.currentTarget.value)} w={220} />
      </Group>
      <Card withBorder padding={0}>
        <Table.ScrollContainer minWidth={640}>
          <Table verticalSpacing="xs">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>When</Table.Th>
                <Table.Th>Severity</Table.Th>
                <Table.Th>Kind</Table.Th>
                <Table.Th>Where</Table.Th>
                <Table.Th>What happened</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {events.data?.data.map((e) => (
                <Table.Tr key={e.id}>
                  <Table.Td style={{ whiteSpace: 'nowrap' }}>{dateTime(e.at)}</Table.Td>
                  <Table.Td>
                    <Badge color={SEVERITY_COLOR[e.severity]} variant="light">
                      {e.severity}
                    </Badge>
                  </Table.Td>
                  <Table.Td>{e.kind}</Table.Td>
                  <Table.Td className="mono">{[e.service, e.backend].filter(Boolean).join(' → ') || '—'}</Table.Td>
                  <Table.Td>{e.message}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
        {events.data?.count === 0 && (
          <Text c="dimmed" ta="center" p="md">
            No events match. Health-check and VRRP events appear here as they happen.
          </Text>
        )}
      </Card>
    </Stack>
  );
}

function AuditTab() {
  const [action, setAction] = useState('');
  const [username, setUsername] = useState('');
  const [failedOnly, setFailedOnly] = useState(false);
  const [filters] = useDebouncedValue({ action, username }, 300);
  const audit = useQuery(auditQuery({ action: filters.action || undefined, username: filters.username || undefined }));
  const rows = (audit.data?.data ?? []).filter((r) => !failedOnly || !r.success);
  return (
    <Stack>
      <Group wrap="wrap" align="flex-end">
        <TextInput aria-label="Action" placeholder="Action, e.g. service. or revision." value={action} onChange={(e) => setAction(e.currentTarget.value)} w={260} />
        <TextInput aria-label="User" placeholder="User" value={username} onChange={(e) => setUsername(e.currentTarget.value)} w={180} />
        <Switch label="Failures only" checked={failedOnly} onChange={(e) => setFailedOnly(e.currentTarget.checked)} />
      </Group>
      <Card withBorder padding={0}>
        <Table.ScrollContainer minWidth={720}>
          <Table verticalSpacing="xs">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>When</Table.Th>
                <Table.Th>Who</Table.Th>
                <Table.Th>From</Table.Th>
                <Table.Th>Action</Table.Th>
                <Table.Th>Target</Table.Th>
                <Table.Th>Revision</Table.Th>
                <Table.Th>Result</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((r) => (
                <Table.Tr key={r.id}>
                  <Table.Td style={{ whiteSpace: 'nowrap' }}>{dateTime(r.at)}</Table.Td>
                  <Table.Td>{r.username}</Table.Td>
                  <Table.Td className="mono">{r.source}</Table.Td>
                  <Table.Td className="mono">{r.action}</Table.Td>
                  <Table.Td>{r.target}</Table.Td>
                  <Table.Td className="num">{r.revision ?? '—'}</Table.Td>
                  <Table.Td>
                    <Badge color={r.success ? 'green' : 'red'} variant="light">
                      {r.success ? 'ok' : 'failed'}
                    </Badge>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
        {audit.data && rows.length === 0 && (
          <Text c="dimmed" ta="center" p="md">
            No entries match.
          </Text>
        )}
      </Card>
    </Stack>
  );
}
