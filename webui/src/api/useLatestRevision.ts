import { useQuery } from '@tanstack/react-query';
import { revisionsQuery } from './queries/revisions';

/** The newest revision (the list is newest first). */
export function useLatestRevision() {
  const revisions = useQuery(revisionsQuery());
  return revisions.data?.data[0];
}
