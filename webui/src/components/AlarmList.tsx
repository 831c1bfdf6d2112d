import { Alert, Anchor, Stack } from '@mantine/core';
import { IconAlertOctagon, IconAlertTriangle, IconCircleCheck } from '@tabler/icons-react';
import { Link } from 'react-router';
import type { Alarm } from '../lib/alarms';

/** `checking`: status not known yet, so do not claim that all is well. */
export function AlarmList({ alarms, checking }: { alarms: Alarm[]; checking: boolean }) {
  if (!alarms.length && checking) return null;
  if (!alarms.length) {
    return (
      <Alert color="green" icon={<IconCircleCheck />} title="No alarms">
        Every backend that should be up is up, and the running configuration is the newest revision.
      </Alert>
    );
  }
  return (
    <Stack gap="xs" aria-label="Alarms">
      {alarms.map((alarm) => (
        <Alert
          key={alarm.id}
          color={alarm.severity === 'critical' ? 'red' : 'yellow'}
          variant={alarm.severity === 'critical' ? 'filled' : 'light'}
          icon={alarm.severity === 'critical' ? <IconAlertOctagon /> : <IconAlertTriangle />}
          title={alarm.title}
          data-severity={alarm.severity}
        >
          {alarm.message}{' '}
          {alarm.link && (
            <Anchor component={Link} to={alarm.link} c="inherit" underline="always">
              Open
            </Anchor>
          )}
        </Alert>
      ))}
    </Stack>
  );
}
