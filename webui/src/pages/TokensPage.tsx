import { Alert, Button, Card, Code, CopyButton, Group, NumberInput, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useForm } from '@mantine/form';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { createTokenMutation, deleteTokenMutation, tokensQuery } from '../api/queries/users';
import type { TokenCreated } from '../client/types.gen';
import { useServerErrors } from '../components/useServerErrors';
import { dateTime } from '../lib/format';
import { TOKEN_NAME_PATTERN } from '../lib/validation';
import { ConfirmDeleteButton } from '../components/ConfirmDeleteButton';

/** Your own API tokens, for scripts. A new token's secret is shown once. */
export default function TokensPage() {
  const tokens = useQuery(tokensQuery());
  const queryClient = useQueryClient();
  const create = useMutation(createTokenMutation(queryClient));
  const remove = useMutation(deleteTokenMutation(queryClient));
  const [created, setCreated] = useState<TokenCreated | null>(null);
  const form = useForm({
    initialValues: { name: '', expires_in_days: 90 as number | string },
    validate: {
      name: (v) => (TOKEN_NAME_PATTERN.test(v) ? null : 'Letters, digits, spaces, ".", "_", "-"'),
      expires_in_days: (v) => (v === '' || (Number(v) >= 1 && Number(v) <= 3650) ? null : '1 to 3650 days, or empty for never'),
    },
  });
  const formError = useServerErrors(form, create.error);
  return (
    <Stack maw={900}>
      <Title order={2}>My API tokens</Title>
      <Text c="dimmed" size="sm">
        Scripts authenticate with <Code>Authorization: Bearer TOKEN</Code> and act with your role.
      </Text>
      {created && (
        <Alert color="green" title={`Token “${created.name}” created: copy it now, it is not shown again`} withCloseButton onClose={() => setCreated(null)}>
          <Group gap="xs" wrap="nowrap">
            <Code block style={{ flex: 1, wordBreak: 'break-all' }} data-testid="new-token">
              {created.token}
            </Code>
            <CopyButton value={created.token}>{({ copied, copy }) => <Button size="xs" onClick={copy}>{copied ? 'Copied' : 'Copy'}</Button>}</CopyButton>
          </Group>
        </Alert>
      )}
      <Card withBorder>
        <form
          onSubmit={form.onSubmit((v) =>
            create.mutate(
              { name: v.name, expires_in_days: v.expires_in_days === '' ? null : Number(v.expires_in_days) },
              { onSuccess: (token) => (setCreated(token), form.reset()) },
            ),
          )}
          noValidate
        >
          <Group align="flex-start" wrap="wrap">
            <TextInput label="Name" placeholder="backup script" required {...form.getInputProps('name')} style={{ flex: '1 1 220px' }} />
            <NumberInput label="Expires after (days)" description="Empty: never" min={1} max={3650} w={180} {...form.getInputProps('expires_in_days')} />
            <Button type="submit" mt={24} loading={create.isPending}>
              Create token
            </Button>
          </Group>
          {formError && <Alert color="red" mt="sm">{formError}</Alert>}
        </form>
      </Card>
      <Card withBorder padding={0}>
        <Table.ScrollContainer minWidth={560}>
          <Table verticalSpacing="xs">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Starts with</Table.Th>
                <Table.Th>Created</Table.Th>
                <Table.Th>Expires</Table.Th>
                <Table.Th>Last used</Table.Th>
                <Table.Th aria-label="Actions" />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {tokens.data?.data.map((t) => (
                <Table.Tr key={t.id}>
                  <Table.Td>{t.name}</Table.Td>
                  <Table.Td className="mono">{t.prefix}…</Table.Td>
                  <Table.Td>{dateTime(t.created_at)}</Table.Td>
                  <Table.Td>{t.expires_at ? dateTime(t.expires_at) : 'never'}</Table.Td>
                  <Table.Td>{t.last_used_at ? dateTime(t.last_used_at) : 'never'}</Table.Td>
                  <Table.Td>
                    <ConfirmDeleteButton
                      title={`Revoke token ${t.name}?`}
                      consequence="Scripts using it stop working at once."
                      confirmLabel="Revoke"
                      onConfirm={() => remove.mutate(t.id)}
                    />
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
        {tokens.data?.count === 0 && (
          <Text c="dimmed" ta="center" p="md">
            No tokens.
          </Text>
        )}
      </Card>
    </Stack>
  );
}
