import { Alert, Badge, Button, Card, Checkbox, Group, List, PasswordInput, Stack, Text, Title } from '@mantine/core';
import { useForm } from '@mantine/form';
import { notifications } from '@mantine/notifications';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { exportBackupMutation, restoreBackupMutation } from '../api/queries/backup';
import type { RestoreResult } from '../client/types.gen';
import { BackupUpload, type BackupUploadValue } from '../components/BackupUpload';
import { PlanList } from '../components/PlanList';
import { useServerErrors } from '../components/useServerErrors';

const PASSPHRASE_MIN = 12;

/** Save a downloaded file under its name. */
function save(blob: Blob, filename: string) {
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  link.click();
  URL.revokeObjectURL(url);
}

/**
 * System → Backup: download an encrypted backup of this appliance, or restore one. A restore
 * makes the backup's configuration the candidate: the plan shows what applying it would do, and
 * the pending-changes bar applies it like any other change.
 */
export default function BackupPage() {
  return (
    <Stack>
      <Title order={2}>Backup</Title>
      <ExportCard />
      <RestoreCard />
    </Stack>
  );
}

function ExportCard() {
  const download = useMutation(exportBackupMutation());
  const form = useForm({
    initialValues: { passphrase: '', repeat: '', include_pair_key: false },
    validate: {
      passphrase: (v) => (v.length >= PASSPHRASE_MIN ? null : `At least ${PASSPHRASE_MIN} characters`),
      repeat: (v, values) => (v === values.passphrase ? null : 'The passphrases differ'),
    },
  });
  const formError = useServerErrors(form, download.error);
  const submit = form.onSubmit(({ passphrase, include_pair_key }) =>
    download.mutate(
      { passphrase, include_pair_key },
      {
        onSuccess: ({ blob, filename }) => {
          save(blob, filename);
          notifications.show({ color: 'green', message: `Backup saved as ${filename}` });
          form.reset();
        },
      },
    ),
  );
  return (
    <Card withBorder>
      <form onSubmit={submit}>
        <Stack>
          <Title order={4}>Export</Title>
          <Text size="sm" c="dimmed">
            One encrypted file: the configuration and its revision history, the accounts and API tokens (as stored: hashed), the TLS
            certificate and the SSH host keys. Keep the passphrase: without it the backup cannot be restored.
          </Text>
          <PasswordInput label="Passphrase" description={`At least ${PASSPHRASE_MIN} characters`} autoComplete="new-password" required {...form.getInputProps('passphrase')} />
          <PasswordInput label="Repeat passphrase" autoComplete="new-password" required {...form.getInputProps('repeat')} />
          <Checkbox
            label="Include the HA pair key"
            description="Whoever has the backup and its passphrase could then pose as this node to its peer"
            {...form.getInputProps('include_pair_key', { type: 'checkbox' })}
          />
          {formError && <Alert color="red">{formError}</Alert>}
          <Group>
            <Button type="submit" loading={download.isPending}>
              Download backup
            </Button>
          </Group>
        </Stack>
      </form>
    </Card>
  );
}

function RestoreCard() {
  const queryClient = useQueryClient();
  const restore = useMutation(restoreBackupMutation(queryClient));
  const [upload, setUpload] = useState<BackupUploadValue>({ file: null, passphrase: '' });
  const [users, setUsers] = useState(false);
  const [tls, setTls] = useState(false);
  const [ssh, setSsh] = useState(false);
  const [result, setResult] = useState<RestoreResult | null>(null);
  const submit = () => {
    if (upload.file) restore.mutate({ file: upload.file, passphrase: upload.passphrase, users, tls, ssh }, { onSuccess: setResult });
  };
  return (
    <Card withBorder>
      <form onSubmit={(e) => { e.preventDefault(); submit(); }}>
        <Stack>
          <Title order={4}>Restore</Title>
          <Text size="sm" c="dimmed">
            The backup&apos;s running configuration becomes the candidate: nothing reaches the load balancer until you review and apply the
            pending changes. Accounts, the TLS certificate and the SSH host keys are replaced only if you tick them.
          </Text>
          <BackupUpload value={upload} onChange={(v) => { setUpload(v); setResult(null); }} error={restore.error} />
          <Checkbox label="Replace the accounts and API tokens (every session ends, yours too)" checked={users} onChange={(e) => setUsers(e.currentTarget.checked)} />
          <Checkbox label="Install the backup's TLS certificate" checked={tls} onChange={(e) => setTls(e.currentTarget.checked)} />
          <Checkbox
            label="Install the backup's SSH host keys (SSH clients then know this box as the backed-up one)"
            checked={ssh}
            onChange={(e) => setSsh(e.currentTarget.checked)}
          />
          <Group>
            <Button type="submit" loading={restore.isPending} disabled={!upload.file || !upload.passphrase}>
              Restore as candidate
            </Button>
          </Group>
          {result && <RestoreOutcome result={result} />}
        </Stack>
      </form>
    </Card>
  );
}

function RestoreOutcome({ result }: { result: RestoreResult }) {
  const { manifest } = result;
  return (
    <Stack data-testid="restore-outcome">
      <Alert color="green" title={`Backup of ${manifest.node_name} from ${new Date(manifest.created_at).toLocaleString()}`}>
        Fulcrum {manifest.fulcrum_version}, schema {manifest.schema_revision}: {manifest.includes.revisions} revisions, {manifest.includes.users}{' '}
        accounts. {result.changes?.has_changes ? 'Review the plan below, then apply the pending changes.' : 'Its configuration is the one running.'}
      </Alert>
      {result.notes.length > 0 && (
        <List size="sm">
          {result.notes.map((note) => (
            <List.Item key={note}>{note}</List.Item>
          ))}
        </List>
      )}
      {result.changes && (
        <>
          <Group gap="xs">
            <Text fw={500}>Plan</Text>
            {result.changes.has_changes && <Badge color="yellow">pending</Badge>}
          </Group>
          <PlanList plan={result.changes.plan} />
        </>
      )}
    </Stack>
  );
}
