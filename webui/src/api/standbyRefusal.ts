/**
 * The newest "this node is standby" refusal (409 standby_read_only) from any edit, kept so one
 * banner can say where to make the change instead of each form showing a generic error.
 */
import { useSyncExternalStore } from 'react';
import { isStandbyRefusal, type ApiError } from './errors';

let current: ApiError | null = null;
const listeners = new Set<() => void>();

function set(value: ApiError | null) {
  if (value === current) return;
  current = value;
  listeners.forEach((listener) => listener());
}

/** For the mutation cache: remember a refusal; any later successful edit clears it. */
export const standbyRefusals = {
  onError: (error: unknown) => {
    if (isStandbyRefusal(error)) set(error);
  },
  onSuccess: () => set(null),
  dismiss: () => set(null),
  get: () => current,
};

export function useStandbyRefusal(): ApiError | null {
  return useSyncExternalStore(
    (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    () => current,
  );
}
