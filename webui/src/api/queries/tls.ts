import { queryOptions, type QueryClient } from '@tanstack/react-query';
import { tlsCreateCsr, tlsGetCertificate, tlsGetCsr, tlsPutCertificate } from '../../client/sdk.gen';
import type { CertificateUpload, CsrRead, CsrRequest, ServedCertificate } from '../../client/types.gen';

/** The certificate this node serves (null: plain HTTP) and its pending signing request: node-local. */
const tlsKeys = { certificate: ['tls', 'certificate'] as const, csr: ['tls', 'csr'] as const };

export const certificateQuery = () =>
  queryOptions({ queryKey: tlsKeys.certificate, queryFn: async ({ signal }) => (await tlsGetCertificate({ signal })).data ?? null });

export const csrQuery = () =>
  queryOptions({ queryKey: tlsKeys.csr, queryFn: async ({ signal }) => (await tlsGetCsr({ signal })).data ?? null });

export const putCertificateMutation = (queryClient: QueryClient) => ({
  mutationFn: async (body: CertificateUpload) => (await tlsPutCertificate({ body })).data,
  onSuccess: (served: ServedCertificate) => {
    queryClient.setQueryData(tlsKeys.certificate, served);
    // A certificate signed for the pending request used its key: the request is gone.
    void queryClient.invalidateQueries({ queryKey: tlsKeys.csr });
  },
});

export const createCsrMutation = (queryClient: QueryClient) => ({
  mutationFn: async (body: CsrRequest) => (await tlsCreateCsr({ body })).data,
  onSuccess: (csr: CsrRead) => queryClient.setQueryData(tlsKeys.csr, csr),
});
