import { keepPreviousData, queryOptions } from '@tanstack/react-query';
import {
  diagnosticsCapture,
  diagnosticsConnections,
  diagnosticsHttpGet,
  diagnosticsInterfaces,
  diagnosticsNeighbours,
  diagnosticsPing,
  diagnosticsTcpConnect,
  diagnosticsTraceroute,
} from '../../client/sdk.gen';
import type { CaptureRequest, HttpGetRequest, PingRequest, TcpConnectRequest, TracerouteRequest } from '../../client/types.gen';

/** System → Diagnostics: tools run from this node, read-only tables, capture and support bundle. */
const diagnosticsKeys = {
  interfaces: ['diagnostics', 'interfaces'] as const,
  neighbours: ['diagnostics', 'neighbours'] as const,
  connections: (filters: ConnectionFilters) => ['diagnostics', 'connections', filters] as const,
};

export type ConnectionFilters = { service?: string; backend?: string; client?: string; state?: string; offset: number; limit: number };

export const interfacesQuery = () =>
  queryOptions({ queryKey: diagnosticsKeys.interfaces, queryFn: async ({ signal }) => (await diagnosticsInterfaces({ signal })).data });

export const neighboursQuery = () =>
  queryOptions({ queryKey: diagnosticsKeys.neighbours, queryFn: async ({ signal }) => (await diagnosticsNeighbours({ signal })).data });

export const connectionsQuery = (filters: ConnectionFilters) =>
  queryOptions({
    queryKey: diagnosticsKeys.connections(filters),
    queryFn: async ({ signal }) => (await diagnosticsConnections({ signal, query: filters })).data,
    placeholderData: keepPreviousData,
  });

export const pingMutation = () => ({ mutationFn: async (body: PingRequest) => (await diagnosticsPing({ body })).data });

export const tracerouteMutation = () => ({ mutationFn: async (body: TracerouteRequest) => (await diagnosticsTraceroute({ body })).data });

export const tcpConnectMutation = () => ({ mutationFn: async (body: TcpConnectRequest) => (await diagnosticsTcpConnect({ body })).data });

export const httpGetMutation = () => ({ mutationFn: async (body: HttpGetRequest) => (await diagnosticsHttpGet({ body })).data });

/** A capture answers with the pcap itself: saved as a file by the browser. */
export const captureMutation = () => ({
  mutationFn: async (body: CaptureRequest) => {
    const { data } = await diagnosticsCapture({ body, parseAs: 'blob' });
    const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, 'Z');
    saveBlob(data, `fulcrum-${body.interface}-${stamp}.pcap`);
    return data.size;
  },
});

/** The support bundle is a plain download (GET, the session cookie authenticates it). */
export const SUPPORT_BUNDLE_URL = '/api/v1/diagnostics/support-bundle';

function saveBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
