import { can } from './roles';

describe('can', () => {
  it('lets a viewer edit nothing', () => {
    expect(can('viewer', 'editServices')).toBe(false);
    expect(can('viewer', 'commit')).toBe(false);
  });
  it('lets an operator edit services and commit, not users or HA', () => {
    expect(can('operator', 'editServices')).toBe(true);
    expect(can('operator', 'commit')).toBe(true);
    expect(can('operator', 'manageUsers')).toBe(false);
    expect(can('operator', 'editHa')).toBe(false);
    expect(can('operator', 'editFirewall')).toBe(false);
  });
  it('lets an operator hand over between HA nodes, not a viewer', () => {
    expect(can('operator', 'operateHa')).toBe(true);
    expect(can('viewer', 'operateHa')).toBe(false);
  });
  it('lets an admin do everything', () => {
    expect(can('admin', 'manageUsers')).toBe(true);
    expect(can('admin', 'editHa')).toBe(true);
    expect(can('admin', 'editFirewall')).toBe(true);
  });
  it('denies an unknown user', () => {
    expect(can(undefined, 'commit')).toBe(false);
  });
});
