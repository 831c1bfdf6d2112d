import { ActionIcon, Alert, Button, Card, Group, Stack, Text, TextInput, Title } from '@mantine/core';
import { useForm } from '@mantine/form';
import { modals } from '@mantine/modals';
import { IconAlertOctagon, IconAlertTriangle, IconInfoCircle, IconPlus, IconShieldCheck, IconTrash } from '@tabler/icons-react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { errorMessage } from '../api/errors';
import { meQuery } from '../api/queries/auth';
import { firewallQuery, putFirewallMutation } from '../api/queries/firewall';
import { haStatusQuery, nodeQuery } from '../api/queries/ha';
import { useCan } from '../auth/useCurrentUser';
import type { Firewall } from '../client/types.gen';
import { PageLoader } from '../components/PageLoader';
import { ReviewChangesModal } from '../components/ReviewChangesModal';
import { useServerErrors } from '../components/useServerErrors';
import {
  assessPolicy,
  describePolicy,
  hostNetwork,
  managementPortsError,
  MAX_NETWORKS,
  parseManagementPorts,
  type Finding,
  type Policy,
} from '../lib/firewall';
import { peerHost } from '../lib/ha';
import { networkError } from '../lib/networks';

/** The port this page came in on: the management port that matters most to whoever is reading. */
function dashboardPort(): number {
  return Number(window.location.port) || (window.location.protocol === 'https:' ? 443 : 80);
}

export default function FirewallPage() {
  const firewall = useQuery(firewallQuery());
  if (firewall.error) return <Alert color="red">{errorMessage(firewall.error)}</Alert>;
  if (!firewall.data) return <PageLoader />;
  return <FirewallEditor saved={firewall.data} />;
}

type Values = { management_ports: string; management_allow: string[] };

const toValues = (fw: Firewall): Values => ({
  management_ports: (fw.management_ports ?? []).join(', '),
  management_allow: fw.management_allow ?? [],
});

/** The policy as far as it can be read while typing: bad ports count as none. */
function policyOf(values: Values): Policy {
  let ports: number[] = [];
  try {
    ports = parseManagementPorts(values.management_ports);
  } catch {
    // shown at the field
  }
  return { ports, allow: values.management_allow.map((n) => n.trim()).filter(Boolean) };
}

