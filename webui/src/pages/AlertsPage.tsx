import { Alert, Badge, Button, Card, Group, Modal, MultiSelect, NumberInput, PasswordInput, Select, Stack, Switch, Table, Text, TextInput, Title } from '@mantine/core';
import { useForm } from '@mantine/form';
import { notifications } from '@mantine/notifications';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { errorMessage } from '../api/errors';
import {
  alertChannelsQuery,
  alertRulesQuery,
  createChannelMutation,
  createRuleMutation,
  deleteChannelMutation,
  deleteRuleMutation,
  replaceChannelMutation,
  testChannelMutation,
} from '../api/queries/alerts';
import { useCan } from '../auth/useCurrentUser';
import type { ChannelRead, ChannelWrite, RuleWrite, TestResult } from '../client/types.gen';
import { CaCertificateField, usesTls } from '../components/CaCertificateField';
import { ConfirmDeleteButton } from '../components/ConfirmDeleteButton';
import { useServerErrors } from '../components/useServerErrors';
import { dateTime } from '../lib/format';

const KINDS: { value: RuleWrite['kinds'][number]; label: string }[] = [
  { value: 'backend_down', label: 'Backend down' },
  { value: 'backend_up', label: 'Backend up' },
  { value: 'service_down', label: 'Service quorum lost' },
  { value: 'service_up', label: 'Service quorum back' },
  { value: 'backend_warning', label: 'Backend warning' },
  { value: 'vrrp_state', label: 'VRRP role change' },
  { value: 'ha.split_brain', label: 'Split brain' },
  { value: 'ha.peer_unreachable', label: 'Peer unreachable' },
  { value: 'ha.conflict', label: 'Sync conflict' },
  { value: 'ha.peer_untrusted', label: 'Peer certificate not trusted' },
  { value: 'ha.clock_skew', label: 'Clock skew' },
  { value: 'ha.role_unknown', label: 'Role unknown' },
];

export default function AlertsPage() {
  const isAdmin = useCan('manageUsers');
  if (!isAdmin) return <Alert color="gray" title="Administrators only">Your role cannot manage alerts.</Alert>;
  return <Alerts />;
}

function destination(channel: ChannelRead): string {
  const config = channel.config;
  if (config.type === 'smtp') return `${config.to_addresses.join(', ')} via ${config.host}:${config.port ?? 587}`;
  if (config.type === 'webhook') return config.url;
  return `${config.host}:${config.port ?? 514} (${config.transport ?? 'udp'})`;
}

