import { Alert, Button, Card, Group, Stack, Title } from '@mantine/core';
import { useForm, type UseFormReturnType } from '@mantine/form';
import { useMutation } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { useServerErrors } from './useServerErrors';

interface ToolFormProps<Values extends Record<string, unknown>, Result> {
  /** The card's heading, and its accessible name (a region). */
  title: string;
  /** The tool's API call: the form's values are its request body. */
  mutation: { mutationFn: (values: Values) => Promise<Result> };
  initialValues: NoInfer<Values>;
  fields: (form: UseFormReturnType<Values>) => ReactNode;
  submitLabel: string;
  /** How the last run's answer reads. */
  result: (result: Result) => ReactNode;
  /** A note above the form. */
  children?: ReactNode;
}

/**
 * One tool in a card: its argument fields and a submit button in a row, the API's refusal at the
 * field it names (or under the form), then the answer of the last run.
 */
export function ToolForm<Values extends Record<string, unknown>, Result>({
  title,
  mutation,
  initialValues,
  fields,
  submitLabel,
  result,
  children,
}: ToolFormProps<Values, Result>) {
  const run = useMutation(mutation);
  const form = useForm<Values>({ initialValues });
  const formError = useServerErrors(form, run.error);
  return (
    <Card withBorder aria-label={title} component="section">
      <Stack gap="xs">
        <Title order={4}>{title}</Title>
        {children}
        <form onSubmit={form.onSubmit((values) => run.mutate(values))}>
          <Group align="end">
            {fields(form)}
            <Button type="submit" loading={run.isPending}>
              {submitLabel}
            </Button>
          </Group>
        </form>
        {formError && <Alert color="red">{formError}</Alert>}
        {run.data !== undefined && result(run.data)}
      </Stack>
    </Card>
  );
}
