import { Alert, Anchor, Badge, Button, Card, Group, Modal, PasswordInput, Select, Stack, Switch, Table, Text, TextInput, Title } from '@mantine/core';
import { useForm } from '@mantine/form';
import { notifications } from '@mantine/notifications';
import { IconKey, IconPlus } from '@tabler/icons-react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'react-router';
import { errorMessage } from '../api/errors';
import { createUserMutation, deleteUserMutation, unlockUserMutation, updateUserMutation, usersQuery } from '../api/queries/users';
import { useCan, useCurrentUser } from '../auth/useCurrentUser';
import type { ManagedUser, Role, UserRead } from '../client/types.gen';
import { ConfirmDeleteButton } from '../components/ConfirmDeleteButton';
import { useServerErrors } from '../components/useServerErrors';
import { dateTime } from '../lib/format';
import { PASSWORD_MIN, samePassword, USERNAME_PATTERN, validNewPassword } from '../lib/validation';

const ROLES: { value: Role; label: string }[] = [
  { value: 'viewer', label: 'Viewer: reads everything, changes nothing' },
  { value: 'operator', label: 'Operator: edits services and backends, applies and rolls back' },
  { value: 'admin', label: 'Admin: everything, including users, HA and firewall' },
];

export default function UsersPage() {
  const isAdmin = useCan('manageUsers');
  if (!isAdmin) return <Alert color="gray" title="Administrators only">Your role cannot manage users.</Alert>;
  return <Users />;
}

