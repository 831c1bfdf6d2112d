import { queryOptions, type QueryClient } from '@tanstack/react-query';
import {
  backendsAddBackend,
  backendsDeleteBackend,
  backendsUpdateBackend,
  servicesCreateService,
  servicesDeleteService,
  servicesGetService,
  servicesListServices,
  servicesUpdateService,
} from '../../client/sdk.gen';
import type { BackendCreate, BackendUpdate, ServiceCreate, ServiceUpdate } from '../../client/types.gen';
import { invalidatePending } from './candidate';

export const serviceKeys = {
  all: ['services'] as const,
  list: () => ['services', 'list'] as const,
  detail: (id: number) => ['services', 'detail', id] as const,
};

export const servicesQuery = () =>
  queryOptions({
    queryKey: serviceKeys.list(),
    queryFn: async ({ signal }) => (await servicesListServices({ signal })).data,
  });

export const serviceQuery = (id: number) =>
  queryOptions({
    queryKey: serviceKeys.detail(id),
    queryFn: async ({ signal }) => (await servicesGetService({ path: { service_id: id }, signal })).data,
  });

/** A service edit changes the list, that service, and what is pending. */
function afterServiceEdit(queryClient: QueryClient, id?: number) {
  return Promise.all([
    queryClient.invalidateQueries({ queryKey: serviceKeys.list() }),
    id === undefined ? undefined : queryClient.invalidateQueries({ queryKey: serviceKeys.detail(id) }),
    invalidatePending(queryClient),
  ]);
}

export const createServiceMutation = (queryClient: QueryClient) => ({
  mutationFn: async (body: ServiceCreate) => (await servicesCreateService({ body })).data,
  onSuccess: () => afterServiceEdit(queryClient),
});

export const updateServiceMutation = (queryClient: QueryClient, id: number) => ({
  mutationFn: async (body: ServiceUpdate) => (await servicesUpdateService({ path: { service_id: id }, body })).data,
  onSuccess: () => afterServiceEdit(queryClient, id),
});

export const deleteServiceMutation = (queryClient: QueryClient) => ({
  mutationFn: async (id: number) => {
    await servicesDeleteService({ path: { service_id: id } });
  },
  onSuccess: (_: void, id: number) => {
    queryClient.removeQueries({ queryKey: serviceKeys.detail(id) });
    return afterServiceEdit(queryClient);
  },
});

// Backends are part of a service's read model, so a backend edit refreshes its service.

export const addBackendMutation = (queryClient: QueryClient, serviceId: number) => ({
  mutationFn: async (body: BackendCreate) => (await backendsAddBackend({ path: { service_id: serviceId }, body })).data,
  onSuccess: () => afterServiceEdit(queryClient, serviceId),
});

export type BackendChange = { backendId: number; change: BackendUpdate };

export const updateBackendMutation = (queryClient: QueryClient, serviceId: number) => ({
  mutationFn: async ({ backendId, change }: BackendChange) =>
    (await backendsUpdateBackend({ path: { service_id: serviceId, backend_id: backendId }, body: change })).data,
  onSuccess: () => afterServiceEdit(queryClient, serviceId),
});

export const deleteBackendMutation = (queryClient: QueryClient, serviceId: number) => ({
  mutationFn: async (backendId: number) => {
    await backendsDeleteBackend({ path: { service_id: serviceId, backend_id: backendId } });
  },
  onSuccess: () => afterServiceEdit(queryClient, serviceId),
});
