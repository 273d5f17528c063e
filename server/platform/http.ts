// Express middleware of the HTTP surface: request ids, request logging, the REST and /trpc mounts of the
// app router, the 404 and the error handler. Every error body is written by errorBody() from errors.ts.
import crypto from 'node:crypto';
import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express';
import { createExpressMiddleware } from '@trpc/server/adapters/express';
import { TRPC_ERROR_CODES_BY_KEY } from '@trpc/server/rpc';
import { createOpenApiNodeHttpHandler } from 'trpc-to-openapi';
import { isPlainTrpcCall, trpcHttpHandler } from './trpc-http.js';
import type { AnyProcedure, AnyTRPCRouter } from '@trpc/server';
import { requestIdOfError } from './trpc.js';
import type { Meta } from './route-meta.js';
import { contextFactory, type AppDeps, type Context } from './context.js';
import { clientAddress } from './client-address.js';
import {
  AppError,
  errorBody,
  errorHeaders,
  httpError,
  toApiError,
  trpcErrorNumber,
  trpcErrorShape,
  type ApiError,
} from './errors.js';
import { looksSecret, safeUrl, type Logger } from './logger.js';
import { UnstorableText } from './unstorable-text.js';
import { notedErrorCode, noteRequest } from './monitoring.js';
import type { RouteTemplates } from './route-templates.js';

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The client's request id when it is short and plain (`[A-Za-z0-9._:-]`, at most 128 characters) and not
 * shaped like a secret (`wsk_...`, `rt_...`, `whsec_...`, `scim_...`, a JWT, a long random token): it is
 * echoed, logged and kept by monitoring, so a key sent there by mistake must not be.
 */
export function clientRequestId(incoming: string | undefined): string | undefined {
  return incoming && SAFE_REQUEST_ID.test(incoming) && !looksSecret(incoming) ? incoming : undefined;
}

/** X-Request-Id on every response: the client's value when it is safe, else a new UUID. */
export const requestId: RequestHandler = (req, res, next) => {
  req.id = clientRequestId(req.get('x-request-id')) ?? crypto.randomUUID();
  res.setHeader('X-Request-Id', req.id);
  next();
};

/** A `.` or `..` segment (a dot may be written `%2e`), or a backslash, which WHATWG URL reads as `/`. */
const DOT_SEGMENT_OR_BACKSLASH = /\\|(?:^|\/)(?:\.|%2e){1,2}(?:\/|$)/i;
/** What Express hands to the /trpc mount: it matches the prefix in any case. */
const TRPC_MOUNT = /^\/trpc(?:\/|$)/i;
/** A /trpc path read the same by every layer: the procedure names after `/trpc/`, nothing to decode. */
const PLAIN_TRPC_PATH = /^\/trpc(?:\/[^/%]*)?$/;

const DOUBLED_TRPC_SLASH = /^\/trpc\/{2,}/;

const isTrpcPath = (path: string) => TRPC_MOUNT.test(path);

/**
 * Refuses (400) a path that the layers of the app would read as different routes. trpc-to-openapi resolves
 * dot segments and backslashes (`/x/../auth/login` is /auth/login to it) while Express, the rate limiter
 * and monitoring read the path as written; tRPC takes only the last segment of a /trpc path and decodes it
 * before splitting it into procedures, while the limiter charges the names as written. No client sends
 * such paths, so refusing them, rather than normalising them, leaves one reading for everyone.
 */
export const refuseAmbiguousPath: RequestHandler = (req, _res, next) => {
  // A target that is neither a path nor an absolute URL (`GET *`): URL parsers downstream throw on it.
  if (!req.url.startsWith('/') && !URL.canParse(req.url))
    return next(new AppError('BAD_REQUEST', 'The request target must be a path.'));
  if (DOT_SEGMENT_OR_BACKSLASH.test(req.path))
    return next(new AppError('BAD_REQUEST', 'The URL path may not contain "." or ".." segments or backslashes.'));
  // A client configured with a trailing slash (`url: '.../trpc/'`) sends `/trpc//name`: tRPC reads the last
  // segment, and so will every layer once the slashes are one.
  if (DOUBLED_TRPC_SLASH.test(req.path)) req.url = req.url.replace(DOUBLED_TRPC_SLASH, '/trpc/');
  if (isTrpcPath(req.path) && !PLAIN_TRPC_PATH.test(req.path)) {
    return next(
      new AppError(
        'BAD_REQUEST',
        'A /trpc path is /trpc/ and the procedure names, comma-separated, without "/" or percent-escapes.',
      ),
    );
  }
  next();
};

