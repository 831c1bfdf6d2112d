import type { Role } from '../client/types.gen';

/** What each role may do, as the API enforces it (api/src/fulcrum/deps.py). */
const RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 };

export type Permission = 'editServices' | 'commit' | 'manageUsers' | 'editHa' | 'operateHa' | 'editFirewall' | 'editNetwork' | 'editBgp' | 'upgradeFirmware';

const NEEDS: Record<Permission, Role> = {
  editServices: 'operator',
  commit: 'operator',
  manageUsers: 'admin',
  editHa: 'admin', // VIP groups, node settings, pairing, resolving a conflict
  operateHa: 'operator', // maintenance, make active, failover drill
  editFirewall: 'admin',
  editNetwork: 'admin', // this node's own NICs, bonds, VLANs, routes, DNS, time (api: routers/network.py)
  editBgp: 'admin', // this node's own BGP: ASN, router ID, neighbors (api: routers/bgp.py)
  upgradeFirmware: 'admin', // a bundle uploaded and installed, the pair upgraded (api: routers/firmware.py, ha.py)
};

export function can(role: Role | undefined, permission: Permission): boolean {
  return role !== undefined && RANK[role] >= RANK[NEEDS[permission]];
}
