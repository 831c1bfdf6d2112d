import { Badge, Group, Stack, Text } from '@mantine/core';
import type { Plan } from '../client/types.gen';

const ACTION_COLOR = { add: 'green', remove: 'red', change: 'blue' } as const;

/** A plan's items in operators' terms; disruptive ones stand out in red. */
export function PlanList({ plan }: { plan: Plan }) {
  if (!plan.items.length) return <Text c="dimmed">No effect on the running system.</Text>;
  return (
    <Stack gap={6} component="ul" style={{ listStyle: 'none', padding: 0, margin: 0 }}>
      {plan.items.map((item, i) => (
        <Group
          key={i}
          component="li"
          gap="xs"
          wrap="nowrap"
          align="flex-start"
          p={6}
          data-disruptive={item.disruptive || undefined}
          style={{
            borderLeft: `3px solid var(--mantine-color-${item.disruptive ? 'red' : 'gray'}-${item.disruptive ? 6 : 4})`,
            background: item.disruptive ? 'var(--mantine-color-red-light)' : undefined,
          }}
        >
          <Badge color={ACTION_COLOR[item.action]} variant="light" w={72} style={{ flexShrink: 0 }}>
            {item.action}
          </Badge>
          <div style={{ minWidth: 0 }}>
            <Text size="sm" fw={500}>
              {item.kind}: <span className="mono">{item.target}</span>
            </Text>
            {item.detail && (
              <Text size="xs" c={item.disruptive ? 'red' : 'dimmed'}>
                {item.detail}
              </Text>
            )}
          </div>
          {item.disruptive && (
            <Badge color="red" ml="auto" style={{ flexShrink: 0 }}>
              disruptive
            </Badge>
          )}
        </Group>
      ))}
    </Stack>
  );
}
