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

const joinList = (items: string[] | undefined) => (items ?? []).join(', ');
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

const IPV6_LINK_LOCAL = /^fe[89ab][0-9a-f]:/i;

// Routes someone configured (by hand, the console, a static configuration), as opposed to those
// the kernel derives from addresses or that DHCP and router advertisements bring and take away.
const CONFIGURED_ROUTE = new Set(['boot', 'static']);
export const MAIN_TABLE = 254;

/** A default route of either family. */
export const isDefaultRoute = (r: KernelRoute) => r.destination === '0.0.0.0/0' || r.destination === '::/0';

/**
 * A first network document from what the kernel runs now: each NIC (physical interface) with the
 * addresses it has (static ones as they are, those with a lifetime as DHCPv4 or SLAAC), each bond
 * with its members, the main table's default gateways and the other configured routes. The
 * management interface is the one that holds `dashboardHost` (the address this page was opened
 * at), else the first NIC with an address. The NTP servers the clock uses now are kept (the image's
 * own, from GET /network/clock): without them a take-over would stop the clock's synchronisation.
 * Bond modes and VLANs are not in the kernel's list: the admin checks them before saving.
 */
export function takeOverFrom(
  interfaces: KernelInterface[],
  routes: KernelRoute[],
  dashboardHost: string,
  ntpServers: string[] = [],
): NetworkConfig {
  const addressed = (i: KernelInterface): Pick<Nic, 'addresses' | 'dhcp4' | 'ipv6_autoconf'> => {
    const global = i.prefixed_addresses.filter((a) => !IPV6_LINK_LOCAL.test(a));
    const dynamic = new Set(i.dynamic_addresses);
    const isV6 = (a: string) => a.includes(':');
    return {
      addresses: global.filter((a) => !dynamic.has(a)),
      dhcp4: global.some((a) => dynamic.has(a) && !isV6(a)),
      ipv6_autoconf: global.some((a) => dynamic.has(a) && isV6(a)),
    };
  };
  const nics: Nic[] = interfaces
    .filter((i) => i.kind === 'physical')
    .map((i) => ({ name: i.name, mac: i.mac, ...(i.bond_master ? {} : addressed(i)) }));
  const bonds: Bond[] = interfaces
    .filter((i) => i.kind === 'bond' && i.bond_members.length > 0)
    .map((i) => ({ name: i.name, members: i.bond_members, ...addressed(i) }));
  const candidates = [...nics, ...bonds];
  const holdsAddress = (c: Nic | Bond) => !!(c.addresses?.length || c.dhcp4 || c.ipv6_autoconf);
  const host = dashboardHost.replace(/^\[|\]$/g, '');
  const management =
    interfaces.find((i) => i.addresses.includes(host) && candidates.some((c) => c.name === i.name))?.name ??
    candidates.find(holdsAddress)?.name ??
    candidates[0]?.name ??
    '';
  const configured = routes.filter(
    (r) => r.gateway !== null && CONFIGURED_ROUTE.has(r.protocol) && !IPV6_LINK_LOCAL.test(r.gateway),
  );
  const gateway = (family: string) =>
    configured.find((r) => r.table === MAIN_TABLE && r.destination === family)?.gateway ?? null;
  const staticRoutes: Route[] = configured
    .filter((r) => !isDefaultRoute(r) || r.table !== MAIN_TABLE)
    .map((r) => ({
      destination: r.destination,
      gateway: r.gateway as string,
      ...(r.table !== MAIN_TABLE ? { table: r.table } : {}),
      ...(r.metric !== null ? { metric: r.metric } : {}),
    }));
  return {
    management_interface: management,
    nics,
    bonds,
    vlans: [],
    routes: staticRoutes,
    gateway4: gateway('0.0.0.0/0'),
    gateway6: gateway('::/0'),
    ntp_servers: ntpServers,
  };
}

/** A bond's members as the kernel has them: each one's link, for the bonds table. */
export function memberStates(bond: KernelInterface, interfaces: KernelInterface[]) {
  return bond.bond_members.map((name) => {
    const member = interfaces.find((i) => i.name === name);
    return { name, up: !!member && member.carrier && member.operstate === 'up', speed: member?.speed_mbps ?? null };
  });
}
