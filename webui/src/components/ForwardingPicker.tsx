import { Paper, SegmentedControl, Stack, Text, Input } from '@mantine/core';
import { FORWARDING, type ForwardingChoice } from '../lib/schedulers';
import { ForwardingDiagram } from './ForwardingDiagram';

type Props = { value: ForwardingChoice; onChange: (value: ForwardingChoice) => void; error?: string };

export function ForwardingPicker({ value, onChange, error }: Props) {
  const info = FORWARDING.find((f) => f.value === value)!;
  return (
    <Input.Wrapper label="How packets reach the backends (forwarding)" error={error}>
      <Stack gap="xs" mt={4}>
        <SegmentedControl
          fullWidth
          value={value}
          onChange={(v) => onChange(v as ForwardingChoice)}
          data={FORWARDING.map((f) => ({ value: f.value, label: f.name.replace(/ \(.*\)/, '') }))}
          aria-label="Forwarding method"
        />
        <Paper withBorder p="sm" bg="var(--mantine-color-default-hover)">
          <ForwardingDiagram method={value} />
          <Text size="sm" mt="xs">
            {info.how}
          </Text>
          <Text size="sm" c="dimmed" mt={4}>
            <b>Needs:</b> {info.needs}
          </Text>
        </Paper>
      </Stack>
    </Input.Wrapper>
  );
}
