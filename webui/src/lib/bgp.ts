/**
 * This node's BGP as the BGP page edits it: the API's document (BgpRead out, BgpWrite in) as form
 * values and back, and where the API's field errors show. TCP-MD5 passwords are write-only: the
 * form says whether one is stored, keeps it unless a new one is typed or removal is ticked.
 */
import type { BgpRead, BgpWrite, NeighborRead } from '../client/types.gen';
import { joinList, splitList } from './network';

/** What follows a withdrawal's reason wherever it is shown (the alarm, the BGP page): the
 * announcement watch in the apply helper puts the VIPs back by itself. */
export const ANNOUNCES_AGAIN = 'It announces again by itself once fit.';

/** FRR's datacenter profile, what a neighbor without timers of its own gets. */
export const DEFAULT_TIMERS = { keepalive: 3, hold: 9 } as const;

type NeighborValues = {
  address: string;
  remote_asn: number | string;
  description: string;
  bfd: boolean;
  /** Whether the API holds a password for this neighbor (only ever said, never shown). */
  has_password: boolean;
  /** A new password; empty keeps the stored one. */
  password: string;
  remove_password: boolean;
  own_timers: boolean;
  keepalive: number | string;
  hold: number | string;
};

export type BgpValues = {
  enabled: boolean;
  asn: number | string;
  router_id: string;
  neighbors: NeighborValues[];
  /** Announce every enabled service's VIP, or only those listed in `announce`. */
  announce_all: boolean;
  announce: string;
  communities: string;
  large_communities: string;
};

export const NEW_NEIGHBOR: NeighborValues = {
  address: '',
  remote_asn: '',
  description: '',
  bfd: true,
  has_password: false,
  password: '',
  remove_password: false,
  own_timers: false,
  keepalive: DEFAULT_TIMERS.keepalive,
  hold: DEFAULT_TIMERS.hold,
};

function neighborValues(n: NeighborRead): NeighborValues {
  return {
    ...NEW_NEIGHBOR,
    address: n.address,
    remote_asn: n.remote_asn,
    description: n.description ?? '',
    bfd: n.bfd ?? true,
    has_password: n.has_password,
    own_timers: !!n.timers,
    keepalive: n.timers?.keepalive ?? DEFAULT_TIMERS.keepalive,
    hold: n.timers?.hold ?? DEFAULT_TIMERS.hold,
  };
}

/** The stored settings as form values; none stored: an empty form, announcing every VIP. */
export function toValues(bgp: BgpRead | null): BgpValues {
  return {
    enabled: bgp?.enabled ?? true,
    asn: bgp?.asn ?? '',
    router_id: bgp?.router_id ?? '',
    neighbors: (bgp?.neighbors ?? []).map(neighborValues),
    announce_all: bgp ? bgp.announce == null : true,
    announce: joinList(bgp?.announce),
    communities: joinList(bgp?.communities),
    large_communities: joinList(bgp?.large_communities),
  };
}

/** A password typed replaces the stored one, removal sends "", otherwise null keeps it. */
function passwordBody(n: NeighborValues): string | null {
  if (n.password) return n.password;
  return n.remove_password ? '' : null;
}

/** What the form says, as the API takes it: nothing checked here that the API checks itself. */
export function toBody(v: BgpValues): BgpWrite {
  return {
    enabled: v.enabled,
    asn: Number(v.asn),
    router_id: v.router_id.trim(),
    neighbors: v.neighbors.map((n) => ({
      address: n.address.trim(),
      remote_asn: Number(n.remote_asn),
      description: n.description.trim() || null,
      bfd: n.bfd,
      password: passwordBody(n),
      timers: n.own_timers ? { keepalive: Number(n.keepalive), hold: Number(n.hold) } : null,
    })),
    announce: v.announce_all ? null : splitList(v.announce),
    communities: splitList(v.communities),
    large_communities: splitList(v.large_communities),
  };
}

/** Numbers the API needs that an empty field cannot give: said at the field before sending. */
export function requiredErrors(v: BgpValues): Record<string, string> {
  const errors: Record<string, string> = {};
  if (v.asn === '') errors.asn = 'Fill in this node’s AS number';
  v.neighbors.forEach((n, i) => {
    if (n.remote_asn === '') errors[`neighbors.${i}.remote_asn`] = 'Fill in the router’s AS number';
    if (n.own_timers && n.keepalive === '') errors[`neighbors.${i}.keepalive`] = 'Fill in the keepalive interval';
    if (n.own_timers && n.hold === '') errors[`neighbors.${i}.hold`] = 'Fill in the hold time';
  });
  return errors;
}

// Lists typed into one field: an error about one item ("communities.1") shows at the field; the
// timers' rule (keepalive shorter than hold) names the keepalive.
const LIST_ITEM = /^(announce|communities|large_communities)\.\d+$/;
const TIMERS = /^(neighbors\.\d+)\.timers(?:\.(keepalive|hold))?$/;

/** The form field an API error path belongs to. */
export function formPath(path: string): string {
  const timers = TIMERS.exec(path);
  if (timers) return `${timers[1]}.${timers[2] ?? 'keepalive'}`;
  return path.replace(LIST_ITEM, '$1');
}
