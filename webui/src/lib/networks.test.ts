import { contains, formatAddress, networkError, parseAddress, parseNetwork, unmapIPv4 } from './networks';

const text = (input: string) => {
  const parsed = parseNetwork(input);
  return 'text' in parsed ? parsed.text : parsed.error;
};

describe('parseNetwork reads networks as the API does (Python ip_network, strict)', () => {
  // Expected values are what Python's ipaddress.ip_network(value).with_prefixlen prints.
  it.each([
    ['10.0.0.0/8', '10.0.0.0/8'],
    ['10.0.0.0/08', '10.0.0.0/8'],
    ['10.0.0.0/255.0.0.0', '10.0.0.0/8'],
    ['10.0.0.0/0.255.255.255', '10.0.0.0/8'],
    ['10.1.2.3', '10.1.2.3/32'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['2001:0db8:0:0:0:0:0:0/32', '2001:db8::/32'],
    ['2001:db8:0:0:1:0:0:0/80', '2001:db8:0:0:1::/80'],
    ['fe80::/10', 'fe80::/10'],
    ['::/0', '::/0'],
    ['::ffff:192.0.2.0/120', '::ffff:c000:200/120'],
  ])('%s → %s', (input, normalised) => {
    expect(text(input)).toBe(normalised);
  });

  it.each(['bogus', '10.0.0.0/33', '10.0.0.0/255.0.255.0', '010.0.0.0/8', '10.0.0.0/+8', '10.0.0.0/8/8', 'fe80::1%eth0/64', '::/129', ''])(
    'refuses %s',
    (input) => {
      expect(networkError(input)).toMatch(/is not a network/);
    },
  );

  it('names the network when host bits are set, as the API refuses it', () => {
    expect(networkError('10.0.0.1/8')).toBe('10.0.0.1/8 has host bits set: the network is 10.0.0.0/8');
    expect(networkError('2001:db8::1/32')).toBe('2001:db8::1/32 has host bits set: the network is 2001:db8::/32');
  });
});

describe('addresses and membership', () => {
  it('formats IPv6 with the longest zero run compressed', () => {
    expect(formatAddress(parseAddress('2001:db8:0:0:1:0:0:1')!)).toBe('2001:db8::1:0:0:1');
    expect(formatAddress(parseAddress('1:0:2:3:4:5:6:7')!)).toBe('1:0:2:3:4:5:6:7');
    expect(formatAddress(parseAddress('::')!)).toBe('::');
  });

  it('checks membership bit by bit and by family', () => {
    const net = (t: string) => (parseNetwork(t) as { network: Parameters<typeof contains>[0] }).network;
    expect(contains(net('192.0.2.0/25'), parseAddress('192.0.2.127')!)).toBe(true);
    expect(contains(net('192.0.2.0/25'), parseAddress('192.0.2.128')!)).toBe(false);
    expect(contains(net('0.0.0.0/0'), parseAddress('2001:db8::1')!)).toBe(false);
    expect(contains(net('2001:db8::/32'), parseAddress('2001:db8:ffff::1')!)).toBe(true);
  });

  it('treats an IPv4-mapped client address as the IPv4 address nftables sees', () => {
    expect(formatAddress(unmapIPv4(parseAddress('::ffff:192.0.2.7')!))).toBe('192.0.2.7');
    expect(unmapIPv4(parseAddress('2001:db8::7')!).version).toBe(6);
  });
});
