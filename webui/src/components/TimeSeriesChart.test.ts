import { timeRange } from './TimeSeriesChart';
import type { Columns } from '../lib/timeSeries';

describe('timeRange', () => {
  it('spans the window, ending at the newest point', () => {
    const columns: Columns = [[1000, 1005, 1010], [1, 2, 3]];
    expect(timeRange(columns, 300)).toEqual({ min: 710, max: 1010 });
  });

  it('gives a single point the whole window, not years', () => {
    expect(timeRange([[1000], [1]], 3600)).toEqual({ min: -2600, max: 1000 });
  });

  it('ends at the present before the first point', () => {
    const now = Date.now() / 1000;
    const { min, max } = timeRange([[]], 300);
    expect(max).toBeGreaterThanOrEqual(now);
    expect(max - now).toBeLessThan(5);
    expect(max - min).toBe(300);
  });
});
