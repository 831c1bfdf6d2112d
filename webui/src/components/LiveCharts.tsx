import { Card, Group, SegmentedControl, Select, SimpleGrid, Text, Title } from '@mantine/core';
import { useState } from 'react';
import type { StatsRange } from '../api/queries/telemetry';
import { RANGE_SECONDS, useLiveSeries } from '../api/useLiveSeries';
import { bitsPerSecond, compact } from '../lib/format';
import { TimeSeriesChart, type ChartSeries } from './TimeSeriesChart';

// Module constants: a new array would recreate the plot on every render.
const CONNECTIONS: ChartSeries[] = [
  { metric: 'activeconns', label: 'Active', color: '#4c6ef5' },
  { metric: 'inactconns', label: 'Inactive', color: '#adb5bd' },
];
const RATE: ChartSeries[] = [{ metric: 'cps', label: 'New conn/s', color: '#12b886' }];
// IPVS reports bytes; networks are sized in bits.
const THROUGHPUT: ChartSeries[] = [
  { metric: 'inbps', label: 'In', color: '#228be6', scale: 8 },
  { metric: 'outbps', label: 'Out', color: '#fd7e14', scale: 8 },
];

type Props = { service: string; backends: string[]; ipvs: boolean };

/** Connections, conn/s and throughput for the service or one backend, over a chosen range, live. */
export function LiveCharts({ service, backends, ipvs }: Props) {
  const [range, setRange] = useState<StatsRange>('5m');
  const [backend, setBackend] = useState<string | null>(null);
  const { buffer, version, error } = useLiveSeries(service, backend, range);
  const columns = buffer?.columns() ?? null;
  const empty = error
    ? `Statistics could not be loaded: ${error.message}`
    : ipvs
      ? 'No data for this range yet.'
      : 'No data: the data plane is unavailable on this machine.';
  return (
    <Card withBorder>
      <Group justify="space-between" mb="sm" wrap="wrap">
        <Title order={4}>Traffic</Title>
        <Group gap="xs" wrap="wrap">
          <Select
            aria-label="Chart scope"
            data={[{ value: '', label: 'Whole service' }, ...backends.map((b) => ({ value: b, label: `Backend ${b}` }))]}
            value={backend ?? ''}
            onChange={(v) => setBackend(v ? v : null)}
            allowDeselect={false}
            w={230}
          />
          <SegmentedControl
            aria-label="Time range"
            value={range}
            onChange={(v) => setRange(v as StatsRange)}
            data={[
              { value: '5m', label: '5 min' },
              { value: '1h', label: '1 h' },
              { value: '24h', label: '24 h' },
            ]}
          />
        </Group>
      </Group>
      {buffer && buffer.resolution > 1 && (
        <Text size="xs" c="dimmed" mb="xs">
          One point per {buffer.resolution} s. Gaps (no data, e.g. during a failover) are shown as breaks.
        </Text>
      )}
      <SimpleGrid cols={{ base: 1, md: 3 }}>
        <div>
          <Text size="sm" fw={500}>Connections</Text>
          <TimeSeriesChart columns={columns} version={version} series={CONNECTIONS} format={(v) => compact(v)} emptyText={empty} window={RANGE_SECONDS[range]} />
        </div>
        <div>
          <Text size="sm" fw={500}>New connections per second</Text>
          <TimeSeriesChart columns={columns} version={version} series={RATE} format={(v) => compact(v)} emptyText={empty} window={RANGE_SECONDS[range]} />
        </div>
        <div>
          <Text size="sm" fw={500}>Throughput</Text>
          <TimeSeriesChart columns={columns} version={version} series={THROUGHPUT} format={(v) => bitsPerSecond(v / 8)} emptyText={empty} window={RANGE_SECONDS[range]} />
        </div>
      </SimpleGrid>
    </Card>
  );
}
