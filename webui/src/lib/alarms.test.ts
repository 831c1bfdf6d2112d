import type { RevisionRead, StatsSnapshot, Status } from '../client/types.gen';
import { computeAlarms } from './alarms';

const status = (over: Partial<Status> = {}): Status => ({
  version: '0.1.0',
  node: 'lb1',
  dataplane: {
    ipvs_available: true,
    ipvs_detail: 'IPVS 1.2.1',
    keepalived_running: true,
    keepalived_version: '2.2.7',
    nft_version: '1.0.6',
    applied_revision: 1,
  },
  dataplane_error: null,
  desired_revision: 1,
  applied_revision: 1,
  pending_changes: false,
  awaiting_confirm: null,
  ...over,
});

const stats = (states: ('up' | 'down' | 'drained')[]): StatsSnapshot => ({
  at: '2026-01-01T00:00:00Z',
  ipvs_available: true,
  detail: '',
  revision: 1,
  services: [
    {
      name: 'web',
      key: 'tcp 192.0.2.10:80',
      in_kernel: true,
      counters: null,
      backends_up: states.filter((s) => s === 'up').length,
      backends_total: states.length,
      backends: states.map((state, i) => ({
        address: `198.51.100.${i + 1}`,
        port: 80,
        endpoint: `198.51.100.${i + 1}:80`,
        configured_weight: 1,
        kernel_weight: 1,
        state,
        counters: null,
      })),
    },
  ],
});

describe('computeAlarms', () => {
  it('is quiet when all is well', () => {
    expect(computeAlarms(status(), stats(['up', 'up']), undefined)).toEqual([]);
  });

  it('reports an unavailable data plane honestly', () => {
    const alarms = computeAlarms(status({ dataplane: { ...status().dataplane!, ipvs_available: false, ipvs_detail: 'no IPVS' } }), undefined, undefined);
    expect(alarms.map((a) => a.id)).toEqual(['dataplane-unavailable']);
    expect(alarms[0].message).toMatch(/not applied/);
  });

  it('says why a node withdrew its VIPs from BGP, and is quiet while it announces them', () => {
    const withdrawn = status({
      dataplane: { ...status().dataplane!, bgp_announcing: false, bgp_fitness: 'keepalived is not running here, so IPVS is not kept' },
    });
    const alarms = computeAlarms(withdrawn, stats(['up']), undefined);
    expect(alarms.map((a) => a.id)).toEqual(['bgp-withdrawn']);
    expect(alarms[0].message).toMatch(/^Withdrawn because keepalived is not running here/);
    const announcing = status({ dataplane: { ...status().dataplane!, bgp_announcing: true, bgp_fitness: 'fit' } });
    expect(computeAlarms(announcing, stats(['up']), undefined)).toEqual([]);
  });

  it('names each down backend, critical first', () => {
    const alarms = computeAlarms(status({ awaiting_confirm: 2 }), stats(['up', 'down']), undefined);
    expect(alarms.map((a) => a.id)).toEqual(['backend-down-web-198.51.100.2:80', 'awaiting-confirm']);
  });

  it('says a service has nothing up rather than listing every backend', () => {
    const alarms = computeAlarms(status(), stats(['down', 'drained']), undefined);
    expect(alarms.map((a) => a.id)).toEqual(['service-down-web']);
  });

  it('raises a backend that passes its check but drops its traffic', () => {
    const snapshot = stats(['up', 'up']);
    snapshot.services[0].backends[1].warnings = [
      { code: 'vip_missing', message: 'does not answer packets addressed to the VIP 192.0.2.10: it passes its health checks, but the traffic IPVS sends it is dropped.' },
    ];
    const alarms = computeAlarms(status(), snapshot, undefined);
    expect(alarms).toHaveLength(1);
    expect(alarms[0]).toMatchObject({
      id: 'backend-warning-vip_missing-web-198.51.100.2:80',
      severity: 'critical',
      title: 'web: backend 198.51.100.2:80 has no VIP: its traffic is dropped',
      link: '/services?q=web',
    });
    expect(alarms[0].message).toMatch(/^198\.51\.100\.2:80 does not answer packets/);
  });

  it('puts the pair’s alarms among the others, critical first', () => {
    const ha = {
      node: { name: 'lb1', role: 'active', groups: [], maintenance: false, writer: true, priority: 150 },
      peer: { name: 'lb2', url: 'https://10.0.0.2', reachable: false, last_seen: null, unreachable_since: '2026-01-01T00:00:00Z', role: null, groups: [], applied_revision: null, writer: null },
      sync: { state: 'unreachable', local_revision: 3, local_hash: 'a', peer_revision: null, peer_hash: null, since: null, message: '' },
      conn_sync: { enabled: false, interface: null, local_daemon: 'off', local_connections: null, peer_connections: null },
      split_brain: { active: false, since: null, groups: [], holding: false },
      transitions: [],
    } as const;
    const alarms = computeAlarms(status({ awaiting_confirm: 2 }), stats(['up']), undefined, structuredClone(ha) as never);
    expect(alarms.map((a) => a.id)).toEqual(['ha-peer-unreachable', 'awaiting-confirm']);
  });

  it('reports a failed newest revision', () => {
    const latest = { number: 3, state: 'failed', apply_result: { message: 'nft said no' } } as unknown as RevisionRead;
    expect(computeAlarms(status(), undefined, latest)[0]).toMatchObject({ severity: 'critical', message: 'nft said no' });
  });
});
