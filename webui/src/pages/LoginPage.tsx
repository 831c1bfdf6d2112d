import { Alert, Button, Center, Paper, PasswordInput, Stack, Text, TextInput, Title } from '@mantine/core';
import { useForm } from '@mantine/form';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ApiError, errorMessage } from '../api/errors';
import { loginMutation, setupMutation, setupStatusQuery } from '../api/queries/auth';
import { useServerErrors } from '../components/useServerErrors';
import { PASSWORD_MIN, samePassword, USERNAME_PATTERN, validNewPassword } from '../lib/validation';

/** Login, or on a new appliance the one-time creation of the first admin account. */
export function LoginPage({ networkError }: { networkError: Error | null }) {
  const setup = useQuery(setupStatusQuery());
  const firstRun = setup.data?.needs_setup === true;
  return (
    <Center mih="100vh" p="md">
      <Paper withBorder shadow="sm" p="xl" w={400} maw="100%">
        <Stack>
          <div>
            <Title order={2}>Fulcrum</Title>
            <Text c="dimmed" size="sm">
              {firstRun ? 'Welcome. Create the administrator account to start.' : 'Sign in to the load balancer.'}
            </Text>
          </div>
          {networkError && (
            <Alert color="red" title="The API does not answer">
              {errorMessage(networkError)}
            </Alert>
          )}
          {setup.isPending ? null : firstRun ? <SetupForm /> : <LoginForm />}
        </Stack>
      </Paper>
    </Center>
  );
}

function LoginForm() {
  const queryClient = useQueryClient();
  const login = useMutation(loginMutation(queryClient));
  const form = useForm({ initialValues: { username: '', password: '' } });
  return (
    <form onSubmit={form.onSubmit((values) => login.mutate(values))}>
      <Stack>
        <TextInput label="Username" autoComplete="username" required autoFocus {...form.getInputProps('username')} />
        <PasswordInput label="Password" autoComplete="current-password" required {...form.getInputProps('password')} />
        {login.error && <LoginError error={login.error} />}
        <Button type="submit" loading={login.isPending}>
          Sign in
        </Button>
      </Stack>
    </form>
  );
}

/** A 429 is not a wrong password: say that logins wait for a while, and for how long. */
function LoginError({ error }: { error: Error }) {
  if (error instanceof ApiError && error.status === 429)
    return (
      <Alert color="orange" title="Too many failed logins">
        {errorMessage(error)}. An administrator can unlock the account under Users.
      </Alert>
    );
  return <Alert color="red">{errorMessage(error)}</Alert>;
}

function SetupForm() {
  const queryClient = useQueryClient();
  const setup = useMutation(setupMutation(queryClient));
  const form = useForm({
    initialValues: { username: 'admin', password: '', repeat: '' },
    validate: {
      username: (v) => (USERNAME_PATTERN.test(v) ? null : 'Letters, digits, ".", "_", "@", "-"; up to 64'),
      password: validNewPassword,
      repeat: (v, values) => samePassword(v, values.password),
    },
  });
  const formError = useServerErrors(form, setup.error);
  return (
    <form onSubmit={form.onSubmit(({ username, password }) => setup.mutate({ username, password }))}>
      <Stack>
        <TextInput label="Administrator username" autoComplete="username" required {...form.getInputProps('username')} />
        <PasswordInput
          label="Password"
          description={`At least ${PASSWORD_MIN} characters`}
          autoComplete="new-password"
          required
          {...form.getInputProps('password')}
        />
        <PasswordInput label="Repeat password" autoComplete="new-password" required {...form.getInputProps('repeat')} />
        {formError && <Alert color="red">{formError}</Alert>}
        <Button type="submit" loading={setup.isPending}>
          Create administrator
        </Button>
      </Stack>
    </form>
  );
}
