import { ipVersion, parsePorts, samePassword, validAddress, validName, validNewPassword, validPorts, validWeight } from './validation';

describe('addresses', () => {
  it.each([
    ['192.0.2.10', 4],
    ['0.0.0.0', 4],
    ['2001:db8::10', 6],
    ['::', 6],
    ['::1', 6],
    ['fe80::1:2:3:4', 6],
    ['1:2:3:4:5:6:7:8', 6],
    ['::ffff:192.0.2.1', 6],
  ])('accepts %s as IPv%i', (address, version) => {
    expect(ipVersion(address)).toBe(version);
  });

  it.each(['300.1.1.1', '1.2.3', '01.2.3.4', 'web', '1:2:3:4:5:6:7:8:9', '1::2::3', 'fe80::1%eth0', '12345::1', ''])(
    'refuses %s',
    (address) => {
      expect(ipVersion(address)).toBeNull();
      expect(validAddress(address)).toMatch(/not a valid/);
    },
  );
});

describe('names', () => {
  it('follows the API pattern', () => {
    expect(validName('web-1.prod_a')).toBeNull();
    expect(validName('-web')).not.toBeNull();
    expect(validName('a'.repeat(63))).toBeNull();
    expect(validName('a'.repeat(64))).not.toBeNull();
    expect(validName('has space')).not.toBeNull();
  });
});

describe('ports and weights', () => {
  it('parses a port list', () => {
    expect(parsePorts('80, 443')).toEqual([80, 443]);
    expect(parsePorts('80 443')).toEqual([80, 443]);
  });

  it.each([
    ['', 'at least one'],
    ['0', 'between 1 and 65535'],
    ['65536', 'between 1 and 65535'],
    ['80,80', 'twice'],
    ['http', 'not a port'],
  ])('refuses %j', (text, message) => {
    expect(validPorts(text)).toMatch(new RegExp(message));
  });

  it('accepts weights 0 to 65535', () => {
    expect(validWeight(0)).toBeNull();
    expect(validWeight(65535)).toBeNull();
    expect(validWeight(65536)).toMatch(/between/);
    expect(validWeight(1.5)).toMatch(/whole/);
    expect(validWeight('')).toBe('Required');
  });
});

describe('new passwords', () => {
  it('takes 12 to 256 characters, as the API does', () => {
    expect(validNewPassword('a'.repeat(11))).toMatch(/At least 12/);
    expect(validNewPassword('a'.repeat(12))).toBeNull();
    expect(validNewPassword('a'.repeat(257))).toMatch(/At most 256/);
  });
  it('wants the repetition to match', () => {
    expect(samePassword('correct horse', 'correct horse')).toBeNull();
    expect(samePassword('correct horse', 'correct house')).toBe('The passwords differ');
  });
});
