import { Alert, Badge, Button, Card, FileButton, Group, SegmentedControl, Select, Stack, Table, Text, Textarea, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { errorMessage } from '../api/errors';
import { importMutation } from '../api/queries/imports';
import { useCan } from '../auth/useCurrentUser';
import type { ConflictPolicy, ImportFormat, ImportResponse } from '../client/types.gen';
import { PlanList } from '../components/PlanList';

const OUTCOME = {
  imported: { color: 'green', label: 'imported' },
  changed: { color: 'yellow', label: 'changed' },
  not_imported: { color: 'red', label: 'not imported' },
} as const;

const ACTION_COLOR = { add: 'green', replace: 'orange', skip: 'gray', needs_admin: 'gray' } as const;

/**
 * Bring an existing LVS set-up in: paste or upload keepalived.conf or ipvsadm rules, read the
 * report line by line, then import into the candidate; the pending-changes bar applies it.
 */
export default function ImportPage() {
  const queryClient = useQueryClient();
  const run = useMutation(importMutation(queryClient));
  const canImport = useCan('editServices');
  const [text, setText] = useState('');
  const [includes, setIncludes] = useState<Record<string, string>>({});
  const [format, setFormat] = useState<ImportFormat>('auto');
  const [onConflict, setOnConflict] = useState<ConflictPolicy>('skip');
  const [conflicts, setConflicts] = useState<Record<string, ConflictPolicy>>({});
  const [preview, setPreview] = useState<ImportResponse | null>(null);

  const request = (mode: 'preview' | 'apply') => ({ format, text, includes, mode, on_conflict: onConflict, conflicts });
  const edited = () => setPreview(null);

  const showPreview = () => run.mutate(request('preview'), { onSuccess: setPreview });
  const apply = () =>
    run.mutate(request('apply'), {
      onSuccess: (result) => {
        setPreview(result);
        notifications.show({ color: 'green', message: 'Imported into the candidate configuration: review and apply it below' });
      },
    });

  return (
    <Stack>
      <Title order={2}>Import</Title>
      <Text c="dimmed" size="sm">
        Bring an existing set-up in: a keepalived.conf, or ipvsadm rules (the output of <span className="mono">ipvsadm -S -n</span>,
        or what you pipe into <span className="mono">ipvsadm -R</span>). Nothing reaches the load balancer until you review and apply
        the pending changes. Scripts (MISC_CHECK, notify) are never imported.
      </Text>
      <Card withBorder>
        <Stack>
          <Group align="flex-end">
            <SegmentedControl
              aria-label="Format"
              value={format}
              onChange={(v) => { setFormat(v as ImportFormat); edited(); }}
              data={[{ value: 'auto', label: 'Detect' }, { value: 'keepalived', label: 'keepalived.conf' }, { value: 'ipvsadm', label: 'ipvsadm rules' }]}
            />
            <FileButton onChange={(file) => void file?.text().then((t) => { setText(t); edited(); })}>
              {(props) => <Button variant="default" {...props}>Upload file…</Button>}
            </FileButton>
            <FileButton multiple onChange={(files) => void Promise.all(files.map(async (f) => [f.name, await f.text()] as const)).then((read) => { setIncludes(Object.fromEntries(read)); edited(); })}>
              {(props) => <Button variant="default" {...props}>Included files…</Button>}
            </FileButton>
            {Object.keys(includes).length > 0 && <Text size="sm">{Object.keys(includes).join(', ')}</Text>}
          </Group>
          <Textarea
            label="Configuration"
            autosize
            minRows={8}
            maxRows={24}
            styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)' } }}
            value={text}
            onChange={(e) => { setText(e.currentTarget.value); edited(); }}
          />
          <Group>
            <Select
              label="When a service's VIP:port is taken"
              value={onConflict}
              onChange={(v) => { setOnConflict((v ?? 'skip') as ConflictPolicy); edited(); }}
              data={[{ value: 'skip', label: 'Keep the existing service' }, { value: 'replace', label: 'Replace it with the imported one' }]}
              allowDeselect={false}
            />
          </Group>
          <Group>
            <Button onClick={showPreview} loading={run.isPending} disabled={!text.trim()}>Preview</Button>
          </Group>
          {run.error && <Alert color="red" title="Not imported">{errorMessage(run.error)}</Alert>}
        </Stack>
      </Card>
      {preview && (
        <ImportResult
          result={preview}
          conflicts={conflicts}
          onConflictChange={(name, policy) => { setConflicts({ ...conflicts, [name]: policy }); setPreview(null); }}
          onApply={canImport && !preview.applied ? apply : undefined}
          applying={run.isPending}
        />
      )}
    </Stack>
  );
}

