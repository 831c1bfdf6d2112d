import { Table } from '@mantine/core';
import type { ReactNode } from 'react';

export type FieldRow = [label: string, value: ReactNode];

/** One thing's properties, a label and its value per row (a certificate, a firmware bundle). */
export function FieldTable({ rows, labelWidth }: { rows: FieldRow[]; labelWidth: number }) {
  return (
    <Table>
      <Table.Tbody>
        {rows.map(([label, value]) => (
          <Table.Tr key={label}>
            <Table.Th w={labelWidth}>{label}</Table.Th>
            <Table.Td>{value}</Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}
