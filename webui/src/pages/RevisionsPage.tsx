import { Alert, Badge, Button, Card, Checkbox, Group, Modal, Select, SimpleGrid, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { errorMessage } from '../api/errors';
import { diffQuery, revisionsQuery, rollbackMutation } from '../api/queries/revisions';
import { statusQuery } from '../api/queries/status';
import { useCan } from '../auth/useCurrentUser';
import type { RevisionRead } from '../client/types.gen';
import { PlanList } from '../components/PlanList';
import { RevisionStateBadge } from '../components/StateBadges';
import { SideBySideDiff } from '../components/SideBySideDiff';
import { applyMessage, dateTime } from '../lib/format';

const CANDIDATE = 'candidate';
const EMPTY = 'empty';

export default function RevisionsPage() {
  const revisions = useQuery(revisionsQuery());
  const status = useQuery(statusQuery());
  const canRollBack = useCan('commit');
  const list = revisions.data?.data ?? [];
  const [from, setFrom] = useState<string | null>(null);
  const [to, setTo] = useState<string | null>(null);
  const [rollingBack, setRollingBack] = useState<RevisionRead | null>(null);
  // Default comparison: the newest revision against the one before it.
  const fromValue = from ?? (list[1] ? String(list[1].number) : EMPTY);
  const toValue = to ?? (list[0] ? String(list[0].number) : CANDIDATE);
  const options = [
    { value: CANDIDATE, label: 'Candidate (not applied)' },
    ...list.map((r) => ({ value: String(r.number), label: `Revision ${r.number}${r.message ? `: ${r.message}` : ''}` })),
    { value: EMPTY, label: 'Empty configuration' },
  ];
  const asNumber = (v: string) => (v === CANDIDATE || v === EMPTY ? null : Number(v));

  return (
    <Stack>
      <Title order={2}>Revisions</Title>
      <Text c="dimmed" size="sm">
        Every apply creates a numbered revision. Rolling back applies an earlier revision’s configuration again, as a new revision.
      </Text>
      <Card withBorder padding={0}>
        <Table.ScrollContainer minWidth={760}>
          <Table verticalSpacing="xs" highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>#</Table.Th>
                <Table.Th>When</Table.Th>
                <Table.Th>Who</Table.Th>
                <Table.Th>Note</Table.Th>
                <Table.Th>State</Table.Th>
                <Table.Th>Result</Table.Th>
                {canRollBack && <Table.Th aria-label="Actions" />}
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {list.map((r) => (
                <Table.Tr key={r.number} data-testid={`revision-${r.number}`}>
                  <Table.Td className="num" fw={600}>
                    {r.number}
                    {status.data?.applied_revision === r.number && (
                      <Badge ml={6} size="xs" color="green">
                        running
                      </Badge>
                    )}
                  </Table.Td>
                  <Table.Td style={{ whiteSpace: 'nowrap' }}>{dateTime(r.created_at)}</Table.Td>
                  <Table.Td>{r.author}</Table.Td>
                  <Table.Td>
                    {r.message || <Text c="dimmed" span>—</Text>}
                    {r.rollback_of && <Text size="xs" c="dimmed">rollback to revision {r.rollback_of}</Text>}
                  </Table.Td>
                  <Table.Td>
                    <RevisionStateBadge state={r.state} />
                  </Table.Td>
                  <Table.Td maw={360}>
                    <Text size="xs" c="dimmed" lineClamp={2} title={applyMessage(r)}>
                      {applyMessage(r)}
                    </Text>
                  </Table.Td>
                  {canRollBack && (
                    <Table.Td>
                      {status.data?.applied_revision !== r.number && r.state !== 'failed' && (
                        <Button size="compact-xs" variant="light" onClick={() => setRollingBack(r)}>
                          Roll back to this
                        </Button>
                      )}
                    </Table.Td>
                  )}
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
        {revisions.data?.count === 0 && (
          <Text c="dimmed" ta="center" p="md">
            Nothing has been applied yet.
          </Text>
        )}
      </Card>

      <Title order={3}>Compare</Title>
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        <Select label="From (left)" data={options} value={fromValue} onChange={setFrom} allowDeselect={false} />
        <Select label="To (right)" data={options} value={toValue} onChange={setTo} allowDeselect={false} />
      </SimpleGrid>
      <Comparison from={asNumber(fromValue)} to={asNumber(toValue)} />
      {rollingBack && <RollbackModal revision={rollingBack} onClose={() => setRollingBack(null)} />}
    </Stack>
  );
}

function Comparison({ from, to }: { from: number | null; to: number | null }) {
  const diff = useQuery(diffQuery(from, to));
  if (diff.error) return <Alert color="red">{errorMessage(diff.error)}</Alert>;
  if (!diff.data) return null;
  return (
    <Stack>
      <Card withBorder>
        <Text fw={500} mb="xs">
          What changes going from left to right
        </Text>
        <PlanList plan={diff.data.plan} />
      </Card>
      <SideBySideDiff text={diff.data.text} />
    </Stack>
  );
}

function RollbackModal({ revision, onClose }: { revision: RevisionRead; onClose: () => void }) {
  const queryClient = useQueryClient();
  const rollback = useMutation(rollbackMutation(queryClient));
  const status = useQuery(statusQuery());
  const plan = useQuery(diffQuery(status.data?.applied_revision ?? null, revision.number));
  const [message, setMessage] = useState('');
  const [discard, setDiscard] = useState(false);
  const [confirmWithin, setConfirmWithin] = useState(true);
  const pending = status.data?.pending_changes;
  return (
    <Modal opened onClose={onClose} title={`Roll back to revision ${revision.number}`} size="lg">
      <Stack>
        {plan.data && <PlanList plan={plan.data.plan} />}
        {pending && (
          <Alert color="yellow">
            There are unapplied changes. Rolling back replaces the candidate configuration and loses them.
            <Checkbox mt="xs" label="Discard my unapplied changes" checked={discard} onChange={(e) => setDiscard(e.currentTarget.checked)} />
          </Alert>
        )}
        <TextInput label="Note" placeholder={`roll back to revision ${revision.number}`} value={message} onChange={(e) => setMessage(e.currentTarget.value)} />
        <Checkbox label="Roll back automatically unless I confirm within 120 s" checked={confirmWithin} onChange={(e) => setConfirmWithin(e.currentTarget.checked)} />
        {rollback.error && <Alert color="red">{errorMessage(rollback.error)}</Alert>}
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button
            color="orange"
            loading={rollback.isPending}
            disabled={pending && !discard}
            onClick={() =>
              rollback.mutate(
                { number: revision.number, message, discard_changes: discard, confirm_within: confirmWithin ? 120 : null },
                {
                  onSuccess: (created) => {
                    notifications.show({ message: `Revision ${created.number} (${created.state.replace('_', ' ')}) restores revision ${revision.number}.` });
                    onClose();
                  },
                },
              )
            }
          >
            Roll back
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
