import type { KernelInterface, NetworkConfig } from '../client/types.gen';
import { formPath, memberStates, splitList, toBody, toValues } from './network';

const kernel = (over: Partial<KernelInterface>): KernelInterface => ({
  name: 'eth0',
  kind: 'physical',
  mac: '52:54:00:00:00:01',
  driver: 'virtio_net',
  operstate: 'up',
  carrier: true,
  speed_mbps: 1000,
  mtu: 1500,
  addresses: [],
  prefixed_addresses: [],
  dynamic_addresses: [],
  counters: {},
  bond_members: [],
  bond_master: null,
  configured: false,
  ...over,
});

const NETWORK: NetworkConfig = {
  hostname: 'lb1',
  management_interface: 'mgmt',
  nics: [
    { name: 'mgmt', mac: '52:54:00:12:34:01', addresses: ['192.0.2.5/24', '2001:db8::5/64'] },
    { name: 'data0', mac: '52:54:00:12:34:02' },
    { name: 'data1', mac: '52:54:00:12:34:03' },
  ],
  bonds: [{ name: 'bond0', members: ['data0', 'data1'], mode: '802.3ad' }],
  vlans: [{ name: 'front', parent: 'bond0', vlan_id: 100, addresses: ['203.0.113.2/24'], mtu: 9000 }],
  routes: [{ destination: '10.30.0.0/16', gateway: '203.0.113.254', table: 100 }],
  gateway4: '203.0.113.1',
  dns_servers: ['192.0.2.53', '192.0.2.54'],
  ntp_servers: ['ntp.example.net'],
};

describe('form values', () => {
  it('round-trip the document, defaults filled in as the API fills them', () => {
    const body = toBody(toValues(NETWORK));
    expect(body.nics?.[0]).toEqual({ ...NETWORK.nics![0], dhcp4: false, ipv6_autoconf: false, mtu: null, enabled: true, permanent_mac: true });
    expect(body.bonds?.[0]).toMatchObject({ members: ['data0', 'data1'], mode: '802.3ad', xmit_hash_policy: 'layer3+4', miimon: 100 });
    expect(body.vlans?.[0]).toMatchObject({ parent: 'bond0', vlan_id: 100, mtu: 9000 });
    expect(body.routes).toEqual([{ destination: '10.30.0.0/16', gateway: '203.0.113.254', table: 100, metric: null }]);
    expect(body).toMatchObject({ gateway4: '203.0.113.1', gateway6: null, dns_servers: ['192.0.2.53', '192.0.2.54'], search_domains: [] });
  });
  it('read lists typed with commas or spaces', () => {
    expect(splitList(' 192.0.2.53,192.0.2.54  2001:db8::53 ,')).toEqual(['192.0.2.53', '192.0.2.54', '2001:db8::53']);
  });
  it('send what was typed, however wrong, for the API to name', () => {
    const values = toValues(NETWORK);
    values.vlans[0].vlan_id = 5000;
    values.gateway4 = ' 198.51.100.1 ';
    expect(toBody(values)).toMatchObject({ vlans: [{ vlan_id: 5000 }], gateway4: '198.51.100.1' });
  });
});

describe('formPath', () => {
  it('puts an error about one item of a typed list at the list field', () => {
    expect(formPath('nics.0.addresses.1')).toBe('nics.0.addresses');
    expect(formPath('bonds.1.members.0')).toBe('bonds.1.members');
    expect(formPath('dns_servers.3')).toBe('dns_servers');
    expect(formPath('vlans.0.vlan_id')).toBe('vlans.0.vlan_id');
    expect(formPath('routes.2.gateway')).toBe('routes.2.gateway');
  });
});

describe('memberStates', () => {
  it("shows each member's own link", () => {
    const bond = kernel({ name: 'bond0', kind: 'bond', bond_members: ['eth1', 'eth2', 'eth9'] });
    const states = memberStates(bond, [kernel({ name: 'eth1' }), kernel({ name: 'eth2', carrier: false, operstate: 'down' })]);
    expect(states.map((m) => [m.name, m.up])).toEqual([
      ['eth1', true],
      ['eth2', false],
      ['eth9', false],
    ]);
  });
});
