import { Accordion, Alert, Anchor, Button, Card, Checkbox, Group, NumberInput, Select, SimpleGrid, Stack, Text, TextInput, Textarea, Title } from '@mantine/core';
import { useForm } from '@mantine/form';
import { IconPlus } from '@tabler/icons-react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { createServiceMutation, serviceQuery, updateServiceMutation } from '../api/queries/services';
import { useCan } from '../auth/useCurrentUser';
import { ForwardingPicker } from '../components/ForwardingPicker';
import { PageLoader } from '../components/PageLoader';
import { SchedulerPicker } from '../components/SchedulerPicker';
import { useServerErrors } from '../components/useServerErrors';
import { BackendFields } from '../forms/BackendFields';
import { HealthCheckFields } from '../forms/HealthCheckFields';
import {
  defaultBackend,
  defaultService,
  serviceFormPath,
  serviceFromRead,
  serviceSettingsToRequest,
  serviceToCreateRequest,
  type ServiceValues,
} from '../forms/serviceModel';
import { validateService } from '../forms/serviceValidation';

export default function ServiceFormPage() {
  const { id } = useParams();
  const serviceId = id === undefined ? null : Number(id);
  const existing = useQuery({ ...serviceQuery(serviceId ?? 0), enabled: serviceId !== null });
  if (!useCan('editServices')) return <Alert color="gray">Your role can view services but not change them.</Alert>;
  if (serviceId !== null && !existing.data) return <PageLoader />;
  return <ServiceForm serviceId={serviceId} initial={existing.data ? serviceFromRead(existing.data) : defaultService()} />;
}

