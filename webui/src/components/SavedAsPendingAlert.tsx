import { Alert } from '@mantine/core';

/** After a node-local document (network, BGP) is saved: nothing runs differently until a commit. */
export function SavedAsPendingAlert({ what, onClose }: { what: string; onClose: () => void }) {
  return (
    <Alert color="green" title="Saved as a pending change" withCloseButton onClose={onClose}>
      Nothing on {what} changes until it is applied: review the plan with “Review & apply” in the pending changes below.
    </Alert>
  );
}
