import { ScrollArea } from '@mantine/core';

/** A unified diff, lines coloured by whether they were added or removed. */
export function DiffView({ text }: { text: string }) {
  if (!text.trim()) return null;
  return (
    <ScrollArea.Autosize mah={360} type="auto" style={{ border: '1px solid var(--mantine-color-default-border)', borderRadius: 4 }}>
      {text.split('\n').map((line, i) => (
        <div key={i} className={`diff-line${line.startsWith('+') && !line.startsWith('+++') ? ' diff-add' : line.startsWith('-') && !line.startsWith('---') ? ' diff-del' : ''}`}>
          {line}
        </div>
      ))}
    </ScrollArea.Autosize>
  );
}
