/**
 * The HA pair in operators' words, from GET /ha/status (see /api/v1/docs): roles, the sync
 * state, what needs attention, and where changes are made when this node is the standby.
 */
import type { ApiError } from '../api/errors';
import type { HaNode, HaStatus } from '../client/types.gen';
import type { Alarm } from './alarms';
import { dateTime, relativeTime } from './format';

export type Role = HaNode['role'];
type Tone = 'green' | 'blue' | 'yellow' | 'orange' | 'red' | 'gray';

export const ROLE: Record<Role, { label: string; color: Tone; help: string }> = {
  active: { label: 'active', color: 'green', help: 'Holds the VIPs and balances the traffic' },
  standby: { label: 'standby', color: 'blue', help: 'Ready to take over the VIPs if the active node fails' },
  fault: { label: 'fault', color: 'red', help: 'Cannot serve: a tracked interface or health check failed' },
  maintenance: { label: 'maintenance', color: 'orange', help: 'Stepped down on purpose: the peer holds the VIPs' },
  standalone: { label: 'standalone', color: 'gray', help: 'Not paired: no failover and no configuration sync' },
  // A paired node whose role is not known may be unable to take over: an alarm, not a grey badge.
  unknown: { label: 'unknown', color: 'red', help: 'No VRRP state is known for it: whether it could take over is not known' },
};

export type SyncSummary = { tone: Tone; title: string; detail: string };

/** One line for the sync state: "In sync at revision 7", "Peer behind", "Conflict"… */
export function syncSummary(status: HaStatus, now = Date.now()): SyncSummary {
  const { sync, peer } = status;
  const since = sync.since ? ` since ${relativeTime(sync.since, now)}` : '';
  const peerName = peer?.name ?? 'the peer';
  switch (sync.state) {
    case 'unpaired':
      if (status.cluster === 'writer') {
        // The members' sync, one by one, is on the Cluster & BGP page.
        return { tone: 'blue', title: 'Leads a cluster', detail: 'Not paired: this node’s configuration is copied to the cluster’s members instead.' };
      }
      return { tone: 'gray', title: 'Not paired', detail: 'This node runs alone: its configuration is not copied anywhere.' };
    case 'in_sync':
      return {
        tone: 'green',
        title: sync.local_revision === null ? 'In sync (nothing committed yet)' : `In sync at revision ${sync.local_revision}`,
        detail: `${peerName} runs the same shared configuration.`,
      };
    case 'peer_behind':
      return {
        tone: 'yellow',
        title: `Peer behind${since}`,
        detail: `${peerName} runs ${revisionText(sync.peer_revision)}, this node ${revisionText(sync.local_revision)}; it is copied over automatically.${extra(sync.message)}`,
      };
    case 'peer_ahead':
      return {
        tone: 'yellow',
        title: `This node is behind${since}`,
        detail: `${peerName} has newer configuration (${revisionText(sync.peer_revision)}); it copies it here.${extra(sync.message)}`,
      };
    case 'unreachable': {
      const when = peer?.unreachable_since ? ` since ${dateTime(peer.unreachable_since)}` : '';
      return {
        tone: 'red',
        title: `Peer unreachable${when}`,
        detail: `This node cannot reach ${peerName}${peer ? ` at ${peer.url}` : ''}: no configuration sync and no failover check.${extra(sync.message)}`,
      };
    }
    case 'incompatible':
      return {
        tone: 'red',
        title: `Peer cannot read this configuration${since}`,
        detail: `${peerName} runs an older version: nothing is copied to it until it is upgraded too.${extra(sync.message)}`,
      };
    case 'conflict':
      return {
        tone: 'red',
        title: `Configuration conflict${since}`,
        detail: `Both nodes changed the shared configuration independently, so neither is copied over the other. Compare them below and choose which side wins.${extra(sync.message)}`,
      };
  }
}

function revisionText(revision: number | null): string {
  return revision === null ? 'no revision' : `revision ${revision}`;
}

function extra(message: string): string {
  return message ? ` (${message})` : '';
}

/** Peer requests are refused beyond this skew (the API's peer_auth.CLOCK_SKEW); it alarms from CLOCK_ALARM_SECONDS. */
const CLOCK_LIMIT_SECONDS = 30;
export const CLOCK_ALARM_SECONDS = 10;

