import { Button, FileButton, Group, Stack, Textarea } from '@mantine/core';

const mono = { input: { fontFamily: 'var(--mantine-font-family-monospace)' } };

/** A PEM text area that can also be filled from a file. */
export function PemField({ label, description, value, onLoad, inputProps }: { label: string; description: string; value: string; onLoad: (text: string) => void; inputProps: object }) {
  return (
    <Stack gap={4}>
      <Textarea label={label} description={description} autosize minRows={4} maxRows={14} styles={mono} value={value} {...inputProps} />
      <Group>
        <FileButton onChange={(file) => void file?.text().then(onLoad)}>
          {(props) => <Button variant="default" size="xs" {...props}>{`Load ${label.toLowerCase()} from a file…`}</Button>}
        </FileButton>
      </Group>
    </Stack>
  );
}
