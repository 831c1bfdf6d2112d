import { Alert, Card, Checkbox, Group, MultiSelect, NumberInput, Select, SimpleGrid, Stack, TextInput, Title } from '@mantine/core';
import { useForm, type UseFormReturnType } from '@mantine/form';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { putNetworkMutation } from '../../api/queries/network';
import type { BondMode, KernelInterface, NetworkConfig } from '../../client/types.gen';
import { formPath, toBody, toValues, type NetworkValues } from '../../lib/network';
import { FormFooter } from '../FormFooter';
import { ListItem, ListSection } from '../FormList';
import { useServerErrors } from '../useServerErrors';

type Form = UseFormReturnType<NetworkValues>;

const BOND_MODES: { value: BondMode; label: string }[] = [
  { value: 'active-backup', label: 'active-backup (one link, the others standby)' },
  { value: '802.3ad', label: '802.3ad (LACP, per-flow hashing)' },
  { value: 'balance-xor', label: 'balance-xor (static, per-flow hashing)' },
  { value: 'balance-rr', label: 'balance-rr (round robin: reorders packets)' },
];
const HASH_POLICIES = ['layer3+4', 'layer2+3', 'layer2', 'encap3+4', 'encap2+3'];
const NEW_ADDRESSED = { addresses: '', dhcp4: false, ipv6_autoconf: false, mtu: '', enabled: true };

/**
 * The whole network document in one form, PUT as one: the API checks it as a whole (a gateway on
 * a connected network, a VLAN's parent, bond members) and names the field of each problem.
 */
