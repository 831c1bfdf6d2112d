/**
 * IP networks as the API reads them (Python's `ipaddress.ip_network(value, strict=True)`): an
 * address with an optional prefix length (or IPv4 netmask), host bits clear. Addresses are
 * 32- or 128-bit integers, so "is this address in that network" is exact.
 */
import { isIPv4, isIPv6 } from './validation';

export type IpAddress = { version: 4 | 6; value: bigint };
export type IpNetwork = { version: 4 | 6; base: bigint; prefix: number };

const WIDTH = { 4: 32, 6: 128 } as const;

export function parseAddress(text: string): IpAddress | null {
  if (isIPv4(text)) return { version: 4, value: text.split('.').reduce((acc, part) => (acc << 8n) | BigInt(part), 0n) };
  if (!isIPv6(text)) return null;
  let groups = text;
  const lastColon = groups.lastIndexOf(':');
  if (groups.slice(lastColon + 1).includes('.')) {
    // An embedded IPv4 tail stands for the last two groups.
    const v4 = parseAddress(groups.slice(lastColon + 1))!.value;
    groups = `${groups.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head, tail] = groups.split('::');
  const headParts = head ? head.split(':') : [];
  const tailParts = tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : Array<string>(8 - headParts.length - tailParts.length).fill('0');
  const all = [...headParts, ...zeros, ...tailParts];
  return { version: 6, value: all.reduce((acc, part) => (acc << 16n) | BigInt(`0x${part}`), 0n) };
}

/** An IPv4 client on a dual-stack socket shows as ::ffff:a.b.c.d; nftables sees it as IPv4. */
export function unmapIPv4(address: IpAddress): IpAddress {
  if (address.version === 6 && address.value >> 32n === 0xffffn) return { version: 4, value: address.value & 0xffffffffn };
  return address;
}

function mask(version: 4 | 6, prefix: number): bigint {
  const width = WIDTH[version];
  return ((1n << BigInt(prefix)) - 1n) << BigInt(width - prefix);
}

/** "255.255.255.0" → 24; "0.0.0.255" (a host mask) → 24, as Python accepts both. */
function prefixFromMask(text: string): number | null {
  const value = parseAddress(text);
  if (!value || value.version !== 4) return null;
  for (let prefix = 0; prefix <= 32; prefix++) {
    if (value.value === mask(4, prefix)) return prefix;
    if (value.value === (mask(4, prefix) ^ 0xffffffffn)) return prefix;
  }
  return null;
}

export type ParsedNetwork = { network: IpNetwork; text: string } | { error: string };

export function parseNetwork(input: string): ParsedNetwork {
  const text = input.trim();
  const invalid = { error: `"${text}" is not a network: write an address with its prefix length, e.g. 10.0.0.0/8 or 2001:db8::/32` };
  const parts = text.split('/');
  if (parts.length > 2) return invalid;
  const address = parseAddress(parts[0]);
  if (!address) return invalid;
  const width = WIDTH[address.version];
  let prefix: number | null = width;
  if (parts.length === 2) {
    if (/^\d+$/.test(parts[1])) prefix = Number(parts[1]) <= width ? Number(parts[1]) : null;
    else prefix = address.version === 4 ? prefixFromMask(parts[1]) : null;
  }
  if (prefix === null) return invalid;
  const base = address.value & mask(address.version, prefix);
  const network = { version: address.version, base, prefix };
  if (base !== address.value) {
    return { error: `${text} has host bits set: the network is ${formatNetwork(network)}` };
  }
  return { network, text: formatNetwork(network) };
}

export function networkError(input: string): string | null {
  const parsed = parseNetwork(input);
  return 'error' in parsed ? parsed.error : null;
}

export function contains(network: IpNetwork, address: IpAddress): boolean {
  return network.version === address.version && (address.value & mask(address.version, network.prefix)) === network.base;
}

export function formatAddress(address: IpAddress): string {
  if (address.version === 4) return [24n, 16n, 8n, 0n].map((shift) => String((address.value >> shift) & 0xffn)).join('.');
  const groups = Array.from({ length: 8 }, (_, i) => (address.value >> BigInt(112 - 16 * i)) & 0xffffn);
  // The longest run of two or more zero groups becomes "::" (the first such run on a tie).
  let best = { start: -1, length: 0 };
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0n) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0n) j++;
    if (j - i > best.length) best = { start: i, length: j - i };
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best.length < 2) return hex.join(':');
  return `${hex.slice(0, best.start).join(':')}::${hex.slice(best.start + best.length).join(':')}`;
}

function formatNetwork(network: IpNetwork): string {
  return `${formatAddress({ version: network.version, value: network.base })}/${network.prefix}`;
}
