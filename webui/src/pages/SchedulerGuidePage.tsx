import { Badge, Card, Group, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { ForwardingDiagram } from '../components/ForwardingDiagram';
import { FORWARDING, SCHEDULERS } from '../lib/schedulers';

/** Every scheduler and forwarding method, explained for people who do not speak IPVS. */
export default function SchedulerGuidePage() {
  const groups = [...new Set(SCHEDULERS.map((s) => s.group))];
  return (
    <Stack>
      <Title order={2}>Scheduling guide</Title>
      <Text c="dimmed" maw={760}>
        A scheduler decides which backend receives each new connection; the forwarding method decides how packets get there and back.
        If unsure, keep the defaults: weighted least connections and NAT. Any scheduler becomes “sticky” with a stickiness timeout in the
        service’s advanced settings.
      </Text>
      {groups.map((group) => (
        <Stack key={group} gap="xs">
          <Title order={4}>{group}</Title>
          <SimpleGrid cols={{ base: 1, md: 2 }}>
            {SCHEDULERS.filter((s) => s.group === group).map((s) => (
              <Card withBorder key={s.value}>
                <Group gap="xs">
                  <Text fw={600}>{s.name}</Text>
                  <Badge variant="outline" className="mono" tt="none">
                    {s.value}
                  </Badge>
                  <Badge size="xs" variant="light" color={s.weighted ? 'indigo' : 'gray'}>
                    {s.weighted ? 'uses weights' : 'ignores weights'}
                  </Badge>
                </Group>
                <Text size="sm" mt={4}>
                  {s.how}
                </Text>
                <Text size="sm" c="dimmed" mt={4}>
                  <b>Choose it for:</b> {s.when}
                </Text>
              </Card>
            ))}
          </SimpleGrid>
        </Stack>
      ))}
      <Title order={3} mt="md">
        Forwarding methods
      </Title>
      <SimpleGrid cols={{ base: 1, md: 2 }}>
        {FORWARDING.map((f) => (
          <Card withBorder key={f.value}>
            <Text fw={600}>{f.name}</Text>
            <ForwardingDiagram method={f.value} />
            <Text size="sm" mt="xs">
              {f.how}
            </Text>
            <Text size="sm" c="dimmed" mt={4}>
              <b>Needs:</b> {f.needs}
            </Text>
          </Card>
        ))}
      </SimpleGrid>
    </Stack>
  );
}
