/** What needs an operator's attention, worst first, from status, live stats, the newest revision and the HA pair. */
import type { HaStatus, RevisionRead, StatsSnapshot, Status } from '../client/types.gen';
import { applyMessage } from './format';
import { ANNOUNCES_AGAIN } from './bgp';
import { haAlarms } from './ha';

/**
 * A backend that passes its health check yet loses the traffic IPVS sends it (the API's VIP
 * guard, per backend in /stats/current). Its message follows the backend's address.
 */
function backendWarningTitle(code: string, endpoint: string): string {
  switch (code) {
    case 'vip_missing':
      return `backend ${endpoint} has no VIP: its traffic is dropped`;
    case 'vip_port_closed':
      return `backend ${endpoint} does not listen on the VIP`;
    case 'not_on_link':
      return `backend ${endpoint} is not on a directly attached network`;
    default:
      return `backend ${endpoint} cannot take its traffic`;
  }
}

export type Alarm = {
  id: string;
  severity: 'critical' | 'warning';
  title: string;
  message: string;
  /** Where to act on it. */
  link?: string;
};

export function computeAlarms(
  status: Status | undefined,
  stats: StatsSnapshot | undefined,
  latest: RevisionRead | undefined,
  ha?: HaStatus,
  lastingUnknownRoles?: string[],
): Alarm[] {
  const alarms: Alarm[] = haAlarms(ha, lastingUnknownRoles);
  if (status) {
    const dataplane = status.dataplane;
    if (status.dataplane_error) {
      alarms.push({
        id: 'dataplane-error',
        severity: 'critical',
        title: 'Cannot reach the data plane helper',
        message: status.dataplane_error,
      });
    } else if (dataplane && !dataplane.ipvs_available) {
      alarms.push({
        id: 'dataplane-unavailable',
        severity: 'warning',
        title: 'Data plane unavailable',
        message: `${dataplane.ipvs_detail}. Commits are validated but not applied: no traffic is balanced by this machine.`,
      });
    } else if (dataplane && !dataplane.keepalived_running && status.applied_revision !== null) {
      alarms.push({
        id: 'keepalived-down',
        severity: 'critical',
        title: 'keepalived is not running',
        message: 'Health checks and VIP failover are stopped.',
      });
    }
    if (dataplane?.bgp_announcing === false) {
      alarms.push({
        id: 'bgp-withdrawn',
        severity: 'warning',
        title: 'This node announces no VIPs by BGP',
        message: `Withdrawn because ${dataplane.bgp_fitness ?? 'it is not fit to announce them'}: the routers send it no traffic for them. ${ANNOUNCES_AGAIN}`,
      });
    }
    if (dataplane?.interrupted_revision) {
      alarms.push({
        id: 'interrupted',
        severity: 'warning',
        title: `Applying revision ${dataplane.interrupted_revision} was interrupted`,
        message: 'It is re-applied when the API restarts.',
        link: '/revisions',
      });
    }
    if (status.awaiting_confirm !== null) {
      alarms.push({
        id: 'awaiting-confirm',
        severity: 'warning',
        title: `Revision ${status.awaiting_confirm} awaits confirmation`,
        message: 'It rolls back automatically unless confirmed before its deadline.',
        link: '/revisions',
      });
    }
  }
  if (latest?.state === 'failed') {
    alarms.push({
      id: `revision-failed-${latest.number}`,
      severity: 'critical',
      title: `Revision ${latest.number} failed to apply`,
      message: applyMessage(latest) || 'The previous configuration was restored.',
      link: '/revisions',
    });
  } else if (latest?.state === 'reverted') {
    alarms.push({
      id: `revision-reverted-${latest.number}`,
      severity: 'warning',
      title: `Revision ${latest.number} was rolled back`,
      message: 'It was not confirmed in time; the previous configuration runs again.',
      link: '/revisions',
    });
  }
  if (stats?.ipvs_available) {
    for (const service of stats.services) {
      for (const backend of service.backends) {
        for (const warning of backend.warnings ?? []) {
          alarms.push({
            id: `backend-warning-${warning.code}-${service.name}-${backend.endpoint}`,
            severity: 'critical',
            title: `${service.name}: ${backendWarningTitle(warning.code, backend.endpoint)}`,
            message: `${backend.endpoint} ${warning.message}`,
            link: `/services?q=${encodeURIComponent(service.name)}`,
          });
        }
      }
      const down = service.backends.filter((b) => b.state === 'down');
      if (service.backends_total > 0 && service.backends_up === 0) {
        alarms.push({
          id: `service-down-${service.name}`,
          severity: 'critical',
          title: `${service.name}: no backend is up`,
          message: `All ${service.backends_total} backends are down, drained or disabled: new connections fail.`,
          link: `/services?q=${encodeURIComponent(service.name)}`,
        });
      } else {
        for (const backend of down) {
          alarms.push({
            id: `backend-down-${service.name}-${backend.endpoint}`,
            severity: 'critical',
            title: `${service.name}: backend ${backend.endpoint} is down`,
            message: 'Its health check fails; it receives no new connections.',
            link: `/services?q=${encodeURIComponent(service.name)}`,
          });
        }
      }
    }
  }
  return alarms.sort((a, b) => (a.severity === b.severity ? 0 : a.severity === 'critical' ? -1 : 1));
}
