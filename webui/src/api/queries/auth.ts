import { queryOptions, type QueryClient } from '@tanstack/react-query';
import { authLogin, authLogout, authMe, authSetup, authSetupStatus, authChangePassword } from '../../client/sdk.gen';
import type { LoginRequest, LoginResponse, PasswordChange, SetupRequest } from '../../client/types.gen';

export const authKeys = {
  me: ['auth', 'me'] as const,
  setup: ['auth', 'setup'] as const,
};

export const meQuery = () =>
  queryOptions({
    queryKey: authKeys.me,
    queryFn: async ({ signal }) => (await authMe({ signal })).data,
    retry: false,
    staleTime: 60_000,
  });

export const setupStatusQuery = () =>
  queryOptions({
    queryKey: authKeys.setup,
    queryFn: async ({ signal }) => (await authSetupStatus({ signal })).data,
    staleTime: Infinity,
  });

/**
 * Drop everything cached for the previous session. (`clear()` would also detach the auth
 * gate's observer from the "me" query, so it would not see the new session.)
 */
function forgetOtherUsersData(queryClient: QueryClient) {
  queryClient.removeQueries({ predicate: (query) => query.queryKey[0] !== 'auth' });
}

/** After login or setup the session cookie is set; seed "me" so the app renders at once. */
function startSession(queryClient: QueryClient, response: LoginResponse) {
  forgetOtherUsersData(queryClient);
  queryClient.setQueryData(authKeys.me, response.user);
  queryClient.setQueryData(authKeys.setup, { needs_setup: false });
}

export const loginMutation = (queryClient: QueryClient) => ({
  mutationFn: async (body: LoginRequest) => (await authLogin({ body })).data,
  onSuccess: (response: LoginResponse) => startSession(queryClient, response),
});

export const setupMutation = (queryClient: QueryClient) => ({
  mutationFn: async (body: SetupRequest) => (await authSetup({ body })).data,
  onSuccess: (response: LoginResponse) => startSession(queryClient, response),
});

export const logoutMutation = (queryClient: QueryClient) => ({
  mutationFn: async () => {
    await authLogout();
  },
  onSettled: () => {
    forgetOtherUsersData(queryClient);
    queryClient.setQueryData(authKeys.me, null);
  },
});

/** The API revokes the user's other sessions and tokens; without keep_this_session this one too. */
export const changePasswordMutation = (queryClient: QueryClient) => ({
  mutationFn: async (body: PasswordChange) => {
    await authChangePassword({ body });
  },
  onSuccess: (_: void, body: PasswordChange) => {
    if (body.keep_this_session === false) {
      forgetOtherUsersData(queryClient);
      queryClient.setQueryData(authKeys.me, null);
    }
  },
});
