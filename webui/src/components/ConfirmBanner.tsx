import { Alert, Button, Group, Text } from '@mantine/core';
import { useInterval } from '@mantine/hooks';
import { notifications } from '@mantine/notifications';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { errorMessage } from '../api/errors';
import { confirmMutation, revisionQuery } from '../api/queries/revisions';
import { statusQuery } from '../api/queries/status';
import { useCan } from '../auth/useCurrentUser';

/** A commit-confirmed revision: a countdown to its automatic rollback, and the Confirm button. */
export function ConfirmBanner() {
  const status = useQuery(statusQuery());
  const number = status.data?.awaiting_confirm ?? null;
  if (number === null) return null;
  return <Countdown number={number} />;
}

function Countdown({ number }: { number: number }) {
  const queryClient = useQueryClient();
  const revision = useQuery({ ...revisionQuery(number), staleTime: 0 });
  const confirm = useMutation(confirmMutation(queryClient));
  const canConfirm = useCan('commit');
  const [now, setNow] = useState(Date.now());
  const ticker = useInterval(() => setNow(Date.now()), 1000);
  useEffect(() => {
    ticker.start();
    return ticker.stop;
  }, [ticker]);

  const deadline = revision.data?.confirm_deadline ? Date.parse(revision.data.confirm_deadline) : null;
  const left = deadline === null ? null : Math.max(0, Math.round((deadline - now) / 1000));
  return (
    <Alert color="yellow" variant="filled" mb="md" title={`Revision ${number} is on probation`} role="alert">
      <Group justify="space-between" wrap="wrap">
        <Text size="sm">
          It rolls back automatically in <b className="num" data-testid="confirm-countdown">{left === null ? '…' : `${left} s`}</b> unless you
          confirm that everything still works.
        </Text>
        {canConfirm && (
          <Button
            color="dark"
            loading={confirm.isPending}
            onClick={() =>
              confirm.mutate(number, {
                onSuccess: () => notifications.show({ color: 'green', message: `Revision ${number} confirmed: it stays.` }),
                onError: (error) => notifications.show({ color: 'red', message: errorMessage(error) }),
              })
            }
          >
            Confirm revision {number}
          </Button>
        )}
      </Group>
    </Alert>
  );
}
