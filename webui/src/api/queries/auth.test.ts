import { QueryClient } from '@tanstack/react-query';
import { authKeys, loginMutation, logoutMutation } from './auth';
import { serviceKeys } from './services';

const user = { id: 1, username: 'admin', role: 'admin' as const, disabled: false, created_at: '2026-01-01T00:00:00Z' };

describe('session mutations', () => {
  it('seed the user on login and drop the previous session’s data', () => {
    const queryClient = new QueryClient();
    queryClient.setQueryData(serviceKeys.list(), { data: [], count: 0 });
    loginMutation(queryClient).onSuccess({ token: 't', expires_at: '2026-01-02T00:00:00Z', user });
    expect(queryClient.getQueryData(authKeys.me)).toEqual(user);
    expect(queryClient.getQueryData(authKeys.setup)).toEqual({ needs_setup: false });
    expect(queryClient.getQueryData(serviceKeys.list())).toBeUndefined();
  });

  it('forget the user on logout', () => {
    const queryClient = new QueryClient();
    queryClient.setQueryData(authKeys.me, user);
    logoutMutation(queryClient).onSettled();
    expect(queryClient.getQueryData(authKeys.me)).toBeNull();
  });
});
