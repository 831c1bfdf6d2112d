import { ApiError } from '../api/errors';
import type { HaStatus } from '../client/types.gen';
import { activeNodeName, activeSide, clockText, haAlarms, lastingUnknownRoles, normalizePairingCode, pairingCodeError, peerHost, peerUrlError, peerUrlFrom, peerVersion, standbyNotice, syncSummary, UNKNOWN_ROLE_GRACE_MS } from './ha';

const NOW = Date.parse('2026-03-01T12:00:00Z');

function status(over: { node?: Partial<HaStatus['node']>; peer?: Partial<NonNullable<HaStatus['peer']>> | null; sync?: Partial<HaStatus['sync']>; split?: Partial<HaStatus['split_brain']> } = {}): HaStatus {
  return {
    node: { name: 'lb1', role: 'active', groups: [], maintenance: false, writer: true, priority: 150, certificate: null, software_version: '0.1.0', config_schema: 1, ...over.node },
    peer:
      over.peer === null
        ? null
        : {
            name: 'lb2',
            url: 'https://10.0.0.2',
            reachable: true,
            last_seen: '2026-03-01T11:59:59Z',
            unreachable_since: null,
            role: 'standby',
            groups: [],
            applied_revision: 7,
            writer: false,
            certificate: 'ab'.repeat(32),
            untrusted_certificate: null,
            clock_offset: 0.2,
            software_version: '0.1.0',
            protocol: 2,
            config_schema: 1,
            ...over.peer,
          },
    sync: { state: 'in_sync', local_revision: 7, local_hash: 'a', peer_revision: 7, peer_hash: 'a', since: '2026-03-01T11:50:00Z', message: '', ...over.sync },
    conn_sync: { enabled: false, interface: null, local_daemon: 'off', local_connections: null, peer_connections: null },
    split_brain: { active: false, since: null, groups: [], holding: false, ...over.split },
    // Not read by these functions: they derive the active node from the two roles.
    active: { name: null, local: false, url: null, split_brain: false },
    transitions: [],
  };
}

describe('syncSummary', () => {
  it('says "in sync at revision N"', () => {
    expect(syncSummary(status(), NOW)).toMatchObject({ tone: 'green', title: 'In sync at revision 7' });
  });
  it('says which revision a peer that is behind runs', () => {
    const summary = syncSummary(status({ sync: { state: 'peer_behind', local_revision: 9, peer_revision: 7, since: '2026-03-01T11:59:30Z' } }), NOW);
    expect(summary.title).toBe('Peer behind since 30s ago');
    expect(summary.detail).toMatch(/^lb2 runs revision 7, this node revision 9/);
  });
  it('says since when the peer is unreachable', () => {
    const s = status({ peer: { reachable: false, unreachable_since: '2026-03-01T11:58:00Z' }, sync: { state: 'unreachable' } });
    expect(syncSummary(s, NOW)).toMatchObject({ tone: 'red' });
    expect(syncSummary(s, NOW).title).toMatch(/^Peer unreachable since /);
    expect(syncSummary(s, NOW).detail).toContain('https://10.0.0.2');
  });
  it('asks to choose a side on a conflict', () => {
    expect(syncSummary(status({ sync: { state: 'conflict' } }), NOW).detail).toMatch(/choose which side wins/);
  });
  it('says that an older peer cannot read this configuration, and that nothing is copied', () => {
    const summary = syncSummary(status({ sync: { state: 'incompatible', message: 'lb2 runs Fulcrum 0.1.0, which reads configuration schema 1' } }), NOW);
    expect(summary.tone).toBe('red');
    expect(summary.title).toMatch(/^Peer cannot read this configuration/);
    expect(summary.detail).toMatch(/^lb2 runs an older version: nothing is copied to it until it is upgraded too/);
    expect(summary.detail).toContain('reads configuration schema 1');
  });
  it('is plain about an unpaired node', () => {
    expect(syncSummary(status({ peer: null, sync: { state: 'unpaired' } }), NOW).title).toBe('Not paired');
  });
});

describe('clockText', () => {
  it('says how far the peer clock is, and which way', () => {
    expect(clockText(null)).toBe('not measured yet');
    expect(clockText(-0.24)).toBe('in step (0.2 s)');
    expect(clockText(15.2)).toBe("15 s ahead of this node's");
    expect(clockText(-61)).toBe("61 s behind this node's");
  });
});