/** "in step (0.2 s)", "15 s ahead of this node's", from the skew measured on the last poll. */
export function clockText(offset: number | null): string {
  if (offset === null) return 'not measured yet';
  const size = Math.abs(offset);
  if (size < 1) return `in step (${size.toFixed(1)} s)`;
  return `${size.toFixed(0)} s ${offset > 0 ? 'ahead of' : 'behind'} this node's`;
}

/** The first bytes of a SHA-256, as operators compare them: "AB:CD:EF:01:…". */
export function shortFingerprint(sha256: string): string {
  return `${sha256.slice(0, 16).toUpperCase().match(/../g)?.join(':')}…`;
}

/**
 * What the overview raises about the pair. `lastingUnknown`: the nodes whose role has been
 * unknown long enough to raise (useLastingUnknownRoles); by default every one that is.
 */
export function haAlarms(status: HaStatus | undefined, lastingUnknown: string[] = status ? unknownRoles(status) : []): Alarm[] {
  if (!status) return [];
  const alarms: Alarm[] = [];
  const peer = status.peer;
  if (status.split_brain.active) {
    alarms.push({
      id: 'ha-split-brain',
      severity: 'critical',
      title: 'Split brain: both nodes hold the same VIPs',
      message: `Both nodes are MASTER of ${status.split_brain.groups.join(', ') || 'a VIP group'}${
        status.split_brain.since ? ` since ${dateTime(status.split_brain.since)}` : ''
      }. ${status.split_brain.holding ? 'This node has stepped down to end it.' : 'The node that is not the writer steps down to end it.'} Check the link between the nodes.`,
      link: '/ha',
    });
  }
  if (status.sync.state === 'conflict') {
    alarms.push({
      id: 'ha-conflict',
      severity: 'critical',
      title: 'Configuration conflict between the nodes',
      message: 'Both changed the shared configuration independently; nothing is copied until you choose which side wins.',
      link: '/ha',
    });
  }
  if (peer && !peer.reachable && status.sync.state === 'unreachable') {
    alarms.push({
      id: 'ha-peer-unreachable',
      severity: 'critical',
      title: `Peer ${peer.name} is unreachable`,
      message: `${peer.unreachable_since ? `Since ${dateTime(peer.unreachable_since)}: ` : ''}no configuration sync, and this node cannot see whether the peer could take over.`,
      link: '/ha',
    });
  }
  if (peer?.untrusted_certificate) {
    alarms.push({
      id: 'ha-peer-untrusted',
      severity: 'critical',
      title: `Peer ${peer.name} presents an unknown certificate`,
      message: `Its certificate (SHA-256 ${shortFingerprint(peer.untrusted_certificate)}) is not the one pinned at pairing, so every connection to it is refused and nothing is synced. A renewed certificate is announced by ${peer.name} itself once it runs; otherwise something is between the nodes.`,
      link: '/ha',
    });
  }
  if (peer && peer.clock_offset !== null && Math.abs(peer.clock_offset) >= CLOCK_ALARM_SECONDS) {
    const refused = Math.abs(peer.clock_offset) > CLOCK_LIMIT_SECONDS;
    alarms.push({
      id: 'ha-clock-skew',
      severity: refused ? 'critical' : 'warning',
      title: `Clocks differ by ${Math.abs(peer.clock_offset).toFixed(0)} s`,
      message: `${peer.name}'s clock is ${clockText(peer.clock_offset)}. ${
        refused ? 'The nodes refuse each other’s requests' : `The nodes refuse each other’s requests beyond ${CLOCK_LIMIT_SECONDS} s`
      }: check time synchronisation on both.`,
      link: '/ha',
    });
  }
  if (status.node.role === 'fault') {
    alarms.push({
      id: 'ha-fault',
      severity: 'critical',
      title: `This node (${status.node.name}) is in FAULT`,
      message: 'A tracked interface or node health check fails: it cannot hold the VIPs.',
      link: '/ha',
    });
  }
  for (const name of lastingUnknown) {
    const here = name === status.node.name;
    alarms.push({
      id: here ? 'ha-role-unknown' : 'ha-peer-role-unknown',
      severity: 'critical',
      title: here ? `This node (${name}) does not know its VRRP role` : `The role of peer ${name} is unknown`,
      message: `${here ? 'This node' : name} has VIP groups but no VRRP state for them: whether it holds the VIPs or could take them over is not known.`,
      link: '/ha',
    });
  }
  if (status.node.maintenance) {
    alarms.push({
      id: 'ha-maintenance',
      severity: 'warning',
      title: `This node (${status.node.name}) is in maintenance`,
      message: peer ? `${peer.name} holds the VIPs until maintenance ends.` : 'It holds no VIPs until maintenance ends.',
      link: '/ha',
    });
  }
  return alarms;
}

