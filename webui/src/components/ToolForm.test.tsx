import { MantineProvider, TextInput } from '@mantine/core';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { ApiError } from '../api/errors';
import { ToolForm } from './ToolForm';

function renderTool(mutationFn: (values: { host: string }) => Promise<string>) {
  return render(
    <QueryClientProvider client={new QueryClient({ defaultOptions: { mutations: { retry: false } } })}>
      <MantineProvider>
        <ToolForm
          title="Lookup"
          mutation={{ mutationFn }}
          initialValues={{ host: 'example.com' }}
          fields={(form) => <TextInput label="Host" {...form.getInputProps('host')} />}
          submitLabel="Look up"
          result={(answer) => <p>answer: {answer}</p>}
        >
          <p>What the tool does.</p>
        </ToolForm>
      </MantineProvider>
    </QueryClientProvider>,
  );
}

describe('ToolForm', () => {
  it('runs the tool with the form values and shows the answer in its card', async () => {
    const mutationFn = vi.fn(({ host }: { host: string }) => Promise.resolve(`resolved ${host}`));
    renderTool(mutationFn);
    const card = screen.getByRole('region', { name: 'Lookup' });
    expect(card).toHaveTextContent('What the tool does.');
    await userEvent.clear(screen.getByLabelText('Host'));
    await userEvent.type(screen.getByLabelText('Host'), 'backend1');
    await userEvent.click(screen.getByRole('button', { name: 'Look up' }));
    expect(await screen.findByText('answer: resolved backend1')).toBeInTheDocument();
    expect(mutationFn.mock.calls[0][0]).toEqual({ host: 'backend1' });
  });

  it('shows a 422 at the field it names, and any other refusal under the form', async () => {
    const refusal = new ApiError(422, { detail: [{ loc: ['body', 'host'], msg: "Value error, a host must not start with '-'", type: 'value_error' }] });
    const { unmount } = renderTool(() => Promise.reject(refusal));
    await userEvent.click(screen.getByRole('button', { name: 'Look up' }));
    expect(await screen.findByText("a host must not start with '-'")).toBeInTheDocument();
    expect(screen.getByLabelText('Host')).toHaveAttribute('aria-invalid', 'true');
    unmount();

    renderTool(() => Promise.reject(new ApiError(503, { detail: 'the tool is not installed' })));
    await userEvent.click(screen.getByRole('button', { name: 'Look up' }));
    expect(await screen.findByRole('alert')).toHaveTextContent('the tool is not installed');
  });
});