function ServiceForm({ serviceId, initial }: { serviceId: number | null; initial: ServiceValues }) {
  const creating = serviceId === null;
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const create = useMutation(createServiceMutation(queryClient));
  const update = useMutation(updateServiceMutation(queryClient, serviceId ?? 0));
  const mutation = creating ? create : update;
  const form = useForm<ServiceValues>({ initialValues: initial, validate: (values) => validateService(values, creating) });
  const formError = useServerErrors(form, mutation.error, serviceFormPath);
  const values = form.getValues();
  const hashing = values.scheduler === 'sh' || values.scheduler === 'mh';

  useEffect(() => {
    // An error raised inside a closed "Advanced" section must not stay hidden.
    if (Object.keys(form.errors).some((key) => !/^(name|address|ports|backends\.\d+\.(address|port|weight))$/.test(key))) {
      document.querySelectorAll<HTMLButtonElement>('[data-advanced-control][aria-expanded="false"]').forEach((b) => b.click());
    }
  }, [form.errors]);

  const submit = (v: ServiceValues) => {
    if (creating) create.mutate(serviceToCreateRequest(v), { onSuccess: (service) => void navigate(`/services/${service.id}`) });
    else update.mutate(serviceSettingsToRequest(v), { onSuccess: () => void navigate(`/services/${serviceId}`) });
  };

  return (
    <form onSubmit={form.onSubmit(submit)} noValidate>
      <Stack maw={900}>
        <Title order={2}>{creating ? 'New service' : `Edit ${initial.name}`}</Title>
        <Text c="dimmed" size="sm">
          Saving changes the candidate configuration only. Nothing reaches the load balancer until you apply it from the
          pending-changes bar.
        </Text>
        <Card withBorder>
          <Stack>
            <SimpleGrid cols={{ base: 1, sm: 3 }}>
              <TextInput label="Name" placeholder="web" required {...form.getInputProps('name')} />
              <TextInput label="Virtual IP (VIP)" description="The address clients connect to" placeholder="192.0.2.10" required {...form.getInputProps('address')} />
              <TextInput label="Port(s)" description="Several ports share one backend choice" placeholder="80, 443" required {...form.getInputProps('ports')} />
            </SimpleGrid>
            {creating ? (
              <Stack gap="xs">
                <Text fw={500} size="sm">
                  Backends (the servers that answer)
                </Text>
                {values.backends.map((_, i) => (
                  <BackendFields key={i} form={form} path={`backends.${i}`} label={`Backend ${i + 1} address`} onRemove={() => form.removeListItem('backends', i)} />
                ))}
                <Button variant="light" leftSection={<IconPlus size={16} />} onClick={() => form.insertListItem('backends', defaultBackend())} w="fit-content">
                  Add a backend
                </Button>
              </Stack>
            ) : (
              <Text size="sm" c="dimmed">
                Backends are added, drained and edited on the <Anchor component={Link} to={`/services/${serviceId}`}>service page</Anchor>.
              </Text>
            )}
          </Stack>
        </Card>

        <Accordion variant="separated" multiple defaultValue={[]}>
          <Accordion.Item value="balancing">
            <Accordion.Control data-advanced-control>Advanced: balancing and forwarding</Accordion.Control>
            <Accordion.Panel>
              <Stack>
                <SchedulerPicker value={values.scheduler} onChange={(v) => form.setFieldValue('scheduler', v)} error={form.errors.scheduler as string | undefined} />
                {hashing && (
                  <Group>
                    <Checkbox label="Fall back: skip overloaded or weight-0 backends" {...form.getInputProps('scheduler_fallback', { type: 'checkbox' })} />
                    <Checkbox label="Hash the client port too" {...form.getInputProps('scheduler_port', { type: 'checkbox' })} />
                  </Group>
                )}
                <ForwardingPicker value={values.forwarding} onChange={(v) => form.setFieldValue('forwarding', v)} error={form.errors.forwarding as string | undefined} />
                {values.forwarding === 'tun' && (
                  <SimpleGrid cols={{ base: 1, sm: 2 }}>
                    <Select label="Tunnel type" data={['ipip', 'gue', 'gre']} allowDeselect={false} {...form.getInputProps('tunnel_type')} />
                    {values.tunnel_type === 'gue' && <NumberInput label="GUE port" min={1} max={65535} {...form.getInputProps('tunnel_port')} />}
                  </SimpleGrid>
                )}
                {values.forwarding === 'one_arm' && (
                  <TextInput label="Source address for backends" description="Empty: the appliance's outgoing address" {...form.getInputProps('snat_address')} />
                )}
                <SimpleGrid cols={{ base: 1, sm: 3 }}>
                  <Select
                    label="Protocol"
                    data={[
                      { value: 'tcp', label: 'TCP' },
                      { value: 'udp', label: 'UDP' },
                      { value: 'sctp', label: 'SCTP' },
                    ]}
                    allowDeselect={false}
                    {...form.getInputProps('protocol')}
                  />
                  <NumberInput label="Stickiness (s)" description="Same client, same backend for this long; empty: off" min={1} max={86400 * 31} {...form.getInputProps('persistence_timeout')} />
                  <NumberInput label="Sticky by network prefix" description="e.g. 24: a whole /24 sticks together" min={1} max={128} {...form.getInputProps('persistence_prefix')} />
                </SimpleGrid>
                {values.protocol === 'udp' && (
                  <Checkbox label="Schedule every datagram separately (one-packet scheduling)" {...form.getInputProps('one_packet_scheduling', { type: 'checkbox' })} />
                )}
              </Stack>
            </Accordion.Panel>
          </Accordion.Item>

          <Accordion.Item value="health">
            <Accordion.Control data-advanced-control>Advanced: health check</Accordion.Control>
            <Accordion.Panel>
              <Stack>
                <Text size="sm" c="dimmed">
                  The default (a TCP connect every second) notices a dead backend in about 3 seconds.
                </Text>
                <HealthCheckFields form={form} path="health_check" />
              </Stack>
            </Accordion.Panel>
          </Accordion.Item>

          <Accordion.Item value="service">
            <Accordion.Control data-advanced-control>Advanced: availability and description</Accordion.Control>
            <Accordion.Panel>
              <Stack>
                <Checkbox label="Service enabled" {...form.getInputProps('enabled', { type: 'checkbox' })} />
                <NumberInput
                  label="Quorum"
                  description="Minimum total weight of healthy backends for the service to count as up"
                  min={1}
                  max={1000000}
                  w={{ base: '100%', sm: 320 }}
                  {...form.getInputProps('quorum')}
                />
                <Checkbox label="Sorry server: answer here when no backend is up" {...form.getInputProps('sorry_enabled', { type: 'checkbox' })} />
                {values.sorry_enabled && (
                  <SimpleGrid cols={{ base: 1, sm: 2 }}>
                    <TextInput label="Sorry server address" {...form.getInputProps('sorry_address')} />
                    <NumberInput label="Sorry server port" description="Empty: the service port" min={1} max={65535} {...form.getInputProps('sorry_port')} />
                  </SimpleGrid>
                )}
                <Textarea label="Description" maxLength={500} autosize minRows={2} {...form.getInputProps('description')} />
              </Stack>
            </Accordion.Panel>
          </Accordion.Item>
        </Accordion>

        {formError && (
          <Alert color="red" title="The API refused this service" style={{ whiteSpace: 'pre-line' }}>
            {formError}
          </Alert>
        )}
        <Group justify="flex-end">
          <Button variant="default" component={Link} to={creating ? '/services' : `/services/${serviceId}`}>
            Cancel
          </Button>
          <Button type="submit" loading={mutation.isPending}>
            {creating ? 'Create service' : 'Save changes'}
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
