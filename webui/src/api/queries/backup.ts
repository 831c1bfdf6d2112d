import type { QueryClient } from '@tanstack/react-query';
import { backupExportBackup, backupRestoreBackup, backupRestoreFirstRun } from '../../client/sdk.gen';
import type { BackupRequest, RestoreResult } from '../../client/types.gen';
import { authKeys } from './auth';

/** The passphrase travels in a header, percent-encoded so that any Unicode passphrase fits. */
const passphraseHeader = (passphrase: string) => ({ 'X-Fulcrum-Backup-Passphrase': encodeURIComponent(passphrase) });

export type RestoreRequest = { file: File; passphrase: string; users: boolean; tls: boolean; ssh: boolean };

/** The encrypted backup as a file to save, named as the API names it. */
export const exportBackupMutation = () => ({
  mutationFn: async (body: BackupRequest) => {
    const { data, response } = await backupExportBackup({ body, parseAs: 'blob' });
    const named = /filename="([^"]+)"/.exec(response.headers.get('content-disposition') ?? '');
    return { blob: data, filename: named?.[1] ?? 'fulcrum.fbk' };
  },
});

/** On a running appliance: the backup's configuration becomes the candidate, to review and apply. */
export const restoreBackupMutation = (queryClient: QueryClient) => ({
  mutationFn: async ({ file, passphrase, users, tls, ssh }: RestoreRequest) =>
    (await backupRestoreBackup({ body: file, headers: passphraseHeader(passphrase), query: { users, tls, ssh } })).data,
  onSuccess: (result: RestoreResult) => {
    if (result.sessions_ended) {
      queryClient.removeQueries({ predicate: (query) => query.queryKey[0] !== 'auth' });
      void queryClient.invalidateQueries({ queryKey: authKeys.me });
    } else {
      void queryClient.invalidateQueries();
    }
  },
});

/** On a fresh appliance (its first-run page): the backup's accounts replace setup; then sign in. */
export const restoreFirstRunMutation = (queryClient: QueryClient) => ({
  mutationFn: async ({ file, passphrase }: Pick<RestoreRequest, 'file' | 'passphrase'>) =>
    (await backupRestoreFirstRun({ body: file, headers: passphraseHeader(passphrase) })).data,
  onSuccess: () => queryClient.setQueryData(authKeys.setup, { needs_setup: false }),
});
