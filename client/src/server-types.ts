// What the client takes from the service, and the one place that names the service's files. In the
// repository (tests, typecheck) these are the server's own types; `npm run build:client` writes them out
// without the server (scripts/build.ts): context-free procedures, the error shape and the codes.
import type { inferRouterError } from '@trpc/server';
import type { AppRouter as ServiceRouter } from '../../routers/index.js';

export type { ApiIssue, ErrorCode } from '../../server/platform/errors.js';

/** The router as the client sees it: every procedure's path, kind, input and output. */
export type AppRouter = ServiceRouter;

/** `error` of a `/trpc` error answer (the server's error formatter). */
export type ErrorShape = inferRouterError<ServiceRouter>;
