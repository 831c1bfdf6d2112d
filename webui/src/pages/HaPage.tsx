import { ActionIcon, Alert, Button, Card, Checkbox, Group, Modal, NumberInput, SimpleGrid, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useForm } from '@mantine/form';
import { IconEdit, IconPlus } from '@tabler/icons-react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { errorMessage } from '../api/errors';
import {
  createVipGroupMutation,
  deleteVipGroupMutation,
  haStatusQuery,
  nodeQuery,
  patchNodeMutation,
  updateVipGroupMutation,
  vipGroupsQuery,
} from '../api/queries/ha';
import { useCan } from '../auth/useCurrentUser';
import type { Node, VipGroupRead } from '../client/types.gen';
import { ConsoleAccessCard } from '../components/ha/ConsoleAccessCard';
import { PeerCard, SplitBrainAlert, ThisNodeCard } from '../components/ha/NodeCards';
import { ClusterMembershipCard } from '../components/cluster/ClusterMembershipCard';
import { PairingCard } from '../components/ha/PairingCard';
import { ConnSyncCard, TransitionsCard } from '../components/ha/PairStateCards';
import { PairUpgradeCard } from '../components/ha/PairUpgradeCard';
import { SyncCard } from '../components/ha/SyncCard';
import { PageLoader } from '../components/PageLoader';
import { useServerErrors } from '../components/useServerErrors';
import { INTERFACE_PATTERN, NAME_PATTERN, ipVersion } from '../lib/validation';
import { ConfirmDeleteButton } from '../components/ConfirmDeleteButton';

/**
 * The HA pair: both nodes with their roles and VRRP groups, configuration and connection sync,
 * the hand-over actions, the transitions, the pair upgrade, pairing; then the VIP groups, this node's settings and
 * its console access.
 */
export default function HaPage() {
  const status = useQuery(haStatusQuery());
  return (
    <Stack>
      <Title order={2}>High availability</Title>
      {status.error && (
        <Alert color="red" title="The HA state is not available">
          {errorMessage(status.error)}
        </Alert>
      )}
      {status.data?.split_brain.active && <SplitBrainAlert status={status.data} />}
      {status.data ? (
        <>
          <SimpleGrid cols={{ base: 1, md: 2 }}>
            <ThisNodeCard status={status.data} />
            <PeerCard status={status.data} />
          </SimpleGrid>
          <SimpleGrid cols={{ base: 1, md: 2 }}>
            <SyncCard status={status.data} />
            <Stack>
              <ConnSyncCard status={status.data} />
              <TransitionsCard status={status.data} />
            </Stack>
          </SimpleGrid>
          {status.data.cluster === 'writer' || status.data.cluster === 'member' ? (
            <ClusterMembershipCard status={status.data} />
          ) : (
            <>
              <PairUpgradeCard status={status.data} />
              <PairingCard status={status.data} />
            </>
          )}
        </>
      ) : (
        !status.error && <PageLoader />
      )}
      <VipGroupsCard />
      <NodeSettingsCard />
      <ConsoleAccessCard />
    </Stack>
  );
}

