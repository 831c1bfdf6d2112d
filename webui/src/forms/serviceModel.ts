/**
 * The service form's values and their mapping to and from the API's shapes. Numbers that may be
 * left empty are '' in the form and null (or omitted) in the request.
 */
import type {
  BackendCreate,
  BackendRead,
  CheckType,
  DnsQueryType,
  FailureAction,
  Forwarding,
  HealthCheck,
  Protocol,
  Scheduler,
  ServiceCreate,
  ServiceRead,
  TunnelType,
} from '../client/types.gen';
import type { ForwardingChoice } from '../lib/schedulers';
import { parsePorts } from '../lib/validation';

type OptionalNumber = number | '';

export type HealthCheckValues = {
  type: CheckType;
  interval: number;
  timeout: number;
  retries: number;
  retry_delay: number;
  on_failure: FailureAction;
  port: OptionalNumber;
  http_path: string;
  http_status_codes: string;
  http_digest: string;
  http_host: string;
  tls_sni: boolean;
  dns_query_type: DnsQueryType;
  dns_query_name: string;
  smtp_helo_name: string;
  udp_payload: string;
  udp_require_reply: boolean;
};

export type BackendValues = {
  address: string;
  port: OptionalNumber;
  weight: OptionalNumber;
  enabled: boolean;
  upper_threshold: OptionalNumber;
  lower_threshold: OptionalNumber;
  description: string;
  own_check: boolean;
  health_check: HealthCheckValues;
};

export type ServiceValues = {
  name: string;
  description: string;
  enabled: boolean;
  address: string;
  ports: string;
  protocol: Protocol;
  scheduler: Scheduler;
  scheduler_fallback: boolean;
  scheduler_port: boolean;
  one_packet_scheduling: boolean;
  forwarding: ForwardingChoice;
  tunnel_type: TunnelType;
  tunnel_port: OptionalNumber;
  snat_address: string;
  persistence_timeout: OptionalNumber;
  persistence_prefix: OptionalNumber;
  quorum: OptionalNumber;
  sorry_enabled: boolean;
  sorry_address: string;
  sorry_port: OptionalNumber;
  health_check: HealthCheckValues;
  backends: BackendValues[];
};

const defaultHealthCheck = (): HealthCheckValues => ({
  type: 'tcp',
  interval: 1,
  timeout: 1,
  retries: 1,
  retry_delay: 0.5,
  on_failure: 'remove',
  port: '',
  http_path: '/',
  http_status_codes: '200',
  http_digest: '',
  http_host: '',
  tls_sni: false,
  dns_query_type: 'SOA',
  dns_query_name: '.',
  smtp_helo_name: '',
  udp_payload: '',
  udp_require_reply: false,
});

export const defaultBackend = (): BackendValues => ({
  address: '',
  port: '',
  weight: 1,
  enabled: true,
  upper_threshold: 0,
  lower_threshold: 0,
  description: '',
  own_check: false,
  health_check: defaultHealthCheck(),
});

export const defaultService = (): ServiceValues => ({
  name: '',
  description: '',
  enabled: true,
  address: '',
  ports: '80',
  protocol: 'tcp',
  scheduler: 'wlc',
  scheduler_fallback: false,
  scheduler_port: false,
  one_packet_scheduling: false,
  forwarding: 'nat',
  tunnel_type: 'ipip',
  tunnel_port: '',
  snat_address: '',
  persistence_timeout: '',
  persistence_prefix: '',
  quorum: 1,
  sorry_enabled: false,
  sorry_address: '',
  sorry_port: '',
  health_check: defaultHealthCheck(),
  backends: [defaultBackend(), defaultBackend()],
});

const orNull = (v: number | string): number | null => (v === '' ? null : Number(v));
const textOrNull = (v: string): string | null => (v.trim() === '' ? null : v.trim());
const orEmpty = (v: number | null | undefined): OptionalNumber => (v === null || v === undefined ? '' : v);

function healthCheckToRequest(v: HealthCheckValues): HealthCheck {
  return {
    type: v.type,
    interval: Number(v.interval),
    timeout: Number(v.timeout),
    retries: Number(v.retries),
    retry_delay: Number(v.retry_delay),
    on_failure: v.on_failure,
    port: orNull(v.port),
    http_path: v.http_path,
    http_status_codes: v.http_status_codes
      .split(/[\s,]+/)
      .filter(Boolean)
      .map(Number),
    http_digest: textOrNull(v.http_digest),
    http_host: textOrNull(v.http_host),
    tls_sni: v.tls_sni,
    dns_query_type: v.dns_query_type,
    dns_query_name: v.dns_query_name,
    smtp_helo_name: textOrNull(v.smtp_helo_name),
    udp_payload: textOrNull(v.udp_payload),
    udp_require_reply: v.udp_require_reply,
  };
}

