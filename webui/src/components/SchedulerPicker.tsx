import { Badge, Group, Paper, Select, Stack, Text } from '@mantine/core';
import type { Scheduler } from '../client/types.gen';
import { SCHEDULERS, schedulerInfo } from '../lib/schedulers';

type Props = { value: Scheduler; onChange: (value: Scheduler) => void; error?: string };

/** A scheduler choice with what it does and when to pick it, in plain words. */
export function SchedulerPicker({ value, onChange, error }: Props) {
  const groups = [...new Set(SCHEDULERS.map((s) => s.group))];
  const info = schedulerInfo(value);
  return (
    <Stack gap="xs">
      <Select
        label="How to choose a backend (scheduler)"
        data={groups.map((group) => ({
          group,
          items: SCHEDULERS.filter((s) => s.group === group).map((s) => ({ value: s.value, label: `${s.name} (${s.value})` })),
        }))}
        value={value}
        onChange={(v) => v && onChange(v as Scheduler)}
        allowDeselect={false}
        error={error}
        searchable
      />
      <Paper withBorder p="sm" bg="var(--mantine-color-default-hover)">
        <Group gap="xs" mb={4}>
          <Text fw={600} size="sm">
            {info.name}
          </Text>
          <Badge size="xs" variant="light" color={info.weighted ? 'indigo' : 'gray'}>
            {info.weighted ? 'uses weights' : 'ignores weights'}
          </Badge>
        </Group>
        <Text size="sm">{info.how}</Text>
        <Text size="sm" c="dimmed" mt={4}>
          <b>Choose it for:</b> {info.when}
        </Text>
      </Paper>
    </Stack>
  );
}