function Alerts() {
  const channels = useQuery(alertChannelsQuery());
  const rules = useQuery(alertRulesQuery());
  const queryClient = useQueryClient();
  const test = useMutation(testChannelMutation(queryClient));
  const replace = useMutation(replaceChannelMutation(queryClient));
  const removeChannel = useMutation(deleteChannelMutation(queryClient));
  const removeRule = useMutation(deleteRuleMutation(queryClient));
  const [tested, setTested] = useState<{ name: string; result: TestResult } | null>(null);
  const [editing, setEditing] = useState<ChannelRead | null>(null);
  const names = new Map(channels.data?.data.map((c) => [c.id, c.name]));
  const fail = (error: unknown) => notifications.show({ color: 'red', message: errorMessage(error) });
  const setEnabled = (channel: ChannelRead, enabled: boolean) =>
    replace.mutate({ channelId: channel.id, body: { name: channel.name, enabled, config: channel.config } }, { onError: fail });
  return (
    <Stack maw={1100}>
      <Title order={2}>Alerts</Title>
      <Text c="dimmed" size="sm">
        Events this node sees are sent to these channels by the rules below: once per open condition, with a reminder while it lasts. On an HA pair,
        health-check events are sent by the active node only.
      </Text>
      {tested && (
        <Alert color={tested.result.ok ? 'green' : 'red'} title={`Test of ${tested.name}: ${tested.result.ok ? 'delivered' : 'failed'}`} withCloseButton onClose={() => setTested(null)}>
          <Text data-testid="test-answer" className="mono">{tested.result.answer}</Text>
        </Alert>
      )}
      <Card withBorder padding={0}>
        <Table.ScrollContainer minWidth={760}>
          <Table verticalSpacing="xs" aria-label="Alert channels">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Channel</Table.Th>
                <Table.Th>Destination</Table.Th>
                <Table.Th>Enabled</Table.Th>
                <Table.Th>Last delivered</Table.Th>
                <Table.Th>Last error</Table.Th>
                <Table.Th aria-label="Actions" />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {channels.data?.data.map((c) => (
                <Table.Tr key={c.id}>
                  <Table.Td>
                    {/* At least its text's width: a badge's own minimum is none, so a narrow cell cut it to "WEB…". */}
                    {c.name} <Badge variant="light" miw="max-content">{c.type}</Badge>
                  </Table.Td>
                  <Table.Td className="mono" style={{ wordBreak: 'break-all' }}>{destination(c)}</Table.Td>
                  <Table.Td>
                    <Switch checked={c.enabled} aria-label={`${c.name} enabled`} onChange={(e) => setEnabled(c, e.currentTarget.checked)} />
                  </Table.Td>
                  <Table.Td>{dateTime(c.last_success_at)}</Table.Td>
                  <Table.Td>
                    {c.last_error ? (
                      <Text size="sm" c="red" title={dateTime(c.last_error_at)}>
                        {c.last_error}
                      </Text>
                    ) : (
                      '—'
                    )}
                  </Table.Td>
                  <Table.Td>
                    <Group gap="xs" wrap="nowrap">
                      <Button
                        size="xs"
                        variant="light"
                        loading={test.isPending && test.variables === c.id}
                        onClick={() => test.mutate(c.id, { onSuccess: (result) => setTested({ name: c.name, result }), onError: fail })}
                      >
                        Test
                      </Button>
                      <Button size="xs" variant="default" onClick={() => setEditing(c)}>
                        Edit
                      </Button>
                      <ConfirmDeleteButton
                        title={`Delete channel ${c.name}?`}
                        consequence="Its rules are deleted with it; nothing more is sent there."
                        confirmLabel="Delete"
                        onConfirm={() => removeChannel.mutate(c.id, { onError: fail })}
                      />
                    </Group>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
        {channels.data?.count === 0 && (
          <Text c="dimmed" ta="center" p="md">
            No channels: nothing is sent.
          </Text>
        )}
      </Card>
      <ChannelEditor />
      {editing && (
        <Modal opened onClose={() => setEditing(null)} title={`Edit channel ${editing.name}`} size="xl">
          <ChannelEditor channel={editing} onSaved={() => setEditing(null)} />
        </Modal>
      )}
      <Title order={3}>Rules</Title>
      <Card withBorder padding={0}>
        <Table verticalSpacing="xs" aria-label="Alert rules">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Channel</Table.Th>
              <Table.Th>Events</Table.Th>
              <Table.Th>At least</Table.Th>
              <Table.Th>Reminder</Table.Th>
              <Table.Th aria-label="Actions" />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rules.data?.data.map((r) => (
              <Table.Tr key={r.id}>
                <Table.Td>{names.get(r.channel_id) ?? r.channel_id}</Table.Td>
                <Table.Td>{r.kinds.map((k) => KINDS.find((x) => x.value === k)?.label ?? k).join(', ')}</Table.Td>
                <Table.Td>{r.min_severity}</Table.Td>
                <Table.Td>{r.reminder_minutes ? `every ${r.reminder_minutes} min` : 'none'}</Table.Td>
                <Table.Td>
                  <ConfirmDeleteButton
                    title={`Delete rule ${r.id}?`}
                    consequence="These events are no longer sent to this channel."
                    confirmLabel="Delete"
                    onConfirm={() => removeRule.mutate(r.id, { onError: fail })}
                  />
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Card>
      <NewRule channels={channels.data?.data ?? []} />
    </Stack>
  );
}

type ChannelForm = {
  name: string;
  type: ChannelWrite['config']['type'];
  host: string;
  port: number | string;
  security: string;
  transport: string;
  username: string;
  from_address: string;
  to_addresses: string;
  url: string;
  secret: string;
  ca_certificate: string;
};

const EMPTY_CHANNEL: ChannelForm = { name: '', type: 'smtp', host: '', port: '', security: 'starttls', transport: 'udp', username: '',
  from_address: '', to_addresses: '', url: '', secret: '', ca_certificate: '' };

/** A stored channel as the form shows it: its secret is never sent back, so that field starts empty. */
function channelValues(channel: ChannelRead): ChannelForm {
  const config = channel.config;
  const values = { ...EMPTY_CHANNEL, name: channel.name, type: config.type, ca_certificate: config.ca_certificate ?? '' };
  if (config.type === 'smtp') {
    return { ...values, host: config.host, port: config.port ?? '', security: config.security ?? 'starttls', username: config.username ?? '',
      from_address: config.from_address, to_addresses: config.to_addresses.join(', ') };
  }
  if (config.type === 'webhook') return { ...values, url: config.url };
  return { ...values, host: config.host, port: config.port ?? '', transport: config.transport ?? 'udp' };
}

/** An empty secret field sends no secret: a new channel has none, an edited one keeps the stored one. */
function channelBody(v: ChannelForm): ChannelWrite {
  const port = v.port === '' ? undefined : Number(v.port);
  const secret = v.secret === '' ? null : v.secret;
  const ca_certificate = usesTls(v) && v.ca_certificate.trim() ? v.ca_certificate : null;
  if (v.type === 'smtp') {
    const to = v.to_addresses.split(',').map((a) => a.trim()).filter(Boolean);
    const config = { type: 'smtp' as const, host: v.host, port, security: v.security as 'starttls' | 'tls' | 'none',
      username: v.username === '' ? null : v.username, from_address: v.from_address, to_addresses: to, ca_certificate };
    return { name: v.name, config, secret };
  }
  if (v.type === 'webhook') return { name: v.name, config: { type: 'webhook', url: v.url, ca_certificate }, secret };
  return { name: v.name, config: { type: 'syslog', host: v.host, port, transport: v.transport as 'udp' | 'tcp' | 'tls', ca_certificate }, secret: null };
}

/** The API names a channel's field as config.<type>.<field> (or its list index after it). */
function formField(path: string): string {
  const parts = path.split('.');
  if (parts[0] !== 'config') return path;
  return parts.find((p) => p === 'to_addresses') ?? parts[2] ?? path;
}

/** The one form for a channel: a new one (no `channel`), or an edit of `channel` (PUT: it replaces it). */
function ChannelEditor({ channel, onSaved }: { channel?: ChannelRead; onSaved?: () => void }) {
  const queryClient = useQueryClient();
  const create = useMutation(createChannelMutation(queryClient));
  const replace = useMutation(replaceChannelMutation(queryClient));
  const save = channel ? replace : create;
  const form = useForm<ChannelForm>({ initialValues: channel ? channelValues(channel) : EMPTY_CHANNEL });
  const formError = useServerErrors(form, save.error, formField);
  const type = form.values.type;
  const editing = channel !== undefined;
  const keepsSecret = editing && channel.has_secret && channel.config.type === type;
  const submit = (v: ChannelForm) => {
    const done = () => {
      form.reset();
      onSaved?.();
    };
    const body = channelBody(v);
    if (!channel) {
      create.mutate(body, { onSuccess: done });
      return;
    }
    // Only what the form shows changes: the channel stays as enabled as it was, and a syslog
    // channel keeps its facility.
    const kept = channel.config.type === 'syslog' && body.config.type === 'syslog' ? { facility: channel.config.facility } : {};
    replace.mutate({ channelId: channel.id, body: { ...body, config: { ...body.config, ...kept }, enabled: channel.enabled } }, { onSuccess: done });
  };
  return (
    // The edit modal is the frame of an edited channel; a new one has its card.
    <Card withBorder={!editing} padding={editing ? 0 : 'md'}>
      {!editing && <Title order={4} mb="sm">New channel</Title>}
      <form onSubmit={form.onSubmit(submit)} noValidate>
        <Group align="flex-start" wrap="wrap">
          <TextInput label="Name" required {...form.getInputProps('name')} w={180} />
          <Select
            label="Type"
            data={[{ value: 'smtp', label: 'E-mail (SMTP)' }, { value: 'webhook', label: 'Webhook' }, { value: 'syslog', label: 'Remote syslog' }]}
            allowDeselect={false}
            {...form.getInputProps('type')}
            w={180}
          />
          {type === 'webhook' ? (
            <TextInput label="URL" required placeholder="https://hooks.example.org/fulcrum" {...form.getInputProps('url')} style={{ flex: '1 1 300px' }} />
          ) : (
            <>
              <TextInput label="Server" required placeholder="mail.example.org" {...form.getInputProps('host')} w={220} />
              <NumberInput label="Port" placeholder={type === 'smtp' ? '587' : '514'} min={1} max={65535} {...form.getInputProps('port')} w={110} />
            </>
          )}
          {type === 'smtp' && (
            <>
              <Select label="Security" data={[{ value: 'starttls', label: 'STARTTLS' }, { value: 'tls', label: 'TLS (implicit)' }, { value: 'none', label: 'None' }]}
                allowDeselect={false} {...form.getInputProps('security')} w={160} />
              <TextInput label="From" required placeholder="lb@example.org" {...form.getInputProps('from_address')} w={220} />
              <TextInput label="To" required description="Comma-separated" {...form.getInputProps('to_addresses')} style={{ flex: '1 1 260px' }} />
              <TextInput label="User name" description="Empty: no authentication" {...form.getInputProps('username')} w={180} />
            </>
          )}
          {type === 'syslog' && (
            <Select label="Transport" data={[{ value: 'udp', label: 'UDP' }, { value: 'tcp', label: 'TCP' }, { value: 'tls', label: 'TLS' }]}
              allowDeselect={false} {...form.getInputProps('transport')} w={120} />
          )}
          {type !== 'syslog' && (
            <PasswordInput label={type === 'smtp' ? 'Password' : 'Signing secret'}
              description={keepsSecret ? 'Empty: keep the stored one' : 'Stored on this node; never shown again'}
              required={type === 'webhook' && !keepsSecret} {...form.getInputProps('secret')} w={220} />
          )}
          <CaCertificateField channel={form.values} inputProps={form.getInputProps('ca_certificate')} onLoad={(pem) => form.setFieldValue('ca_certificate', pem)} />
        </Group>
        <Button type="submit" mt="md" loading={save.isPending}>{editing ? 'Save channel' : 'Add channel'}</Button>
        {formError && <Alert color="red" mt="sm">{formError}</Alert>}
      </form>
    </Card>
  );
}

function NewRule({ channels }: { channels: ChannelRead[] }) {
  const queryClient = useQueryClient();
  const create = useMutation(createRuleMutation(queryClient));
  const form = useForm({
    initialValues: { channel_id: null as string | null, kinds: ['backend_down', 'backend_up'] as string[], min_severity: 'warning', reminder_minutes: '' as number | string },
  });
  const formError = useServerErrors(form, create.error);
  const submit = (v: typeof form.values) =>
    create.mutate(
      {
        channel_id: Number(v.channel_id),
        kinds: v.kinds as RuleWrite['kinds'],
        min_severity: v.min_severity as RuleWrite['min_severity'],
        reminder_minutes: v.reminder_minutes === '' ? null : Number(v.reminder_minutes),
      },
      { onSuccess: () => form.reset() },
    );
  return (
    <Card withBorder>
      <Title order={4} mb="sm">New rule</Title>
      <form onSubmit={form.onSubmit(submit)} noValidate>
        <Group align="flex-start" wrap="wrap">
          <Select label="Channel" required data={channels.map((c) => ({ value: String(c.id), label: c.name }))} {...form.getInputProps('channel_id')} w={180} />
          <MultiSelect label="Events" required data={KINDS} {...form.getInputProps('kinds')} style={{ flex: '1 1 320px' }} />
          <Select label="At least" data={['info', 'warning', 'critical']} allowDeselect={false} {...form.getInputProps('min_severity')} w={120} />
          <NumberInput label="Remind every (min)" description="Empty: no reminder" min={1} max={10080} {...form.getInputProps('reminder_minutes')} w={170} />
        </Group>
        <Button type="submit" mt="md" loading={create.isPending}>Add rule</Button>
        {formError && <Alert color="red" mt="sm">{formError}</Alert>}
      </form>
    </Card>
  );
}
