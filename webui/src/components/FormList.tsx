import { ActionIcon, Button, Fieldset, Group, SimpleGrid, Stack, Title } from '@mantine/core';
import { IconPlus, IconTrash } from '@tabler/icons-react';
import type { ReactNode } from 'react';

/** A list inside a form (NICs, routes, BGP neighbors): its title, an add button, its items. */
export function ListSection({ title, add, addLabel, children }: { title: string; add: () => void; addLabel: string; children: ReactNode }) {
  return (
    <Stack gap="xs">
      <Group justify="space-between">
        <Title order={4}>{title}</Title>
        <Button size="xs" variant="light" leftSection={<IconPlus size={14} />} onClick={add}>
          {addLabel}
        </Button>
      </Group>
      {children}
    </Stack>
  );
}

/** One item of a ListSection: its fields in two columns, a remove button named after the legend. */
export function ListItem({ legend, onRemove, children }: { legend: string; onRemove: () => void; children: ReactNode }) {
  return (
    <Fieldset legend={legend} aria-label={legend} p="sm">
      <Group justify="flex-end" mt={-8}>
        <ActionIcon variant="subtle" color="red" aria-label={`Remove ${legend}`} onClick={onRemove}>
          <IconTrash size={16} />
        </ActionIcon>
      </Group>
      <SimpleGrid cols={{ base: 1, sm: 2 }} spacing="xs">
        {children}
      </SimpleGrid>
    </Fieldset>
  );
}
