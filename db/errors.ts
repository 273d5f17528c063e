// Recognising database errors that are answers, not bugs.

/** A unique constraint (or unique index) named `constraint` refused the write: Postgres error 23505. */
export function isUniqueViolation(err: unknown, constraint: string): boolean {
  const e = err as { code?: unknown; constraint?: unknown; message?: unknown } | null;
  return e?.code === '23505' && `${String(e.constraint ?? '')} ${String(e.message ?? '')}`.includes(constraint);
}
