import { Badge, Group, Select, Stack, Switch, Table, Tabs, TextInput, Title } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { auditQuery } from '../api/queries/audit';
import { eventsQuery } from '../api/queries/telemetry';
import { DataTable } from '../components/DataTable';
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
      <DataTable
        columns={['When', 'Severity', 'Kind', 'Where', 'What happened']}
        rows={events.data?.data}
        rowKey={(e) => e.id}
        cells={(e) => (
          <>
            <Table.Td style={{ whiteSpace: 'nowrap' }}>{dateTime(e.at)}</Table.Td>
            <Table.Td>
              <Badge color={SEVERITY_COLOR[e.severity]} variant="light">
                {e.severity}
              </Badge>
            </Table.Td>
            <Table.Td>{e.kind}</Table.Td>
            <Table.Td className="mono">{[e.service, e.backend].filter(Boolean).join(' → ') || '—'}</Table.Td>
            <Table.Td>{e.message}</Table.Td>
          </>
        )}
        minWidth={640}
        empty="No events match. Health-check and VRRP events appear here as they happen."
      />
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
      <DataTable
        columns={['When', 'Who', 'From', 'Action', 'Target', 'Revision', 'Result']}
        rows={audit.data && rows}
        rowKey={(r) => r.id}
        cells={(r) => (
          <>
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
          </>
        )}
        minWidth={720}
        empty="No entries match."
      />
    </Stack>
  );
}
