import { METRICS, TimeSeriesBuffer, type Sample } from './timeSeries';

const sample = (t: number, cps = 1): Sample => ({ t, cps, activeconns: 0, inactconns: 0, inbps: 0, outbps: 0, inpps: 0, outpps: 0 });
const cpsColumn = (buffer: TimeSeriesBuffer) => buffer.columns()[1 + METRICS.indexOf('cps')];

describe('TimeSeriesBuffer', () => {
  it('keeps consecutive points without breaks', () => {
    const buffer = new TimeSeriesBuffer(1, 300);
    buffer.pushAll([sample(100, 1), sample(101, 2), sample(102, 3)]);
    expect(buffer.columns()[0]).toEqual([100, 101, 102]);
    expect(cpsColumn(buffer)).toEqual([1, 2, 3]);
  });

  it('inserts a null after a gap of two or more missing buckets', () => {
    const buffer = new TimeSeriesBuffer(1, 300);
    buffer.pushAll([sample(100), sample(101), sample(110), sample(111)]);
    expect(buffer.columns()[0]).toEqual([100, 101, 102, 110, 111]);
    expect(cpsColumn(buffer)).toEqual([1, 1, null, 1, 1]);
  });

  it('does not call one missing bucket (collector jitter) a gap, but two', () => {
    const buffer = new TimeSeriesBuffer(60, 86400);
    buffer.pushAll([sample(0), sample(60), sample(180), sample(360)]);
    expect(buffer.columns()[0]).toEqual([0, 60, 180, 240, 360]);
    expect(cpsColumn(buffer)).toEqual([1, 1, 1, null, 1]);
  });

  it('averages samples that fall into the same bucket', () => {
    const buffer = new TimeSeriesBuffer(60, 86400);
    buffer.pushAll([sample(60, 10), sample(61, 20), sample(119, 30)]);
    expect(buffer.length).toBe(1);
    expect(buffer.columns()[0]).toEqual([60]);
    expect(cpsColumn(buffer)).toEqual([20]);
  });

  it('ignores samples older than the newest bucket', () => {
    const buffer = new TimeSeriesBuffer(1, 300);
    buffer.pushAll([sample(100, 1), sample(99, 5)]);
    expect(cpsColumn(buffer)).toEqual([1]);
  });

  it('stays bounded and drops points outside its window', () => {
    const buffer = new TimeSeriesBuffer(1, 10);
    for (let t = 0; t < 1000; t++) buffer.push(sample(t, t));
    expect(buffer.length).toBeLessThanOrEqual(11);
    expect(buffer.columns()[0][0]).toBe(989);
    expect(buffer.last).toBe(999);
  });

  it('evicts by time after a long gap even when the ring is not full', () => {
    const buffer = new TimeSeriesBuffer(1, 10);
    buffer.pushAll([sample(0), sample(1), sample(100)]);
    expect(buffer.columns()[0]).toEqual([100]);
  });
});
