import { Button, Card, Group, Table, Text } from '@mantine/core';
import type { Key, ReactNode } from 'react';

/** Which page of a longer list is shown; `count` (rows matching, once known) ends the pages. */
interface Paging {
  offset: number;
  size: number;
  count: number | undefined;
  onOffset: (offset: number) => void;
}

interface DataTableProps<Row> {
  label?: string;
  columns: string[];
  /** Undefined while loading: the empty text waits for an answer. */
  rows: Row[] | undefined;
  rowKey: (row: Row) => Key;
  /** The row's cells (Table.Td). */
  cells: (row: Row) => ReactNode;
  /** Below the table width the table scrolls sideways rather than squeezing its columns. */
  minWidth: number;
  /** Smaller rows and text, for tables of many short machine values. */
  dense?: boolean;
  empty?: string;
  paging?: Paging;
}

/** A bordered, sideways-scrolling table of rows, with an empty text and Previous/Next paging. */
export function DataTable<Row>({ label, columns, rows, rowKey, cells, minWidth, dense = false, empty, paging }: DataTableProps<Row>) {
  return (
    <>
      <Card withBorder padding={0}>
        <Table.ScrollContainer minWidth={minWidth}>
          <Table verticalSpacing={dense ? 4 : 'xs'} fz={dense ? 'sm' : undefined} aria-label={label}>
            <Table.Thead>
              <Table.Tr>
                {columns.map((column) => (
                  <Table.Th key={column}>{column}</Table.Th>
                ))}
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows?.map((row) => (
                <Table.Tr key={rowKey(row)}>{cells(row)}</Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
        {empty && rows?.length === 0 && (
          <Text c="dimmed" ta="center" p="md">
            {empty}
          </Text>
        )}
      </Card>
      {paging && <Pager {...paging} />}
    </>
  );
}

function Pager({ offset, size, count, onOffset }: Paging) {
  return (
    <Group>
      <Button variant="default" disabled={offset === 0} onClick={() => onOffset(Math.max(0, offset - size))}>
        Previous
      </Button>
      <Button variant="default" disabled={count === undefined || offset + size >= count} onClick={() => onOffset(offset + size)}>
        Next
      </Button>
    </Group>
  );
}