function VipGroupsCard() {
  const groups = useQuery(vipGroupsQuery());
  const canEdit = useCan('editHa');
  const queryClient = useQueryClient();
  const remove = useMutation(deleteVipGroupMutation(queryClient));
  // 'new' for the add form, a group for its edit form.
  const [editing, setEditing] = useState<VipGroupRead | 'new' | null>(null);
  return (
    <Card withBorder padding={0}>
      <Group justify="space-between" p="sm">
        <div>
          <Title order={4}>VIP groups</Title>
          <Text size="xs" c="dimmed">
            Virtual addresses that move between the nodes together (one VRRP instance each).
          </Text>
        </div>
        {canEdit && (
          <Button size="xs" variant="light" leftSection={<IconPlus size={14} />} onClick={() => setEditing('new')}>
            Add VIP group
          </Button>
        )}
      </Group>
      <Table.ScrollContainer minWidth={560}>
        <Table verticalSpacing="xs">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>VRID</Table.Th>
              <Table.Th>Addresses</Table.Th>
              <Table.Th>Advert interval</Table.Th>
              <Table.Th>Preempt</Table.Th>
              {canEdit && <Table.Th aria-label="Actions" />}
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {groups.data?.data.map((g) => (
              <Table.Tr key={g.id}>
                <Table.Td fw={500}>{g.name}</Table.Td>
                <Table.Td className="num">{g.virtual_router_id}</Table.Td>
                <Table.Td className="mono">{g.addresses.join(', ')}</Table.Td>
                <Table.Td className="num">{g.advert_interval ?? 0.1} s</Table.Td>
                <Table.Td>{g.preempt ? 'yes' : 'no'}</Table.Td>
                {canEdit && (
                  <Table.Td>
                    <Group gap={4} wrap="nowrap">
                      <ActionIcon variant="subtle" aria-label={`Edit VIP group ${g.name}`} onClick={() => setEditing(g)}>
                        <IconEdit size={16} />
                      </ActionIcon>
                      <ConfirmDeleteButton
                        title={`Delete VIP group ${g.name}?`}
                        consequence="Its addresses stop moving between the nodes once applied."
                        confirmLabel="Delete"
                        onConfirm={() => remove.mutate(g.id)}
                      />
                    </Group>
                  </Table.Td>
                )}
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {groups.data?.count === 0 && (
        <Text c="dimmed" ta="center" p="md">
          No VIP groups: service addresses do not fail over.
        </Text>
      )}
      {editing && <VipGroupModal group={editing === 'new' ? undefined : editing} onClose={() => setEditing(null)} />}
    </Card>
  );
}

/** Adds a VIP group, or edits `group`: either way a pending change, applied with the next revision. */
function VipGroupModal({ group, onClose }: { group?: VipGroupRead; onClose: () => void }) {
  const queryClient = useQueryClient();
  const create = useMutation(createVipGroupMutation(queryClient));
  const update = useMutation(updateVipGroupMutation(queryClient));
  const save = group ? update : create;
  const form = useForm({
    initialValues: {
      name: group?.name ?? '',
      virtual_router_id: (group?.virtual_router_id ?? 51) as number | string,
      addresses: group?.addresses.join(', ') ?? '',
      advert_interval: (group?.advert_interval ?? 0.1) as number | string,
      preempt: group?.preempt ?? false,
    },
    validate: {
      name: (v) => (NAME_PATTERN.test(v) ? null : 'Letters, digits, ".", "_", "-"'),
      virtual_router_id: (v) => (Number.isInteger(Number(v)) && Number(v) >= 1 && Number(v) <= 255 ? null : '1 to 255, unique on this network'),
      addresses: (v) => {
        const list = v.split(/[\s,]+/).filter(Boolean);
        if (!list.length) return 'At least one address with its prefix, e.g. 192.0.2.10/24';
        const bad = list.find((a) => !/^[^/]+\/\d{1,3}$/.test(a) || !ipVersion(a.split('/')[0]));
        return bad ? `"${bad}" is not an address with a prefix length (192.0.2.10/24)` : null;
      },
    },
  });
  const formError = useServerErrors(form, save.error, (path) => path.replace(/^addresses\.\d+$/, 'addresses'));
  return (
    <Modal opened onClose={onClose} title={group ? `Edit VIP group ${group.name}` : 'Add a VIP group'}>
      <form
        onSubmit={form.onSubmit((v) => {
          const body = { name: v.name, virtual_router_id: Number(v.virtual_router_id), addresses: v.addresses.split(/[\s,]+/).filter(Boolean), advert_interval: Number(v.advert_interval), preempt: v.preempt };
          if (group) update.mutate({ groupId: group.id, change: body }, { onSuccess: onClose });
          else create.mutate(body, { onSuccess: onClose });
        })}
        noValidate
      >
        <Stack>
          <TextInput label="Name" required {...form.getInputProps('name')} />
          <NumberInput label="Virtual router ID" min={1} max={255} {...form.getInputProps('virtual_router_id')} />
          <TextInput label="Addresses" description="With prefix length, comma-separated: 192.0.2.10/24" {...form.getInputProps('addresses')} />
          <NumberInput label="Advert interval (s)" min={0.01} max={40.95} step={0.05} decimalScale={2} {...form.getInputProps('advert_interval')} />
          <Checkbox label="Preempt: take the addresses back when this node returns" {...form.getInputProps('preempt', { type: 'checkbox' })} />
          {formError && <Alert color="red">{formError}</Alert>}
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>Cancel</Button>
            <Button type="submit" loading={save.isPending}>
              {group ? 'Save' : 'Add'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

function NodeSettingsCard() {
  const node = useQuery(nodeQuery());
  if (!node.data) return null;
  return <NodeSettingsForm node={node.data} />;
}

function NodeSettingsForm({ node }: { node: Node }) {
  const canEdit = useCan('editHa');
  const queryClient = useQueryClient();
  const save = useMutation(patchNodeMutation(queryClient));
  const form = useForm({
    initialValues: {
      name: node.name ?? 'fulcrum',
      vrrp_interface: node.vrrp_interface ?? 'eth0',
      priority: (node.priority ?? 100) as number | string,
      unicast_source: node.unicast_source ?? '',
      peer_address: node.peer_address ?? '',
      multicast: node.multicast ?? false,
      sync_interface: node.sync_interface ?? '',
    },
    validate: {
      name: (v) => (NAME_PATTERN.test(v) ? null : 'Letters, digits, ".", "_", "-"'),
      vrrp_interface: (v) => (INTERFACE_PATTERN.test(v) ? null : 'An interface name such as eth0'),
      priority: (v) => (Number(v) >= 1 && Number(v) <= 254 ? null : '1 to 254; the higher one is active'),
      unicast_source: (v) => (v && !ipVersion(v) ? 'An IP address' : null),
      peer_address: (v) => (v && !ipVersion(v) ? 'An IP address' : null),
      sync_interface: (v) => (v && !INTERFACE_PATTERN.test(v) ? 'An interface name' : null),
    },
  });
  const formError = useServerErrors(form, save.error);
  return (
    <Card withBorder>
      <Title order={4}>This node’s settings</Title>
      <Text size="xs" c="dimmed" mb="sm">
        Never copied to the peer. {canEdit ? 'Saving adds a pending change.' : 'Only an administrator can change them.'}
      </Text>
      <form
        onSubmit={form.onSubmit((v) =>
          save.mutate({
            name: v.name,
            vrrp_interface: v.vrrp_interface,
            priority: Number(v.priority),
            unicast_source: v.unicast_source || null,
            peer_address: v.peer_address || null,
            multicast: v.multicast,
            sync_interface: v.sync_interface || null,
          }),
        )}
        noValidate
      >
        <fieldset disabled={!canEdit} style={{ border: 0, padding: 0, margin: 0 }}>
          <Stack>
            <SimpleGrid cols={{ base: 1, sm: 3 }}>
              <TextInput label="Node name" {...form.getInputProps('name')} />
              <TextInput label="VRRP interface" {...form.getInputProps('vrrp_interface')} />
              <NumberInput label="Priority" min={1} max={254} {...form.getInputProps('priority')} />
              <TextInput label="Peer address" description="Empty: no peer (or multicast)" {...form.getInputProps('peer_address')} />
              <TextInput label="Unicast source" description="Empty: the interface address" {...form.getInputProps('unicast_source')} />
              <TextInput label="Connection sync interface" description="Empty: off" {...form.getInputProps('sync_interface')} />
            </SimpleGrid>
            <Checkbox label="Find the peer by multicast instead" {...form.getInputProps('multicast', { type: 'checkbox' })} />
            {formError && <Alert color="red">{formError}</Alert>}
            {canEdit && (
              <Group justify="flex-end">
                <Button type="submit" loading={save.isPending} disabled={!form.isDirty()}>
                  Save node settings
                </Button>
              </Group>
            )}
          </Stack>
        </fieldset>
      </form>
    </Card>
  );
}
