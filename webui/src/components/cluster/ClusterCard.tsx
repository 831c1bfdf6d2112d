import { Alert, Badge, Button, Card, Group, SimpleGrid, Stack, Table, Text, TextInput, Title, Tooltip } from '@mantine/core';
import { useForm } from '@mantine/form';
import { notifications } from '@mantine/notifications';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { errorMessage } from '../../api/errors';
import { addMemberMutation, clusterStatusQuery, drainMemberMutation, removeMemberMutation, syncMemberMutation } from '../../api/queries/cluster';
import { useCan } from '../../auth/useCurrentUser';
import type { ClusterNode, ClusterStatus, JoinResult } from '../../client/types.gen';
import { relativeTime } from '../../lib/format';
import { normalizePairingCode, pairingCodeError, peerUrlError, peerUrlFrom } from '../../lib/ha';
import { askToConfirm, type Confirmation } from '../ConfirmButton';
import { DataTable } from '../DataTable';
import { ShowCode } from '../ha/PairingCard';
import { ClusterBgpTable } from './ClusterBgpTable';
import { PageLoader } from '../PageLoader';
import { useServerErrors } from '../useServerErrors';

const SYNC: Record<NonNullable<ClusterNode['sync']>, { label: string; color: string }> = {
  in_sync: { label: 'in sync', color: 'green' },
  behind: { label: 'behind', color: 'yellow' },
  conflict: { label: 'conflict', color: 'red' },
  unreachable: { label: 'unreachable', color: 'red' },
};

/**
 * The cluster's nodes, one configuration from one writer: each node's revision and sync, whether it
 * is drained, and its share of the connections. The writer adds, drains, syncs and removes members.
 */
export function ClusterCard() {
  const status = useQuery(clusterStatusQuery());
  return (
    <Stack gap="sm" data-testid="cluster">
      <Title order={3}>Cluster</Title>
      {status.isPending ? (
        <PageLoader />
      ) : status.error ? (
        <Alert color="red">{errorMessage(status.error)}</Alert>
      ) : (
        <ClusterView status={status.data} />
      )}
    </Stack>
  );
}

function ClusterView({ status }: { status: ClusterStatus }) {
  const canEdit = useCan('editHa');
  return (
    <>
      {status.role === 'member' && (
        <Text size="sm">
          This node is a member of the cluster led by <b>{status.writer}</b>: it runs the writer’s configuration, which is
          edited at <span className="mono">{status.writer_url}</span>.
        </Text>
      )}
      {status.message && <Alert color="orange">{status.message}</Alert>}
      {status.role === 'none' ? (
        <Card withBorder>
          <Text size="sm" mb="sm">
            This node runs alone. A cluster is several active nodes announcing the same VIPs to the routers by BGP, each
            running one configuration edited on the writer (the node the members are added on).
          </Text>
          {canEdit && (
            <SimpleGrid cols={{ base: 1, md: 2 }} spacing="xl">
              <ShowCode
                title="Let this node join a cluster"
                description="Show a one-time code here, then enter it, with this node’s address, on the writer’s Cluster & BGP page. The writer’s configuration then replaces this node’s."
              />
              <AddMemberForm />
            </SimpleGrid>
          )}
        </Card>
      ) : (
        <>
          <NodesTable status={status} />
          <ClusterBgpTable />
          {status.role === 'writer' && canEdit && (
            <Card withBorder>
              <AddMemberForm />
            </Card>
          )}
        </>
      )}
    </>
  );
}

function share(node: ClusterNode): string {
  if (node.connections === null) return '—';
  const part = node.share === null ? '' : ` (${Math.round(node.share * 100)} %)`;
  return `${node.connections}${part}`;
}

