import { Modal, Stack } from '@mantine/core';
import { useForm } from '@mantine/form';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { addBackendMutation, updateBackendMutation } from '../api/queries/services';
import type { BackendRead } from '../client/types.gen';
import { FormFooter } from '../components/FormFooter';
import { useServerErrors } from '../components/useServerErrors';
import { ipVersion } from '../lib/validation';
import { BackendFields } from './BackendFields';
import { backendFromRead, backendToRequest, defaultBackend, type BackendValues } from './serviceModel';
import { backendRules } from './serviceValidation';

type Props = { serviceId: number; serviceAddress: string; backend: BackendRead | null; onClose: () => void };

/** Add a backend (backend = null) or edit every field of one. */
export function BackendModal({ serviceId, serviceAddress, backend, onClose }: Props) {
  const queryClient = useQueryClient();
  const add = useMutation(addBackendMutation(queryClient, serviceId));
  const update = useMutation(updateBackendMutation(queryClient, serviceId));
  const mutation = backend ? update : add;
  const form = useForm<BackendValues>({
    initialValues: backend ? backendFromRead(backend) : defaultBackend(),
    validate: (values) =>
      Object.fromEntries(Object.entries(backendRules(values, ipVersion(serviceAddress))).filter((e): e is [string, string] => !!e[1])),
  });
  const formError = useServerErrors(form, mutation.error, (path) => path.replace(/^backends\.\d+\./, '').replace(/http_status_codes\.\d+$/, 'http_status_codes'));
  const submit = (values: BackendValues) => {
    const body = backendToRequest(values);
    if (backend) update.mutate({ backendId: backend.id, change: body }, { onSuccess: onClose });
    else add.mutate(body, { onSuccess: onClose });
  };
  return (
    <Modal opened onClose={onClose} title={backend ? `Edit backend ${backend.address}` : 'Add a backend'} size="lg">
      <form onSubmit={form.onSubmit(submit)} noValidate>
        <Stack>
          <BackendFields form={form} path="" />
          <FormFooter error={formError} saving={mutation.isPending} saveLabel={backend ? 'Save backend' : 'Add backend'} onCancel={onClose} />
        </Stack>
      </form>
    </Modal>
  );
}