describe('haAlarms', () => {
  it('raises a peer presenting another certificate than the pinned one', () => {
    const [alarm] = haAlarms(status({ peer: { untrusted_certificate: 'cd'.repeat(32) } }));
    expect(alarm).toMatchObject({ id: 'ha-peer-untrusted', severity: 'critical', title: 'Peer lb2 presents an unknown certificate' });
    expect(alarm.message).toContain('SHA-256 CD:CD:CD:CD:CD:CD:CD:CD…');
  });
  it('warns of clock skew well before the peers refuse each other, and is critical beyond', () => {
    expect(haAlarms(status({ peer: { clock_offset: 9.9 } }))).toEqual([]);
    expect(haAlarms(status({ peer: { clock_offset: -12 } }))[0]).toMatchObject({ id: 'ha-clock-skew', severity: 'warning', title: 'Clocks differ by 12 s' });
    const refused = haAlarms(status({ peer: { clock_offset: 60.4 } }))[0];
    expect(refused).toMatchObject({ severity: 'critical', title: 'Clocks differ by 60 s' });
    expect(refused.message).toMatch(/^lb2's clock is 60 s ahead of this node's\. The nodes refuse/);
  });
  it('is quiet for a healthy pair and for a lone node', () => {
    expect(haAlarms(status())).toEqual([]);
    expect(haAlarms(status({ node: { role: 'standalone' }, peer: null, sync: { state: 'unpaired' } }))).toEqual([]);
    expect(haAlarms(undefined)).toEqual([]);
  });
  it('raises peer unreachable, split brain and a conflict as critical', () => {
    const unreachable = haAlarms(status({ peer: { reachable: false, unreachable_since: '2026-03-01T11:58:00Z' }, sync: { state: 'unreachable' } }));
    expect(unreachable.map((a) => [a.id, a.severity])).toEqual([['ha-peer-unreachable', 'critical']]);
    const split = haAlarms(status({ split: { active: true, groups: ['vg1'], since: '2026-03-01T11:59:00Z' } }));
    expect(split[0]).toMatchObject({ id: 'ha-split-brain', severity: 'critical' });
    expect(split[0].message).toContain('vg1');
    expect(haAlarms(status({ sync: { state: 'conflict' } })).map((a) => a.id)).toEqual(['ha-conflict']);
  });
  it('reminds that this node is in maintenance', () => {
    expect(haAlarms(status({ node: { maintenance: true, role: 'maintenance' } }))[0]).toMatchObject({ id: 'ha-maintenance', severity: 'warning' });
  });
});

const group = (name: string, state: 'MASTER' | 'BACKUP' | 'FAULT' | 'UNKNOWN') => ({ name, state, since: state === 'UNKNOWN' ? null : '2026-03-01T11:00:00Z' });
const LB1 = 'https://10.0.0.1';
const LB2 = 'https://10.0.0.2';

