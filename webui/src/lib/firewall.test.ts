import { assessPolicy, describePolicy, hostNetwork, managementPortsError, parseManagementPorts } from './firewall';

const ids = (findings: { id: string }[]) => findings.map((f) => f.id);

describe('management ports', () => {
  it('reads a list and allows it to be empty', () => {
    expect(parseManagementPorts('22, 80 443')).toEqual([22, 80, 443]);
    expect(parseManagementPorts('  ')).toEqual([]);
  });
  it('refuses what the API refuses', () => {
    expect(managementPortsError('22, 0')).toBe('Port must be between 1 and 65535');
    expect(managementPortsError('ssh')).toBe('"ssh" is not a port number');
    expect(managementPortsError('22 22')).toBe('A port is listed twice');
    expect(managementPortsError(Array.from({ length: 17 }, (_, i) => i + 1).join(','))).toBe('At most 16 ports');
  });
});

describe('assessPolicy', () => {
  const context = { clientAddress: '192.0.2.7', dashboardPort: 443, peerAddress: '10.0.0.2' };

  it('finds nothing to fear when nothing is guarded', () => {
    expect(assessPolicy({ ports: [22, 443], allow: [] }, context)).toEqual([]);
    expect(assessPolicy({ ports: [], allow: ['10.0.0.0/8'] }, context)).toEqual([]);
  });

  it('warns before an allow-list shuts this browser and the peer out', () => {
    const findings = assessPolicy({ ports: [22, 443], allow: ['198.51.100.0/24'] }, context);
    expect(ids(findings)).toEqual(['lockout', 'peer-shut-out', 'family']);
    expect(findings[0]).toMatchObject({ severity: 'critical' });
    expect(findings[0].message).toContain('192.0.2.7');
  });

  it('is quiet once your address and the peer are listed', () => {
    expect(ids(assessPolicy({ ports: [443], allow: ['192.0.2.0/24', '10.0.0.2/32', '2001:db8::/32'] }, context))).toEqual([]);
  });

  it('checks an IPv4 client seen through a dual-stack socket as IPv4', () => {
    const mapped = { ...context, clientAddress: '::ffff:192.0.2.7', peerAddress: null };
    expect(ids(assessPolicy({ ports: [443], allow: ['192.0.2.0/24', '2001:db8::/32'] }, mapped))).toEqual([]);
  });

  it('says when the dashboard port is not guarded at all', () => {
    expect(ids(assessPolicy({ ports: [22], allow: ['198.51.100.0/24', '2001:db8::/32'] }, context))).toEqual(['dashboard-port-open']);
  });

  it('cannot vouch for an address it cannot read', () => {
    const findings = assessPolicy({ ports: [443], allow: ['10.0.0.0/8', '2001:db8::/32'] }, { ...context, clientAddress: 'unknown' });
    expect(ids(findings)).toEqual(['address-unknown']);
  });

  it('ignores entries that are not networks yet (they are refused at their field)', () => {
    expect(ids(assessPolicy({ ports: [443], allow: ['192.0.2.', '10.0.0.0/8', '2001:db8::/32'] }, context))).toEqual(['lockout']);
  });
});

describe('describing a policy', () => {
  it('says plainly who may connect', () => {
    expect(describePolicy({ ports: [22, 443], allow: [] })).toBe('Anyone who can route to this appliance may connect to ports 22, 443.');
    expect(describePolicy({ ports: [443], allow: ['10.0.0.0/8'] })).toMatch(/only from 10.0.0.0\/8; everyone else is dropped/);
    expect(describePolicy({ ports: [], allow: ['10.0.0.0/8'] })).toMatch(/drops nothing/);
  });
  it('makes a host network from an address', () => {
    expect(hostNetwork('::ffff:192.0.2.7')).toBe('192.0.2.7/32');
    expect(hostNetwork('2001:db8::7')).toBe('2001:db8::7/128');
    expect(hostNetwork('testclient')).toBeNull();
  });
});