function Users() {
  const users = useQuery(usersQuery());
  const me = useCurrentUser();
  const queryClient = useQueryClient();
  const update = useMutation(updateUserMutation(queryClient));
  const remove = useMutation(deleteUserMutation(queryClient));
  const [adding, setAdding] = useState(false);
  const [resetting, setResetting] = useState<UserRead | null>(null);
  const change = (userId: number, body: { role?: Role; disabled?: boolean }) =>
    update.mutate({ userId, change: body }, { onError: (error) => notifications.show({ color: 'red', message: errorMessage(error) }) });
  const deleteUser = (user: UserRead) =>
    remove.mutate(user.id, {
      onSuccess: () => notifications.show({ message: `User ${user.username} deleted.` }),
      onError: (error) => notifications.show({ color: 'red', title: `${user.username} was not deleted`, message: errorMessage(error) }),
    });
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Users</Title>
        <Button leftSection={<IconPlus size={16} />} onClick={() => setAdding(true)}>
          New user
        </Button>
      </Group>
      <Card withBorder padding={0}>
        <Table.ScrollContainer minWidth={560}>
          <Table verticalSpacing="xs">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>User</Table.Th>
                <Table.Th>Role</Table.Th>
                <Table.Th>Created</Table.Th>
                <Table.Th>Active</Table.Th>
                <Table.Th>Sign-in</Table.Th>
                <Table.Th aria-label="Actions" />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {users.data?.data.map((u) => (
                <Table.Tr key={u.id} data-testid={`user-${u.username}`}>
                  <Table.Td fw={500}>
                    {u.username}
                    {u.id === me.id && <Badge ml="xs" size="xs">you</Badge>}
                  </Table.Td>
                  <Table.Td>
                    <Select
                      aria-label={`Role of ${u.username}`}
                      data={ROLES.map((r) => ({ value: r.value, label: r.value }))}
                      value={u.role}
                      onChange={(v) => v && change(u.id, { role: v as Role })}
                      allowDeselect={false}
                      disabled={u.id === me.id}
                      w={130}
                      size="xs"
                    />
                  </Table.Td>
                  <Table.Td>{dateTime(u.created_at)}</Table.Td>
                  <Table.Td>
                    <Switch
                      aria-label={`${u.username} may sign in`}
                      checked={!u.disabled}
                      disabled={u.id === me.id}
                      onChange={(e) => change(u.id, { disabled: !e.currentTarget.checked })}
                    />
                  </Table.Td>
                  <Table.Td>
                    <SignInState user={u} />
                  </Table.Td>
                  <Table.Td>
                    {u.id === me.id ? (
                      <Anchor component={Link} to="/account/password" size="sm">
                        Change my password
                      </Anchor>
                    ) : (
                      <Group gap={4} wrap="nowrap" justify="flex-end">
                        <Button size="compact-xs" variant="light" leftSection={<IconKey size={12} />} onClick={() => setResetting(u)}>
                          Reset password
                        </Button>
                        <ConfirmDeleteButton
                          title={`Delete user ${u.username}?`}
                          consequence={`${u.username} is signed out everywhere and their API tokens stop working at once. The audit log keeps what they did.`}
                          confirmLabel="Delete user"
                          onConfirm={() => deleteUser(u)}
                        />
                      </Group>
                    )}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      </Card>
      {adding && <NewUserModal onClose={() => setAdding(false)} />}
      {resetting && <ResetPasswordModal user={resetting} onClose={() => setResetting(null)} />}
    </Stack>
  );
}

/** The login throttle's state for the account: locked (with an unlock), or recent failures. */
function SignInState({ user }: { user: ManagedUser }) {
  const queryClient = useQueryClient();
  const unlock = useMutation(unlockUserMutation(queryClient));
  if (user.locked_until) {
    return (
      <Group gap={4} wrap="nowrap">
        <Badge color="red" variant="light" title={`${user.failed_logins} failed logins`}>
          locked until {dateTime(user.locked_until)}
        </Badge>
        <Button
          size="compact-xs"
          variant="light"
          loading={unlock.isPending}
          onClick={() =>
            unlock.mutate(user.id, {
              onSuccess: () => notifications.show({ message: `${user.username} may sign in again.` }),
              onError: (error) => notifications.show({ color: 'red', message: errorMessage(error) }),
            })
          }
        >
          Unlock
        </Button>
      </Group>
    );
  }
  if (user.failed_logins > 0) return <Text size="sm" c="dimmed">{user.failed_logins} failed logins</Text>;
  return null;
}

function NewUserModal({ onClose }: { onClose: () => void }) {
  const queryClient = useQueryClient();
  const create = useMutation(createUserMutation(queryClient));
  const form = useForm({
    initialValues: { username: '', password: '', role: 'viewer' as Role },
    validate: {
      username: (v) => (USERNAME_PATTERN.test(v) ? null : 'Letters, digits, ".", "_", "@", "-"; up to 64'),
      password: validNewPassword,
    },
  });
  const formError = useServerErrors(form, create.error);
  return (
    <Modal opened onClose={onClose} title="New user">
      <form onSubmit={form.onSubmit((v) => create.mutate(v, { onSuccess: onClose }))} noValidate>
        <Stack>
          <TextInput label="Username" required {...form.getInputProps('username')} />
          <PasswordInput label="Initial password" description={`At least ${PASSWORD_MIN} characters`} required {...form.getInputProps('password')} />
          <Select label="Role" data={ROLES} allowDeselect={false} {...form.getInputProps('role')} />
          {formError && <Alert color="red">{formError}</Alert>}
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>Cancel</Button>
            <Button type="submit" loading={create.isPending}>Create user</Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

/** An admin sets a new password for someone who lost theirs; that person's sessions end. */
function ResetPasswordModal({ user, onClose }: { user: UserRead; onClose: () => void }) {
  const queryClient = useQueryClient();
  const update = useMutation(updateUserMutation(queryClient));
  const form = useForm({
    initialValues: { password: '', repeat: '' },
    validate: { password: validNewPassword, repeat: (v, values) => samePassword(v, values.password) },
  });
  const formError = useServerErrors(form, update.error);
  return (
    <Modal opened onClose={onClose} title={`Reset the password of ${user.username}`}>
      <form
        onSubmit={form.onSubmit(({ password }) =>
          update.mutate(
            { userId: user.id, change: { password } },
            {
              onSuccess: () => {
                notifications.show({ color: 'green', message: `New password set for ${user.username}; their sessions and API tokens ended.` });
                onClose();
              },
            },
          ),
        )}
        noValidate
      >
        <Stack>
          <Text size="sm">
            {user.username} is signed out of every browser and signs in again with the new password. Their API tokens are
            revoked too: whoever knew the old password may have made some.
          </Text>
          <PasswordInput label="New password" description={`At least ${PASSWORD_MIN} characters`} autoComplete="new-password" required {...form.getInputProps('password')} />
          <PasswordInput label="Repeat the new password" autoComplete="new-password" required {...form.getInputProps('repeat')} />
          {formError && <Alert color="red">{formError}</Alert>}
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>Cancel</Button>
            <Button type="submit" loading={update.isPending}>Set new password</Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
