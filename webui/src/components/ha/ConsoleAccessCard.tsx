import { Alert, Badge, Button, Card, Checkbox, Group, PasswordInput, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useForm } from '@mantine/form';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { consoleAccessQuery, putConsoleAccessMutation } from '../../api/queries/console';
import { useCan } from '../../auth/useCurrentUser';
import type { ConsoleAccess } from '../../client/types.gen';
import { dateTime } from '../../lib/format';
import { useServerErrors } from '../useServerErrors';

const MIN_LENGTH = 12;
const PRINTABLE_ASCII = /^[ -~]*$/;

/**
 * Password protection of this node's console menu (its screen and serial port), like pfSense's
 * "Password protect the console menu". The appliance's root account has no password, so turning
 * it on sets a console password; only its hash is kept, on this node.
 */
export function ConsoleAccessCard() {
  const access = useQuery(consoleAccessQuery());
  const canEdit = useCan('editHa');
  if (!access.data) return null;
  return (
    <Card withBorder data-testid="console-access">
      <Group justify="space-between">
        <Title order={4}>Console access</Title>
        {access.data.password_required ? <Badge color="green">Password required</Badge> : <Badge color="gray">Open</Badge>}
      </Group>
      <Text size="xs" c="dimmed" mb="sm">
        The console menu on this node’s screen and serial port sets its address, resets administrators’ passwords,
        factory resets and opens a root shell.{' '}
        {access.data.password_required
          ? `It asks for the console password first (set ${access.data.changed_at ? dateTime(access.data.changed_at) : ''}).`
          : 'Without a password, whoever reaches the console can do all of that.'}{' '}
        Never copied to the peer; takes effect at once. {canEdit ? '' : 'Only an administrator can change it.'}
      </Text>
      {canEdit && <ConsoleAccessForm access={access.data} />}
    </Card>
  );
}

function ConsoleAccessForm({ access }: { access: ConsoleAccess }) {
  const queryClient = useQueryClient();
  const save = useMutation(putConsoleAccessMutation(queryClient));
  const form = useForm({
    initialValues: { password_required: access.password_required, password: '', again: '' },
    validate: {
      password: (value, values) => {
        if (!values.password_required) return null;
        if (!value) return access.password_required ? null : 'Set a console password: the appliance’s root account has none';
        if (value.length < MIN_LENGTH) return `${MIN_LENGTH} characters or more`;
        return PRINTABLE_ASCII.test(value) ? null : 'Printable ASCII only: the console keyboard may not type other characters';
      },
      again: (value, values) => (values.password_required && value !== values.password ? 'The passwords differ' : null),
    },
  });
  const formError = useServerErrors(form, save.error);
  const submit = form.onSubmit((values) =>
    save.mutate(
      { password_required: values.password_required, password: values.password_required && values.password ? values.password : null },
      {
        onSuccess: (saved) => {
          // The password fields empty again: what is kept is only its hash, on the appliance.
          const next = { password_required: saved.password_required, password: '', again: '' };
          form.setValues(next);
          form.resetDirty(next);
        },
      },
    ),
  );
  const required = form.values.password_required;
  return (
    <form onSubmit={submit} noValidate>
      <Stack>
        <Checkbox label="Require a password on the console" {...form.getInputProps('password_required', { type: 'checkbox' })} />
        {required && (
          <SimpleGrid cols={{ base: 1, sm: 2 }}>
            <PasswordInput
              label={access.password_required ? 'New console password' : 'Console password'}
              description={access.password_required ? 'Empty: keep the current one' : `${MIN_LENGTH} characters or more, printable ASCII`}
              autoComplete="new-password"
              {...form.getInputProps('password')}
            />
            <PasswordInput label="Again" autoComplete="new-password" {...form.getInputProps('again')} />
          </SimpleGrid>
        )}
        {formError && <Alert color="red">{formError}</Alert>}
        {save.isSuccess && !form.isDirty() && (
          <Text size="sm" c="green">
            Saved: the console {save.data.password_required ? 'now asks for the password' : 'is open'}.
          </Text>
        )}
        <Group justify="flex-end">
          <Button type="submit" loading={save.isPending} disabled={!form.isDirty()}>
            Save console access
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
