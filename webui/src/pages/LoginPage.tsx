import { Alert, Anchor, Button, Center, Paper, PasswordInput, Stack, Text, TextInput, Title } from '@mantine/core';
import { useForm } from '@mantine/form';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { ApiError, errorMessage } from '../api/errors';
import { loginMutation, setupMutation, setupStatusQuery } from '../api/queries/auth';
import { restoreFirstRunMutation } from '../api/queries/backup';
import { BackupUpload, type BackupUploadValue } from '../components/BackupUpload';
import { useServerErrors } from '../components/useServerErrors';
import { PASSWORD_MIN, samePassword, USERNAME_PATTERN, validNewPassword } from '../lib/validation';

/** Login, or on a new appliance the one-time creation of the first admin account. */
export function LoginPage({ networkError }: { networkError: Error | null }) {
  const setup = useQuery(setupStatusQuery());
  const firstRun = setup.data?.needs_setup === true;
  const [restoring, setRestoring] = useState(false);
  const [restored, setRestored] = useState(false);
  return (
    <Center mih="100vh" p="md">
      <Paper withBorder shadow="sm" p="xl" w={400} maw="100%">
        <Stack>
          <div>
            <Title order={2}>Fulcrum</Title>
            <Text c="dimmed" size="sm">
              {firstRun
                ? restoring
                  ? 'Restore this appliance from a backup: its accounts, configuration and history.'
                  : 'Welcome. Create the administrator account to start.'
                : 'Sign in to the load balancer.'}
            </Text>
          </div>
          {restored && !firstRun && (
            <Alert color="green" title="Restored from the backup">
              Sign in with an account from the backup.
            </Alert>
          )}
          {networkError && (
            <Alert color="red" title="The API does not answer">
              {errorMessage(networkError)}
            </Alert>
          )}
          {setup.isPending ? null : firstRun ? (
            restoring ? (
              <RestoreForm onRestored={() => setRestored(true)} />
            ) : (
              <SetupForm />
            )
          ) : (
            <LoginForm />
          )}
          {firstRun && (
            <Anchor component="button" type="button" size="sm" onClick={() => setRestoring(!restoring)}>
              {restoring ? 'Create a new administrator instead' : 'Restore from a backup'}
            </Anchor>
          )}
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

/** First-run restore: allowed, like setup, only while the appliance has no account. */
function RestoreForm({ onRestored }: { onRestored: () => void }) {
  const queryClient = useQueryClient();
  const restore = useMutation(restoreFirstRunMutation(queryClient));
  const [upload, setUpload] = useState<BackupUploadValue>({ file: null, passphrase: '' });
  const submit = () => {
    if (upload.file) restore.mutate({ file: upload.file, passphrase: upload.passphrase }, { onSuccess: onRestored });
  };
  return (
    <form onSubmit={(e) => { e.preventDefault(); submit(); }}>
      <Stack>
        <BackupUpload value={upload} onChange={setUpload} error={restore.error} />
        <Button type="submit" loading={restore.isPending} disabled={!upload.file || !upload.passphrase}>
          Restore
        </Button>
      </Stack>
    </form>
  );
}
