import { Alert, Button, Card, Checkbox, Group, PasswordInput, Stack, Text, Title } from '@mantine/core';
import { useForm } from '@mantine/form';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { changePasswordMutation } from '../api/queries/auth';
import { useCurrentUser } from '../auth/useCurrentUser';
import { useServerErrors } from '../components/useServerErrors';
import { PASSWORD_MIN, samePassword, validNewPassword } from '../lib/validation';

/** Every signed-in user changes their own password here (POST /auth/password). */
export default function ChangePasswordPage() {
  const me = useCurrentUser();
  const queryClient = useQueryClient();
  const change = useMutation(changePasswordMutation(queryClient));
  const form = useForm({
    initialValues: { current_password: '', new_password: '', repeat: '', keep_this_session: true },
    validate: {
      current_password: (v) => (v ? null : 'Required'),
      new_password: (v, values) => validNewPassword(v) ?? (v === values.current_password ? 'The new password is the same as the current one' : null),
      repeat: (v, values) => samePassword(v, values.new_password),
    },
  });
  const formError = useServerErrors(form, change.error);
  return (
    <Stack maw={480}>
      <Title order={2}>Change my password</Title>
      <Text c="dimmed" size="sm">
        For {me.username}. Changing it signs you out of every other browser and revokes your API tokens: whoever knew
        the old password may have used it to get them.
      </Text>
      <Card withBorder>
        <form
          onSubmit={form.onSubmit(({ current_password, new_password, keep_this_session }) =>
            change.mutate({ current_password, new_password, keep_this_session }, { onSuccess: () => form.reset() }),
          )}
          noValidate
        >
          <Stack>
            <PasswordInput label="Current password" autoComplete="current-password" required {...form.getInputProps('current_password')} />
            <PasswordInput
              label="New password"
              description={`At least ${PASSWORD_MIN} characters; a passphrase is best`}
              autoComplete="new-password"
              required
              {...form.getInputProps('new_password')}
            />
            <PasswordInput label="Repeat the new password" autoComplete="new-password" required {...form.getInputProps('repeat')} />
            <Checkbox
              label="Keep me signed in here"
              description="Clear it to sign out here too, e.g. on a shared computer"
              {...form.getInputProps('keep_this_session', { type: 'checkbox' })}
            />
            {formError && <Alert color="red">{formError}</Alert>}
            {change.isSuccess && !form.isDirty() && (
              <Alert color="green" title="Password changed">
                You stay signed in here; your other sessions and API tokens have ended. Create new tokens for your scripts
                under “My API tokens”.
              </Alert>
            )}
            <Group justify="flex-end">
              <Button type="submit" loading={change.isPending}>
                Change password
              </Button>
            </Group>
          </Stack>
        </form>
      </Card>
    </Stack>
  );
}