// As the API words it: a paired node that is not active and not in trouble is "the standby".
const ROLE_PHRASE: Partial<Record<Role, string>> = { maintenance: 'in maintenance', fault: 'in FAULT' };

function rolePhrase(node: { role: Role | null; groups: unknown[] }): string {
  if (node.role === null) return 'of a role not reported yet';
  if (node.role === 'unknown' && node.groups.length) return 'of unknown role';
  return ROLE_PHRASE[node.role] ?? 'the standby';
}

/** Which node of the pair holds the VIPs, seen from this node: here, the peer, both (split brain) or neither. */
export type ActiveSide = 'here' | 'peer' | 'both' | 'none';

/**
 * The one place the dashboard decides which node is active. /ha/status reports each node's role
 * (active: MASTER of a VIP group, neither in maintenance nor FAULT) as that node last reported
 * it; a node whose role is maintenance, fault or unknown is never taken for the active one.
 */
export function activeSide(status: HaStatus): ActiveSide {
  const here = status.node.role === 'active';
  const peer = status.peer?.role === 'active';
  if (here && peer) return 'both';
  return here ? 'here' : peer ? 'peer' : 'none';
}

/** The active node's name, or null when neither (or both: split brain) is. */
export function activeNodeName(status: HaStatus): string | null {
  const side = activeSide(status);
  return side === 'here' ? status.node.name : side === 'peer' ? status.peer!.name : null;
}

/** Paired nodes, here or the peer, that run VIP groups but whose role is unknown. */
function unknownRoles(status: HaStatus): string[] {
  if (!status.peer) return [];
  const names = status.node.role === 'unknown' && status.node.groups.length ? [status.node.name] : [];
  if (status.peer.reachable && (status.peer.role === 'unknown' || status.peer.role === null) && status.peer.groups.length) names.push(status.peer.name);
  return names;
}

/** A role may be unknown for a moment (right after a commit adds a VIP group); longer is an alarm. */
export const UNKNOWN_ROLE_GRACE_MS = 5_000;

/**
 * The nodes whose role has been unknown for UNKNOWN_ROLE_GRACE_MS, given when each was first
 * seen unknown (`firstSeen`, updated here: a node no longer unknown is forgotten).
 */
export function lastingUnknownRoles(status: HaStatus | undefined, firstSeen: Map<string, number>, now = Date.now()): string[] {
  const unknown = status ? unknownRoles(status) : [];
  for (const name of [...firstSeen.keys()]) if (!unknown.includes(name)) firstSeen.delete(name);
  for (const name of unknown) if (!firstSeen.has(name)) firstSeen.set(name, now);
  return unknown.filter((name) => now - firstSeen.get(name)! >= UNKNOWN_ROLE_GRACE_MS);
}

/** Whether a pair role badge is an alarm: a paired node whose role is not known. */
export function roleIsAlarm(role: Role | null): boolean {
  return role === null || role === 'unknown';
}

/** activeUrl is null when no node is active: the banner then sends the operator nowhere. */
/** `writerLabel`: what the link opens ("the active node", "the cluster's writer"). */
export type StandbyNotice = { title: string; activeUrl: string | null; message: string; writerLabel?: string };

/**
 * Where changes are made while this node is a paired standby: from the status (before anyone
 * tries), or from the API's own 409 standby_read_only refusal. It names only a node that is
 * active: never one in maintenance, in FAULT or of unknown role.
 */
