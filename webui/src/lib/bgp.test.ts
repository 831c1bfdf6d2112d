import type { BgpRead } from '../client/types.gen';
import { formPath, requiredErrors, toBody, toValues } from './bgp';

const STORED: BgpRead = {
  enabled: true,
  asn: 65001,
  router_id: '192.0.2.5',
  neighbors: [
    { address: '10.0.1.254', remote_asn: 65000, has_password: true, bfd: true, description: 'core a', timers: { keepalive: 1, hold: 3 } },
    { address: '10.0.2.254', remote_asn: 65000, has_password: false, bfd: false, description: null, timers: null },
  ],
  announce: ['192.0.2.10', '2001:db8::10'],
  communities: ['65001:42'],
  large_communities: ['65001:1:2'],
};

describe('the BGP form', () => {
  it('sends back what it was given, keeping stored passwords without knowing them', () => {
    expect(toBody(toValues(STORED))).toEqual({
      enabled: true,
      asn: 65001,
      router_id: '192.0.2.5',
      neighbors: [
        { address: '10.0.1.254', remote_asn: 65000, description: 'core a', bfd: true, password: null, timers: { keepalive: 1, hold: 3 } },
        { address: '10.0.2.254', remote_asn: 65000, description: null, bfd: false, password: null, timers: null },
      ],
      announce: ['192.0.2.10', '2001:db8::10'],
      communities: ['65001:42'],
      large_communities: ['65001:1:2'],
    });
  });

  it('sets a typed password, removes a stored one when asked, and announces every VIP when ticked', () => {
    const values = toValues(STORED);
    values.neighbors[0].remove_password = true;
    values.neighbors[1].password = 's3cret';
    values.announce_all = true;
    const body = toBody(values);
    expect(body.neighbors?.map((n) => n.password)).toEqual(['', 's3cret']);
    expect(body.announce).toBeNull();
  });

  it('starts empty, announcing every enabled VIP, and asks for the numbers an empty field cannot give', () => {
    const values = toValues(null);
    expect(values).toMatchObject({ asn: '', router_id: '', neighbors: [], announce_all: true, enabled: true });
    values.neighbors.push({ ...toValues(STORED).neighbors[0], remote_asn: '', keepalive: '' });
    expect(requiredErrors(values)).toEqual({
      asn: 'Fill in this node’s AS number',
      'neighbors.0.remote_asn': 'Fill in the router’s AS number',
      'neighbors.0.keepalive': 'Fill in the keepalive interval',
    });
  });

  it.each([
    ['communities.1', 'communities'],
    ['large_communities.0', 'large_communities'],
    ['announce.2', 'announce'],
    ['neighbors.1.timers', 'neighbors.1.keepalive'],
    ['neighbors.1.timers.hold', 'neighbors.1.hold'],
    ['neighbors.0.password', 'neighbors.0.password'],
    ['router_id', 'router_id'],
  ])('shows an API error at %s on the field %s', (path, field) => {
    expect(formPath(path)).toBe(field);
  });
});
