import { useForm } from '@mantine/form';
import { renderHook, waitFor } from '@testing-library/react';
import { ApiError } from '../api/errors';
import { useServerErrors } from './useServerErrors';

// Bodies exactly as the API answers them (captured from PUT /api/v1/firewall and POST /auth/password).
const firewall422 = new ApiError(422, {
  detail: [
    { loc: ['body', 'management_ports', 1], msg: 'Input should be less than or equal to 65535', type: 'less_than_equal' },
    { loc: ['body', 'management_allow', 1], msg: 'Value error, 10.0.0.1/8 has host bits set', type: 'value_error' },
  ],
});
const wrongPassword = new ApiError(422, {
  detail: [{ loc: ['body', 'current_password'], msg: 'the current password is wrong', type: 'value_error' }],
});

function setup<T extends Record<string, unknown>>(values: T, error: unknown, mapPath?: (p: string) => string) {
  return renderHook(() => {
    const form = useForm({ initialValues: values });
    const formError = useServerErrors(form, error, mapPath);
    return { form, formError };
  });
}

describe('useServerErrors', () => {
  it('puts each firewall 422 at its row, and a port list error at the ports field', async () => {
    const { result } = setup(
      { management_ports: '22, 70000', management_allow: ['192.0.2.0/24', '10.0.0.1/8'] },
      firewall422,
      (p) => p.replace(/^management_ports\.\d+$/, 'management_ports'),
    );
    await waitFor(() => expect(result.current.form.errors['management_allow.1']).toBe('10.0.0.1/8 has host bits set'));
    expect(result.current.form.errors.management_ports).toBe('Input should be less than or equal to 65535');
    expect(result.current.formError).toBeNull();
  });

  it('shows a wrong current password at that field, not as a sign-out', async () => {
    const { result } = setup({ current_password: 'x', new_password: 'a long new passphrase', repeat: '' }, wrongPassword);
    await waitFor(() => expect(result.current.form.errors.current_password).toBe('the current password is wrong'));
    expect(result.current.formError).toBeNull();
  });

  it('keeps an issue for a field the form lacks above the form, with its path', async () => {
    const { result } = setup({ management_ports: '' }, firewall422);
    await waitFor(() => expect(result.current.formError).toBe('management_ports.1: Input should be less than or equal to 65535\nmanagement_allow.1: 10.0.0.1/8 has host bits set'));
  });

  it('shows a non-422 error as one message', async () => {
    const { result } = setup({ name: '' }, new ApiError(403, { detail: 'this is the last active admin; create another admin first' }));
    await waitFor(() => expect(result.current.formError).toBe('this is the last active admin; create another admin first'));
  });
});
