/**
 * The appliance's own network as the Network page edits it: the API's document (NetworkConfig)
 * as form values and back, the take-over prefilled from the kernel's interfaces, and where the
 * API's field errors show.
 */
import type { Bond, BondMode, KernelInterface, KernelRoute, NetworkConfig, Nic, Route, Vlan, XmitHashPolicy } from '../client/types.gen';

type Addressed = {
  name: string;
  /** Static addresses with prefix length, separated by commas or spaces. */
  addresses: string;
  dhcp4: boolean;
  ipv6_autoconf: boolean;
  mtu: number | string; // '' : the kernel's default
  enabled: boolean;
};
type NicValues = Addressed & { mac: string; permanent_mac: boolean };
type BondValues = Addressed & {
  members: string[];
  mode: BondMode;
  xmit_hash_policy: XmitHashPolicy;
  miimon: number | string;
  allow_round_robin: boolean;
};
type VlanValues = Addressed & { parent: string; vlan_id: number | string };
type RouteValues = { destination: string; gateway: string; table: number | string; metric: number | string };

export type NetworkValues = {
  hostname: string;
  management_interface: string;
  nics: NicValues[];
  bonds: BondValues[];
  vlans: VlanValues[];
  routes: RouteValues[];
  gateway4: string;
  gateway6: string;
  dns_servers: string;
  search_domains: string;
  ntp_servers: string;
};

/** "a, b c" → ["a", "b", "c"]: lists of addresses and names typed in one field. */
export function splitList(text: string): string[] {
  return text.split(/[\s,]+/).filter(Boolean);
}

/** ["a", "b"] → "a, b": the other way round, for a field's initial value. */
export const joinList = (items: string[] | null | undefined) => (items ?? []).join(', ');
const optional = (value: number | null | undefined) => value ?? '';
const numberOrNull = (value: number | string) => (value === '' ? null : Number(value));

function addressedValues(i: Nic | Bond | Vlan): Addressed {
  return {
    name: i.name,
    addresses: joinList(i.addresses),
    dhcp4: i.dhcp4 ?? false,
    ipv6_autoconf: i.ipv6_autoconf ?? false,
    mtu: optional(i.mtu),
    enabled: i.enabled ?? true,
  };
}

function addressedBody(v: Addressed) {
  return {
    name: v.name.trim(),
    addresses: splitList(v.addresses),
    dhcp4: v.dhcp4,
    ipv6_autoconf: v.ipv6_autoconf,
    mtu: numberOrNull(v.mtu),
    enabled: v.enabled,
  };
}

export function toValues(config: NetworkConfig): NetworkValues {
  return {
    hostname: config.hostname ?? 'fulcrum',
    management_interface: config.management_interface ?? '',
    nics: (config.nics ?? []).map((n) => ({ ...addressedValues(n), mac: n.mac, permanent_mac: n.permanent_mac ?? true })),
    bonds: (config.bonds ?? []).map((b) => ({
      ...addressedValues(b),
      members: b.members,
      mode: b.mode ?? 'active-backup',
      xmit_hash_policy: b.xmit_hash_policy ?? 'layer3+4',
      miimon: b.miimon ?? 100,
      allow_round_robin: b.allow_round_robin ?? false,
    })),
    vlans: (config.vlans ?? []).map((v) => ({ ...addressedValues(v), parent: v.parent, vlan_id: v.vlan_id })),
    routes: (config.routes ?? []).map((r) => ({
      destination: r.destination,
      gateway: r.gateway,
      table: optional(r.table),
      metric: optional(r.metric),
    })),
    gateway4: config.gateway4 ?? '',
    gateway6: config.gateway6 ?? '',
    dns_servers: joinList(config.dns_servers),
    search_domains: joinList(config.search_domains),
    ntp_servers: joinList(config.ntp_servers),
  };
}

/** What the form says, as the API takes it: nothing checked here that the API checks itself. */
export function toBody(v: NetworkValues): NetworkConfig {
  const route = (r: RouteValues): Route => ({
    destination: r.destination.trim(),
    gateway: r.gateway.trim(),
    table: numberOrNull(r.table),
    metric: numberOrNull(r.metric),
  });
  return {
    hostname: v.hostname.trim(),
    management_interface: v.management_interface,
    nics: v.nics.map((n) => ({ ...addressedBody(n), mac: n.mac.trim(), permanent_mac: n.permanent_mac })),
    bonds: v.bonds.map((b) => ({
      ...addressedBody(b),
      members: b.members,
      mode: b.mode,
      xmit_hash_policy: b.xmit_hash_policy,
      miimon: Number(b.miimon),
      allow_round_robin: b.allow_round_robin,
    })),
    vlans: v.vlans.map((l) => ({ ...addressedBody(l), parent: l.parent, vlan_id: Number(l.vlan_id) })),
    routes: v.routes.map(route),
    gateway4: v.gateway4.trim() || null,
    gateway6: v.gateway6.trim() || null,
    dns_servers: splitList(v.dns_servers),
    search_domains: splitList(v.search_domains),
    ntp_servers: splitList(v.ntp_servers),
  };
}

// Lists typed into one field: an error about one item ("nics.0.addresses.1") shows at the field.
const LIST_ITEM = /^((?:nics|bonds|vlans)\.\d+\.(?:addresses|members)|dns_servers|search_domains|ntp_servers)\.\d+$/;

/** The form field an API error path belongs to. */
export function formPath(path: string): string {
  return path.replace(LIST_ITEM, '$1');
}

export const MAIN_TABLE = 254;

/** A default route of either family. */
export const isDefaultRoute = (r: KernelRoute) => r.destination === '0.0.0.0/0' || r.destination === '::/0';

/** A bond's members as the kernel has them: each one's link, for the bonds table. */
export function memberStates(bond: KernelInterface, interfaces: KernelInterface[]) {
  return bond.bond_members.map((name) => {
    const member = interfaces.find((i) => i.name === name);
    return { name, up: !!member && member.carrier && member.operstate === 'up', speed: member?.speed_mbps ?? null };
  });
}
