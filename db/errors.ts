// Recognising database errors that are answers, not bugs.

/** A unique constraint (or unique index) named `constraint` refused the write: Postgres error 23505. */
export function isUniqueViolation(err: unknown, constraint: string): boolean {
  const e = err as { code?: unknown; constraint?: string; message?: string } | null;
  return e?.code === '23505' && `${e.constraint ?? ''} ${e.message ?? ''}`.includes(constraint);
}

/** Node's errors of a connection that could not be made or was lost. */
const CONNECTION_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
/** SQLSTATEs of a server that cannot take the work now: a connection exception (class 08), a server
 * shutting down, crashed or starting (57P01-57P03), too many connections (53300). */
const UNAVAILABLE_STATE = /^(08...|57P0[123]|53300)$/;
/** What `pg` says of a connection that ended, or of a pool that waited too long for one. */
const PG_CONNECTION_LOST =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;

/**
 * The database could not be reached, or went away during the statement (down, restarting, out of
 * connections): the same request may well succeed in a moment. An outage, not a bug of the request.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (typeof e?.code === 'string' && (CONNECTION_ERRORS.has(e.code) || UNAVAILABLE_STATE.test(e.code))) return true;
  return typeof e?.message === 'string' && PG_CONNECTION_LOST.test(e.message);
}
