import { Alert, Badge, Button, Card, Group, Stack, Text, TextInput, Title } from '@mantine/core';
import { useForm } from '@mantine/form';
import { notifications } from '@mantine/notifications';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { errorMessage } from '../api/errors';
import { certificateQuery, createCsrMutation, csrQuery, putCertificateMutation } from '../api/queries/tls';
import type { ServedCertificate } from '../client/types.gen';
import { FieldTable, type FieldRow } from '../components/FieldTable';
import { PageLoader } from '../components/PageLoader';
import { PemField } from '../components/PemField';
import { useServerErrors } from '../components/useServerErrors';

const EXPIRY_WARNING_DAYS = 30; // the API raises its expiry alarm as far ahead
const DAY = 86_400_000;

function downloadText(text: string, filename: string) {
  const url = URL.createObjectURL(new Blob([text], { type: 'application/pkcs10' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  link.click();
  URL.revokeObjectURL(url);
}

/** System → Certificate: what this node serves over HTTPS, and replacing it (an uploaded pair, or one signed for a CSR made here). */
export default function CertificatePage() {
  const certificate = useQuery(certificateQuery());
  return (
    <Stack>
      <Title order={2}>Certificate</Title>
      {certificate.isPending ? (
        <PageLoader />
      ) : certificate.error ? (
        <Alert color="red">{errorMessage(certificate.error)}</Alert>
      ) : certificate.data ? (
        <CurrentCertificate served={certificate.data} />
      ) : (
        <Alert color="gray">This API serves plain HTTP: it has no certificate to show or replace.</Alert>
      )}
      {certificate.data && <UploadCard />}
      {certificate.data && <CsrCard />}
    </Stack>
  );
}

function CurrentCertificate({ served }: { served: ServedCertificate }) {
  const daysLeft = Math.floor((new Date(served.not_after).getTime() - Date.now()) / DAY);
  const rows: FieldRow[] = [
    ['Subject', served.subject],
    ['Names', served.names.join(', ')],
    ['Issuer', served.self_signed ? <Group gap="xs">{served.issuer} <Badge color="gray">self-signed</Badge></Group> : served.issuer],
    ['Valid', `${new Date(served.not_before).toLocaleString()} – ${new Date(served.not_after).toLocaleString()}`],
    ['SHA-256 fingerprint', <Text key="fp" span className="mono" size="sm" data-testid="certificate-fingerprint" style={{ wordBreak: 'break-all' }}>{served.fingerprint_sha256}</Text>],
    ['Chain', `${served.chain_length} certificate${served.chain_length === 1 ? '' : 's'}`],
  ];
  return (
    <Card withBorder>
      <Stack>
        {daysLeft < EXPIRY_WARNING_DAYS && (
          <Alert color={daysLeft < 0 ? 'red' : 'orange'} title={daysLeft < 0 ? 'Expired' : `Expires in ${daysLeft} days`}>
            Upload a renewed certificate before browsers and the HA peer refuse this one.
          </Alert>
        )}
        <FieldTable rows={rows} labelWidth={200} />
      </Stack>
    </Card>
  );
}

function UploadCard() {
  const queryClient = useQueryClient();
  const upload = useMutation(putCertificateMutation(queryClient));
  const csr = useQuery(csrQuery());
  const form = useForm({ initialValues: { certificate_chain: '', private_key: '' } });
  const formError = useServerErrors(form, upload.error);
  const submit = form.onSubmit(({ certificate_chain, private_key }) =>
    upload.mutate(
      { certificate_chain, private_key: private_key.trim() ? private_key : null },
      {
        onSuccess: (served) => {
          notifications.show({ color: 'green', message: `Installed; served from the next connection (${served.fingerprint_sha256.slice(0, 16)}…)` });
          form.reset();
        },
      },
    ),
  );
  return (
    <Card withBorder>
      <form onSubmit={submit}>
        <Stack>
          <Title order={4}>Upload a certificate</Title>
          <PemField
            label="Certificate chain"
            description="PEM: this appliance's certificate first, then each intermediate"
            value={form.values.certificate_chain}
            onLoad={(text) => form.setFieldValue('certificate_chain', text)}
            inputProps={form.getInputProps('certificate_chain')}
          />
          <PemField
            label="Private key"
            description={csr.data ? 'PEM, unencrypted; leave empty for a certificate signed for the pending request below' : 'PEM, unencrypted'}
            value={form.values.private_key}
            onLoad={(text) => form.setFieldValue('private_key', text)}
            inputProps={form.getInputProps('private_key')}
          />
          {formError && <Alert color="red">{formError}</Alert>}
          <Group>
            <Button type="submit" loading={upload.isPending} disabled={!form.values.certificate_chain.trim()}>
              Install certificate
            </Button>
          </Group>
        </Stack>
      </form>
    </Card>
  );
}

function CsrCard() {
  const queryClient = useQueryClient();
  const pending = useQuery(csrQuery());
  const create = useMutation(createCsrMutation(queryClient));
  const form = useForm({ initialValues: { common_name: '', names: '' } });
  const formError = useServerErrors(form, create.error);
  const submit = form.onSubmit(({ common_name, names }) =>
    create.mutate(
      { common_name, names: names.split(/[\s,]+/).filter(Boolean) },
      { onSuccess: (made) => downloadText(made.csr, `${made.subject.replace(/[^A-Za-z0-9.-]+/g, '_')}.csr`) },
    ),
  );
  return (
    <Card withBorder>
      <form onSubmit={submit}>
        <Stack>
          <Title order={4}>Certificate signing request</Title>
          <Text size="sm" c="dimmed">
            The key is made on this node and never leaves it. Give the request to your certificate authority, then upload the signed
            certificate above without a key.
          </Text>
          <TextInput label="Common name" required {...form.getInputProps('common_name')} />
          <TextInput label="Names" description="DNS names and IP addresses, separated by spaces or commas" required {...form.getInputProps('names')} />
          {formError && <Alert color="red">{formError}</Alert>}
          <Group>
            <Button type="submit" loading={create.isPending}>
              Generate and download CSR
            </Button>
            {pending.data && (
              <Button variant="default" onClick={() => downloadText(pending.data!.csr, 'pending.csr')}>
                Download the pending request ({pending.data.subject})
              </Button>
            )}
          </Group>
        </Stack>
      </form>
    </Card>
  );
}