function NodesTable({ status }: { status: ClusterStatus }) {
  const actions = useCan('operateHa') && status.role === 'writer';
  const columns = ['Node', 'State', 'Configuration', 'Connections (share)', 'Version', ...(actions ? [''] : [])];
  return (
    <DataTable<ClusterNode>
      label="Cluster nodes"
      columns={columns}
      rows={status.nodes}
      rowKey={(n) => n.name}
      minWidth={760}
      cells={(node) => (
        <>
          <Table.Td>
            <Group gap={6}>
              <Text size="sm" fw={500}>
                {node.name}
              </Text>
              {node.writer && <Badge variant="light">writer</Badge>}
              {node.local && (
                <Badge variant="outline" color="gray">
                  this node
                </Badge>
              )}
            </Group>
            {node.url && (
              <Text size="xs" c="dimmed" className="mono">
                {node.url}
              </Text>
            )}
          </Table.Td>
          <Table.Td>
            <NodeState node={node} />
          </Table.Td>
          <Table.Td>
            {node.writer ? (
              <Text size="sm">revision {node.revision ?? '—'}</Text>
            ) : (
              <Tooltip label={node.sync_message} multiline w={320} disabled={!node.sync_message}>
                <Group gap={6}>
                  {node.sync ? <Badge color={SYNC[node.sync].color}>{SYNC[node.sync].label}</Badge> : <Badge color="gray">not asked yet</Badge>}
                  {node.revision !== null && <Text size="sm">its revision {node.revision}</Text>}
                </Group>
              </Tooltip>
            )}
          </Table.Td>
          <Table.Td>{share(node)}</Table.Td>
          <Table.Td>{node.software_version ?? '—'}</Table.Td>
          {actions && <Table.Td>{!node.writer && <MemberActions node={node} />}</Table.Td>}
        </>
      )}
    />
  );
}

function NodeState({ node }: { node: ClusterNode }) {
  if (node.reachable === false) {
    return (
      <Tooltip label={node.last_seen ? `last answered ${relativeTime(node.last_seen)}` : 'never answered'}>
        <Badge color="red">unreachable</Badge>
      </Tooltip>
    );
  }
  if (node.reachable === null) return <Badge color="gray">not asked yet</Badge>;
  return node.maintenance ? <Badge color="orange">drained</Badge> : <Badge color="green">in service</Badge>;
}

/** What each member action does, said before it is done. */
function drainQuestion(node: ClusterNode, onConfirm: () => void): Confirmation {
  return node.maintenance
    ? {
        title: `Return ${node.name} to service?`,
        consequence: `${node.name} announces its VIPs again as soon as it is fit; the routers then send it a share of the flows.`,
        confirmLabel: 'Return to service',
        onConfirm,
      }
    : {
        title: `Drain ${node.name}?`,
        consequence:
          `${node.name} withdraws every VIP from the routers. They send its flows to the other nodes, which pick the same ` +
          'backends (mh) and carry its held connections on. Watch its connections fall before removing it.',
        confirmLabel: 'Drain',
        onConfirm,
      };
}

function syncQuestion(node: ClusterNode, onConfirm: () => void): Confirmation {
  return node.sync === 'conflict'
    ? {
        title: `Replace ${node.name}’s configuration?`,
        consequence: `${node.name} has configuration this node’s history does not. This node’s configuration replaces it and is applied there.`,
        confirmLabel: 'Replace',
        onConfirm,
      }
    : {
        title: `Sync ${node.name} now?`,
        consequence: `This node’s configuration is sent to ${node.name} now (the writer also does so by itself within seconds).`,
        confirmLabel: 'Sync',
        onConfirm,
      };
}

function removeQuestion(node: ClusterNode, onConfirm: () => void): Confirmation {
  return node.reachable === false
    ? {
        title: `Remove ${node.name}, which does not answer?`,
        consequence:
          `${node.name} cannot be told: if it comes back it still announces the VIPs, with a configuration nobody updates. ` +
          'Remove it only if it is gone for good; otherwise bring it back and remove it then.',
        confirmLabel: 'Remove anyway',
        onConfirm,
      }
    : {
        title: `Remove ${node.name} from the cluster?`,
        consequence:
          `${node.name} is drained (it withdraws every VIP) and forgets the cluster; it keeps its configuration and stays drained ` +
          `until someone returns it to service there.${node.maintenance ? '' : ' Its connections move to the other nodes: drain it first to watch them go.'}`,
        confirmLabel: 'Remove',
        onConfirm,
      };
}

