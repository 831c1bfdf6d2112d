/**
 * A bounded, gap-aware time series for live charts.
 *
 * Points are bucketed at the series' resolution (1 s, or 60 s for the 24 h range): samples that
 * fall into the same bucket are averaged, so the once-a-second stream can feed a per-minute chart.
 * The buffer holds at most `capacity` buckets in a ring, and drops buckets older than `window`
 * seconds behind the newest. `columns()` returns uPlot's aligned arrays with a null inserted
 * wherever consecutive buckets are more than GAP_FACTOR × the resolution apart, so a failover or a
 * lost stream shows as a break in the line rather than a straight line across the missing time.
 */

/**
 * One empty bucket is the collector's jitter (a tick landing just past a bucket edge), not an
 * outage: at 1.5× the live lines broke every few minutes in the VM lab. Two or more empty buckets
 * in a row break the line.
 */
const GAP_FACTOR = 2.5;

export const METRICS = ['cps', 'activeconns', 'inactconns', 'inbps', 'outbps', 'inpps', 'outpps'] as const;
export type Metric = (typeof METRICS)[number];
export type Sample = { t: number } & Record<Metric, number>;

/** uPlot's AlignedData: x values (seconds), then one array per metric; null draws a break. */
export type Columns = [number[], ...(number | null)[][]];

export class TimeSeriesBuffer {
  readonly resolution: number;
  readonly window: number;
  private readonly capacity: number;
  private readonly times: Float64Array;
  private readonly values: Float64Array[];
  private readonly counts: Uint32Array;
  private start = 0; // index of the oldest bucket
  private size = 0;

  constructor(resolution: number, window: number) {
    this.resolution = resolution;
    this.window = window;
    this.capacity = Math.ceil(window / resolution) + 1;
    this.times = new Float64Array(this.capacity);
    this.values = METRICS.map(() => new Float64Array(this.capacity));
    this.counts = new Uint32Array(this.capacity);
  }

  get length(): number {
    return this.size;
  }

  /** The newest bucket's time, or null when empty. */
  get last(): number | null {
    return this.size ? this.times[this.index(this.size - 1)] : null;
  }

  /** Add one sample; a sample older than the newest bucket is ignored (the stream replays nothing). */
  push(sample: Sample): void {
    const bucket = Math.floor(sample.t / this.resolution) * this.resolution;
    const last = this.last;
    if (last !== null && bucket < last) return;
    if (last !== null && bucket === last) {
      const i = this.index(this.size - 1);
      const n = ++this.counts[i];
      METRICS.forEach((metric, m) => {
        this.values[m][i] += (sample[metric] - this.values[m][i]) / n;
      });
      return;
    }
    if (this.size === this.capacity) {
      this.start = (this.start + 1) % this.capacity;
      this.size--;
    }
    const i = this.index(this.size);
    this.times[i] = bucket;
    this.counts[i] = 1;
    METRICS.forEach((metric, m) => {
      this.values[m][i] = sample[metric];
    });
    this.size++;
    this.evictOlderThan(bucket - this.window);
  }

  pushAll(samples: Iterable<Sample>): void {
    for (const sample of samples) this.push(sample);
  }

  columns(): Columns {
    const xs: number[] = [];
    const ys: (number | null)[][] = METRICS.map(() => []);
    const maxStep = this.resolution * GAP_FACTOR;
    for (let k = 0; k < this.size; k++) {
      const i = this.index(k);
      const t = this.times[i];
      if (xs.length && t - xs[xs.length - 1] > maxStep) {
        // A break: one null point just after the last real one.
        xs.push(xs[xs.length - 1] + this.resolution);
        ys.forEach((series) => series.push(null));
      }
      xs.push(t);
      ys.forEach((series, m) => series.push(this.values[m][i]));
    }
    return [xs, ...ys];
  }

  private evictOlderThan(cutoff: number): void {
    while (this.size && this.times[this.start] < cutoff) {
      this.start = (this.start + 1) % this.capacity;
      this.size--;
    }
  }

  private index(k: number): number {
    return (this.start + k) % this.capacity;
  }
}
