import { Alert, Badge, Button, Card, FileButton, Group, Progress, Stack, Table, Text, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { errorMessage } from '../api/errors';
import { deleteBundleMutation, firmwareQuery, uploadBundleMutation } from '../api/queries/firmware';
import type { FirmwareBundle, FirmwareSlot, FirmwareStatus } from '../client/types.gen';
import { ConfirmDeleteButton } from '../components/ConfirmDeleteButton';
import { FieldTable, type FieldRow } from '../components/FieldTable';
import { PageLoader } from '../components/PageLoader';
import { byteSize, dateTime } from '../lib/format';

const BOOT_STATUS_COLOR: Record<string, string> = { good: 'teal', bad: 'red' };

/**
 * System → Firmware: this node's two root slots (A/B) as RAUC reports them, and a signed bundle
 * uploaded to be installed. Node-local: each node of a pair is upgraded on its own.
 */
export default function FirmwarePage() {
  const firmware = useQuery(firmwareQuery());
  return (
    <Stack>
      <Title order={2}>Firmware</Title>
      {firmware.isPending ? (
        <PageLoader />
      ) : firmware.error ? (
        <Alert color="red">{errorMessage(firmware.error)}</Alert>
      ) : firmware.data.ab_system ? (
        <>
          <SlotsCard status={firmware.data} />
          {firmware.data.bundle && <WaitingBundleCard bundle={firmware.data.bundle} />}
          <UploadCard replaces={firmware.data.bundle !== null} />
        </>
      ) : (
        <Alert color="gray" title="Not an A/B system">
          <Text size="sm">
            This node does not run from the appliance's A/B firmware image (it runs from a plain disk, or it is a development
            machine), so it has no root slots to upgrade and takes no firmware bundles. Upgrade it the way it was installed.
          </Text>
          {firmware.data.detail && (
            <Text size="sm" c="dimmed" mt="xs" data-testid="firmware-detail">
              {firmware.data.detail}
            </Text>
          )}
        </Alert>
      )}
    </Stack>
  );
}

function SlotsCard({ status }: { status: FirmwareStatus }) {
  return (
    <Card withBorder>
      <Stack>
        <Group justify="space-between">
          <Title order={4}>Root slots</Title>
          <Text size="sm" c="dimmed">
            Takes bundles for <span className="mono">{status.compatible ?? '—'}</span>
          </Text>
        </Group>
        {status.detail && (
          <Alert color="orange" title="The slots cannot be read">
            {status.detail}
          </Alert>
        )}
        {status.slots.length > 0 && (
          <Table.ScrollContainer minWidth={720}>
            <Table>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Slot</Table.Th>
                  <Table.Th>Boot name</Table.Th>
                  <Table.Th>Version</Table.Th>
                  <Table.Th>State</Table.Th>
                  <Table.Th>Boot status</Table.Th>
                  <Table.Th>Device</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {status.slots.map((slot) => (
                  <SlotRow key={slot.name} slot={slot} />
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </Stack>
    </Card>
  );
}

function SlotRow({ slot }: { slot: FirmwareSlot }) {
  return (
    <Table.Tr data-testid={`slot-${slot.name}`}>
      <Table.Td className="mono">{slot.name}</Table.Td>
      <Table.Td>{slot.bootname ?? '—'}</Table.Td>
      <Table.Td>{slot.version ?? '—'}</Table.Td>
      <Table.Td>{slot.state === 'booted' ? <Badge color="blue" miw="max-content">booted</Badge> : slot.state}</Table.Td>
      <Table.Td>
        {slot.boot_status ? <Badge color={BOOT_STATUS_COLOR[slot.boot_status] ?? 'gray'} miw="max-content">{slot.boot_status}</Badge> : '—'}
      </Table.Td>
      <Table.Td className="mono">{slot.device}</Table.Td>
    </Table.Tr>
  );
}

function WaitingBundleCard({ bundle }: { bundle: FirmwareBundle }) {
  const queryClient = useQueryClient();
  const remove = useMutation(deleteBundleMutation(queryClient));
  const rows: FieldRow[] = [
    ['Version', bundle.version],
    ['Compatible', bundle.compatible],
    ['Build', bundle.build ?? '—'],
    ['Size', `${byteSize(bundle.size)} (${bundle.size.toLocaleString()} bytes)`],
    ['SHA-256', <Text key="sha" span className="mono" size="sm" style={{ wordBreak: 'break-all' }}>{bundle.sha256}</Text>],
    ['Signed by', bundle.signer],
    ['Uploaded', dateTime(bundle.uploaded_at)],
  ];
  return (
    <Card withBorder data-testid="waiting-bundle">
      <Stack>
        <Group justify="space-between" wrap="nowrap">
          <Title order={4}>Waiting to be installed</Title>
          <ConfirmDeleteButton
            title="Delete the waiting bundle?"
            consequence={`Bundle ${bundle.version} is deleted from this node; upload it again to install it later.`}
            confirmLabel="Delete bundle"
            onConfirm={() => remove.mutate()}
          />
        </Group>
        <Text size="sm" c="dimmed">
          Its signature and compatible string have been checked. Installing it into the inactive slot is not available
          from the dashboard yet.
        </Text>
        {remove.error && <Alert color="red">{errorMessage(remove.error)}</Alert>}
        <FieldTable rows={rows} labelWidth={140} />
      </Stack>
    </Card>
  );
}

function UploadCard({ replaces }: { replaces: boolean }) {
  const queryClient = useQueryClient();
  const upload = useMutation(uploadBundleMutation(queryClient));
  const [file, setFile] = useState<File | null>(null);
  const [sent, setSent] = useState(0);
  const start = () => {
    if (!file) return;
    setSent(0);
    upload.mutate({ file, onProgress: setSent }, { onSuccess: () => setFile(null) });
  };
  return (
    <Card withBorder>
      <Stack>
        <Title order={4}>Upload a bundle</Title>
        <Text size="sm" c="dimmed">
          A RAUC bundle (.raucb) signed by a key this appliance trusts, for{' '}
          {replaces ? 'this system; it replaces the bundle waiting above.' : 'this system.'} It is checked before it is kept.
        </Text>
        <Group>
          <FileButton onChange={setFile} accept=".raucb,application/octet-stream" disabled={upload.isPending}>
            {(props) => (
              <Button variant="default" {...props}>
                Choose a bundle…
              </Button>
            )}
          </FileButton>
          <Text size="sm" data-testid="chosen-bundle">
            {file ? `${file.name} (${byteSize(file.size)})` : 'No file chosen'}
          </Text>
        </Group>
        {upload.isPending && (
          <Stack gap={4}>
            <Progress value={sent * 100} animated={sent >= 1} aria-label="Upload progress" />
            <Text size="sm" c="dimmed">
              {sent < 1 ? `Uploading: ${Math.floor(sent * 100)}%` : 'Uploaded; checking its signature and compatible string…'}
            </Text>
          </Stack>
        )}
        {upload.error && (
          <Alert color="red" title="The bundle was not kept">
            {errorMessage(upload.error)}
          </Alert>
        )}
        <Group>
          <Button onClick={start} disabled={!file} loading={upload.isPending}>
            Upload
          </Button>
        </Group>
      </Stack>
    </Card>
  );
}
