import { Alert, Button, Card, Code, Collapse, Group, SimpleGrid, Stack, Text, TextInput, Title } from '@mantine/core';
import { useForm } from '@mantine/form';
import { modals } from '@mantine/modals';
import { notifications } from '@mantine/notifications';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { errorMessage } from '../../api/errors';
import { pairingCodeMutation, pairMutation, unpairMutation } from '../../api/queries/ha';
import { useCan } from '../../auth/useCurrentUser';
import type { HaStatus, PairingCode, PairResult, UnpairResult } from '../../client/types.gen';
import { dateTime } from '../../lib/format';
import { normalizePairingCode, pairingCodeError, peerUrlError, peerUrlFrom } from '../../lib/ha';
import { useServerErrors } from '../useServerErrors';

/** Pair two nodes with a one-time code, or unpair them. */
export function PairingCard({ status }: { status: HaStatus }) {
  const canPair = useCan('editHa');
  return (
    <Card withBorder>
      <Title order={4}>Pairing</Title>
      {status.peer ? (
        <Paired status={status} canPair={canPair} />
      ) : canPair ? (
        <SimpleGrid cols={{ base: 1, md: 2 }} spacing="xl" mt="sm">
          <ShowCode {...PAIR_WITH_THIS} />
          <PairForm thisNode={status.node.name} />
        </SimpleGrid>
      ) : (
        <Text size="sm" c="dimmed" mt="xs">
          This node is not paired. An administrator pairs it with a second node for failover and configuration sync.
        </Text>
      )}
    </Card>
  );
}

const PAIR_WITH_THIS = {
  title: 'Let another node pair with this one',
  description:
    'Show a one-time code here, then enter it, with this node’s address, on the other node. Its configuration then replaces this node’s.',
};

/** On node B (or a cluster's new member): a one-time code to type into node A (or the writer). */
export function ShowCode({ title, description }: { title: string; description: string } = PAIR_WITH_THIS) {
  const issue = useMutation(pairingCodeMutation());
  const [code, setCode] = useState<PairingCode | null>(null);
  return (
    <Stack gap="xs">
      <Text fw={600} size="sm">
        {title}
      </Text>
      <Text size="sm" c="dimmed">
        {description}
      </Text>
      {code && (
        <Alert color="blue" title="Pairing code">
          <Code fz="xl" fw={700} data-testid="pairing-code" style={{ letterSpacing: 2 }}>
            {code.code}
          </Code>
          <Text size="xs" mt="xs">
            Valid once, until {dateTime(code.expires_at)}. This node’s address: <span className="mono">{window.location.origin}</span>
          </Text>
        </Alert>
      )}
      {issue.error && <Alert color="red">{errorMessage(issue.error)}</Alert>}
      <Button
        variant="light"
        w="fit-content"
        loading={issue.isPending}
        onClick={() => issue.mutate(undefined, { onSuccess: setCode })}
      >
        {code ? 'Show a new code' : 'Show a pairing code'}
      </Button>
    </Stack>
  );
}

