import { ScrollArea, SimpleGrid, Text } from '@mantine/core';
import { sideBySide } from '../lib/diff';

/** A unified diff shown as two aligned columns: left (from) and right (to). */
export function SideBySideDiff({ text }: { text: string }) {
  const rows = sideBySide(text);
  if (!rows.length) return <Text c="dimmed">The two configurations are identical.</Text>;
  const cell = (line: string | null, kind: 'del' | 'add' | 'same' | 'hunk', key: string) => (
    <div key={key} className={`diff-line${kind === 'del' ? ' diff-del' : kind === 'add' ? ' diff-add' : ''}`} style={kind === 'hunk' ? { color: 'var(--mantine-color-dimmed)' } : undefined}>
      {line ?? ''}
    </div>
  );
  return (
    <ScrollArea.Autosize mah={520} type="auto" style={{ border: '1px solid var(--mantine-color-default-border)', borderRadius: 4 }}>
      <SimpleGrid cols={2} spacing={0} data-testid="side-by-side-diff">
        {rows.flatMap((row, i) => [
          cell(row.left, row.kind === 'change' ? 'del' : row.kind, `l${i}`),
          cell(row.right, row.kind === 'change' ? 'add' : row.kind, `r${i}`),
        ])}
      </SimpleGrid>
    </ScrollArea.Autosize>
  );
}