export function standbyNotice(status: HaStatus | undefined, refusal: ApiError | null): StandbyNotice | null {
  if (status?.peer && status.cluster === 'member') {
    // A cluster's member never writes, whatever the roles: its writer is the node that added it.
    return {
      title: `Read-only here: make changes on the cluster’s writer ${status.peer.name}`,
      activeUrl: status.peer.url,
      message: `This node (${status.node.name}) is a member of the cluster led by ${status.peer.name}: the shared configuration (services, VIP groups, firewall, users) is read-only here.`,
      writerLabel: 'the cluster’s writer',
    };
  }
  if (status?.peer && !status.node.writer) {
    const peer = status.peer;
    const readOnly = `This node (${status.node.name}) is ${rolePhrase(status.node)}: the shared configuration (services, VIP groups, firewall, users) is read-only here.`;
    if (activeSide(status) === 'peer') {
      return { title: `Read-only here: make changes on the active node ${peer.name}`, activeUrl: peer.url, message: readOnly };
    }
    // Neither node is active. Without VRRP running (no VIP groups) or with both BACKUP, the
    // API's priority rule makes the peer the writer: it may be named, being a healthy standby.
    const peerIdle = peer.role === 'standby' || (peer.role === 'unknown' && !peer.groups.length);
    if (peer.writer && peerIdle) {
      return {
        title: `Read-only here: make changes on ${peer.name}`,
        activeUrl: peer.url,
        message: `${readOnly} Neither node is active, so ${peer.name}, the one with the higher VRRP priority, takes the changes.`,
      };
    }
    return {
      title: 'Read-only here: neither node is active',
      activeUrl: null,
      message: `${readOnly} ${peer.name} is ${rolePhrase(peer)}. Changes can be made once a node holds the VIPs.`,
    };
  }
  if (refusal?.activeUrl) {
    return { title: `Read-only here: make changes on the active node ${status?.peer?.name ?? ''}`.trimEnd(), activeUrl: refusal.activeUrl, message: refusal.message };
  }
  return null;
}

/** "10.0.0.2" or "10.0.0.2:8443" → "https://10.0.0.2"…; a URL with a scheme is kept as typed. */
export function peerUrlFrom(text: string): string {
  const value = text.trim().replace(/\/+$/, '');
  return /^https?:\/\//i.test(value) ? value : `https://${value}`;
}

/** The API's rule for a peer URL (schemas/ha.py PeerUrl): scheme, host, optional port, no path. */
const PEER_URL_PATTERN = /^https?:\/\/[A-Za-z0-9.\-[\]:]+\/?$/;

export function peerUrlError(text: string): string | null {
  if (!text.trim()) return 'The other node’s address, e.g. 10.0.0.2 or https://lb2.example.net';
  const url = peerUrlFrom(text);
  if (!PEER_URL_PATTERN.test(url) || url.length > 200) return `"${text.trim()}" is not an address: give a host or IP, optionally with a port, and no path`;
  return null;
}

const CODE_ALPHABET = /^[ABCDEFGHJKLMNPQRSTUVWXYZ23456789]{12}$/;

/** "abcd efgh-jklm" → "ABCD-EFGH-JKLM", as the other node shows it (the API ignores case and dashes). */
export function normalizePairingCode(text: string): string {
  const raw = text.replace(/[\s-]/g, '').toUpperCase();
  return raw.length === 12 ? `${raw.slice(0, 4)}-${raw.slice(4, 8)}-${raw.slice(8)}` : raw;
}

export function pairingCodeError(text: string): string | null {
  const raw = text.replace(/[\s-]/g, '').toUpperCase();
  if (CODE_ALPHABET.test(raw)) return null;
  if (/[IO01]/.test(raw)) return 'Pairing codes never contain I, O, 0 or 1: check the code on the other node';
  return 'The 12-character code the other node shows, e.g. ABCD-EFGH-JKLM';
}

/** The peer's address from its URL ("https://[2001:db8::2]:8443" → "2001:db8::2"). */
export function peerHost(url: string): string | null {
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, '') || null;
  } catch {
    return null;
  }
}

/** The peer's version as it last said it (a node from before versions were exchanged says none),
 *  and whether it differs from this node's: during a pair upgrade one node runs ahead. */
export function peerVersion({ node, peer }: HaStatus): { text: string; differs: boolean } {
  if (!peer || peer.config_schema === null) return { text: 'Version not reported yet', differs: false };
  const version = peer.software_version ? `Fulcrum ${peer.software_version}` : 'An older Fulcrum (no version reported)';
  const text = peer.config_schema < node.config_schema ? `${version}: cannot read this node's configuration` : version;
  return { text, differs: peer.software_version !== node.software_version };
}