export function NetworkEditor({
  initial,
  takingOver,
  interfaces,
  onCancel,
  onSaved,
}: {
  initial: NetworkConfig;
  takingOver: boolean;
  interfaces: KernelInterface[];
  onCancel: () => void;
  onSaved: () => void;
}) {
  const queryClient = useQueryClient();
  const save = useMutation(putNetworkMutation(queryClient));
  const form = useForm<NetworkValues>({ initialValues: toValues(initial) });
  const formError = useServerErrors(form, save.error, formPath);
  const values = form.values;
  const nicNames = values.nics.map((n) => n.name).filter(Boolean);
  const allNames = [...nicNames, ...values.bonds.map((b) => b.name), ...values.vlans.map((v) => v.name)].filter(Boolean);
  const unlisted = interfaces.filter((i) => i.kind === 'physical' && !values.nics.some((n) => n.mac.toLowerCase() === i.mac));

  return (
    <Card withBorder>
      <form onSubmit={form.onSubmit((v) => save.mutate(toBody(v), { onSuccess: onSaved }))} noValidate aria-label="Network settings">
        <Stack>
          <Title order={3}>{takingOver ? 'Manage this node’s network' : 'Edit network'}</Title>
          {takingOver && (
            <Alert color="blue" title="Prefilled from what the kernel runs now">
              Addresses the kernel holds with a lifetime became DHCPv4 or SLAAC, the others static. Add the default gateway,
              VLANs and routes, and check the bond modes: the kernel’s list does not carry them.
            </Alert>
          )}
          <SimpleGrid cols={{ base: 1, sm: 2 }}>
            <TextInput label="Host name" {...form.getInputProps('hostname')} />
            <Select
              label="Management interface"
              description="Where the dashboard, SSH and the API are reached"
              data={[...new Set(allNames)]}
              allowDeselect={false}
              {...form.getInputProps('management_interface')}
            />
            <TextInput label="Default gateway (IPv4)" placeholder="192.0.2.1" classNames={{ input: 'mono' }} {...form.getInputProps('gateway4')} />
            <TextInput label="Default gateway (IPv6)" placeholder="2001:db8::1" classNames={{ input: 'mono' }} {...form.getInputProps('gateway6')} />
            <TextInput label="DNS servers" description="Addresses, comma-separated" classNames={{ input: 'mono' }} {...form.getInputProps('dns_servers')} />
            <TextInput label="Search domains" classNames={{ input: 'mono' }} {...form.getInputProps('search_domains')} />
            <TextInput label="NTP servers" description="Names or addresses" classNames={{ input: 'mono' }} {...form.getInputProps('ntp_servers')} />
          </SimpleGrid>

          <ListSection title="NICs" add={() => form.insertListItem('nics', { ...NEW_ADDRESSED, name: '', mac: unlisted[0]?.mac ?? '', permanent_mac: true })} addLabel="Add NIC">
            {values.nics.map((_, i) => (
              <ListItem key={form.key(`nics.${i}`)} legend={`NIC ${i + 1}`} onRemove={() => form.removeListItem('nics', i)}>
                <TextInput label="Name" {...form.getInputProps(`nics.${i}.name`)} />
                <TextInput label="MAC address" classNames={{ input: 'mono' }} {...form.getInputProps(`nics.${i}.mac`)} />
                <Addressing form={form} path={`nics.${i}`} />
                <Checkbox label="Match by the permanent MAC" mt="xs" {...form.getInputProps(`nics.${i}.permanent_mac`, { type: 'checkbox' })} />
              </ListItem>
            ))}
          </ListSection>

          <ListSection
            title="Bonds"
            add={() =>
              form.insertListItem('bonds', { ...NEW_ADDRESSED, name: `bond${values.bonds.length}`, members: [], mode: 'active-backup', xmit_hash_policy: 'layer3+4', miimon: 100, allow_round_robin: false })
            }
            addLabel="Add bond"
          >
            {values.bonds.map((bond, i) => (
              <ListItem key={form.key(`bonds.${i}`)} legend={`Bond ${i + 1}`} onRemove={() => form.removeListItem('bonds', i)}>
                <TextInput label="Name" {...form.getInputProps(`bonds.${i}.name`)} />
                <MultiSelect label="Members" data={nicNames} {...form.getInputProps(`bonds.${i}.members`)} />
                <Select label="Mode" data={BOND_MODES} allowDeselect={false} {...form.getInputProps(`bonds.${i}.mode`)} />
                {(bond.mode === '802.3ad' || bond.mode === 'balance-xor') && (
                  <Select label="Transmit hash policy" data={HASH_POLICIES} allowDeselect={false} {...form.getInputProps(`bonds.${i}.xmit_hash_policy`)} />
                )}
                <NumberInput label="Link monitoring (ms)" min={0} {...form.getInputProps(`bonds.${i}.miimon`)} />
                {bond.mode === 'balance-rr' && (
                  <Checkbox
                    mt="xs"
                    label="Use round robin anyway (packets of one flow arrive out of order)"
                    {...form.getInputProps(`bonds.${i}.allow_round_robin`, { type: 'checkbox' })}
                  />
                )}
                <Addressing form={form} path={`bonds.${i}`} />
              </ListItem>
            ))}
          </ListSection>

          <ListSection
            title="VLANs"
            add={() => form.insertListItem('vlans', { ...NEW_ADDRESSED, name: '', parent: nicNames[0] ?? '', vlan_id: '' })}
            addLabel="Add VLAN"
          >
            {values.vlans.map((_, i) => (
              <ListItem key={form.key(`vlans.${i}`)} legend={`VLAN ${i + 1}`} onRemove={() => form.removeListItem('vlans', i)}>
                <TextInput label="Name" {...form.getInputProps(`vlans.${i}.name`)} />
                <Select label="Parent" data={[...new Set([...nicNames, ...values.bonds.map((b) => b.name)])]} {...form.getInputProps(`vlans.${i}.parent`)} />
                <NumberInput label="VLAN ID" description="1 to 4094" allowDecimal={false} {...form.getInputProps(`vlans.${i}.vlan_id`)} />
                <Addressing form={form} path={`vlans.${i}`} />
              </ListItem>
            ))}
          </ListSection>

          <ListSection title="Routes" add={() => form.insertListItem('routes', { destination: '', gateway: '', table: '', metric: '' })} addLabel="Add route">
            {values.routes.map((_, i) => (
              <ListItem key={form.key(`routes.${i}`)} legend={`Route ${i + 1}`} onRemove={() => form.removeListItem('routes', i)}>
                <TextInput label="Destination" placeholder="10.30.0.0/16" classNames={{ input: 'mono' }} {...form.getInputProps(`routes.${i}.destination`)} />
                <TextInput label="Gateway" classNames={{ input: 'mono' }} {...form.getInputProps(`routes.${i}.gateway`)} />
                <NumberInput label="Table" description="Empty: main" allowDecimal={false} {...form.getInputProps(`routes.${i}.table`)} />
                <NumberInput label="Metric" allowDecimal={false} {...form.getInputProps(`routes.${i}.metric`)} />
              </ListItem>
            ))}
          </ListSection>

          <FormFooter error={formError} errorTitle="Not saved" saving={save.isPending} saveLabel="Save network" onCancel={onCancel} />
        </Stack>
      </form>
    </Card>
  );
}

/** What NICs, bonds and VLANs share: static addresses, DHCPv4, SLAAC, MTU, up or down. */
function Addressing({ form, path }: { form: Form; path: string }) {
  return (
    <>
      <TextInput label="Static addresses" description="With prefix length, comma-separated" placeholder="192.0.2.5/24" classNames={{ input: 'mono' }} {...form.getInputProps(`${path}.addresses`)} />
      <NumberInput label="MTU" description="Empty: the kernel’s default" allowDecimal={false} {...form.getInputProps(`${path}.mtu`)} />
      <Group gap="md" mt="xs">
        <Checkbox label="DHCPv4" {...form.getInputProps(`${path}.dhcp4`, { type: 'checkbox' })} />
        <Checkbox label="SLAAC (IPv6)" {...form.getInputProps(`${path}.ipv6_autoconf`, { type: 'checkbox' })} />
        <Checkbox label="Enabled" {...form.getInputProps(`${path}.enabled`, { type: 'checkbox' })} />
      </Group>
    </>
  );
}
