import { useQuery } from '@tanstack/react-query';
import { meQuery } from '../api/queries/auth';
import { can, type Permission } from './roles';

/** The logged-in user (the auth gate guarantees one inside the app). */
export function useCurrentUser() {
  const { data } = useQuery(meQuery());
  if (!data) throw new Error('useCurrentUser outside the authenticated app');
  return data;
}

export function useCan(permission: Permission): boolean {
  const { data } = useQuery(meQuery());
  return can(data?.role, permission);
}
