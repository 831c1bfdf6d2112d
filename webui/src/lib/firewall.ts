/**
 * What a management firewall policy means for the people and machines that reach this appliance
 * (api/src/fulcrum/render/nftables.py): the listed TCP ports accept new connections only from
 * the listed networks; an empty list of networks (or of ports) guards nothing.
 */
import { contains, formatAddress, parseAddress, parseNetwork, unmapIPv4, type IpNetwork } from './networks';
import { validPort } from './validation';

const MAX_PORTS = 16;
export const MAX_NETWORKS = 256;

/** "22, 80 443" → [22, 80, 443]; empty is allowed (no port guarded). Throws a message. */
export function parseManagementPorts(text: string): number[] {
  const parts = text.split(/[\s,]+/).filter(Boolean);
  const ports = parts.map((p) => {
    const error = /^\d+$/.test(p) ? validPort(Number(p)) : `"${p}" is not a port number`;
    if (error) throw new Error(error);
    return Number(p);
  });
  if (new Set(ports).size !== ports.length) throw new Error('A port is listed twice');
  if (ports.length > MAX_PORTS) throw new Error(`At most ${MAX_PORTS} ports`);
  return ports;
}

export function managementPortsError(text: string): string | null {
  try {
    parseManagementPorts(text);
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

export type Policy = { ports: number[]; allow: string[] };

export type Finding = {
  id: 'lockout' | 'peer-shut-out' | 'address-unknown' | 'family' | 'dashboard-port-open';
  severity: 'critical' | 'warning' | 'info';
  message: string;
};

export type Context = {
  /** The address the appliance sees this browser at (GET /auth/me `client_address`). */
  clientAddress?: string | null;
  /** The port this dashboard is served on: the peer's API calls arrive there too. */
  dashboardPort: number;
  /** The other node of the HA pair: it calls this node's API for configuration sync. */
  peerAddress?: string | null;
};

function networks(allow: string[]): IpNetwork[] {
  return allow.flatMap((text) => {
    const parsed = parseNetwork(text);
    return 'network' in parsed ? [parsed.network] : [];
  });
}

/** True when the policy drops anything at all. */
function guards(policy: Policy): boolean {
  return policy.ports.length > 0 && policy.allow.length > 0;
}

/** One sentence an operator can check the policy against. */
export function describePolicy(policy: Policy): string {
  const ports = policy.ports.join(', ');
  if (!policy.ports.length) return 'No port is guarded: the management filter drops nothing.';
  if (!policy.allow.length) return `Anyone who can route to this appliance may connect to ports ${ports}.`;
  return `Ports ${ports} accept new connections only from ${policy.allow.join(', ')}; everyone else is dropped.`;
}

/** What would go wrong for this browser and for the HA peer once the policy is applied. */
export function assessPolicy(policy: Policy, context: Context): Finding[] {
  if (!guards(policy)) return [];
  const allowed = networks(policy.allow);
  const findings: Finding[] = [];
  const guarded = policy.ports.includes(context.dashboardPort);
  const allows = (text: string) => {
    const parsed = parseAddress(text);
    return parsed ? allowed.some((n) => contains(n, unmapIPv4(parsed))) : null;
  };

  if (!guarded) {
    findings.push({
      id: 'dashboard-port-open',
      severity: 'info',
      message: `This dashboard is served on port ${context.dashboardPort}, which is not in the list: it stays reachable from anywhere.`,
    });
  } else if (context.clientAddress) {
    const parsed = parseAddress(context.clientAddress);
    const shown = parsed ? formatAddress(unmapIPv4(parsed)) : context.clientAddress;
    const ok = allows(context.clientAddress);
    if (ok === false) {
      findings.push({
        id: 'lockout',
        severity: 'critical',
        message: `Your address ${shown} is not in the list: once this is applied, this browser cannot reach the dashboard any more.`,
      });
    } else if (ok === null) {
      findings.push({
        id: 'address-unknown',
        severity: 'warning',
        message: `The appliance sees you as "${context.clientAddress}", not an IP address it can check: make sure your own network is listed.`,
      });
    }
  }

  if (guarded && context.peerAddress && allows(context.peerAddress) === false) {
    findings.push({
      id: 'peer-shut-out',
      severity: 'critical',
      message: `The HA peer ${context.peerAddress} is not in the list: it could no longer reach this node's API, so configuration sync stops.`,
    });
  }

  const families = new Set(allowed.map((n) => n.version));
  if (families.size === 1) {
    const other = families.has(4) ? 'IPv6' : 'IPv4';
    findings.push({
      id: 'family',
      severity: 'info',
      message: `Only ${families.has(4) ? 'IPv4' : 'IPv6'} networks are listed, so every ${other} source is refused on these ports.`,
    });
  }
  return findings;
}

/** The network that admits exactly this address ("192.0.2.7" → "192.0.2.7/32"). */
export function hostNetwork(address: string): string | null {
  const parsed = parseAddress(address);
  if (!parsed) return null;
  const plain = unmapIPv4(parsed);
  return `${formatAddress(plain)}/${plain.version === 4 ? 32 : 128}`;
}
