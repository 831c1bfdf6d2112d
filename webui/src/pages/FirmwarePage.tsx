import { Alert, Badge, Button, Card, FileButton, Group, Progress, Stack, Table, Text, Title, type MantineColor } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { errorMessage } from '../api/errors';
import {
  cancelUpgradeMutation,
  deleteBundleMutation,
  firmwareQuery,
  installBundleMutation,
  installRunning,
  nextRestartPhase,
  nodeAnswersQuery,
  rebootMutation,
  refreshFirmware,
  type RestartPhase,
  uploadBundleMutation,
} from '../api/queries/firmware';
import type { FirmwareBundle, FirmwareInstall, FirmwareSlot, FirmwareStatus, FirmwareUpgrade } from '../client/types.gen';
import { ConfirmButton } from '../components/ConfirmButton';
import { ConfirmDeleteButton } from '../components/ConfirmDeleteButton';
import { FieldTable, type FieldRow } from '../components/FieldTable';
import { PageLoader } from '../components/PageLoader';
import { byteSize, dateTime } from '../lib/format';

const BOOT_STATUS_COLOR: Record<string, string> = { good: 'teal', bad: 'red' };

/**
 * System → Firmware: this node's two root slots (A/B) as RAUC reports them, a signed bundle uploaded
 * to be installed into the slot that is not running, and the last upgrade to its end (installed,
 * restarted into, found good or rolled back). Node-local: each node of a pair is upgraded on its own.
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
          {firmware.data.upgrade && <UpgradeCard upgrade={firmware.data.upgrade} install={firmware.data.install ?? null} />}
          {firmware.data.bundle && <WaitingBundleCard bundle={firmware.data.bundle} status={firmware.data} />}
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
        {/* Our own installs show in the upgrade card; this is one started on the console (`rauc install`). */}
        {status.install && status.install.operation !== 'idle' && status.upgrade?.state !== 'installing' && (
          <Alert color="blue" title="RAUC is installing a bundle that was not started from the dashboard">
            <InstallProgress install={status.install} />
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
                  <SlotRow key={slot.name} slot={slot} bootsNext={!!slot.bootname && slot.bootname === status.primary} />
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </Stack>
    </Card>
  );
}

function SlotRow({ slot, bootsNext }: { slot: FirmwareSlot; bootsNext: boolean }) {
  return (
    <Table.Tr data-testid={`slot-${slot.name}`}>
      <Table.Td className="mono">{slot.name}</Table.Td>
      <Table.Td>
        <Group gap="xs" wrap="nowrap">
          {slot.bootname ?? '—'}
          {bootsNext && (
            <Badge color="grape" variant="light" miw="max-content">
              boots next
            </Badge>
          )}
        </Group>
      </Table.Td>
      <Table.Td>{slot.version ?? '—'}</Table.Td>
      <Table.Td>{slot.state === 'booted' ? <Badge color="blue" miw="max-content">booted</Badge> : slot.state}</Table.Td>
      <Table.Td>
        {slot.boot_status ? <Badge color={BOOT_STATUS_COLOR[slot.boot_status] ?? 'gray'} miw="max-content">{slot.boot_status}</Badge> : '—'}
      </Table.Td>
      <Table.Td className="mono">{slot.device}</Table.Td>
    </Table.Tr>
  );
}

function WaitingBundleCard({ bundle, status }: { bundle: FirmwareBundle; status: FirmwareStatus }) {
  const queryClient = useQueryClient();
  const remove = useMutation(deleteBundleMutation(queryClient));
  const install = useMutation(installBundleMutation(queryClient));
  const into = slotName(status.slots.find((slot) => slot.bootname && slot.bootname !== status.booted)?.bootname, 'the slot that is not running');
  const running = slotName(status.booted, 'the running slot');
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
          Its signature and compatible string have been checked. Installing writes it into {into}; this node keeps serving
          from {running} meanwhile, and runs the new system only once you restart it.
        </Text>
        {remove.error && <Alert color="red">{errorMessage(remove.error)}</Alert>}
        <FieldTable rows={rows} labelWidth={140} />
        {install.error && (
          <Alert color="red" title="The install did not start">
            {errorMessage(install.error)}
          </Alert>
        )}
        <Group>
          <ConfirmButton
            title={`Install ${bundle.version} into ${into}?`}
            consequence={`RAUC writes bundle ${bundle.version} into ${into}. This node keeps serving from ${running} while it does; the new system runs after a restart, which you start when the install is done.`}
            confirmLabel="Install"
            loading={install.isPending}
            disabled={installRunning(status)}
            onConfirm={() => install.mutate()}
          >
            Install
          </ConfirmButton>
        </Group>
      </Stack>
    </Card>
  );
}

/** "slot B"; RAUC may not be able to say which slot is which, then the words for it. */
function slotName(bootname: string | null | undefined, otherwise: string): string {
  return bootname ? `slot ${bootname}` : otherwise;
}

