/**
 * Plain-language descriptions of every IPVS scheduler (net/netfilter/ipvs/ip_vs_*.c) and
 * forwarding method, for people who have never heard of "wlc".
 */
import type { Forwarding, Scheduler } from '../client/types.gen';

export type SchedulerInfo = {
  value: Scheduler;
  name: string;
  /** What it does, in one or two sentences. */
  how: string;
  /** When to choose it. */
  when: string;
  /** Uses backend weights? */
  weighted: boolean;
  /** A plain-language group, to help people scan the list. */
  group: 'Spread the load' | 'Keep clients together' | 'Active / standby' | 'Special purpose';
};

export const SCHEDULERS: SchedulerInfo[] = [
  {
    value: 'wlc',
    name: 'Weighted least connections',
    how: 'Sends each new connection to the backend with the fewest connections for its weight (a weight-2 backend is expected to carry twice as many).',
    when: 'The safe default: works well for almost any mix of short and long connections and backends of different sizes.',
    weighted: true,
    group: 'Spread the load',
  },
  {
    value: 'rr',
    name: 'Round robin',
    how: 'Takes the backends in turn, one new connection each, ignoring weights and current load.',
    when: 'Identical backends and short, similar requests (e.g. a DNS or small API pool).',
    weighted: false,
    group: 'Spread the load',
  },
  {
    value: 'wrr',
    name: 'Weighted round robin',
    how: 'Takes the backends in turn, in proportion to their weights: weight 3 receives three connections for every one that weight 1 receives.',
    when: 'Backends of different capacity serving short requests; predictable shares.',
    weighted: true,
    group: 'Spread the load',
  },
  {
    value: 'lc',
    name: 'Least connections',
    how: 'Sends each new connection to the backend with the fewest connections; weights are ignored (except that weight 0 receives nothing).',
    when: 'Identical backends with connections of very different length (downloads, websockets).',
    weighted: false,
    group: 'Spread the load',
  },
  {
    value: 'sed',
    name: 'Shortest expected delay',
    how: 'Picks the backend with the smallest (active connections + 1) ÷ weight: where a new connection is expected to finish soonest.',
    when: 'Backends of clearly different speed; prefers the big ones even when a small one is idle.',
    weighted: true,
    group: 'Spread the load',
  },
  {
    value: 'nq',
    name: 'Never queue',
    how: 'Uses an idle backend (no active connections) whenever there is one; otherwise behaves like shortest expected delay.',
    when: 'Latency matters more than even spreading: a request never waits behind another if a backend is free.',
    weighted: true,
    group: 'Spread the load',
  },
  {
    value: 'twos',
    name: 'Random two choices',
    how: 'Picks two backends at random (more likely the heavier-weighted ones) and sends the connection to the less loaded of the two.',
    when: 'Large pools: nearly as even as least-connections at lower cost, and no herd effect after a backend returns. Needs Linux 5.11 or later.',
    weighted: true,
    group: 'Spread the load',
  },
  {
    value: 'sh',
    name: 'Source hashing',
    how: 'Hashes the client address: a given client always reaches the same backend, as long as the set of backends does not change.',
    when: 'Sticky clients without a persistence table. Adding or removing a backend moves many clients; prefer Maglev for that.',
    weighted: true,
    group: 'Keep clients together',
  },
  {
    value: 'mh',
    name: 'Maglev hashing',
    how: 'Consistent hashing of the client address (Google’s Maglev): like source hashing, but when a backend is added or removed most clients keep their backend.',
    when: 'Sticky clients on a pool that changes, or several load balancers that must agree on where a client goes.',
    weighted: true,
    group: 'Keep clients together',
  },
  {
    value: 'fo',
    name: 'Weighted failover',
    how: 'Sends all new connections to the available backend with the highest weight; the others wait as standby.',
    when: 'Active/standby backends: a primary (highest weight) and spares that take over only when it fails.',
    weighted: true,
    group: 'Active / standby',
  },
  {
    value: 'ovf',
    name: 'Overflow',
    how: 'Sends new connections to the highest-weight backend until its active connections exceed its weight, then overflows to the next.',
    when: 'A preferred backend with a fixed connection capacity (the weight), and overflow capacity elsewhere.',
    weighted: true,
    group: 'Active / standby',
  },
  {
    value: 'lblc',
    name: 'Locality-based least connections',
    how: 'Keeps each destination address on the same backend unless it is overloaded, then picks the least-loaded one.',
    when: 'Transparent web-cache clusters balancing by the address clients want to reach. For an ordinary service every connection has the same destination (the VIP), so it uses one backend at a time.',
    weighted: true,
    group: 'Special purpose',
  },
  {
    value: 'lblcr',
    name: 'Locality-based with replication',
    how: 'Like locality-based least connections, but each destination maps to a small set of backends that grows when all of them are busy.',
    when: 'Transparent cache clusters with very popular destinations. Rarely right for an ordinary service.',
    weighted: true,
    group: 'Special purpose',
  },
  {
    value: 'dh',
    name: 'Destination hashing',
    how: 'Hashes the destination address to choose a backend: the same destination always reaches the same backend.',
    when: 'Cache or firewall clusters; for an ordinary service (one VIP) all traffic goes to one backend.',
    weighted: true,
    group: 'Special purpose',
  },
];

export const schedulerInfo = (value: Scheduler | undefined): SchedulerInfo =>
  SCHEDULERS.find((s) => s.value === value) ?? SCHEDULERS[0];

export type ForwardingChoice = Forwarding | 'one_arm';

export type ForwardingInfo = {
  value: ForwardingChoice;
  name: string;
  how: string;
  needs: string;
  /** Do backends reply through the load balancer? */
  repliesViaBalancer: boolean;
};

export const FORWARDING: ForwardingInfo[] = [
  {
    value: 'nat',
    name: 'NAT',
    how: 'The load balancer rewrites the destination to the backend’s address (and port, which may differ). Replies come back through the load balancer, which rewrites them again.',
    needs: 'Backends must route their replies through this appliance (it is their default gateway). Backends see the real client address.',
    repliesViaBalancer: true,
  },
  {
    value: 'one_arm',
    name: 'One-arm NAT',
    how: 'NAT plus a source rewrite: backends see the request coming from the load balancer, so they reply to it without any routing change.',
    needs: 'Nothing on the backends: the easiest to set up. Backends see the load balancer’s address, not the client’s.',
    repliesViaBalancer: true,
  },
  {
    value: 'dr',
    name: 'Direct routing (DR)',
    how: 'The load balancer only changes the Ethernet destination; the backend answers the client directly. The fastest method: replies bypass the load balancer.',
    needs: 'Backends on the same network segment, with the VIP on their loopback and ARP for it suppressed (arp_ignore=1, arp_announce=2). The port cannot change.',
    repliesViaBalancer: false,
  },
  {
    value: 'tun',
    name: 'Tunnel (TUN)',
    how: 'The load balancer wraps each packet in a tunnel (IPIP, GUE or GRE) to the backend, which unwraps it and answers the client directly.',
    needs: 'Backends anywhere routable, with the tunnel interface and the VIP configured. The port cannot change; tunnelling lowers the path MTU.',
    repliesViaBalancer: false,
  },
];
