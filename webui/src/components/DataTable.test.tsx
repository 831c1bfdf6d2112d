import { MantineProvider, Table } from '@mantine/core';
import { render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { DataTable } from './DataTable';

type Row = { id: number; name: string };

function renderTable(rows: Row[] | undefined, extra: Partial<Parameters<typeof DataTable<Row>>[0]> = {}) {
  return render(
    <MantineProvider>
      <DataTable
        label="Things"
        columns={['Id', 'Name']}
        rows={rows}
        rowKey={(row) => row.id}
        cells={(row) => (
          <>
            <Table.Td>{row.id}</Table.Td>
            <Table.Td>{row.name}</Table.Td>
          </>
        )}
        minWidth={400}
        empty="Nothing matches."
        {...extra}
      />
    </MantineProvider>,
  );
}

describe('DataTable', () => {
  it('shows the columns and one row per item, under its label', () => {
    renderTable([
      { id: 1, name: 'alpha' },
      { id: 2, name: 'beta' },
    ]);
    const table = screen.getByRole('table', { name: 'Things' });
    expect(table).toHaveTextContent('IdName');
    expect(screen.getAllByRole('row')).toHaveLength(3);
    expect(screen.getByRole('cell', { name: 'beta' })).toBeInTheDocument();
    expect(screen.queryByText('Nothing matches.')).toBeNull();
  });

  it('says so when nothing matches, but not while the rows are loading', () => {
    const { unmount } = renderTable(undefined);
    expect(screen.queryByText('Nothing matches.')).toBeNull();
    unmount();
    renderTable([]);
    expect(screen.getByText('Nothing matches.')).toBeInTheDocument();
  });

  it('pages by its size: Previous at the start and Next at the last page are disabled', async () => {
    const onOffset = vi.fn();
    const { unmount } = renderTable([{ id: 1, name: 'alpha' }], { paging: { offset: 0, size: 50, count: 120, onOffset } });
    expect(screen.getByRole('button', { name: 'Previous' })).toBeDisabled();
    await userEvent.click(screen.getByRole('button', { name: 'Next' }));
    expect(onOffset).toHaveBeenLastCalledWith(50);
    unmount();

    renderTable([{ id: 1, name: 'alpha' }], { paging: { offset: 100, size: 50, count: 120, onOffset } });
    expect(screen.getByRole('button', { name: 'Next' })).toBeDisabled();
    await userEvent.click(screen.getByRole('button', { name: 'Previous' }));
    expect(onOffset).toHaveBeenLastCalledWith(50);
  });

  it('keeps Next disabled until the count is known', () => {
    renderTable(undefined, { paging: { offset: 0, size: 50, count: undefined, onOffset: () => {} } });
    expect(screen.getByRole('button', { name: 'Next' })).toBeDisabled();
  });
});
