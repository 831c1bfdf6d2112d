import { Button, Text, type MantineColor } from '@mantine/core';
import { modals } from '@mantine/modals';
import type { ReactNode } from 'react';

export type Confirmation = { title: string; consequence: string; confirmLabel: string; onConfirm: () => void };

/** The question every confirm button asks: the title names the act, the text says what follows. */
export function askToConfirm({ title, consequence, confirmLabel, onConfirm }: Confirmation, color?: MantineColor) {
  modals.openConfirmModal({
    title,
    children: <Text size="sm">{consequence}</Text>,
    labels: { confirm: confirmLabel, cancel: 'Cancel' },
    confirmProps: { color },
    onConfirm,
  });
}

/** A button for an act with consequences (an install, a restart): it asks before it acts. */
export function ConfirmButton({ children, color, loading, disabled, ...confirmation }: Confirmation & {
  children: ReactNode;
  color?: MantineColor;
  loading?: boolean;
  disabled?: boolean;
}) {
  return (
    <Button color={color} loading={loading} disabled={disabled} onClick={() => askToConfirm(confirmation, color)}>
      {children}
    </Button>
  );
}