/** The pair as each node's /ha/status shows it, in the cases the issue lists. */
const pair = {
  // lb1 MASTER, lb2 BACKUP: the normal state.
  lb1MasterOnLb1: status({ node: { name: 'lb1', role: 'active', writer: true, groups: [group('front', 'MASTER')] }, peer: { name: 'lb2', url: LB2, role: 'standby', writer: false, groups: [group('front', 'BACKUP')] } }),
  lb1MasterOnLb2: status({ node: { name: 'lb2', role: 'standby', writer: false, priority: 100, groups: [group('front', 'BACKUP')] }, peer: { name: 'lb1', url: LB1, role: 'active', writer: true, groups: [group('front', 'MASTER')] } }),
  // lb1 in maintenance, lb2 took over.
  failedOverOnLb1: status({ node: { name: 'lb1', role: 'maintenance', maintenance: true, writer: false, groups: [group('front', 'FAULT')] }, peer: { name: 'lb2', url: LB2, role: 'active', writer: true, groups: [group('front', 'MASTER')] } }),
  failedOverOnLb2: status({ node: { name: 'lb2', role: 'active', writer: true, priority: 100, groups: [group('front', 'MASTER')] }, peer: { name: 'lb1', url: LB1, role: 'maintenance', writer: false, groups: [group('front', 'FAULT')] } }),
  // What issue 12 saw on lb2 after the failover: lb2's own role unknown, and the API's priority rule left lb1 the writer.
  staleOnLb2: status({ node: { name: 'lb2', role: 'unknown', writer: false, priority: 100, groups: [group('front', 'UNKNOWN')] }, peer: { name: 'lb1', url: LB1, role: 'maintenance', writer: true, groups: [group('front', 'FAULT')] } }),
  // Neither knows its role.
  unknownOnLb1: status({ node: { name: 'lb1', role: 'unknown', writer: true, groups: [group('front', 'UNKNOWN')] }, peer: { name: 'lb2', url: LB2, role: 'unknown', writer: false, groups: [group('front', 'UNKNOWN')] } }),
  unknownOnLb2: status({ node: { name: 'lb2', role: 'unknown', writer: false, priority: 100, groups: [group('front', 'UNKNOWN')] }, peer: { name: 'lb1', url: LB1, role: 'unknown', writer: true, groups: [group('front', 'UNKNOWN')] } }),
  // Both MASTER of the same group.
  splitOnLb1: status({
    node: { name: 'lb1', role: 'active', writer: true, groups: [group('front', 'MASTER')] },
    peer: { name: 'lb2', url: LB2, role: 'active', writer: true, groups: [group('front', 'MASTER')] },
    split: { active: true, groups: ['front'], since: '2026-03-01T11:59:00Z' },
  }),
  // ... and after lb2 stepped down to end it (maintenance hold).
  splitHeldOnLb2: status({
    node: { name: 'lb2', role: 'maintenance', maintenance: true, writer: false, priority: 100, groups: [group('front', 'FAULT')] },
    peer: { name: 'lb1', url: LB1, role: 'active', writer: true, groups: [group('front', 'MASTER')] },
    split: { active: true, groups: ['front'], holding: true },
  }),
};

describe('which node is active', () => {
  it('is the node that reports itself active, seen from either side', () => {
    expect([activeSide(pair.lb1MasterOnLb1), activeNodeName(pair.lb1MasterOnLb1)]).toEqual(['here', 'lb1']);
    expect([activeSide(pair.lb1MasterOnLb2), activeNodeName(pair.lb1MasterOnLb2)]).toEqual(['peer', 'lb1']);
  });
  it('moves to lb2 when lb1 is in maintenance: never the node in maintenance', () => {
    expect([activeSide(pair.failedOverOnLb1), activeNodeName(pair.failedOverOnLb1)]).toEqual(['peer', 'lb2']);
    expect([activeSide(pair.failedOverOnLb2), activeNodeName(pair.failedOverOnLb2)]).toEqual(['here', 'lb2']);
    expect(activeNodeName(pair.staleOnLb2)).toBeNull();
  });
  it('is nobody when both roles are unknown, and both in a split brain', () => {
    expect([activeSide(pair.unknownOnLb1), activeNodeName(pair.unknownOnLb1)]).toEqual(['none', null]);
    expect([activeSide(pair.unknownOnLb2), activeNodeName(pair.unknownOnLb2)]).toEqual(['none', null]);
    expect([activeSide(pair.splitOnLb1), activeNodeName(pair.splitOnLb1)]).toEqual(['both', null]);
    expect(activeSide(pair.splitHeldOnLb2)).toBe('peer');
  });
});

