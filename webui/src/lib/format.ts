/** Human-readable numbers: operators read "12.4 Mbit/s", not 1550000 bytes. */

import type { RevisionRead } from '../client/types.gen';

const UNITS = ['', 'k', 'M', 'G', 'T'];

export function compact(value: number | null | undefined, digits = 1): string {
  if (value === null || value === undefined || Number.isNaN(value)) return '—';
  let v = Math.abs(value);
  let unit = 0;
  while (v >= 1000 && unit < UNITS.length - 1) {
    v /= 1000;
    unit++;
  }
  const text = unit === 0 ? String(Math.round(v * 10) / 10) : v.toFixed(v < 10 ? digits : 0);
  return `${value < 0 ? '-' : ''}${text}${UNITS[unit]}`;
}

/** A size in bytes, decimal as disks and downloads are sized: "1.5GB". */
export function byteSize(bytes: number): string {
  return `${compact(bytes)}B`;
}

/** IPVS reports bytes per second; networks are sized in bits. */
export function bitsPerSecond(bytesPerSecond: number | null | undefined): string {
  if (bytesPerSecond === null || bytesPerSecond === undefined) return '—';
  return `${compact(bytesPerSecond * 8)}bit/s`;
}

export function endpoint(address: string, port: number | null | undefined): string {
  const host = address.includes(':') ? `[${address}]` : address;
  return port ? `${host}:${port}` : host;
}

export function dateTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  return new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

export function relativeTime(iso: string, now = Date.now()): string {
  const seconds = Math.round((now - new Date(iso).getTime()) / 1000);
  if (Math.abs(seconds) < 60) return seconds >= 0 ? `${seconds}s ago` : `in ${-seconds}s`;
  const minutes = Math.round(seconds / 60);
  if (Math.abs(minutes) < 60) return minutes >= 0 ? `${minutes} min ago` : `in ${-minutes} min`;
  const hours = Math.round(minutes / 60);
  if (Math.abs(hours) < 48) return hours >= 0 ? `${hours} h ago` : `in ${-hours} h`;
  return dateTime(iso);
}

/** The apply engine's message on a revision ('' when it left none); apply_result is free-form JSON. */
export function applyMessage(revision: Pick<RevisionRead, 'apply_result'>): string {
  const message = revision.apply_result?.message;
  return typeof message === 'string' ? message : '';
}