function ImportResult({
  result,
  conflicts,
  onConflictChange,
  onApply,
  applying,
}: {
  result: ImportResponse;
  conflicts: Record<string, ConflictPolicy>;
  onConflictChange: (name: string, policy: ConflictPolicy) => void;
  onApply?: () => void;
  applying: boolean;
}) {
  const counts = result.counts as Record<string, number>;
  const mainFile = result.report[0]?.file;
  return (
    <Stack>
      {result.applied && <Alert color="green">Imported into the candidate configuration. Review and apply the pending changes to put it on the load balancer.</Alert>}
      <Card withBorder>
        <Text fw={500} mb="xs">
          What would be imported ({result.format})
        </Text>
        {result.objects.length === 0 ? (
          <Text c="dimmed">Nothing can be imported; the report says why.</Text>
        ) : (
          <Table>
            <Table.Tbody>
              {result.objects.map((o) => (
                <Table.Tr key={`${o.kind}-${o.name}`} data-testid={`import-${o.kind}-${o.name}`}>
                  <Table.Td><Badge variant="light" color={ACTION_COLOR[o.action]}>{o.action.replace('_', ' ')}</Badge></Table.Td>
                  <Table.Td>{o.kind.replace('_', ' ')}</Table.Td>
                  <Table.Td className="mono">{o.name}</Table.Td>
                  <Table.Td>{o.summary}</Table.Td>
                  <Table.Td>
                    {o.kind === 'service' && o.conflicts_with.length > 0 && !result.applied && (
                      <Select
                        aria-label={`Conflict with ${o.conflicts_with.join(', ')}`}
                        size="xs"
                        value={conflicts[o.name] ?? (o.action === 'replace' ? 'replace' : 'skip')}
                        onChange={(v) => onConflictChange(o.name, (v ?? 'skip') as ConflictPolicy)}
                        data={[{ value: 'skip', label: `Keep ${o.conflicts_with.join(', ')}` }, { value: 'replace', label: `Replace ${o.conflicts_with.join(', ')}` }]}
                        allowDeselect={false}
                      />
                    )}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </Card>
      <Card withBorder>
        <Text fw={500} mb="xs">What this does to the candidate configuration</Text>
        <PlanList plan={result.changes} />
        {onApply && (
          <Group mt="md">
            <Button onClick={onApply} loading={applying} disabled={result.objects.every((o) => o.action === 'skip' || o.action === 'needs_admin')}>
              Import into the candidate
            </Button>
          </Group>
        )}
      </Card>
      <Card withBorder padding={0}>
        <Group p="sm" gap="xs">
          <Text fw={500}>Report, line by line</Text>
          <Badge color="green" variant="light">{counts.imported} imported</Badge>
          <Badge color="yellow" variant="light">{counts.changed} changed to fit</Badge>
          <Badge color="red" variant="light">{counts.not_imported} not imported</Badge>
        </Group>
        <Table.ScrollContainer minWidth={760}>
          <Table verticalSpacing={4} aria-label="Import report">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Line</Table.Th>
                <Table.Th>Directive</Table.Th>
                <Table.Th>Outcome</Table.Th>
                <Table.Th>Why</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {result.report.map((r, i) => (
                <Table.Tr key={i}>
                  <Table.Td className="num" style={{ whiteSpace: 'nowrap' }}>{r.file === mainFile ? r.line : `${r.file}:${r.line}`}</Table.Td>
                  <Table.Td className="mono" maw={320}><Text size="xs" truncate title={r.text}>{r.text}</Text></Table.Td>
                  {/* A badge's label ellipsises; the column keeps room for the longest, "not imported". */}
                  <Table.Td miw={124}><Badge size="sm" variant="light" color={OUTCOME[r.outcome].color}>{OUTCOME[r.outcome].label}</Badge></Table.Td>
                  <Table.Td><Text size="sm">{r.detail}</Text></Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      </Card>
    </Stack>
  );
}
