import type { UseFormReturnType } from '@mantine/form';
import { useEffect, useState } from 'react';
import { ApiError, errorMessage, fieldErrors } from '../api/errors';

/**
 * Show an API error on a form: 422 issues at their fields (by dotted path), everything else
 * (and issues for fields the form does not show) as one form-level message, returned.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function useServerErrors(form: UseFormReturnType<any>, error: unknown, mapPath: (path: string) => string = (p) => p): string | null {
  const [formError, setFormError] = useState<string | null>(null);
  useEffect(() => {
    if (!error) {
      setFormError(null);
      return;
    }
    if (error instanceof ApiError && error.issues.length) {
      const errors = fieldErrors(error.issues);
      const shown: Record<string, string> = {};
      const unshown: string[] = [];
      for (const [path, message] of Object.entries(errors)) {
        const field = mapPath(path);
        if (field && hasField(form.getValues(), field)) shown[field] = message;
        else unshown.push(path ? `${path}: ${message}` : message);
      }
      form.setErrors(shown);
      setFormError(unshown.length ? unshown.join('\n') : null);
    } else {
      setFormError(errorMessage(error));
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps -- react to a new error only
  }, [error]);
  return formError;
}

function hasField(values: unknown, path: string): boolean {
  let node: unknown = values;
  for (const part of path.split('.')) {
    if (node === null || typeof node !== 'object' || !(part in node)) return false;
    node = (node as Record<string, unknown>)[part];
  }
  return true;
}