describe('standbyNotice', () => {
  it('names the active node on a paired standby, before anyone tries an edit', () => {
    expect(standbyNotice(pair.lb1MasterOnLb1, null)).toBeNull();
    const notice = standbyNotice(pair.lb1MasterOnLb2, null);
    expect(notice).toMatchObject({ title: 'Read-only here: make changes on the active node lb1', activeUrl: LB1 });
    expect(notice!.message).toMatch(/^This node \(lb2\) is the standby: the shared configuration .* is read-only here\.$/);
  });
  it('after a failover: none on lb2, and on lb1 in maintenance it points at lb2', () => {
    expect(standbyNotice(pair.failedOverOnLb2, null)).toBeNull();
    const notice = standbyNotice(pair.failedOverOnLb1, null);
    expect(notice).toMatchObject({ title: 'Read-only here: make changes on the active node lb2', activeUrl: LB2 });
    expect(notice!.message).toMatch(/^This node \(lb1\) is in maintenance:/);
  });
  it('never sends the operator to a node in maintenance or of unknown role', () => {
    const stale = standbyNotice(pair.staleOnLb2, null);
    expect(stale).toMatchObject({ title: 'Read-only here: neither node is active', activeUrl: null });
    expect(stale!.message).toMatch(/This node \(lb2\) is of unknown role: .* lb1 is in maintenance\./);
    expect(standbyNotice(pair.unknownOnLb1, null)).toBeNull(); // the writer by priority
    const unknown = standbyNotice(pair.unknownOnLb2, null);
    expect(unknown).toMatchObject({ title: 'Read-only here: neither node is active', activeUrl: null });
    expect(unknown!.message).toContain('lb1 is of unknown role');
    const unreported = standbyNotice(status({ node: { writer: false, role: 'standby' }, peer: { role: null, writer: null } }), null);
    expect(unreported!.message).toContain('lb2 is of a role not reported yet');
  });
  it('names the writer by priority when neither node runs VRRP yet (no VIP groups) or both are BACKUP', () => {
    const idle = status({ node: { name: 'lb2', role: 'unknown', writer: false }, peer: { name: 'lb1', url: LB1, role: 'unknown', writer: true } });
    expect(standbyNotice(idle, null)).toMatchObject({ title: 'Read-only here: make changes on lb1', activeUrl: LB1 });
    expect(standbyNotice(idle, null)!.message).toMatch(/^This node \(lb2\) is the standby: .* Neither node is active, so lb1, the one with the higher VRRP priority, takes the changes\.$/);
    const backups = status({ node: { name: 'lb2', role: 'standby', writer: false, groups: [group('front', 'BACKUP')] }, peer: { name: 'lb1', url: LB1, role: 'standby', writer: true } });
    expect(standbyNotice(backups, null)).toMatchObject({ title: 'Read-only here: make changes on lb1' });
  });
  it('in a split brain: no banner on a MASTER; the node holding back points at the other', () => {
    expect(standbyNotice(pair.splitOnLb1, null)).toBeNull();
    expect(standbyNotice(pair.splitHeldOnLb2, null)).toMatchObject({ title: 'Read-only here: make changes on the active node lb1', activeUrl: LB1 });
  });
  it('on a cluster’s member: names the writer, whatever the roles (every node of a cluster is active)', () => {
    const member = { ...status({ node: { name: 'lb2', role: 'active', writer: false }, peer: { name: 'lb1', url: LB1, role: 'active', writer: true } }), cluster: 'member' as const };
    expect(standbyNotice(member, null)).toMatchObject({ title: 'Read-only here: make changes on the cluster’s writer lb1', activeUrl: LB1, writerLabel: 'the cluster’s writer' });
    expect(standbyNotice(member, null)!.message).toMatch(/^This node \(lb2\) is a member of the cluster led by lb1: /);
    expect(standbyNotice({ ...status({ peer: null }), cluster: 'writer' }, null)).toBeNull();
  });
  it('is absent on a cluster’s writer, whose sync says where its configuration goes', () => {
    const writer = { ...status({ peer: null, sync: { state: 'unpaired' } }), cluster: 'writer' as const };
    expect(standbyNotice(writer, null)).toBeNull();
    expect(syncSummary(writer)).toMatchObject({ title: 'Leads a cluster', tone: 'blue' });
    expect(syncSummary(status({ peer: null, sync: { state: 'unpaired' } }))).toMatchObject({ title: 'Not paired' });
  });
  it('is absent on the writer and on a lone node', () => {
    expect(standbyNotice(status(), null)).toBeNull();
    expect(standbyNotice(status({ peer: null, sync: { state: 'unpaired' } }), null)).toBeNull();
  });
  it('takes the address from the API’s 409 when the status is not known yet', () => {
    const refusal = new ApiError(409, { detail: 'this node is standby; make changes on the active node lb1 at https://10.0.0.1', code: 'standby_read_only', active_url: 'https://10.0.0.1' });
    expect(standbyNotice(undefined, refusal)).toMatchObject({ title: 'Read-only here: make changes on the active node', activeUrl: 'https://10.0.0.1', message: refusal.message });
  });
});

