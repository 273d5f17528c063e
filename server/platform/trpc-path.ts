// How a /trpc path names its procedures, read the same by every layer (limiter, logs, input checks).

/**
 * The procedures a /trpc path calls (`/trpc/a,b` -> ['a', 'b']), or undefined for any other path. Read as
 * written: the app has already refused /trpc paths that tRPC would read otherwise (server/platform/http.ts).
 */
export function trpcProcedures(path: string): string[] | undefined {
  return path.startsWith('/trpc/') ? path.slice(6).split(',') : undefined;
}
