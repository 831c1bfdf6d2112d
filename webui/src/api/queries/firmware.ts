import { queryOptions, type QueryClient } from '@tanstack/react-query';
import { firmwareDeleteBundle, firmwareGetFirmware } from '../../client/sdk.gen';
import type { FirmwareBundle, FirmwareStatus } from '../../client/types.gen';
import { uploadFile } from '../http';

/** This node's slots and its waiting bundle: node-local, like the certificate. */
const firmwareKeys = { status: ['firmware'] as const };
const BUNDLE_URL = '/api/v1/firmware/bundle';

export type BundleUpload = { file: File; onProgress: (fraction: number) => void };

export const firmwareQuery = () =>
  queryOptions({ queryKey: firmwareKeys.status, queryFn: async ({ signal }) => (await firmwareGetFirmware({ signal })).data });

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
