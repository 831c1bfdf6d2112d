/**
 * Client-side checks that mirror the API's own rules (api/src/fulcrum/config/types.py and
 * snapshot.py), so most mistakes are caught while typing. The API stays the authority: its 422
 * messages are shown at the same fields.
 */

export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;
export const USERNAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$/;
export const TOKEN_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$/;
export const HTTP_PATH_PATTERN = /^\/[A-Za-z0-9._~%/?=&+,;:*'()-]{0,254}$/;
export const HOSTNAME_PATTERN = /^(?:\.|[A-Za-z0-9_][A-Za-z0-9_-]{0,62}(?:\.[A-Za-z0-9_][A-Za-z0-9_-]{0,62})*\.?)$/;
export const HEX_PATTERN = /^(?:[0-9A-Fa-f]{2}){1,128}$/;
export const MD5_PATTERN = /^[0-9a-fA-F]{32}$/;
export const INTERFACE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$/;
export const PASSWORD_MIN = 12;
const PASSWORD_MAX = 256;

type Check = (value: string) => string | null;

export function ipVersion(value: string): 4 | 6 | null {
  if (isIPv4(value)) return 4;
  if (isIPv6(value)) return 6;
  return null;
}

export function isIPv4(value: string): boolean {
  const parts = value.split('.');
  // Python's ipaddress refuses leading zeros ("010"), so do we.
  return parts.length === 4 && parts.every((p) => /^(0|[1-9]\d{0,2})$/.test(p) && Number(p) <= 255);
}

export function isIPv6(value: string): boolean {
  if (value.includes('%')) return false; // zones are refused by the API
  let text = value;
  const lastColon = text.lastIndexOf(':');
  let groupsAvailable = 8;
  if (lastColon !== -1 && text.slice(lastColon + 1).includes('.')) {
    // An embedded IPv4 tail ("::ffff:192.0.2.1") stands for two groups.
    if (!isIPv4(text.slice(lastColon + 1))) return false;
    text = `${text.slice(0, lastColon + 1)}0:0`;
    groupsAvailable = 8;
  }
  const halves = text.split('::');
  if (halves.length > 2) return false;
  const group = /^[0-9A-Fa-f]{1,4}$/;
  const parse = (half: string) => (half === '' ? [] : half.split(':'));
  const head = parse(halves[0]);
  const tail = halves.length === 2 ? parse(halves[1]) : [];
  if (![...head, ...tail].every((g) => group.test(g))) return false;
  const count = head.length + tail.length;
  return halves.length === 2 ? count < groupsAvailable : count === groupsAvailable;
}

export const validName: Check = (v) =>
  NAME_PATTERN.test(v) ? null : 'Letters, digits, ".", "_" and "-"; starts with a letter or digit; at most 63 characters';

export const validAddress: Check = (v) =>
  ipVersion(v.trim()) ? null : `"${v}" is not a valid IPv4 or IPv6 address (e.g. 192.0.2.10 or 2001:db8::10)`;

function validInteger(min: number, max: number, label = 'Value'): (v: number | string | null | undefined) => string | null {
  return (v) => {
    if (v === '' || v === null || v === undefined) return 'Required';
    const n = typeof v === 'number' ? v : Number(v);
    if (!Number.isInteger(n)) return `${label} must be a whole number`;
    if (n < min || n > max) return `${label} must be between ${min} and ${max}`;
    return null;
  };
}

export const validPort = validInteger(1, 65535, 'Port');
export const validWeight = validInteger(0, 65535, 'Weight');

/** Optional integer: empty is fine. */
export function optionalInteger(min: number, max: number, label?: string) {
  const check = validInteger(min, max, label);
  return (v: number | string | null | undefined) => (v === '' || v === null || v === undefined ? null : check(v));
}

export function validSeconds(v: number | string | null | undefined): string | null {
  const n = Number(v);
  if (v === '' || v === null || v === undefined || Number.isNaN(n)) return 'Required';
  return n < 0.1 || n > 3600 ? 'Between 0.1 and 3600 seconds' : null;
}

/** "80, 443" → [80, 443]; throws a message for anything else. */
export function parsePorts(text: string): number[] {
  const parts = text.split(/[\s,]+/).filter(Boolean);
  if (!parts.length) throw new Error('Give at least one port');
  const ports = parts.map((p) => {
    const error = /^\d+$/.test(p) ? validPort(Number(p)) : `"${p}" is not a port number`;
    if (error) throw new Error(error);
    return Number(p);
  });
  if (new Set(ports).size !== ports.length) throw new Error('A port is listed twice');
  if (ports.length > 32) throw new Error('At most 32 ports');
  return ports;
}

export function validPorts(text: string): string | null {
  try {
    parsePorts(text);
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

/** A new password as the API accepts it (12 to 256 characters). */
export function validNewPassword(v: string): string | null {
  if (v.length < PASSWORD_MIN) return `At least ${PASSWORD_MIN} characters; a passphrase is best`;
  if (v.length > PASSWORD_MAX) return `At most ${PASSWORD_MAX} characters`;
  return null;
}

export function samePassword(repeat: string, password: string): string | null {
  return repeat === password ? null : 'The passwords differ';
}
