/** Turn a unified diff into side-by-side rows: removed lines pair up with the added lines after them. */

export type DiffRow = { left: string | null; right: string | null; kind: 'same' | 'change' | 'del' | 'add' | 'hunk' };

export function sideBySide(unified: string): DiffRow[] {
  const rows: DiffRow[] = [];
  let removed: string[] = [];
  let added: string[] = [];
  const flush = () => {
    const n = Math.max(removed.length, added.length);
    for (let i = 0; i < n; i++) {
      const left = removed[i] ?? null;
      const right = added[i] ?? null;
      rows.push({ left, right, kind: left !== null && right !== null ? 'change' : left !== null ? 'del' : 'add' });
    }
    removed = [];
    added = [];
  };
  for (const line of unified.split('\n')) {
    if (line.startsWith('---') || line.startsWith('+++') || line === '') continue;
    if (line.startsWith('@@')) {
      flush();
      rows.push({ left: line, right: line, kind: 'hunk' });
    } else if (line.startsWith('-')) removed.push(line.slice(1));
    else if (line.startsWith('+')) added.push(line.slice(1));
    else {
      flush();
      rows.push({ left: line.slice(1), right: line.slice(1), kind: 'same' });
    }
  }
  flush();
  return rows;
}