/**
 * One log line per finished request: method, URL (secret-shaped path segments and secret query values
 * masked: safeUrl, logger.ts), its route template (the label of metrics and monitoring), status, the error
 * code of an error answer, duration, request id and client address (clientAddress: a parsed IP or none).
 * Headers and bodies are never logged. Costs nothing when the level is off.
 */
export function requestLogger(logger: Logger, routes: RouteTemplates): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    // Read now: mounted routers (/trpc) strip their prefix from req.url while they run.
    const path = req.path;
    res.once('finish', () => {
      const level = res.statusCode >= 500 ? 'error' : 'info';
      if (!logger.isLevelEnabled(level)) return;
      logger[level](
        {
          requestId: req.id,
          method: req.method,
          url: safeUrl(req.originalUrl),
          route: routes.labelRequest(req, path),
          status: res.statusCode,
          code: res.statusCode >= 400 ? (notedErrorCode(req) ?? null) : undefined,
          durationMs: Math.round((performance.now() - started) * 10) / 10,
          ip: clientAddress(req),
        },
        `${req.method} ${res.statusCode}`,
      );
    });
    next();
  };
}

function logIfServerError(logger: Logger, api: ApiError, err: unknown, requestId: string | undefined) {
  if (api.status >= 500) logger.error({ err, requestId }, 'request failed');
}

/** The class of what failed (AppError, ZodError, TRPCError, ...), for the monitoring record. */
const errorName = (err: unknown) => {
  const cause = causeOf(err);
  return cause instanceof Error ? cause.name : 'Error';
};

/** The cause a TRPCError wraps, for logs. */
const causeOf = (err: unknown) => (err instanceof Error && err.cause ? err.cause : err);

/**
 * The REST surface of the router (trpc-to-openapi). Unknown paths fall through to `next`. The library
 * writes its own error body (tRPC code names, raw Zod issues); it is replaced here by ours, so REST errors
 * carry the domain code at the top level.
 */
export function restHandler(router: AnyTRPCRouter, deps: AppDeps): RequestHandler {
  const handler = createOpenApiNodeHttpHandler<AnyTRPCRouter, Request, Response>({
    router,
    createContext: contextFactory(deps),
    responseMeta: ({ ctx, paths, errors: errs }) => {
      if (errs[0]) return errorMeta(errs[0]);
      const status = (ctx as Context | undefined)?.response.status ?? successStatus(router, paths?.[0]);
      return { status };
    },
    onError: ({ error, req }) => {
      const api = toApiError(error);
      // The library writes its own body next: ours replaces it as it is written.
      const res = req.res;
      if (res) {
        const end = res.end.bind(res) as (...args: unknown[]) => Response;
        res.end = ((...args: unknown[]) =>
          end(JSON.stringify(errorBody(api, req.id)), ...args.slice(1))) as Response['end'];
      }
      noteRequest(req, { error: api, errorName: errorName(error) });
      logIfServerError(deps.logger, api, causeOf(error), req.id);
    },
  });

  return (req, res, next) => {
    // Body-less POST/PATCH (e.g. POST /admin/users/:id/suspend) count as an empty JSON object, not a 415.
    const bodyMethod = req.method === 'POST' || req.method === 'PATCH' || req.method === 'PUT';
    if (
      bodyMethod &&
      req.body === undefined &&
      !req.headers['content-type'] &&
      !req.headers['transfer-encoding'] &&
      !Number(req.headers['content-length'])
    ) {
      req.headers['content-type'] = 'application/json';
      req.body = {};
    }
    // A handler that throws outside its own error handling is answered by the error handler, never left
    // as an unhandled rejection (which ends the process).
    deps.inFlight.run(() => handler(req, res, next)).catch(next);
  };
}

/** The success status a procedure declares in its meta (201, 202), else 200. */
function successStatus(router: AnyTRPCRouter, path: string | undefined): number {
  const procedure =
    path === undefined ? undefined : (router._def.procedures as Record<string, AnyProcedure | undefined>)[path];
  return (procedure?._def.meta as Meta | undefined)?.successStatus ?? 200;
}

