import { Alert, Badge, Group, Stack, Table, Text, Title, Tooltip } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { errorMessage } from '../../api/errors';
import { clusterBgpQuery } from '../../api/queries/cluster';
import type { BgpNeighborView, NodeBgp } from '../../client/types.gen';
import { AnnouncingBadge } from '../bgp/AnnouncingBadge';
import { DataTable } from '../DataTable';

/**
 * Every cluster node's BGP as its own FRR runs it: whether it announces and why not, each session
 * with its BFD state, and what it originates. A node that could not be asked says why.
 */
export function ClusterBgpTable() {
  const bgp = useQuery(clusterBgpQuery());
  return (
    <Stack gap="xs" data-testid="cluster-bgp">
      <Title order={4}>Every node’s BGP</Title>
      {bgp.error ? (
        <Alert color="red">{errorMessage(bgp.error)}</Alert>
      ) : bgp.data?.message ? (
        <Alert color="orange">{bgp.data.message}</Alert>
      ) : (
        <DataTable<NodeBgp>
          label="Every node's BGP"
          columns={['Node', 'Announces', 'Sessions', 'Originates']}
          rows={bgp.data?.nodes ?? []}
          rowKey={(n) => n.name}
          minWidth={640}
          empty={bgp.isPending ? 'Asking every node…' : 'No node answered.'}
          cells={(node) => (
            <>
              <Table.Td>
                <Text size="sm" fw={500}>
                  {node.name}
                </Text>
              </Table.Td>
              <NodeCells node={node} />
            </>
          )}
        />
      )}
    </Stack>
  );
}

function NodeCells({ node }: { node: NodeBgp }) {
  const view = node.bgp;
  if (!view) {
    return (
      <Table.Td colSpan={3}>
        <Text size="sm" c="red">
          {node.error}
        </Text>
      </Table.Td>
    );
  }
  if (!view.managed) {
    return (
      <Table.Td colSpan={3}>
        <Text size="sm" c="dimmed">
          BGP is not managed on this node.
        </Text>
      </Table.Td>
    );
  }
  const neighbors = view.neighbors ?? [];
  const originated = view.originated ?? [];
  return (
    <>
      <Table.Td>
        <Tooltip label={view.fitness ?? ''} multiline w={320} disabled={!view.fitness}>
          <span>
            <AnnouncingBadge view={view} />
          </span>
        </Tooltip>
        {view.error && (
          <Text size="xs" c="red">
            {view.error}
          </Text>
        )}
      </Table.Td>
      <Table.Td>
        {neighbors.length === 0 ? (
          <Text size="sm" c="dimmed">
            no neighbors
          </Text>
        ) : (
          <Stack gap={4}>
            {neighbors.map((n) => (
              <Session key={n.address} neighbor={n} />
            ))}
          </Stack>
        )}
      </Table.Td>
      <Table.Td>
        <Text size="sm" className="mono">
          {originated.length ? originated.join(', ') : '—'}
        </Text>
      </Table.Td>
    </>
  );
}

function Session({ neighbor }: { neighbor: BgpNeighborView }) {
  return (
    <Group gap={6} wrap="nowrap">
      <Text size="sm" className="mono">
        {neighbor.address}
      </Text>
      <Badge size="sm" color={neighbor.state === 'Established' ? 'green' : 'red'}>
        {neighbor.state}
      </Badge>
      <Badge size="sm" variant="outline" color={neighbor.bfd === 'up' ? 'green' : neighbor.bfd ? 'red' : 'gray'}>
        BFD {neighbor.bfd ?? 'off'}
      </Badge>
    </Group>
  );
}
