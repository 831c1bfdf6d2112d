import { Button, FileButton, Group, Stack, Textarea } from '@mantine/core';

const mono = { input: { fontFamily: 'var(--mantine-font-family-monospace)' } };

/** A PEM text area that can also be filled from a file; `noun` names the file's content on its button. */
export function PemField({ label, noun = label.toLowerCase(), description, value, onLoad, inputProps }: {
  label: string;
  noun?: string;
  description: string;
  value: string;
  onLoad: (text: string) => void;
  inputProps: object;
}) {
  return (
    <Stack gap={4}>
      <Textarea label={label} description={description} autosize minRows={4} maxRows={14} styles={mono} value={value} {...inputProps} />
      <Group>
        <FileButton onChange={(file) => void file?.text().then(onLoad)}>
          {(props) => <Button variant="default" size="xs" {...props}>{`Load ${noun} from a file…`}</Button>}
        </FileButton>
      </Group>
    </Stack>
  );
}
