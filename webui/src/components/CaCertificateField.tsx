import { Divider, Stack } from '@mantine/core';
import { PemField } from './PemField';

/** What decides whether an alert channel makes TLS connections, and its private CA. */
type TlsChannel = { type: string; security: string; url: string; transport: string; ca_certificate: string };

export function usesTls(channel: TlsChannel): boolean {
  if (channel.type === 'smtp') return channel.security !== 'none';
  if (channel.type === 'webhook') return /^https:\/\//i.test(channel.url);
  return channel.transport === 'tls';
}

/** A channel's own CA certificate(s), shown only where the channel uses TLS. */
export function CaCertificateField({ channel, inputProps, onLoad }: { channel: TlsChannel; inputProps: object; onLoad: (pem: string) => void }) {
  if (!usesTls(channel)) return null;
  return (
    <Stack gap="xs" w="100%">
      <Divider label="TLS" labelPosition="left" />
      <PemField
        label="CA certificate (PEM)"
        noun="the CA certificate"
        description="Optional, for a server with a private CA: only these CA certificates are trusted instead of the system's. The server's name is checked either way."
        value={channel.ca_certificate}
        onLoad={onLoad}
        inputProps={inputProps}
      />
    </Stack>
  );
}
