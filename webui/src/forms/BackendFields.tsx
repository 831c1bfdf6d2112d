import { ActionIcon, Checkbox, Collapse, Group, NumberInput, Paper, SimpleGrid, Stack, Text, TextInput, UnstyledButton } from '@mantine/core';
import type { UseFormReturnType } from '@mantine/form';
import { IconChevronDown, IconChevronRight, IconTrash } from '@tabler/icons-react';
import { useState } from 'react';
import { HealthCheckFields, getAt } from './HealthCheckFields';

type Props = {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  form: UseFormReturnType<any>;
  /** Dotted path of the BackendValues, e.g. "backends.0" or "" for a form that is one backend. */
  path: string;
  onRemove?: () => void;
  label?: string;
};

/** One backend: address, port and weight in a row; the rest behind "More". */
export function BackendFields({ form, path, onRemove, label }: Props) {
  const [more, setMore] = useState(false);
  const at = (name: string) => (path ? `${path}.${name}` : name);
  const ownCheck = getAt(form.getValues(), at('own_check')) === true;
  return (
    <Paper withBorder p="sm">
      <Stack gap="xs">
        <Group align="flex-start" wrap="wrap" gap="sm">
          <TextInput label={label ?? 'Backend address'} placeholder="198.51.100.1" style={{ flex: '1 1 200px' }} required {...form.getInputProps(at('address'))} />
          <NumberInput label="Port" placeholder="same" min={1} max={65535} w={110} {...form.getInputProps(at('port'))} />
          <NumberInput label="Weight" min={0} max={65535} w={110} {...form.getInputProps(at('weight'))} />
          {onRemove && (
            <ActionIcon variant="subtle" color="red" mt={26} onClick={onRemove} aria-label="Remove this backend">
              <IconTrash size={18} />
            </ActionIcon>
          )}
        </Group>
        <UnstyledButton onClick={() => setMore((v) => !v)} aria-expanded={more}>
          <Group gap={4}>
            {more ? <IconChevronDown size={14} /> : <IconChevronRight size={14} />}
            <Text size="xs" c="dimmed">
              More: maintenance, connection limits, description, own health check
            </Text>
          </Group>
        </UnstyledButton>
        <Collapse in={more}>
          <Stack gap="xs">
            <Checkbox label="Enabled (clear for maintenance: taken out of the load balancer)" {...form.getInputProps(at('enabled'), { type: 'checkbox' })} />
            <SimpleGrid cols={{ base: 1, sm: 2 }}>
              <NumberInput label="Stop new connections above" description="Active connections; 0: no limit" min={0} max={1000000} {...form.getInputProps(at('upper_threshold'))} />
              <NumberInput label="Resume below" description="Must be below the limit; 0: not set" min={0} max={1000000} {...form.getInputProps(at('lower_threshold'))} />
            </SimpleGrid>
            <TextInput label="Description" maxLength={500} {...form.getInputProps(at('description'))} />
            <Checkbox label="Use its own health check instead of the service's" {...form.getInputProps(at('own_check'), { type: 'checkbox' })} />
            {ownCheck && <HealthCheckFields form={form} path={at('health_check')} />}
          </Stack>
        </Collapse>
      </Stack>
    </Paper>
  );
}
