/** Errors from the API, in one shape the UI can show: a status, a message, and field errors. */

export type ValidationIssue = { loc: (string | number)[]; msg: string; type?: string };

export class ApiError extends Error {
  readonly status: number;
  /** 422 validation issues, when the API sent FastAPI's `detail: [{loc, msg}]` list. */
  readonly issues: ValidationIssue[];
  /** A machine-readable reason some errors carry, e.g. "standby_read_only". */
  readonly code: string | null;
  /** With standby_read_only: where the active node's API is. */
  readonly activeUrl: string | null;

  constructor(status: number, body: unknown) {
    const fields = (body ?? {}) as { detail?: unknown; code?: unknown; active_url?: unknown };
    const detail = fields.detail;
    const issues = Array.isArray(detail) ? (detail as ValidationIssue[]) : [];
    super(typeof detail === 'string' ? detail : issues.length ? issues.map(cleanMessage).join('; ') : `HTTP ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.issues = issues;
    this.code = typeof fields.code === 'string' ? fields.code : null;
    this.activeUrl = typeof fields.active_url === 'string' ? fields.active_url : null;
  }
}

/** A paired standby refuses changes to the shared configuration, and says where to make them. */
export function isStandbyRefusal(error: unknown): error is ApiError {
  return error instanceof ApiError && error.status === 409 && error.code === 'standby_read_only';
}

/** Pydantic prefixes model-validator messages with "Value error, "; operators need only the rest. */
function cleanMessage(issue: ValidationIssue): string {
  return issue.msg.replace(/^Value error, /, '');
}

// Cross-field rules in the API name their field at the start of the message: "quorum: 5 exceeds…",
// "backends[1].address: backend … is listed twice", "services[0].name: …".
const NAMED_FIELD = /^([a-z_]+(?:\[\d+\])?(?:\.[a-z_]+(?:\[\d+\])?)*): (.+)$/s;

/**
 * Map 422 issues onto form field paths ("backends.0.port"), so each message shows next to its
 * field. With `isField`, issues for a path the form does not show land under "" (shown above
 * the form) with their whole message.
 */
export function fieldErrors(issues: ValidationIssue[], isField?: (path: string) => boolean): Record<string, string> {
  const errors: Record<string, string> = {};
  for (const issue of issues) {
    const message = cleanMessage(issue);
    let path = issue.loc.slice(issue.loc[0] === 'body' ? 1 : 0).join('.');
    let text = message;
    const named = NAMED_FIELD.exec(message);
    if (named) {
      // A model-level rule: its message names the field, relative to loc.
      const inner = named[1].replace(/\[(\d+)\]/g, '.$1');
      path = joinPath(path, inner);
      text = named[2];
    }
    if (isField && !isField(path)) [path, text] = ['', message];
    errors[path] = errors[path] ? `${errors[path]}; ${text}` : text;
  }
  return errors;
}

function joinPath(outer: string, inner: string): string {
  if (!outer || inner === outer || inner.startsWith(`${outer}.`)) return inner;
  if (outer === inner || outer.endsWith(`.${inner}`)) return outer;
  return `${outer}.${inner}`;
}

/** One line for a notification or an alert. */
export function errorMessage(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  if (error instanceof Error) return error.message;
  return String(error);
}
