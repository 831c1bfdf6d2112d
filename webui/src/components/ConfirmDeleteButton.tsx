import { ActionIcon } from '@mantine/core';
import { IconTrash } from '@tabler/icons-react';
import { askToConfirm, type Confirmation } from './ConfirmButton';

/** A red trash icon that asks before it deletes: the title names the thing, the text says what follows. */
export function ConfirmDeleteButton(confirmation: Confirmation) {
  return (
    <ActionIcon variant="subtle" color="red" aria-label={confirmation.title.replace(/\?$/, '')} onClick={() => askToConfirm(confirmation, 'red')}>
      <IconTrash size={16} />
    </ActionIcon>
  );
}
