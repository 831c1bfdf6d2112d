import { defaultService } from './serviceModel';
import { validateService } from './serviceValidation';

const valid = () => {
  const values = { ...defaultService(), name: 'web', address: '192.0.2.10', ports: '80, 443' };
  values.backends[0].address = '198.51.100.1';
  values.backends[1].address = '198.51.100.2';
  return values;
};

describe('validateService', () => {
  it('accepts the common case', () => {
    expect(validateService(valid(), true)).toEqual({});
  });

  it('puts each problem at its field', () => {
    const values = valid();
    values.name = '-web';
    values.backends[1].address = '300.1.1.1';
    values.backends[0].weight = 70000;
    values.backends[0].port = 0;
    const errors = validateService(values, true);
    expect(Object.keys(errors).sort()).toEqual(['backends.0.port', 'backends.0.weight', 'backends.1.address', 'name']);
    expect(errors['backends.1.address']).toMatch(/not a valid/);
  });

  it('refuses a backend of the other address family', () => {
    const values = valid();
    values.backends[0].address = '2001:db8::1';
    expect(validateService(values, true)['backends.0.address']).toMatch(/IPv4/);
  });

  it('checks only the health-check fields of the chosen type', () => {
    const values = valid();
    values.health_check.http_path = 'no slash';
    expect(validateService(values, true)).toEqual({});
    values.health_check.type = 'http';
    expect(validateService(values, true)['health_check.http_path']).toBeDefined();
  });

  it('ignores backends when editing settings only', () => {
    const values = valid();
    values.backends[0].address = 'nonsense';
    expect(validateService(values, false)).toEqual({});
  });

  it('requires a port for GUE tunnels and a timeout for a persistence prefix', () => {
    const values = { ...valid(), forwarding: 'tun' as const, tunnel_type: 'gue' as const, persistence_prefix: 24 as const };
    expect(Object.keys(validateService(values, true)).sort()).toEqual(['persistence_prefix', 'tunnel_port']);
  });
});
