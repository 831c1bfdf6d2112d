import { Box, Button, Group, Paper, Text } from '@mantine/core';
import { IconAlertTriangle } from '@tabler/icons-react';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { changesQuery } from '../api/queries/revisions';
import { statusQuery } from '../api/queries/status';
import { ReviewChangesModal } from './ReviewChangesModal';

/**
 * Always visible while the candidate differs from what runs: edits are drafts until applied,
 * and this bar is where they are reviewed and applied.
 */
export function PendingChangesBar() {
  const status = useQuery(statusQuery());
  const changes = useQuery({ ...changesQuery(), enabled: status.data?.pending_changes === true });
  const [reviewing, setReviewing] = useState(false);
  const pending = status.data?.pending_changes && changes.data?.has_changes;
  if (!pending && !reviewing) return null;
  const plan = changes.data?.plan;
  const count = plan?.items.length ?? 0;
  return (
    <>
      {pending && (
        <Box
          pos="fixed"
          bottom={0}
          right={0}
          left="var(--app-shell-navbar-offset, 0rem)"
          p="xs"
          style={{ zIndex: 150 }}
        >
          <Paper shadow="md" withBorder p="sm" bg="var(--mantine-color-yellow-light)" role="region" aria-label="Pending changes">
            <Group justify="space-between" wrap="nowrap">
              <Group gap="xs" wrap="nowrap">
                {plan?.disruptive && <IconAlertTriangle color="var(--mantine-color-red-filled)" size={20} aria-label="Disruptive" />}
                <Text size="sm">
                  {count === 0 ? (
                    // The candidate differs in settings that change nothing running (e.g. first defaults).
                    <>Settings not yet applied (no effect on traffic)</>
                  ) : (
                    <>
                      <b data-testid="pending-count">{count}</b> pending {count === 1 ? 'change' : 'changes'}, not yet on the load balancer
                    </>
                  )}
                  {plan?.disruptive && <Text span c="red" fw={600}> · some disrupt traffic</Text>}
                </Text>
              </Group>
              <Button size="sm" onClick={() => setReviewing(true)} style={{ flexShrink: 0 }}>
                Review & apply
              </Button>
            </Group>
          </Paper>
        </Box>
      )}
      <ReviewChangesModal opened={reviewing} onClose={() => setReviewing(false)} />
    </>
  );
}