function FirewallEditor({ saved }: { saved: Firewall }) {
  const canEdit = useCan('editFirewall');
  const canCommit = useCan('commit');
  const queryClient = useQueryClient();
  // Fresh: the address this browser is seen at is what the allow-list is checked against.
  const me = useQuery({ ...meQuery(), staleTime: 0 });
  const node = useQuery(nodeQuery());
  const ha = useQuery(haStatusQuery());
  const save = useMutation(putFirewallMutation(queryClient));
  const [reviewing, setReviewing] = useState(false);
  const form = useForm<Values>({
    initialValues: toValues(saved),
    validate: (values) => {
      const errors: Record<string, string> = {};
      const ports = managementPortsError(values.management_ports);
      if (ports) errors.management_ports = ports;
      if (values.management_allow.length > MAX_NETWORKS) errors.management_allow = `At most ${MAX_NETWORKS} networks`;
      values.management_allow.forEach((text, i) => {
        const error = text.trim() ? networkError(text) : 'Fill in a network or remove this row';
        if (error) errors[`management_allow.${i}`] = error;
      });
      return errors;
    },
  });
  const formError = useServerErrors(form, save.error, (path) => path.replace(/^management_ports\.\d+$/, 'management_ports'));
  const clientAddress = me.data?.client_address ?? null;
  // The paired node calls this node's API; without a pairing, the VRRP peer is the other node.
  const peerAddress = (ha.data?.peer ? peerHost(ha.data.peer.url) : null) ?? node.data?.peer_address ?? null;
  const context = { clientAddress, dashboardPort: dashboardPort(), peerAddress };
  const draft = policyOf(form.getValues());
  const findings = assessPolicy(draft, context);
  const myNetwork = clientAddress ? hostNetwork(clientAddress) : null;
  const critical = findings.filter((f) => f.severity === 'critical');

  const submit = (values: Values) => {
    const body: Firewall = {
      management_ports: parseManagementPorts(values.management_ports),
      management_allow: values.management_allow.map((n) => n.trim()),
    };
    const send = () =>
      save.mutate(body, {
        onSuccess: (fw) => {
          // What the API stored (networks normalised) is the new baseline for "unsaved edits".
          const stored = toValues(fw);
          form.setInitialValues(stored);
          form.setValues(stored);
          form.resetDirty(stored);
        },
      });
    if (!critical.length) return send();
    modals.openConfirmModal({
      title: 'Save a policy that shuts out access?',
      children: (
        <Stack gap="xs">
          {critical.map((f) => (
            <Text size="sm" key={f.id}>
              {f.message}
            </Text>
          ))}
          <Text size="sm">If you go on, apply it with automatic rollback so it undoes itself.</Text>
        </Stack>
      ),
      labels: { confirm: 'Save anyway', cancel: 'Go back' },
      confirmProps: { color: 'red' },
      onConfirm: send,
    });
  };

  return (
    <Stack maw={900}>
      <Title order={2}>Management firewall</Title>
      <Text c="dimmed" size="sm">
        Who may open connections to this appliance’s own management ports: the dashboard and API, and SSH. Load-balanced
        services and VRRP between the nodes are not filtered here.
      </Text>

      <Card withBorder>
        <Group gap="xs" wrap="nowrap" align="flex-start">
          <IconShieldCheck size={20} style={{ flexShrink: 0 }} />
          <div>
            <Text fw={600} size="sm">
              Saved policy
            </Text>
            <Text size="sm" data-testid="firewall-summary">
              {describePolicy({ ports: saved.management_ports ?? [], allow: saved.management_allow ?? [] })}
            </Text>
            <Text size="xs" c="dimmed">
              Saving adds a pending change; the filter changes when that change is applied.
            </Text>
          </div>
        </Group>
      </Card>

      {canEdit && (
        <Alert color="yellow" icon={<IconAlertTriangle />} title="A wrong allow-list locks you out">
          Once applied, new connections from any address that is not listed are dropped on these ports: yours, your
          colleagues’ and the HA peer’s. Apply a change with <b>“Roll back automatically unless I confirm”</b>: if you
          can no longer reach the dashboard, the previous policy returns by itself when the time is up. Before
          confirming, open the dashboard in a new private window; this tab keeps its open connection, so it proves nothing.
        </Alert>
      )}

      <Card withBorder>
        <form onSubmit={form.onSubmit(submit)} noValidate>
          <fieldset disabled={!canEdit} style={{ border: 0, padding: 0, margin: 0, minWidth: 0 }}>
            <Stack>
              <TextInput
                label="Management ports"
                description="TCP ports this filter guards, comma-separated. Empty: none."
                placeholder="22, 80, 443"
                {...form.getInputProps('management_ports')}
              />
              <div>
                <Text size="sm" fw={500}>
                  Allowed networks
                </Text>
                <Text size="xs" c="dimmed" mb="xs">
                  Sources that may connect, e.g. 10.0.0.0/8 or 2001:db8::/32; a bare address means that host alone.
                  No networks: any source may connect.
                </Text>
                <Stack gap="xs">
                  {form.getValues().management_allow.map((_, i) => (
                    <Group key={form.key(`management_allow.${i}`)} gap="xs" align="flex-start" wrap="nowrap">
                      <TextInput
                        aria-label={`Allowed network ${i + 1}`}
                        placeholder="10.0.0.0/8"
                        classNames={{ input: 'mono' }}
                        style={{ flex: 1 }}
                        {...form.getInputProps(`management_allow.${i}`)}
                      />
                      {canEdit && (
                        <ActionIcon variant="subtle" color="red" size="lg" aria-label={`Remove allowed network ${i + 1}`} onClick={() => form.removeListItem('management_allow', i)}>
                          <IconTrash size={16} />
                        </ActionIcon>
                      )}
                    </Group>
                  ))}
                  {form.errors.management_allow && (
                    <Text c="red" size="xs">
                      {form.errors.management_allow}
                    </Text>
                  )}
                </Stack>
                {canEdit && (
                  <Group gap="xs" mt="xs">
                    <Button size="xs" variant="light" leftSection={<IconPlus size={14} />} onClick={() => form.insertListItem('management_allow', '')}>
                      Add network
                    </Button>
                    {myNetwork && (
                      <Button
                        size="xs"
                        variant="default"
                        disabled={draft.allow.includes(myNetwork)}
                        onClick={() => form.insertListItem('management_allow', myNetwork)}
                      >
                        Add my address ({myNetwork})
                      </Button>
                    )}
                  </Group>
                )}
              </div>

              <Findings findings={findings} />
              {formError && <Alert color="red">{formError}</Alert>}
              {save.isSuccess && !form.isDirty() && (
                <Alert color="green" title="Saved as a pending change">
                  <Stack gap="xs" align="flex-start">
                    <Text size="sm">Nothing is filtered differently until it is applied.</Text>
                    {canCommit && (
                      <Button size="xs" onClick={() => setReviewing(true)}>
                        Review & apply with automatic rollback
                      </Button>
                    )}
                  </Stack>
                </Alert>
              )}
              {canEdit ? (
                <Group justify="flex-end">
                  <Button variant="default" disabled={!form.isDirty()} onClick={() => form.reset()}>
                    Undo edits
                  </Button>
                  <Button type="submit" loading={save.isPending} disabled={!form.isDirty()} color={critical.length ? 'red' : undefined}>
                    Save firewall policy
                  </Button>
                </Group>
              ) : (
                <Text size="xs" c="dimmed">
                  Only an administrator can change the management firewall.
                </Text>
              )}
            </Stack>
          </fieldset>
        </form>
      </Card>
      <ReviewChangesModal opened={reviewing} onClose={() => setReviewing(false)} />
    </Stack>
  );
}

const LOOK = {
  critical: { color: 'red', icon: <IconAlertOctagon /> },
  warning: { color: 'yellow', icon: <IconAlertTriangle /> },
  info: { color: 'gray', icon: <IconInfoCircle /> },
} as const;

/** What the edited policy would do to this browser and to the HA peer, updated while typing. */
function Findings({ findings }: { findings: Finding[] }) {
  if (!findings.length) return null;
  return (
    <Stack gap="xs" aria-label="What this policy would do" data-testid="firewall-findings">
      {findings.map((f) => (
        <Alert key={f.id} color={LOOK[f.severity].color} icon={LOOK[f.severity].icon} data-finding={f.id} p="xs">
          <Text size="sm">{f.message}</Text>
        </Alert>
      ))}
    </Stack>
  );
}
