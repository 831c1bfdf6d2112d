import { Alert, Button, Group } from '@mantine/core';

/** The end of an editing form: what the API refused (not at a field), Cancel, and the submit button. */
export function FormFooter({ error, errorTitle, saving, saveLabel, onCancel }: { error: string | null; errorTitle?: string; saving: boolean; saveLabel: string; onCancel: () => void }) {
  return (
    <>
      {error && (
        <Alert color="red" title={errorTitle} style={{ whiteSpace: 'pre-line' }}>
          {error}
        </Alert>
      )}
      <Group justify="flex-end">
        <Button variant="default" onClick={onCancel}>
          Cancel
        </Button>
        <Button type="submit" loading={saving}>
          {saveLabel}
        </Button>
      </Group>
    </>
  );
}
