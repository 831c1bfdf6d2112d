import { Card, Checkbox, Group, NumberInput, PasswordInput, SimpleGrid, Stack, Text, TextInput, Textarea, Title } from '@mantine/core';
import { useForm } from '@mantine/form';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { putBgpMutation } from '../../api/queries/bgp';
import type { BgpRead } from '../../client/types.gen';
import { DEFAULT_TIMERS, formPath, NEW_NEIGHBOR, requiredErrors, toBody, toValues, type BgpValues } from '../../lib/bgp';
import { FormFooter } from '../FormFooter';
import { ListItem, ListSection } from '../FormList';
import { useServerErrors } from '../useServerErrors';

/**
 * This node's BGP in one form, PUT as one: the API checks it whole, and against the services it
 * would announce (mh, DR or TUN), and names the field of each problem.
 */
export function BgpEditor({ initial, onCancel, onSaved }: { initial: BgpRead | null; onCancel: () => void; onSaved: () => void }) {
  const queryClient = useQueryClient();
  const save = useMutation(putBgpMutation(queryClient));
  const form = useForm<BgpValues>({ initialValues: toValues(initial), validate: requiredErrors });
  const formError = useServerErrors(form, save.error, formPath);
  const values = form.values;

  return (
    <Card withBorder>
      <form onSubmit={form.onSubmit((v) => save.mutate(toBody(v), { onSuccess: onSaved }))} noValidate aria-label="BGP settings">
        <Stack>
          <Title order={3}>{initial ? 'Edit BGP' : 'Set up BGP'}</Title>
          <Text size="sm" c="dimmed">
            This node announces the VIPs to the routers below, which spread flows over every node announcing them (ECMP). Each
            node has its own settings: they are never replicated.
          </Text>
          <SimpleGrid cols={{ base: 1, sm: 2 }}>
            <NumberInput label="AS number" description="This node’s, 1 to 4294967295" allowDecimal={false} allowNegative={false} {...form.getInputProps('asn')} />
            <TextInput label="Router ID" description="A unicast IPv4 address, usually this node’s own" placeholder="192.0.2.5" classNames={{ input: 'mono' }} {...form.getInputProps('router_id')} />
          </SimpleGrid>
          <Checkbox label="Announce (off: keep the settings, withdraw every VIP and close the sessions)" {...form.getInputProps('enabled', { type: 'checkbox' })} />

          <ListSection title="Neighbors" add={() => form.insertListItem('neighbors', { ...NEW_NEIGHBOR })} addLabel="Add neighbor">
            {values.neighbors.length === 0 && (
              <Text size="sm" c="dimmed">
                No routers yet: nothing is announced until one is added.
              </Text>
            )}
            {values.neighbors.map((neighbor, i) => (
              <ListItem key={form.key(`neighbors.${i}`)} legend={`Neighbor ${i + 1}`} onRemove={() => form.removeListItem('neighbors', i)}>
                <TextInput label="Router address" placeholder="10.0.1.254" classNames={{ input: 'mono' }} {...form.getInputProps(`neighbors.${i}.address`)} />
                <NumberInput label="Router’s AS number" allowDecimal={false} allowNegative={false} {...form.getInputProps(`neighbors.${i}.remote_asn`)} />
                <TextInput label="Description" description="Optional, shown by FRR" {...form.getInputProps(`neighbors.${i}.description`)} />
                <PasswordInput
                  label="TCP-MD5 password"
                  description={neighbor.has_password ? 'One is stored: leave empty to keep it' : 'Optional; the router must have the same'}
                  autoComplete="new-password"
                  disabled={neighbor.remove_password}
                  {...form.getInputProps(`neighbors.${i}.password`)}
                />
                <Checkbox label="BFD (a dead node’s routes go in under a second)" mt="xs" {...form.getInputProps(`neighbors.${i}.bfd`, { type: 'checkbox' })} />
                {neighbor.has_password && (
                  <Checkbox label="Remove the stored password" mt="xs" {...form.getInputProps(`neighbors.${i}.remove_password`, { type: 'checkbox' })} />
                )}
                <Checkbox
                  label={`Timers of its own (otherwise keepalive ${DEFAULT_TIMERS.keepalive} s, hold ${DEFAULT_TIMERS.hold} s)`}
                  mt="xs"
                  {...form.getInputProps(`neighbors.${i}.own_timers`, { type: 'checkbox' })}
                />
                {neighbor.own_timers && (
                  <Group grow gap="xs">
                    <NumberInput label="Keepalive (s)" allowDecimal={false} allowNegative={false} {...form.getInputProps(`neighbors.${i}.keepalive`)} />
                    <NumberInput label="Hold (s)" allowDecimal={false} allowNegative={false} {...form.getInputProps(`neighbors.${i}.hold`)} />
                  </Group>
                )}
              </ListItem>
            ))}
          </ListSection>

          <Stack gap="xs">
            <Title order={4}>What is announced</Title>
            <Checkbox label="Every enabled service’s VIP" {...form.getInputProps('announce_all', { type: 'checkbox' })} />
            {!values.announce_all && (
              <Textarea
                label="Only these VIPs"
                description="Addresses, comma-separated; each is announced as a /32 or /128"
                classNames={{ input: 'mono' }}
                autosize
                minRows={1}
                {...form.getInputProps('announce')}
              />
            )}
            <SimpleGrid cols={{ base: 1, sm: 2 }}>
              <TextInput label="Communities" description="ASN:value, comma-separated" placeholder="65001:100" classNames={{ input: 'mono' }} {...form.getInputProps('communities')} />
              <TextInput label="Large communities" description="ASN:value:value, comma-separated" classNames={{ input: 'mono' }} {...form.getInputProps('large_communities')} />
            </SimpleGrid>
          </Stack>

          <FormFooter error={formError} errorTitle="Not saved" saving={save.isPending} saveLabel="Save BGP" onCancel={onCancel} />
        </Stack>
      </form>
    </Card>
  );
}
