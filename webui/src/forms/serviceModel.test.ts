import type { ServiceRead } from '../client/types.gen';
import { defaultService, serviceFormPath, serviceFromRead, serviceToCreateRequest } from './serviceModel';

describe('service form model', () => {
  it('makes the three-field common case a complete request', () => {
    const values = { ...defaultService(), name: 'web', address: '192.0.2.10', ports: '80' };
    values.backends[0].address = '198.51.100.1';
    values.backends[1].address = '198.51.100.2';
    const request = serviceToCreateRequest(values);
    expect(request).toMatchObject({ name: 'web', address: '192.0.2.10', ports: [80], scheduler: 'wlc', forwarding: 'nat', one_arm: false });
    expect(request.backends!).toEqual([
      expect.objectContaining({ address: '198.51.100.1', port: null, weight: 1, health_check: null }),
      expect.objectContaining({ address: '198.51.100.2' }),
    ]);
    expect(request.health_check).toMatchObject({ type: 'tcp', interval: 1, http_status_codes: [200] });
  });

  it('sends one-arm NAT as nat + one_arm, and drops options that do not apply', () => {
    const values = { ...defaultService(), name: 'a', address: '192.0.2.1', forwarding: 'one_arm' as const, snat_address: '192.0.2.5', scheduler_port: true, tunnel_port: 5555 as const };
    const request = serviceToCreateRequest(values);
    expect(request).toMatchObject({ forwarding: 'nat', one_arm: true, snat_address: '192.0.2.5', scheduler_port: false, tunnel_port: null });
  });

  it('round-trips a service read from the API', () => {
    const read = {
      id: 1,
      name: 'dns',
      address: '2001:db8::53',
      ports: [53],
      protocol: 'udp',
      scheduler: 'mh',
      scheduler_port: true,
      forwarding: 'tun',
      tunnel_type: 'gue',
      tunnel_port: 6080,
      one_arm: false,
      persistence_timeout: 300,
      persistence_prefix: 64,
      quorum: 1,
      sorry_server: { address: '2001:db8::99', port: null },
      health_check: { type: 'dns', dns_query_name: 'example.org', http_status_codes: [200] },
      backends: [{ id: 3, service_id: 1, address: '2001:db8::1', port: null, weight: 5, health_check: { type: 'ping' } }],
    } as unknown as ServiceRead;
    const values = serviceFromRead(read);
    expect(values.forwarding).toBe('tun');
    expect(values.backends[0].own_check).toBe(true);
    const request = serviceToCreateRequest(values);
    expect(request).toMatchObject({
      ports: [53],
      scheduler_port: true,
      tunnel_type: 'gue',
      tunnel_port: 6080,
      persistence_prefix: 64,
      sorry_server: { address: '2001:db8::99', port: null },
    });
    expect(request.health_check).toMatchObject({ type: 'dns', dns_query_name: 'example.org' });
    expect(request.backends![0]).toMatchObject({ weight: 5 });
    expect(request.backends![0].health_check).toMatchObject({ type: 'ping' });
  });

  it('shows API errors at the form field that edits them', () => {
    expect(serviceFormPath('ports.0')).toBe('ports');
    expect(serviceFormPath('one_arm')).toBe('forwarding');
    expect(serviceFormPath('sorry_server.port')).toBe('sorry_port');
    expect(serviceFormPath('backends.1.port')).toBe('backends.1.port');
    expect(serviceFormPath('backends.0.health_check.http_status_codes.2')).toBe('backends.0.health_check.http_status_codes');
  });
});
