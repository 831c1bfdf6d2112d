import type { FirmwareBundle } from '../client/types.gen';

/** A checked bundle waiting to be installed, as GET /firmware gives it. */
export const WAITING_BUNDLE: FirmwareBundle = {
  version: '2.0.0',
  compatible: 'fulcrum-x86_64',
  build: null,
  size: 76_000,
  sha256: 'ab'.repeat(32),
  signer: '/CN=Fulcrum development bundle signer',
  uploaded_at: '2026-03-01T12:00:00Z',
};