/** On node A: the other node's address and code; this node's configuration wins. */
function PairForm({ thisNode }: { thisNode: string }) {
  const queryClient = useQueryClient();
  // Told here, not in mutate(): a successful pairing replaces this form (unmounting it) first.
  const pair = useMutation({
    ...pairMutation(queryClient),
    onSuccess: (result: PairResult) => {
      notifications.show({
        color: 'green',
        title: `Paired with ${result.peer_name}`,
        message: result.sync.message || `Configuration sync: ${result.sync.result.replace('_', ' ')}`,
      });
      return pairMutation(queryClient).onSuccess();
    },
  });
  const [advanced, setAdvanced] = useState(false);
  const form = useForm({
    initialValues: { peer_url: '', code: '', local_url: '' },
    validate: {
      peer_url: peerUrlError,
      code: pairingCodeError,
      local_url: (v) => (v.trim() ? peerUrlError(v) : null),
    },
  });
  const formError = useServerErrors(form, pair.error);
  const submit = (values: typeof form.values) => {
    const peerUrl = peerUrlFrom(values.peer_url);
    modals.openConfirmModal({
      title: 'Pair and replace the other node’s configuration?',
      children: (
        <Stack gap="xs">
          <Text size="sm">
            <b>{thisNode}’s configuration will replace the peer’s</b>: the services, VIP groups, firewall and user accounts
            on <span className="mono">{peerUrl}</span> are overwritten by this node’s and applied there.
          </Text>
          <Text size="sm">
            The peer keeps its own node settings (name, interfaces, priority). Everyone signed in there is signed out and
            signs in again with this node’s accounts.
          </Text>
        </Stack>
      ),
      labels: { confirm: 'Pair and replace', cancel: 'Cancel' },
      confirmProps: { color: 'red' },
      onConfirm: () =>
        pair.mutate(
          {
            peer_url: peerUrl,
            code: normalizePairingCode(values.code),
            local_url: values.local_url.trim() ? peerUrlFrom(values.local_url) : null,
          },
        ),
    });
  };
  return (
    <form onSubmit={form.onSubmit(submit)} noValidate>
      <Stack gap="xs">
        <Text fw={600} size="sm">
          Pair this node with another
        </Text>
        <Alert color="yellow" p="xs">
          <Text size="sm">
            This node’s configuration will replace the peer’s: its services, VIP groups, firewall and users are
            overwritten.
          </Text>
        </Alert>
        <TextInput label="The other node’s address" placeholder="10.0.0.2 or https://lb2.example.net" required {...form.getInputProps('peer_url')} />
        <TextInput label="Pairing code" placeholder="ABCD-EFGH-JKLM" description="Shown on the other node’s HA page" required classNames={{ input: 'mono' }} {...form.getInputProps('code')} />
        <Button variant="subtle" size="compact-xs" w="fit-content" onClick={() => setAdvanced((v) => !v)}>
          {advanced ? 'Hide' : 'Advanced:'} how the other node reaches this one
        </Button>
        <Collapse in={advanced}>
          <TextInput
            label="This node’s address as the other node reaches it"
            description="Empty: this node’s address on the route to the other node, with the same scheme and port"
            placeholder="https://10.0.0.1"
            {...form.getInputProps('local_url')}
          />
        </Collapse>
        {formError && <Alert color="red">{formError}</Alert>}
        <Group justify="flex-end">
          <Button type="submit" loading={pair.isPending}>
            Pair…
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

function Paired({ status, canPair }: { status: HaStatus; canPair: boolean }) {
  const queryClient = useQueryClient();
  const unpair = useMutation({
    ...unpairMutation(queryClient),
    // Here, not in mutate(): once unpaired this component is replaced before mutate's callbacks run.
    onSuccess: (result: UnpairResult) => notifications.show({ message: `Unpaired (the peer: ${result.peer}).` }),
    onError: (error: Error) => notifications.show({ color: 'red', title: 'Not unpaired', message: errorMessage(error) }),
  });
  const peer = status.peer!;
  const confirm = () =>
    modals.openConfirmModal({
      title: `Unpair from ${peer.name}?`,
      children: (
        <Text size="sm">
          Configuration stops being copied between the nodes, and both accept changes again. Each keeps running what it
          runs now; VRRP keeps using each node’s own settings. Pairing again needs a new code, and the node that pairs
          replaces the other’s configuration.
        </Text>
      ),
      labels: { confirm: 'Unpair', cancel: 'Cancel' },
      confirmProps: { color: 'red' },
      onConfirm: () => unpair.mutate(),
    });
  return (
    <Group justify="space-between" mt="xs" wrap="wrap">
      <Text size="sm">
        Paired with <b>{peer.name}</b> at <span className="mono">{peer.url}</span>: the shared configuration is edited on the
        active node and copied to the other.
      </Text>
      {canPair && (
        <Button color="red" variant="light" onClick={confirm} loading={unpair.isPending}>
          Unpair
        </Button>
      )}
    </Group>
  );
}
