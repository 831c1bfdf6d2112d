import { queryOptions, type QueryClient } from '@tanstack/react-query';
import { firmwareDeleteBundle, firmwareGetFirmware, firmwareInstallBundle, firmwareRebootNode } from '../../client/sdk.gen';
import type { FirmwareBundle, FirmwareStatus } from '../../client/types.gen';
import { uploadFile } from '../http';

/** This node's slots and its waiting bundle: node-local, like the certificate. */
const firmwareKeys = { status: ['firmware'] as const };
const BUNDLE_URL = '/api/v1/firmware/bundle';
// RAUC's progress moves by the second while it writes a slot; otherwise nothing moves on its own.
const INSTALL_POLL_MS = 2_000;

export type BundleUpload = { file: File; onProgress: (fraction: number) => void };

/**
 * RAUC is writing a slot: its service says so, or our upgrade record does (the API moves the record
 * on only once RAUC is idle again, on the next read).
 */
export const installRunning = (status: FirmwareStatus | undefined) =>
  (status?.install?.operation ?? 'idle') !== 'idle' || status?.upgrade?.state === 'installing';

export const firmwareQuery = () =>
  queryOptions({
    queryKey: firmwareKeys.status,
    queryFn: async ({ signal }) => (await firmwareGetFirmware({ signal })).data,
    refetchInterval: (query) => (installRunning(query.state.data) ? INSTALL_POLL_MS : false),
  });

const withBundle = (queryClient: QueryClient, bundle: FirmwareBundle | null) =>
  queryClient.setQueryData<FirmwareStatus>(firmwareKeys.status, (status) => status && { ...status, bundle });

/** Streamed as the request body (the generated client's fetch cannot report upload progress). */
export const uploadBundleMutation = (queryClient: QueryClient) => ({
  mutationFn: ({ file, onProgress }: BundleUpload) => uploadFile<FirmwareBundle>(BUNDLE_URL, file, onProgress),
  onSuccess: (bundle: FirmwareBundle) => withBundle(queryClient, bundle),
});

export const deleteBundleMutation = (queryClient: QueryClient) => ({
  mutationFn: async () => {
    await firmwareDeleteBundle();
  },
  onSuccess: () => withBundle(queryClient, null),
});

/** Answers once RAUC has started, with the status that shows it installing: the query polls from there. */
export const installBundleMutation = (queryClient: QueryClient) => ({
  mutationFn: async () => (await firmwareInstallBundle()).data,
  onSuccess: (status: FirmwareStatus) => queryClient.setQueryData(firmwareKeys.status, status),
  // A refusal may still have recorded the upgrade as failed (RAUC did not take the bundle).
  onError: () => queryClient.invalidateQueries({ queryKey: firmwareKeys.status }),
});

/** The node goes away: nothing to refetch until it is back. */
export const rebootMutation = () => ({
  mutationFn: async () => {
    await firmwareRebootNode();
  },
});
