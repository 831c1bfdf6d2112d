import { Alert, Button, Checkbox, Group, Modal, NumberInput, Stack, Text, TextInput } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { errorMessage } from '../api/errors';
import { changesQuery, commitMutation } from '../api/queries/revisions';
import { useCan } from '../auth/useCurrentUser';
import type { RevisionRead } from '../client/types.gen';
import { changesManagementAccess, suggestConfirmDeadline } from '../lib/plan';
import { DiffView } from './DiffView';
import { PlanList } from './PlanList';
import { RevisionOutcome } from './RevisionOutcome';

/** The plan of the pending changes, and the commit (optionally commit-confirmed). */
export function ReviewChangesModal({ opened, onClose }: { opened: boolean; onClose: () => void }) {
  const queryClient = useQueryClient();
  const changes = useQuery({ ...changesQuery(), enabled: opened });
  const commit = useMutation(commitMutation(queryClient));
  const canCommit = useCan('commit');
  const [message, setMessage] = useState('');
  const [safe, setSafe] = useState(false);
  const [seconds, setSeconds] = useState<number | string>(120);
  const [showDiff, setShowDiff] = useState(false);
  const [result, setResult] = useState<RevisionRead | null>(null);
  const plan = changes.data?.plan;

  // Risky changes default to commit-confirmed: a mistake that cuts access undoes itself.
  const suggestSafe = suggestConfirmDeadline(plan);
  const accessChange = changesManagementAccess(plan);
  useEffect(() => {
    if (opened) {
      setResult(null);
      commit.reset();
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [opened]);
  // Follows the plan as it loads, but not once committed: the plan is empty then.
  useEffect(() => {
    if (opened && !result) setSafe(suggestSafe);
  }, [opened, suggestSafe, result]);

  const apply = () =>
    commit.mutate(
      { message, confirm_within: safe ? Number(seconds) : null },
      {
        onSuccess: (revision) => {
          setResult(revision);
          setMessage('');
          if (revision.state === 'applied' || revision.state === 'awaiting_confirm') {
            notifications.show({ color: 'green', message: `Revision ${revision.number} applied.` });
          }
        },
      },
    );

  return (
    <Modal opened={opened} onClose={onClose} title="Review pending changes" size="xl">
      {result ? (
        <Stack>
          <RevisionOutcome revision={result} />
          <Group justify="flex-end">
            <Button onClick={onClose}>Close</Button>
          </Group>
        </Stack>
      ) : (
        <Stack>
          {changes.error && <Alert color="red">{errorMessage(changes.error)}</Alert>}
          {plan && (
            <>
              <Text size="sm" c="dimmed">
                Nothing below reaches the load balancer until you apply it.
              </Text>
              <PlanList plan={plan} />
              {plan.warnings.map((warning) => (
                <Alert key={warning} color="yellow" title="Warning">
                  {warning}
                </Alert>
              ))}
              <Button variant="subtle" size="xs" onClick={() => setShowDiff((v) => !v)} w="fit-content">
                {showDiff ? 'Hide' : 'Show'} the configuration diff
              </Button>
              {showDiff && changes.data && <DiffView text={changes.data.text} />}
            </>
          )}
          {canCommit ? (
            <>
              <TextInput label="Note for the revision log" placeholder="e.g. add web backend 3" maxLength={500} value={message} onChange={(e) => setMessage(e.currentTarget.value)} />
              <Group align="flex-end">
                <Checkbox
                  label="Roll back automatically unless I confirm within"
                  description="Recommended for changes that could cut your own access or traffic"
                  checked={safe}
                  onChange={(e) => setSafe(e.currentTarget.checked)}
                />
                <NumberInput
                  aria-label="Seconds to confirm"
                  suffix=" s"
                  min={10}
                  max={3600}
                  w={110}
                  disabled={!safe}
                  value={seconds}
                  onChange={setSeconds}
                />
              </Group>
              {accessChange && (
                <Alert color={safe ? 'blue' : 'red'} title="This changes who can reach the management ports" data-testid="access-change-advice">
                  {safe
                    ? 'If it shuts you out, it rolls back by itself when the time is up. Before confirming, open the dashboard in a new private window and sign in there: this tab keeps its open connection, so it proves nothing.'
                    : 'Without automatic rollback, a wrong allow-list can lock you out until someone fixes it at the console.'}
                </Alert>
              )}
              {commit.error && (
                <Alert color="red" title="Not applied">
                  {errorMessage(commit.error)}
                </Alert>
              )}
              <Group justify="flex-end">
                <Button variant="default" onClick={onClose}>
                  Keep editing
                </Button>
                <Button color={plan?.disruptive ? 'red' : undefined} loading={commit.isPending} onClick={apply} disabled={!plan?.items.length && !changes.data?.has_changes}>
                  Apply {plan?.items.length ?? 0} {plan?.items.length === 1 ? 'change' : 'changes'}
                </Button>
              </Group>
            </>
          ) : (
            <Alert color="gray">Viewers can review pending changes; an operator applies them.</Alert>
          )}
        </Stack>
      )}
    </Modal>
  );
}
