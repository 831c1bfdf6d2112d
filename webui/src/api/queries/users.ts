import { queryOptions, type QueryClient } from '@tanstack/react-query';
import {
  tokensCreateToken,
  tokensDeleteToken,
  tokensListTokens,
  usersCreateUser,
  usersDeleteUser,
  usersListUsers,
  usersUnlockUser,
  usersUpdateUser,
} from '../../client/sdk.gen';
import type { TokenCreate, UserCreate, UserUpdate } from '../../client/types.gen';

export const userKeys = { list: ['users'] as const, tokens: ['tokens'] as const };

export const usersQuery = () =>
  queryOptions({ queryKey: userKeys.list, queryFn: async ({ signal }) => (await usersListUsers({ signal })).data });

export const createUserMutation = (queryClient: QueryClient) => ({
  mutationFn: async (body: UserCreate) => (await usersCreateUser({ body })).data,
  onSuccess: () => queryClient.invalidateQueries({ queryKey: userKeys.list }),
});

export type UserChange = { userId: number; change: UserUpdate };

export const updateUserMutation = (queryClient: QueryClient) => ({
  mutationFn: async ({ userId, change }: UserChange) => (await usersUpdateUser({ path: { user_id: userId }, body: change })).data,
  onSuccess: () => queryClient.invalidateQueries({ queryKey: userKeys.list }),
});

/** Forget an account's failed logins, so that its owner can sign in again at once. */
export const unlockUserMutation = (queryClient: QueryClient) => ({
  mutationFn: async (userId: number) => (await usersUnlockUser({ path: { user_id: userId } })).data,
  onSuccess: () => queryClient.invalidateQueries({ queryKey: userKeys.list }),
});

export const deleteUserMutation = (queryClient: QueryClient) => ({
  mutationFn: async (userId: number) => {
    await usersDeleteUser({ path: { user_id: userId } });
  },
  onSuccess: () => queryClient.invalidateQueries({ queryKey: userKeys.list }),
});

/** Tokens are always the caller's own. */
export const tokensQuery = () =>
  queryOptions({ queryKey: userKeys.tokens, queryFn: async ({ signal }) => (await tokensListTokens({ signal })).data });

export const createTokenMutation = (queryClient: QueryClient) => ({
  mutationFn: async (body: TokenCreate) => (await tokensCreateToken({ body })).data,
  onSuccess: () => queryClient.invalidateQueries({ queryKey: userKeys.tokens }),
});

export const deleteTokenMutation = (queryClient: QueryClient) => ({
  mutationFn: async (tokenId: number) => {
    await tokensDeleteToken({ path: { token_id: tokenId } });
  },
  onSuccess: () => queryClient.invalidateQueries({ queryKey: userKeys.tokens }),
});