describe('an unknown role is an alarm', () => {
  it('on the node itself and for a reachable peer, once VIP groups exist', () => {
    expect(haAlarms(pair.unknownOnLb1).map((a) => [a.id, a.severity, a.title])).toEqual([
      ['ha-role-unknown', 'critical', 'This node (lb1) does not know its VRRP role'],
      ['ha-peer-role-unknown', 'critical', 'The role of peer lb2 is unknown'],
    ]);
    expect(haAlarms(pair.lb1MasterOnLb1)).toEqual([]);
    // Paired without VIP groups: no VRRP runs, so there is no role to know.
    expect(haAlarms(status({ node: { role: 'unknown', writer: true }, peer: { role: 'unknown' } }))).toEqual([]);
  });
  it('only after it lasted a few seconds', () => {
    const seen = new Map<string, number>();
    const t0 = NOW;
    expect(lastingUnknownRoles(pair.unknownOnLb1, seen, t0)).toEqual([]);
    expect(lastingUnknownRoles(pair.unknownOnLb1, seen, t0 + UNKNOWN_ROLE_GRACE_MS - 1)).toEqual([]);
    expect(lastingUnknownRoles(pair.unknownOnLb1, seen, t0 + UNKNOWN_ROLE_GRACE_MS)).toEqual(['lb1', 'lb2']);
    expect(haAlarms(pair.unknownOnLb1, [])).toEqual([]);
    // Known again: forgotten, so the next unknown spell starts its grace anew.
    expect(lastingUnknownRoles(pair.lb1MasterOnLb1, seen, t0 + 10_000)).toEqual([]);
    expect(lastingUnknownRoles(pair.unknownOnLb1, seen, t0 + 11_000)).toEqual([]);
  });
});

describe('pairing input', () => {
  it('turns a bare address into the peer URL', () => {
    expect(peerUrlFrom('10.0.0.2')).toBe('https://10.0.0.2');
    expect(peerUrlFrom(' http://127.0.0.1:8125/ ')).toBe('http://127.0.0.1:8125');
    expect(peerUrlError('[2001:db8::2]:8443')).toBeNull();
    expect(peerUrlError('https://10.0.0.2/api')).toMatch(/no path/);
    expect(peerUrlError('')).toMatch(/other node/);
  });
  it('finds the peer’s address in its URL, for the firewall check', () => {
    expect(peerHost('https://10.0.0.2')).toBe('10.0.0.2');
    expect(peerHost('https://[2001:db8::2]:8443')).toBe('2001:db8::2');
    expect(peerHost('not a url')).toBeNull();
  });
  it('reads a pairing code however it is typed', () => {
    expect(normalizePairingCode('abcd efgh-jkLm')).toBe('ABCD-EFGH-JKLM');
    expect(pairingCodeError('abcd-efgh-jklm')).toBeNull();
    expect(pairingCodeError('ABCD-EFGH-JKL0')).toMatch(/never contain I, O, 0 or 1/);
    expect(pairingCodeError('ABCD')).toMatch(/12-character/);
  });
});

describe('peerVersion', () => {
  it('names the peer\'s version, marked when it differs from this node\'s', () => {
    expect(peerVersion(status())).toEqual({ text: 'Fulcrum 0.1.0', differs: false });
    expect(peerVersion(status({ peer: { software_version: '0.2.0+g1234567' } }))).toEqual({ text: 'Fulcrum 0.2.0+g1234567', differs: true });
  });
  it('says when the peer cannot read this node\'s configuration', () => {
    const s = status({ node: { config_schema: 2, software_version: '0.2.0' }, peer: { config_schema: 1 } });
    expect(peerVersion(s)).toEqual({ text: "Fulcrum 0.1.0: cannot read this node's configuration", differs: true });
  });
  it('is plain about a peer that has not said, or is too old to say', () => {
    expect(peerVersion(status({ peer: { config_schema: null, software_version: null, protocol: null } })).text).toBe('Version not reported yet');
    expect(peerVersion(status({ peer: { config_schema: 1, software_version: null, protocol: 1 } })).text).toBe('An older Fulcrum (no version reported)');
  });
});
