import { Alert, List, Text } from '@mantine/core';
import type { RevisionRead } from '../client/types.gen';

/** What a commit really did, said plainly: "validated" is not "applied". */
export function RevisionOutcome({ revision }: { revision: RevisionRead }) {
  const result = revision.apply_result as { message?: string; warnings?: string[] };
  const warnings = result.warnings ?? [];
  const body = (
    <>
      {result.message && <Text size="sm">{result.message}</Text>}
      {warnings.length > 0 && (
        <List size="sm" mt="xs">
          {warnings.map((w) => (
            <List.Item key={w}>{w}</List.Item>
          ))}
        </List>
      )}
    </>
  );
  switch (revision.state) {
    case 'applied':
      return <Alert color="green" title={`Revision ${revision.number} is running`}>{body}</Alert>;
    case 'awaiting_confirm':
      return (
        <Alert color="yellow" title={`Revision ${revision.number} applied on probation`}>
          {body}
          <Text size="sm" mt="xs">Confirm it in the banner at the top, or it rolls back by itself.</Text>
        </Alert>
      );
    case 'validated':
      return (
        <Alert color="yellow" title={`Revision ${revision.number} validated, not applied`}>
          {body}
        </Alert>
      );
    default:
      return <Alert color="red" title={`Revision ${revision.number} ${revision.state}`}>{body}</Alert>;
  }
}
