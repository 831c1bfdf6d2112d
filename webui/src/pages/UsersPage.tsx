import { Alert, Badge, Button, Card, Group, Modal, PasswordInput, Select, Stack, Switch, Table, TextInput, Title } from '@mantine/core';
import { useForm } from '@mantine/form';
import { notifications } from '@mantine/notifications';
import { IconPlus } from '@tabler/icons-react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { errorMessage } from '../api/errors';
import { createUserMutation, updateUserMutation, usersQuery } from '../api/queries/users';
import { useCan, useCurrentUser } from '../auth/useCurrentUser';
import type { Role } from '../client/types.gen';
import { useServerErrors } from '../components/useServerErrors';
import { dateTime } from '../lib/format';
import { PASSWORD_MIN, USERNAME_PATTERN } from '../lib/validation';

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
  const [adding, setAdding] = useState(false);
  const change = (userId: number, body: { role?: Role; disabled?: boolean }) =>
    update.mutate({ userId, change: body }, { onError: (error) => notifications.show({ color: 'red', message: errorMessage(error) }) });
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
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {users.data?.data.map((u) => (
                <Table.Tr key={u.id}>
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
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      </Card>
      {adding && <NewUserModal onClose={() => setAdding(false)} />}
    </Stack>
  );
}

function NewUserModal({ onClose }: { onClose: () => void }) {
  const queryClient = useQueryClient();
  const create = useMutation(createUserMutation(queryClient));
  const form = useForm({
    initialValues: { username: '', password: '', role: 'viewer' as Role },
    validate: {
      username: (v) => (USERNAME_PATTERN.test(v) ? null : 'Letters, digits, ".", "_", "@", "-"; up to 64'),
      password: (v) => (v.length >= PASSWORD_MIN ? null : `At least ${PASSWORD_MIN} characters`),
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