function healthCheckFromRead(check: HealthCheck | null | undefined): HealthCheckValues {
  const d = defaultHealthCheck();
  if (!check) return d;
  return {
    type: check.type ?? d.type,
    interval: check.interval ?? d.interval,
    timeout: check.timeout ?? d.timeout,
    retries: check.retries ?? d.retries,
    retry_delay: check.retry_delay ?? d.retry_delay,
    on_failure: check.on_failure ?? d.on_failure,
    port: orEmpty(check.port),
    http_path: check.http_path ?? d.http_path,
    http_status_codes: (check.http_status_codes ?? [200]).join(', '),
    http_digest: check.http_digest ?? '',
    http_host: check.http_host ?? '',
    tls_sni: check.tls_sni ?? false,
    dns_query_type: check.dns_query_type ?? d.dns_query_type,
    dns_query_name: check.dns_query_name ?? d.dns_query_name,
    smtp_helo_name: check.smtp_helo_name ?? '',
    udp_payload: check.udp_payload ?? '',
    udp_require_reply: check.udp_require_reply ?? false,
  };
}

export function backendToRequest(v: BackendValues): BackendCreate {
  return {
    address: v.address.trim(),
    port: orNull(v.port),
    weight: v.weight === '' ? 1 : Number(v.weight),
    enabled: v.enabled,
    upper_threshold: orNull(v.upper_threshold) ?? 0,
    lower_threshold: orNull(v.lower_threshold) ?? 0,
    description: v.description,
    health_check: v.own_check ? healthCheckToRequest(v.health_check) : null,
  };
}

export function backendFromRead(b: BackendRead): BackendValues {
  return {
    address: b.address,
    port: orEmpty(b.port),
    weight: b.weight ?? 1,
    enabled: b.enabled ?? true,
    upper_threshold: b.upper_threshold ?? 0,
    lower_threshold: b.lower_threshold ?? 0,
    description: b.description ?? '',
    own_check: !!b.health_check,
    health_check: healthCheckFromRead(b.health_check),
  };
}

/** The service's own fields (no backends): the body of a PATCH, and of a POST with backends added. */
export function serviceSettingsToRequest(v: ServiceValues): Omit<ServiceCreate, 'backends'> {
  const tun = v.forwarding === 'tun';
  const oneArm = v.forwarding === 'one_arm';
  return {
    name: v.name.trim(),
    description: v.description,
    enabled: v.enabled,
    address: v.address.trim(),
    ports: parsePorts(v.ports),
    protocol: v.protocol,
    scheduler: v.scheduler,
    // These flags are refused by the API for other schedulers/protocols; send them only where they apply.
    scheduler_fallback: (v.scheduler === 'sh' || v.scheduler === 'mh') && v.scheduler_fallback,
    scheduler_port: (v.scheduler === 'sh' || v.scheduler === 'mh') && v.scheduler_port,
    one_packet_scheduling: v.protocol === 'udp' && v.one_packet_scheduling,
    forwarding: oneArm ? 'nat' : (v.forwarding as Forwarding),
    tunnel_type: tun ? v.tunnel_type : 'ipip',
    tunnel_port: tun && v.tunnel_type === 'gue' ? orNull(v.tunnel_port) : null,
    one_arm: oneArm,
    snat_address: oneArm ? textOrNull(v.snat_address) : null,
    persistence_timeout: orNull(v.persistence_timeout),
    persistence_prefix: v.persistence_timeout === '' ? null : orNull(v.persistence_prefix),
    quorum: v.quorum === '' ? 1 : Number(v.quorum),
    sorry_server: v.sorry_enabled ? { address: v.sorry_address.trim(), port: orNull(v.sorry_port) } : null,
    health_check: healthCheckToRequest(v.health_check),
  };
}

export function serviceToCreateRequest(v: ServiceValues): ServiceCreate {
  return { ...serviceSettingsToRequest(v), backends: v.backends.map(backendToRequest) };
}

export function serviceFromRead(s: ServiceRead): ServiceValues {
  const d = defaultService();
  return {
    name: s.name,
    description: s.description ?? '',
    enabled: s.enabled ?? true,
    address: s.address,
    ports: s.ports.join(', '),
    protocol: s.protocol ?? d.protocol,
    scheduler: s.scheduler ?? d.scheduler,
    scheduler_fallback: s.scheduler_fallback ?? false,
    scheduler_port: s.scheduler_port ?? false,
    one_packet_scheduling: s.one_packet_scheduling ?? false,
    forwarding: s.one_arm ? 'one_arm' : (s.forwarding ?? 'nat'),
    tunnel_type: s.tunnel_type ?? 'ipip',
    tunnel_port: orEmpty(s.tunnel_port),
    snat_address: s.snat_address ?? '',
    persistence_timeout: orEmpty(s.persistence_timeout),
    persistence_prefix: orEmpty(s.persistence_prefix),
    quorum: s.quorum ?? 1,
    sorry_enabled: !!s.sorry_server,
    sorry_address: s.sorry_server?.address ?? '',
    sorry_port: orEmpty(s.sorry_server?.port),
    health_check: healthCheckFromRead(s.health_check),
    backends: s.backends.map(backendFromRead),
  };
}

/** Where an API field path ("sorry_server.port", "ports.0") is shown in this form. */
export function serviceFormPath(apiPath: string): string {
  return apiPath
    .replace(/^ports\.\d+$/, 'ports')
    .replace(/^one_arm$/, 'forwarding')
    .replace(/^sorry_server\.(address|port)$/, 'sorry_$1')
    .replace(/^sorry_server$/, 'sorry_address')
    .replace(/http_status_codes\.\d+$/, 'http_status_codes')
    .replace(/^backends\.(\d+)$/, 'backends.$1.address');
}
