import { queryOptions, type QueryClient } from '@tanstack/react-query';
import {
  firmwareCancelUpgrade,
  firmwareDeleteBundle,
  firmwareGetFirmware,
  firmwareInstallBundle,
  firmwareRebootNode,
  statusHealth,
} from '../../client/sdk.gen';
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

/** The running slot boots next again; the answer is the status that shows the upgrade cancelled. */
export const cancelUpgradeMutation = (queryClient: QueryClient) => ({
  mutationFn: async () => (await firmwareCancelUpgrade()).data,
  onSuccess: (status: FirmwareStatus) => queryClient.setQueryData(firmwareKeys.status, status),
  onError: () => queryClient.invalidateQueries({ queryKey: firmwareKeys.status }),
});

/** The node goes away: nothing to refetch until it is back. */
export const rebootMutation = () => ({
  mutationFn: async () => {
    await firmwareRebootNode();
  },
});

// While the node restarts: asked every few seconds whether it answers, until it is gone and back.
const RESTART_POLL_MS = 3_000;

/** Whether the node answers /health now (never an error: not answering is the point). */
export const nodeAnswersQuery = (enabled: boolean) =>
  queryOptions({
    queryKey: ['node-answers'],
    queryFn: async ({ signal }) => {
      try {
        await statusHealth({ signal, throwOnError: true });
        return { answers: true, at: Date.now() };
      } catch {
        return { answers: false, at: Date.now() };
      }
    },
    enabled,
    retry: false,
    gcTime: 0,
    refetchInterval: RESTART_POLL_MS,
    refetchIntervalInBackground: true,
  });

export type RestartPhase = 'going_down' | 'down' | 'back';

/** One more answer (or none) from the restarting node: it answers until it goes down, then is
 *  down until it answers again. A node that is back stays back. */
export function nextRestartPhase(phase: RestartPhase, answers: boolean): RestartPhase {
  if (phase === 'going_down') return answers ? 'going_down' : 'down';
  if (phase === 'down') return answers ? 'back' : 'down';
  return 'back';
}

/** Once the node is back its boot check decides (seconds to minutes later): the status is read
 *  again until the upgrade record moves on from "installed". */
export const refreshFirmware = (queryClient: QueryClient) => queryClient.invalidateQueries({ queryKey: firmwareKeys.status });
