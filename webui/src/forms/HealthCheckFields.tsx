import { Checkbox, Group, NumberInput, Select, SimpleGrid, TextInput } from '@mantine/core';
import type { UseFormReturnType } from '@mantine/form';
import type { CheckType } from '../client/types.gen';

const CHECK_TYPES: { value: CheckType; label: string }[] = [
  { value: 'tcp', label: 'TCP connect' },
  { value: 'http', label: 'HTTP request' },
  { value: 'https', label: 'HTTPS request' },
  { value: 'dns', label: 'DNS query' },
  { value: 'smtp', label: 'SMTP greeting' },
  { value: 'udp', label: 'UDP datagram' },
  { value: 'ping', label: 'Ping (ICMP)' },
  { value: 'none', label: 'None: always up' },
];

type Props = {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  form: UseFormReturnType<any>;
  /** Dotted path of the HealthCheckValues in the form, e.g. "health_check". */
  path: string;
};

/** Every health-check field; only those of the chosen type are shown. */
export function HealthCheckFields({ form, path }: Props) {
  const field = (name: string) => form.getInputProps(`${path}.${name}`);
  const type = getAt(form.getValues(), `${path}.type`) as CheckType;
  const http = type === 'http' || type === 'https';
  return (
    <>
      <SimpleGrid cols={{ base: 1, sm: 3 }}>
        <Select label="Check type" data={CHECK_TYPES} allowDeselect={false} {...field('type')} />
        <Select
          label="When a check fails"
          data={[
            { value: 'remove', label: 'Remove the backend (cuts its connections)' },
            { value: 'weight_zero', label: 'Set weight 0 (connections finish)' },
          ]}
          allowDeselect={false}
          {...field('on_failure')}
        />
        <NumberInput label="Check port" description="Empty: the backend's port" min={1} max={65535} {...field('port')} />
      </SimpleGrid>
      {type !== 'none' && (
        <SimpleGrid cols={{ base: 2, sm: 4 }}>
          <NumberInput label="Every (s)" min={0.1} max={3600} step={0.5} decimalScale={2} {...field('interval')} />
          <NumberInput label="Timeout (s)" min={0.1} max={60} step={0.5} decimalScale={2} {...field('timeout')} />
          <NumberInput label="Retries" min={0} max={10} {...field('retries')} />
          <NumberInput label="Retry after (s)" min={0.1} max={3600} step={0.5} decimalScale={2} {...field('retry_delay')} />
        </SimpleGrid>
      )}
      {http && (
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <TextInput label="URL path" {...field('http_path')} />
          <TextInput label="Healthy status codes" description="Comma-separated, e.g. 200, 301" {...field('http_status_codes')} />
          <TextInput label="Host header" description="Empty: none sent" {...field('http_host')} />
          <TextInput label="Body MD5 digest" description="Optional: the page must match exactly" {...field('http_digest')} />
          {type === 'https' && (
            <Checkbox label="Send SNI (the Host header's name)" {...form.getInputProps(`${path}.tls_sni`, { type: 'checkbox' })} />
          )}
        </SimpleGrid>
      )}
      {type === 'dns' && (
        <Group grow>
          <Select label="Query type" data={['SOA', 'A', 'AAAA', 'NS', 'CNAME', 'MX', 'TXT']} allowDeselect={false} {...field('dns_query_type')} />
          <TextInput label="Query name" {...field('dns_query_name')} />
        </Group>
      )}
      {type === 'smtp' && <TextInput label="HELO name" description="Empty: keepalived's default" {...field('smtp_helo_name')} />}
      {type === 'udp' && (
        <Group grow align="flex-end">
          <TextInput label="Payload (hex)" description="Empty: an empty datagram" {...field('udp_payload')} />
          <Checkbox label="Require a reply" {...form.getInputProps(`${path}.udp_require_reply`, { type: 'checkbox' })} />
        </Group>
      )}
    </>
  );
}

export function getAt(values: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], values);
}
