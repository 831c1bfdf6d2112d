import { Alert, Anchor, Badge, Button, Card, Group, MultiSelect, Select, Stack, Switch, Table, Text, TextInput, Title } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { errorMessage } from '../api/errors';
import { logsDownloadUrl, logsQuery, tailLogs, type LogFilters } from '../api/queries/logs';
import { useCan } from '../auth/useCurrentUser';
import type { LogEntry, LogSource } from '../client/types.gen';
import { dateTime } from '../lib/format';

const SOURCES: { value: LogSource; label: string }[] = [
  { value: 'keepalived', label: 'keepalived' },
  { value: 'api', label: 'API' },
  { value: 'applyd', label: 'Apply helper' },
  { value: 'firewall', label: 'Firewall' },
  { value: 'networking', label: 'Networking' },
  { value: 'kernel', label: 'Kernel' },
];

const PRIORITIES = ['emergency', 'alert', 'critical', 'error', 'warning', 'notice', 'info', 'debug'];
const PRIORITY_COLOR = ['red', 'red', 'red', 'red', 'yellow', 'blue', 'gray', 'gray'];
const TAIL_KEEP = 1000;

export default function LogsPage() {
  const canOperate = useCan('commit');
  if (!canOperate) return <Alert color="gray" title="Operators and administrators only">Your role cannot read this node's logs.</Alert>;
  return <Logs />;
}

function Logs() {
  const [source, setSource] = useState<LogSource[]>([]);
  const [priority, setPriority] = useState('7');
  const [text, setText] = useState('');
  const [debouncedText] = useDebouncedValue(text, 300);
  const [pages, setPages] = useState<string[]>([]); // cursors of the older pages opened
  const [tail, setTail] = useState(false);
  const filters: LogFilters = { source, priority: Number(priority), text: debouncedText, since: null, until: null };
  const before = pages.at(-1) ?? null;
  const page = useQuery({ ...logsQuery(filters, before), enabled: !tail });
  const live = useTail(tail, filters);
  const entries = tail ? live.entries : (page.data?.entries ?? []);
  const unavailable = tail ? live.unavailable : page.data && !page.data.available ? page.data.reason : null;
  const reset = () => setPages([]);
  return (
    <Stack>
      <Title order={2}>Logs</Title>
      <Group wrap="wrap" align="end">
        <MultiSelect
          label="Sources"
          placeholder={source.length ? undefined : 'All'}
          data={SOURCES}
          value={source}
          onChange={(value) => {
            setSource(value as LogSource[]);
            reset();
          }}
          w={320}
          clearable
        />
        <Select
          label="Priority"
          data={PRIORITIES.map((name, index) => ({ value: String(index), label: index === 7 ? 'all' : `${name} and worse` }))}
          value={priority}
          onChange={(value) => {
            setPriority(value ?? '7');
            reset();
          }}
          allowDeselect={false}
          w={170}
        />
        <TextInput
          label="Text"
          placeholder="Find in messages"
          value={text}
          onChange={(e) => {
            setText(e.currentTarget.value);
            reset();
          }}
          w={240}
        />
        <Switch label="Live tail" checked={tail} onChange={(e) => setTail(e.currentTarget.checked)} />
        <Anchor href={logsDownloadUrl(filters)} download>
          Download as text
        </Anchor>
      </Group>
      {unavailable && (
        <Alert color="gray" title="No logs">
          {unavailable}
        </Alert>
      )}
      {page.error && !tail && <Alert color="red">{errorMessage(page.error)}</Alert>}
      <Card withBorder padding={0}>
        <Table.ScrollContainer minWidth={760}>
          <Table verticalSpacing={4} aria-label="Log entries" fz="sm">
            <Table.Thead>
              <Table.Tr>
                <Table.Th w={190}>Time</Table.Th>
                <Table.Th w={110}>Source</Table.Th>
                <Table.Th w={90}>Priority</Table.Th>
                <Table.Th>Message</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {entries.map((entry) => (
                <Table.Tr key={entry.cursor}>
                  <Table.Td>{dateTime(entry.time)}</Table.Td>
                  <Table.Td>{entry.source}</Table.Td>
                  <Table.Td>
                    <Badge variant="light" color={PRIORITY_COLOR[entry.priority] ?? 'gray'}>
                      {PRIORITIES[entry.priority] ?? entry.priority}
                    </Badge>
                  </Table.Td>
                  <Table.Td className="mono" style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word' }}>
                    {entry.message}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
        {!entries.length && !unavailable && (
          <Text c="dimmed" p="md">
            {tail ? (live.open ? 'Waiting for new entries…' : 'Connecting…') : 'No entries match.'}
          </Text>
        )}
      </Card>
      {!tail && (
        <Group>
          <Button variant="default" disabled={!pages.length} onClick={() => setPages(pages.slice(0, -1))}>
            Newer
          </Button>
          <Button variant="default" disabled={!page.data?.older_cursor} onClick={() => page.data?.older_cursor && setPages([...pages, page.data.older_cursor])}>
            Older
          </Button>
        </Group>
      )}
    </Stack>
  );
}

/** New entries from the live stream, newest first, while `on`. */
function useTail(on: boolean, filters: LogFilters) {
  const [entries, setEntries] = useState<LogEntry[]>([]);
  const [unavailable, setUnavailable] = useState<string | null>(null);
  const [open, setOpen] = useState(false);
  const key = JSON.stringify(filters);
  useEffect(() => {
    if (!on) return;
    setEntries([]);
    setUnavailable(null);
    setOpen(false);
    return tailLogs(
      JSON.parse(key) as LogFilters,
      (entry) => setEntries((current) => [entry, ...current].slice(0, TAIL_KEEP)),
      setUnavailable,
      () => setOpen(true),
    );
  }, [on, key]);
  return { entries, unavailable, open };
}
