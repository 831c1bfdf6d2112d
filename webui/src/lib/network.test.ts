import type { KernelInterface, KernelRoute, NetworkConfig } from '../client/types.gen';
import { formPath, memberStates, splitList, takeOverFrom, toBody, toValues } from './network';

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

describe('takeOverFrom', () => {
  it('starts from the kernel: static and dynamic addresses, bonds, link-local and loopback left out', () => {
    const interfaces = [
      kernel({ name: 'lo', kind: 'loopback', mac: '00:00:00:00:00:00', addresses: ['127.0.0.1'], prefixed_addresses: ['127.0.0.1/8'] }),
      kernel({
        name: 'eth0',
        addresses: ['192.0.2.2', 'fd00::2', 'fe80::1'],
        prefixed_addresses: ['192.0.2.2/24', 'fd00::2/64', 'fe80::1/64'],
        dynamic_addresses: ['fd00::2/64'],
      }),
      kernel({ name: 'eth1', mac: '52:54:00:00:00:02', bond_master: 'bond0' }),
      kernel({ name: 'eth2', mac: '52:54:00:00:00:03', bond_master: 'bond0' }),
      kernel({ name: 'bond0', kind: 'bond', mac: '52:54:00:00:00:02', bond_members: ['eth1', 'eth2'], addresses: ['10.0.0.2'], prefixed_addresses: ['10.0.0.2/24'], dynamic_addresses: ['10.0.0.2/24'] }),
      kernel({ name: 'ifb0', kind: 'virtual' }),
    ];
    const taken = takeOverFrom(interfaces, [], '127.0.0.1');
    expect(taken.nics).toEqual([
      { name: 'eth0', mac: '52:54:00:00:00:01', addresses: ['192.0.2.2/24'], dhcp4: false, ipv6_autoconf: true },
      { name: 'eth1', mac: '52:54:00:00:00:02' },
      { name: 'eth2', mac: '52:54:00:00:00:03' },
    ]);
    expect(taken.bonds).toEqual([{ name: 'bond0', members: ['eth1', 'eth2'], addresses: [], dhcp4: true, ipv6_autoconf: false }]);
    // Not reached at an address of these: the first interface with one manages.
    expect(taken.management_interface).toBe('eth0');
    // Reached at the bond's address: the bond manages.
    expect(takeOverFrom(interfaces, [], '10.0.0.2').management_interface).toBe('bond0');
    // The NTP servers the clock uses now are kept; none known, none set.
    expect(taken.ntp_servers).toEqual([]);
    expect(takeOverFrom(interfaces, [], '127.0.0.1', ['0.debian.pool.ntp.org']).ntp_servers).toEqual(['0.debian.pool.ntp.org']);
  });
});

describe('takeOverFrom, routes', () => {
  const route = (r: Partial<KernelRoute> & Pick<KernelRoute, 'destination'>): KernelRoute => ({
    gateway: null,
    interface: 'eth0',
    table: 254,
    protocol: 'boot',
    metric: null,
    ...r,
  });

  it("keeps the main table's default gateways and the routes configured by hand, not what the kernel, DHCP or RAs made", () => {
    const routes = [
      route({ destination: '0.0.0.0/0', gateway: '192.0.2.1' }),
      route({ destination: '192.0.2.0/24', protocol: 'kernel' }),
      route({ destination: '::/0', gateway: 'fe80::1', protocol: 'ra', metric: 1024 }),
      route({ destination: '10.30.0.0/16', gateway: '192.0.2.254', table: 100, protocol: 'static' }),
      route({ destination: '10.40.0.0/16', gateway: '192.0.2.253', protocol: 'dhcp' }),
      route({ destination: 'fd30::/48', gateway: 'fd00::fe', metric: 1024 }),
    ];
    const taken = takeOverFrom([], routes, '127.0.0.1');
    expect(taken.gateway4).toBe('192.0.2.1');
    expect(taken.gateway6).toBeNull(); // a router advertisement's: SLAAC brings it back by itself
    expect(taken.routes).toEqual([
      { destination: '10.30.0.0/16', gateway: '192.0.2.254', table: 100 },
      { destination: 'fd30::/48', gateway: 'fd00::fe', metric: 1024 },
    ]);
  });

  it('takes a static IPv6 default gateway too', () => {
    const taken = takeOverFrom([], [route({ destination: '::/0', gateway: 'fd00::1', metric: 1024 })], '127.0.0.1');
    expect([taken.gateway4, taken.gateway6, taken.routes]).toEqual([null, 'fd00::1', []]);
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