/** The same router for the first-party TypeScript client, with the same error mapping. */
export function trpcHandler(router: AnyTRPCRouter, deps: AppDeps): RequestHandler {
  const adapter = trpcAdapter(router, deps);
  const makeContext = contextFactory(deps);
  // tRPC's protocol answered from the Node request (server/platform/trpc-http.ts): what @trpc/server's Express
  // adapter does, without a Fetch Request and Response around each call, which cost half the CPU of a small
  // query. The requests it does not take (streamed batches, form data...) go to the adapter.
  const plain = trpcHttpHandler<Context>({
    router,
    // The most calls one batch may carry (TRPC_MAX_BATCH_SIZE): each is charged by the rate limiter.
    maxBatchSize: deps.config.TRPC_MAX_BATCH_SIZE,
    createContext: (req, res) => makeContext({ req, res }),
    responseMeta: trpcResponseMeta,
    onError: ({ error, req }) => onTrpcError(deps, error, req),
  });
  return (req, res, next) => {
    useRawJsonBody(req);
    if (!isPlainTrpcCall(req)) return void deps.inFlight.run(async () => adapter(req, res, next)).catch(next);
    // Counted until its procedures have settled, also when the client has gone away meanwhile.
    deps.inFlight.run(() => plain(req, res, () => adapter(req, res, next))).catch(next);
  };
}

/**
 * The /trpc mount as @trpc/server's own Express adapter serves it, with the same options, as trpcHandler did
 * before it answered plain calls itself: the tests hold the two to the same answers.
 */
export function trpcAdapterHandler(router: AnyTRPCRouter, deps: AppDeps): RequestHandler {
  const adapter = trpcAdapter(router, deps);
  return (req, res, next) => {
    useRawJsonBody(req);
    deps.inFlight.run(async () => adapter(req, res, next)).catch(next);
  };
}

/** @trpc/server's Express adapter over the router. */
function trpcAdapter(router: AnyTRPCRouter, deps: AppDeps): RequestHandler {
  return createExpressMiddleware({
    router,
    createContext: contextFactory(deps),
    // A batch is charged per call by the rate limiter; this bounds how much one request can carry.
    maxBatchSize: deps.config.TRPC_MAX_BATCH_SIZE,
    responseMeta: trpcResponseMeta,
    onError: ({ error, req }) => onTrpcError(deps, error, req),
  });
}

/**
 * tRPC is given the JSON body as it came (the parser kept its bytes; tRPC reads bodies as UTF-8 too), not
 * the parsed value, which it would serialise again only to parse it: a body nested thousands deep parses,
 * but overflows the stack of JSON.stringify. A mutation without input arrives with an empty body: for tRPC
 * no input at all.
 */
function useRawJsonBody(req: Request) {
  if (req.method === 'GET' || !req.rawBody) return;
  req.body = req.rawBody.length === 0 ? undefined : req.rawBody.toString('utf8');
}

/** The status and headers of a /trpc answer with errors: those of its first. */
const trpcResponseMeta = ({ errors }: { errors: unknown[] }) => (errors[0] ? errorMeta(errors[0]) : {});

/** Every error of a /trpc call: noted for the error shape's request id, monitoring and the log. */
function onTrpcError(deps: AppDeps, error: Error, req: Request) {
  requestIdOfError.set(error, req.id);
  const api = toApiError(error);
  noteRequest(req, { error: api, errorName: errorName(error) });
  logIfServerError(deps.logger, api, causeOf(error), req.id);
}

/** The status and headers of an error answer of the procedures (REST and /trpc alike). */
function errorMeta(err: unknown) {
  const api = toApiError(err);
  return { status: api.status, headers: errorHeaders(api) };
}

export const notFound: RequestHandler = (req, res) => {
  const api = httpError(404, 'Route not found.');
  noteRequest(req, { error: api, errorName: 'RouteNotFound' });
  res.status(404).json(errorBody(api, req.id));
};

/** Errors raised outside procedures: body parsing (400, 413, 415), plain Express routes, bugs. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err, req, res, next) => {
    if (res.headersSent) return next(err);
    const api = toApiError(err);
    noteRequest(req, { error: api, errorName: errorName(err) });
    logIfServerError(logger, api, err, req.id);
    // A `/trpc` request (its body refused by the JSON parser) is answered in tRPC's envelope, which is
    // what its client reads.
    res.set(errorHeaders(api));
    if (!isTrpcPath(req.path)) return void res.status(api.status).json(errorBody(api, req.id));
    const malformedJson =
      (err as { type?: unknown } | null)?.type === 'entity.parse.failed' && !(err instanceof UnstorableText);
    const code = malformedJson ? TRPC_ERROR_CODES_BY_KEY.PARSE_ERROR : trpcErrorNumber(api.status);
    res.status(api.status).json({ error: trpcErrorShape(api, code, req.id) });
  };
}
