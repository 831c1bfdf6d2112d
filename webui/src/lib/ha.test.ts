import { ApiError } from '../api/errors';
import type { HaStatus } from '../client/types.gen';
import { clockText, haAlarms, normalizePairingCode, pairingCodeError, peerHost, peerUrlError, peerUrlFrom, standbyNotice, syncSummary } from './ha';

const NOW = Date.parse('2026-03-01T12:00:00Z');

function status(over: { node?: Partial<HaStatus['node']>; peer?: Partial<NonNullable<HaStatus['peer']>> | null; sync?: Partial<HaStatus['sync']>; split?: Partial<HaStatus['split_brain']> } = {}): HaStatus {
  return {
    node: { name: 'lb1', role: 'active', groups: [], maintenance: false, writer: true, priority: 150, certificate: null, ...over.node },
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
            ...over.peer,
          },
    sync: { state: 'in_sync', local_revision: 7, local_hash: 'a', peer_revision: 7, peer_hash: 'a', since: '2026-03-01T11:50:00Z', message: '', ...over.sync },
    conn_sync: { enabled: false, interface: null, local_daemon: 'off', local_connections: null, peer_connections: null },
    split_brain: { active: false, since: null, groups: [], holding: false, ...over.split },
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

describe('standbyNotice', () => {
  it('names the active node on a paired standby, before anyone tries an edit', () => {
    const notice = standbyNotice(status({ node: { role: 'standby', writer: false }, peer: { name: 'lb1', url: 'https://10.0.0.1', role: 'active', writer: true } }), null);
    expect(notice).toMatchObject({ activeName: 'lb1', activeUrl: 'https://10.0.0.1' });
    expect(notice!.message).toMatch(/^This node \(lb1\) is the standby: the shared configuration .* is read-only here\.$/);
    const unknown = standbyNotice(status({ node: { role: 'unknown', writer: false }, peer: { name: 'lb1' } }), null);
    expect(unknown!.message).toMatch(/is the standby/);
    const resting = standbyNotice(status({ node: { role: 'maintenance', writer: false }, peer: { name: 'lb1' } }), null);
    expect(resting!.message).toMatch(/is in maintenance/);
  });
  it('is absent on the writer and on a lone node', () => {
    expect(standbyNotice(status(), null)).toBeNull();
    expect(standbyNotice(status({ peer: null, sync: { state: 'unpaired' } }), null)).toBeNull();
  });
  it('takes the address from the API’s 409 when the status is not known yet', () => {
    const refusal = new ApiError(409, { detail: 'this node is standby; make changes on the active node lb1 at https://10.0.0.1', code: 'standby_read_only', active_url: 'https://10.0.0.1' });
    expect(standbyNotice(undefined, refusal)).toMatchObject({ activeUrl: 'https://10.0.0.1', message: refusal.message });
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
