/** Client-side rules for the service form (mirroring the API; its 422s are shown too). */
import type { BackendValues, HealthCheckValues, ServiceValues } from './serviceModel';
import {
  HEX_PATTERN,
  HOSTNAME_PATTERN,
  HTTP_PATH_PATTERN,
  MD5_PATTERN,
  ipVersion,
  optionalInteger,
  validAddress,
  validName,
  validPorts,
  validSeconds,
  validWeight,
} from '../lib/validation';

const optionalPort = optionalInteger(1, 65535, 'Port');

function healthCheckRules(check: HealthCheckValues): Record<string, string | null> {
  const http = check.type === 'http' || check.type === 'https';
  return {
    port: optionalPort(check.port),
    interval: validSeconds(check.interval),
    timeout: validSeconds(check.timeout) ?? (Number(check.timeout) > 60 ? 'At most 60 s: longer hides a dead backend for minutes' : null),
    retries: optionalInteger(0, 10, 'Retries')(check.retries),
    retry_delay: validSeconds(check.retry_delay),
    http_path: http && !HTTP_PATH_PATTERN.test(check.http_path) ? 'A path starting with "/" (no spaces, quotes, "!", "#", "$" or braces)' : null,
    http_status_codes:
      http && !/^\s*[1-5]\d\d(\s*[,\s]\s*[1-5]\d\d)*\s*$/.test(check.http_status_codes) ? 'One or more status codes between 100 and 599' : null,
    http_host: http && check.http_host && !HOSTNAME_PATTERN.test(check.http_host) ? 'A host name such as www.example.org' : null,
    http_digest: http && check.http_digest && !MD5_PATTERN.test(check.http_digest) ? '32 hexadecimal characters' : null,
    tls_sni: check.type === 'https' && check.tls_sni && !check.http_host ? 'SNI needs the Host header name' : null,
    dns_query_name: check.type === 'dns' && !HOSTNAME_PATTERN.test(check.dns_query_name) ? 'A DNS name, or "." for the root' : null,
    smtp_helo_name: check.type === 'smtp' && check.smtp_helo_name && !HOSTNAME_PATTERN.test(check.smtp_helo_name) ? 'A host name' : null,
    udp_payload: check.type === 'udp' && check.udp_payload && !HEX_PATTERN.test(check.udp_payload) ? 'Pairs of hexadecimal digits, up to 128 bytes' : null,
  };
}

export function backendRules(backend: BackendValues, family: 4 | 6 | null): Record<string, string | null> {
  const addressError = validAddress(backend.address);
  const upper = Number(backend.upper_threshold || 0);
  const lower = Number(backend.lower_threshold || 0);
  const rules: Record<string, string | null> = {
    address:
      addressError ??
      (family && ipVersion(backend.address.trim()) !== family ? `The service address is IPv${family}; backends must be too` : null),
    port: optionalPort(backend.port),
    weight: backend.weight === '' ? null : validWeight(backend.weight),
    upper_threshold: optionalInteger(0, 1_000_000)(backend.upper_threshold),
    lower_threshold: optionalInteger(0, 1_000_000)(backend.lower_threshold) ?? (lower && !upper ? 'Needs a limit above it' : lower && lower >= upper ? 'Must be below the limit' : null),
  };
  if (backend.own_check) {
    for (const [key, error] of Object.entries(healthCheckRules(backend.health_check))) rules[`health_check.${key}`] = error;
  }
  return rules;
}

/** Errors keyed by form path; empty when the form may be sent. */
export function validateService(values: ServiceValues, withBackends: boolean): Record<string, string> {
  const errors: Record<string, string | null> = {
    name: validName(values.name),
    address: validAddress(values.address),
    ports: validPorts(values.ports),
    quorum: values.quorum === '' ? null : optionalInteger(1, 1_000_000, 'Quorum')(values.quorum),
    persistence_timeout: optionalInteger(1, 86400 * 31, 'Timeout')(values.persistence_timeout),
    persistence_prefix:
      optionalInteger(1, ipVersion(values.address) === 4 ? 32 : 128, 'Prefix')(values.persistence_prefix) ??
      (values.persistence_prefix !== '' && values.persistence_timeout === '' ? 'Needs a persistence timeout' : null),
    tunnel_port: values.forwarding === 'tun' && values.tunnel_type === 'gue' ? optionalPort(values.tunnel_port) ?? (values.tunnel_port === '' ? 'A GUE tunnel needs a port' : null) : null,
    snat_address: values.forwarding === 'one_arm' && values.snat_address ? validAddress(values.snat_address) : null,
    sorry_address: values.sorry_enabled ? validAddress(values.sorry_address) : null,
    sorry_port: values.sorry_enabled ? optionalPort(values.sorry_port) : null,
  };
  for (const [key, error] of Object.entries(healthCheckRules(values.health_check))) errors[`health_check.${key}`] = error;
  if (withBackends) {
    const family = ipVersion(values.address.trim());
    values.backends.forEach((backend, i) => {
      for (const [key, error] of Object.entries(backendRules(backend, family))) errors[`backends.${i}.${key}`] = error;
    });
  }
  return Object.fromEntries(Object.entries(errors).filter((entry): entry is [string, string] => !!entry[1]));
}
