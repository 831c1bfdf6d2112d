import { useQuery } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { ApiError } from '../api/errors';
import { meQuery } from '../api/queries/auth';
import { PageLoader } from '../components/PageLoader';
import { LoginPage } from '../pages/LoginPage';

/** Shows the login (or first-run setup) page until there is a session. */
export function AuthGate({ children }: { children: ReactNode }) {
  const me = useQuery(meQuery());
  if (me.isPending) return <PageLoader />;
  if (me.data) return <>{children}</>;
  const expired = me.error instanceof ApiError && me.error.status === 401;
  return <LoginPage networkError={me.error && !expired ? me.error : null} />;
}
