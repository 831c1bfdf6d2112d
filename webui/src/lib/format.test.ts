import { bitsPerSecond, byteSize, compact, endpoint, relativeTime } from './format';

describe('format', () => {
  it('compacts numbers', () => {
    expect(compact(0)).toBe('0');
    expect(compact(999)).toBe('999');
    expect(compact(1500)).toBe('1.5k');
    expect(compact(25_000_000)).toBe('25M');
    expect(compact(null)).toBe('—');
  });

  it('turns bytes per second into bits per second', () => {
    expect(bitsPerSecond(125_000)).toBe('1.0Mbit/s');
  });

  it('sizes bytes in decimal units', () => {
    expect(byteSize(512)).toBe('512B');
    expect(byteSize(73_728)).toBe('74kB');
    expect(byteSize(1_610_612_736)).toBe('1.6GB');
  });

  it('brackets IPv6 endpoints', () => {
    expect(endpoint('2001:db8::1', 80)).toBe('[2001:db8::1]:80');
    expect(endpoint('192.0.2.1', 80)).toBe('192.0.2.1:80');
    expect(endpoint('192.0.2.1', null)).toBe('192.0.2.1');
  });

  it('says how long ago', () => {
    const now = Date.parse('2026-01-01T00:10:00Z');
    expect(relativeTime('2026-01-01T00:09:30Z', now)).toBe('30s ago');
    expect(relativeTime('2026-01-01T00:00:00Z', now)).toBe('10 min ago');
    expect(relativeTime('2026-01-01T00:11:00Z', now)).toBe('in 1 min');
  });
});
