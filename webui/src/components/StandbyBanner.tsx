import { Alert, Anchor, Text } from '@mantine/core';
import { IconArrowsExchange } from '@tabler/icons-react';
import { useQuery } from '@tanstack/react-query';
import { haStatusQuery } from '../api/queries/ha';
import { standbyRefusals, useStandbyRefusal } from '../api/standbyRefusal';
import { standbyNotice } from '../lib/ha';

/** On a paired standby or a cluster's member: where the shared configuration is edited (the API refuses it here). */
export function StandbyBanner() {
  const status = useQuery(haStatusQuery());
  const refusal = useStandbyRefusal();
  const notice = standbyNotice(status.data, refusal);
  if (!notice) return null;
  return (
    <Alert
      color="orange"
      mb="md"
      icon={<IconArrowsExchange />}
      title={notice.title}
      data-testid="standby-banner"
      withCloseButton={!!refusal}
      onClose={standbyRefusals.dismiss}
      closeButtonLabel="Dismiss"
    >
      <Text size="sm">{notice.message}</Text>
      <Text size="sm" mt={4}>
        {notice.activeUrl && (
          <>
            Open {notice.writerLabel ?? 'the active node'}:{' '}
            <Anchor href={notice.activeUrl} target="_blank" rel="noreferrer" fw={600}>
              {notice.activeUrl}
            </Anchor>
            . Its changes are copied here.{' '}
          </>
        )}
        This node’s own settings, maintenance and the HA actions still work on this node.
      </Text>
    </Alert>
  );
}