// The last upgrade's state in an admin's words: each outcome, its colour and its headline.
const UPGRADE_STATES: Record<FirmwareUpgrade['state'], { color: MantineColor; headline: (upgrade: FirmwareUpgrade) => string }> = {
  installing: { color: 'blue', headline: (u) => `Installing ${u.version} into slot ${u.to_slot}…` },
  install_failed: { color: 'red', headline: (u) => `Installing ${u.version} failed; the running system was not touched` },
  installed: { color: 'blue', headline: (u) => `${u.version} is installed in slot ${u.to_slot}. It runs after a restart.` },
  cancelled: { color: 'gray', headline: (u) => `The upgrade to ${u.version} was cancelled before the restart` },
  good: { color: 'green', headline: (u) => `Upgraded to ${u.version} (slot ${u.to_slot} is good)` },
  failed: { color: 'orange', headline: (u) => `${u.version} was found unhealthy and is being rolled back` },
  rolled_back: { color: 'red', headline: (u) => `The upgrade to ${u.version} failed and was rolled back to slot ${u.from_slot}` },
};

function UpgradeCard({ upgrade, install }: { upgrade: FirmwareUpgrade; install: FirmwareInstall | null }) {
  const { color, headline } = UPGRADE_STATES[upgrade.state];
  const rows: FieldRow[] = [
    ['From slot', upgrade.from_slot],
    ['Into slot', upgrade.to_slot],
    ['Started', dateTime(upgrade.started_at)],
    ['Last change', dateTime(upgrade.updated_at)],
  ];
  return (
    <Card withBorder data-testid="upgrade">
      <Stack>
        <Title order={4}>Last upgrade</Title>
        <Alert color={color} title={headline(upgrade)}>
          {upgrade.state === 'installing' ? (
            <InstallProgress install={install} />
          ) : upgrade.state === 'installed' ? (
            `The new system is kept only once it is found healthy after the restart; otherwise this node goes back to slot ${upgrade.from_slot} by itself.`
          ) : (
            upgrade.reason
          )}
        </Alert>
        {upgrade.state === 'installed' && <RestartNow upgrade={upgrade} />}
        <FieldTable rows={rows} labelWidth={140} />
      </Stack>
    </Card>
  );
}

/** RAUC's own account of the install: how far it is, and the step it is on. */
function InstallProgress({ install }: { install: FirmwareInstall | null }) {
  const percent = install?.progress ?? 0;
  return (
    <Stack gap={4}>
      <Progress value={percent} animated aria-label="Install progress" />
      <Text size="sm">
        {percent}%: {install?.message ?? 'waiting for RAUC to report'}
      </Text>
    </Stack>
  );
}

function RestartNow({ upgrade }: { upgrade: FirmwareUpgrade }) {
  const queryClient = useQueryClient();
  const reboot = useMutation(rebootMutation());
  const cancel = useMutation(cancelUpgradeMutation(queryClient));
  return (
    <Stack gap="xs">
      <Group>
        <ConfirmButton
          title="Restart this node now?"
          consequence={`This node restarts into slot ${upgrade.to_slot} and is gone for a few minutes. If it is one of an HA pair, its peer takes over its VIPs meanwhile; otherwise its services do not answer until it is back.`}
          confirmLabel="Restart now"
          color="orange"
          loading={reboot.isPending}
          disabled={reboot.isSuccess}
          onConfirm={() => reboot.mutate()}
        >
          Restart now
        </ConfirmButton>
        <ConfirmButton
          title={`Cancel the upgrade to ${upgrade.version}?`}
          consequence={`Slot ${upgrade.from_slot}, running now, becomes the one to boot again, so the next restart keeps this version. Slot ${upgrade.to_slot} keeps ${upgrade.version} until the next install; to upgrade later, upload and install a bundle again.`}
          confirmLabel="Keep this version"
          color="gray"
          loading={cancel.isPending}
          disabled={reboot.isPending || reboot.isSuccess}
          onConfirm={() => cancel.mutate()}
        >
          Cancel the upgrade
        </ConfirmButton>
        {reboot.isSuccess && <RestartWatch slot={upgrade.to_slot} />}
      </Group>
      {/* The refusal says itself what did not happen: "the node was not restarted: …" */}
      {reboot.error && <Alert color="red">{errorMessage(reboot.error)}</Alert>}
      {cancel.error && <Alert color="red">{errorMessage(cancel.error)}</Alert>}
    </Stack>
  );
}

const RESTART_TEXT: Record<RestartPhase, (slot: string) => string> = {
  going_down: () => 'Restarting: waiting for the node to go down…',
  down: (slot) => `The node is down, starting slot ${slot}. This page follows it: it takes a few minutes.`,
  back: (slot) => `The node is back. Its boot check is deciding whether slot ${slot} is good…`,
};

/** Follows the node through its restart (it stops answering, then answers again), then reads the
 *  firmware status until the boot check's verdict replaces this card. */
function RestartWatch({ slot }: { slot: string }) {
  const queryClient = useQueryClient();
  const [phase, setPhase] = useState<RestartPhase>('going_down');
  const answers = useQuery(nodeAnswersQuery(phase !== 'back'));
  const seen = answers.data;
  useEffect(() => {
    if (seen) setPhase((current) => nextRestartPhase(current, seen.answers));
  }, [seen]);
  useEffect(() => {
    if (phase !== 'back') return;
    void refreshFirmware(queryClient);
    const timer = window.setInterval(() => void refreshFirmware(queryClient), 5_000);
    return () => window.clearInterval(timer);
  }, [phase, queryClient]);
  return (
    <Text size="sm" c="dimmed" data-testid="restart-watch" data-phase={phase}>
      {RESTART_TEXT[phase](slot)}
    </Text>
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
