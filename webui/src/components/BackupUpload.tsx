import { Alert, FileInput, PasswordInput, Stack } from '@mantine/core';
import { errorMessage } from '../api/errors';

export type BackupUploadValue = { file: File | null; passphrase: string };

const REASONS: Record<string, string> = {
  wrong_passphrase: 'Wrong passphrase',
  truncated: 'The file is incomplete',
  tampered: 'The file was changed or damaged',
  newer_format: 'Made by a newer version',
  not_a_backup: 'Not a Fulcrum backup',
  invalid: 'The backup is not valid',
};

/** A backup file and its passphrase, and why the API refused them: shared by the first-run page and System → Backup. */
export function BackupUpload({ value, onChange, error }: { value: BackupUploadValue; onChange: (value: BackupUploadValue) => void; error: unknown }) {
  const code = (error as { code?: string | null } | null)?.code ?? null;
  return (
    <Stack>
      <FileInput label="Backup file" placeholder="fulcrum-….fbk" clearable required value={value.file} onChange={(file) => onChange({ ...value, file })} />
      <PasswordInput
        label="Backup passphrase"
        autoComplete="off"
        required
        value={value.passphrase}
        onChange={(e) => onChange({ ...value, passphrase: e.currentTarget.value })}
      />
      {error != null && (
        <Alert color="red" title={(code && REASONS[code]) ?? 'Not restored'}>
          {errorMessage(error)}
        </Alert>
      )}
    </Stack>
  );
}
