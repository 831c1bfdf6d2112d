import { Anchor, Button, Card, Group, Text, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { errorMessage } from '../../api/errors';
import { unpairMutation } from '../../api/queries/ha';
import { useCan } from '../../auth/useCurrentUser';
import type { HaStatus, UnpairResult } from '../../client/types.gen';
import { askToConfirm } from '../ConfirmButton';

/**
 * On the HA page of a cluster's node, in place of pairing and the pair upgrade (a node is in a
 * pair or in a cluster, never both): where the cluster is run, and for a member, leaving it.
 */
export function ClusterMembershipCard({ status }: { status: HaStatus }) {
  const canEdit = useCan('editHa');
  const queryClient = useQueryClient();
  const leave = useMutation({
    ...unpairMutation(queryClient),
    onSuccess: (result: UnpairResult) => notifications.show({ message: `Left the cluster (the writer: ${result.peer}).` }),
    onError: (error: Error) => notifications.show({ color: 'red', title: 'Still a member', message: errorMessage(error) }),
  });
  const writer = status.peer;
  return (
    <Card withBorder data-testid="cluster-membership">
      <Title order={4}>Cluster</Title>
      <Group justify="space-between" mt="xs" wrap="wrap">
        {status.cluster === 'member' && writer ? (
          <Text size="sm">
            A member of the cluster led by <b>{writer.name}</b> at <span className="mono">{writer.url}</span>: it runs the writer’s
            configuration and is upgraded on its own (drained first). See{' '}
            <Anchor component={Link} to="/bgp">
              Cluster & BGP
            </Anchor>
            .
          </Text>
        ) : (
          <Text size="sm">
            This node leads a cluster: its members take every commit made here. Members are added, drained and removed on{' '}
            <Anchor component={Link} to="/bgp">
              Cluster & BGP
            </Anchor>
            ; a node that leads a cluster is not paired.
          </Text>
        )}
        {status.cluster === 'member' && writer && canEdit && (
          <Button
            color="red"
            variant="light"
            loading={leave.isPending}
            onClick={() =>
              askToConfirm(
                {
                  title: `Leave the cluster led by ${writer.name}?`,
                  consequence:
                    'This node stops taking the writer’s configuration and accepts changes again; it keeps running and announcing ' +
                    'what it runs now, which nobody then updates. To take it out of the routers’ paths too, drain it first (or have ' +
                    'the writer remove it, which drains it).',
                  confirmLabel: 'Leave the cluster',
                  onConfirm: () => leave.mutate(),
                },
                'red',
              )
            }
          >
            Leave the cluster
          </Button>
        )}
      </Group>
    </Card>
  );
}
