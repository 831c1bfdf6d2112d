import { sideBySide } from './diff';

describe('sideBySide', () => {
  it('pairs removed and added lines, keeps context on both sides', () => {
    const rows = sideBySide(['--- 1', '+++ 2', '@@ -1,3 +1,3 @@', ' {', '-  "weight": 2', '+  "weight": 0', '+  "x": 1', ' }'].join('\n'));
    expect(rows).toEqual([
      { left: '@@ -1,3 +1,3 @@', right: '@@ -1,3 +1,3 @@', kind: 'hunk' },
      { left: '{', right: '{', kind: 'same' },
      { left: '  "weight": 2', right: '  "weight": 0', kind: 'change' },
      { left: null, right: '  "x": 1', kind: 'add' },
      { left: '}', right: '}', kind: 'same' },
    ]);
  });

  it('is empty for identical configurations', () => {
    expect(sideBySide('')).toEqual([]);
  });
});