/** Drain (withdraw its routes), sync now, or remove: each asks first and says what follows. */
function MemberActions({ node }: { node: ClusterNode }) {
  const canEdit = useCan('editHa');
  const queryClient = useQueryClient();
  const told = (done: string) => ({
    onSuccess: () => notifications.show({ color: 'green', message: done }),
    onError: (error: Error) => notifications.show({ color: 'red', title: `${node.name}: not done`, message: errorMessage(error) }),
  });
  const drain = useMutation(drainMemberMutation(queryClient));
  const sync = useMutation(syncMemberMutation(queryClient));
  const remove = useMutation(removeMemberMutation(queryClient));
  const busy = drain.isPending || sync.isPending || remove.isPending;
  const drained = node.maintenance === true;
  const conflict = node.sync === 'conflict';
  const gone = node.reachable === false;
  const ask = (question: Confirmation, color: string) => () => askToConfirm(question, color);
  return (
    <Group gap={4} wrap="nowrap" role="group" aria-label={`Actions for ${node.name}`}>
      <Button
        size="compact-sm"
        variant="light"
        color={drained ? 'green' : 'orange'}
        disabled={busy}
        onClick={ask(
          drainQuestion(node, () =>
            drain.mutate({ name: node.name, enabled: !drained }, told(drained ? `${node.name} returns to service` : `${node.name} is drained`)),
          ),
          drained ? 'green' : 'orange',
        )}
      >
        {drained ? 'Return to service' : 'Drain'}
      </Button>
      <Button
        size="compact-sm"
        variant="light"
        disabled={busy}
        onClick={ask(
          syncQuestion(node, () => sync.mutate({ name: node.name, force: conflict }, told(`${node.name} synced`))),
          conflict ? 'red' : 'blue',
        )}
      >
        {conflict ? 'Replace its configuration' : 'Sync now'}
      </Button>
      {canEdit && (
        <Button
          size="compact-sm"
          variant="light"
          color="red"
          disabled={busy}
          onClick={ask(
            removeQuestion(node, () =>
              remove.mutate({ name: node.name, force: gone }, told(gone ? `${node.name} removed` : `${node.name} left the cluster`)),
            ),
            'red',
          )}
        >
          Remove
        </Button>
      )}
    </Group>
  );
}

/** On the writer: the new member's address and the code it shows; the writer's configuration wins. */
function AddMemberForm() {
  const queryClient = useQueryClient();
  const add = useMutation(addMemberMutation(queryClient));
  const form = useForm({
    initialValues: { peer_url: '', code: '' },
    validate: { peer_url: peerUrlError, code: pairingCodeError },
  });
  const formError = useServerErrors(form, add.error);
  const submit = (values: typeof form.values) => {
    const url = peerUrlFrom(values.peer_url);
    askToConfirm(
      {
        title: 'Add this member and replace its configuration?',
        consequence:
          `The node at ${url} joins this node’s cluster: its services, VIP groups, firewall and user accounts are replaced by ` +
          'this node’s and applied there, and from then on it takes every commit made here. It keeps its own node, network ' +
          'and BGP settings.',
        confirmLabel: 'Add and replace',
        onConfirm: () =>
          add.mutate(
            { peer_url: url, code: normalizePairingCode(values.code), local_url: null },
            {
              onSuccess: (result: JoinResult) => {
                form.reset();
                notifications.show({ color: 'green', title: `${result.member} joined the cluster`, message: result.sync.message });
              },
            },
          ),
      },
      'red',
    );
  };
  return (
    <form onSubmit={form.onSubmit(submit)} noValidate>
      <Stack gap="xs">
        <Text fw={600} size="sm">
          Add a member
        </Text>
        <Text size="sm" c="dimmed">
          Show a pairing code on the new node (its Cluster & BGP page), then enter it here with the node’s address.
        </Text>
        <Group align="flex-start" grow>
          <TextInput label="The new node’s address" placeholder="10.0.0.3 or https://lb3.example.net" required {...form.getInputProps('peer_url')} />
          <TextInput label="Its pairing code" placeholder="ABCD-EFGH-JKLM" required classNames={{ input: 'mono' }} {...form.getInputProps('code')} />
        </Group>
        {formError && <Alert color="red">{formError}</Alert>}
        <Group justify="flex-end">
          <Button type="submit" loading={add.isPending}>
            Add member…
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
