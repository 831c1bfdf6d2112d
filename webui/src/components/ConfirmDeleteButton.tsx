import { ActionIcon, Text } from '@mantine/core';
import { modals } from '@mantine/modals';
import { IconTrash } from '@tabler/icons-react';

/** A red trash icon that asks before it deletes: the title names the thing, the text says what follows. */
export function ConfirmDeleteButton({ title, consequence, confirmLabel, onConfirm }: {
  title: string;
  consequence: string;
  confirmLabel: string;
  onConfirm: () => void;
}) {
  return (
    <ActionIcon
      variant="subtle"
      color="red"
      aria-label={title.replace(/\?$/, '')}
      onClick={() =>
        modals.openConfirmModal({
          title,
          children: <Text size="sm">{consequence}</Text>,
          labels: { confirm: confirmLabel, cancel: 'Cancel' },
          confirmProps: { color: 'red' },
          onConfirm,
        })
      }
    >
      <IconTrash size={16} />
    </ActionIcon>
  );
}
