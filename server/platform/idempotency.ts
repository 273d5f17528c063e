// Idempotency keys on the REST surface: a POST or PATCH sent with `Idempotency-Key` is answered once; the
// same request again with the same key gets that first answer back (`Idempotent-Replayed: true`) instead
// of running again, so a client can retry a request whose answer it lost without creating two records.
// Keys live in Postgres (idempotency_keys) for 24 hours, so a retry that reaches another instance finds
// them; the row is claimed with one INSERT ... ON CONFLICT, so of concurrent duplicates exactly one runs.
import crypto from 'node:crypto';
import type { AnyTRPCRouter } from '@trpc/server';
import type { Request, RequestHandler, Response } from 'express';
import { sql } from 'kysely';
import type { AppDeps } from './context.js';
import { AppError, errorBody, errorHeaders, type ApiError } from './errors.js';
import { noteRequest } from './monitoring.js';
import type { Meta } from './route-meta.js';
import type { RouteTemplate, RouteTemplates } from './route-templates.js';
import { callerOfRequest } from './trpc.js';
import { clientAddress } from './client-address.js';

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
export const REPLAYED_HEADER = 'Idempotent-Replayed';
/** 1 to 255 printable ASCII characters (space included). */
const VALID_KEY = /^[\x20-\x7e]{1,255}$/;
/** How long a key and its answer are kept. */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 3_600_000;
/**
 * A claim whose request never answered (its process died) is given up after this long, and the key may
 * be used again: longer than any request may run (the slowest are AI generations, bounded by their
 * provider's timeout).
 */
const ABANDONED_CLAIM_MS = 5 * 60_000;

/** The methods whose REST requests take a key. */
const KEYED_METHODS = new Set(['POST', 'PATCH']);

type Deps = Pick<AppDeps, 'db' | 'auth' | 'secrets' | 'logger' | 'inFlight' | 'config'>;

interface Stored {
  fingerprint: string;
  status: number | null;
  body: string | null;
  content_type: string | null;
}

/**
 * The middleware, mounted after authentication has started, the rate limiter and the JSON parser (it
 * fingerprints the body as it came), before the REST handler. Requests of other methods, of /trpc and of
 * the plain Express routes go straight on.
 */
export function idempotencyKeys(deps: Deps, router: AnyTRPCRouter, routes: RouteTemplates): RequestHandler {
  const procedures = router._def.procedures as Record<string, { _def: { meta?: Meta } } | undefined>;
  const isPublic = (route: RouteTemplate) => procedures[route.procedure!]?._def.meta?.openapi?.protect === false;
  const fingerprintKey = fingerprintKeyOf(deps.config);

  return (req, res, next) => {
    const header = req.headers['idempotency-key'];
    if (header === undefined || !KEYED_METHODS.has(req.method)) return next();
    const route = routes.matchRequest(req);
    if (!route?.procedure) return next();
    // Node joins repeated headers with ", ": two keys are one invalid key only if too long.
    const key = Array.isArray(header) ? header.join(', ') : header;
    if (!VALID_KEY.test(key)) {
      return answerError(req, res, {
        status: 400,
        code: 'BAD_REQUEST',
        message: `${IDEMPOTENCY_KEY_HEADER} must be 1 to 255 printable ASCII characters.`,
      });
    }
    // A body the REST handler will refuse as not JSON (415) never reaches a procedure: not keyed.
    if (req.headers['content-type'] && !req.is('application/json')) return next();

    void deps.inFlight
      .run(async () => {
        const caller = await callerOfRequest(deps, req);
        let scope: string;
        if (caller.kind === 'user' || caller.kind === 'api-key') scope = `${caller.kind}:${caller.id}`;
        else if (caller.kind === 'anonymous' || isPublic(route))
          scope = `anonymous:${route.method} ${route.template}:${clientAddress(req) ?? ''}`;
        // Credentials that do not authenticate, on a route that needs them: refused before the caller is
        // known, so the key is left alone.
        else return next();

        const fingerprint = crypto
          .createHmac('sha256', fingerprintKey)
          .update(`${req.method} ${req.originalUrl}\n`)
          .update(req.rawBody ?? Buffer.alloc(0))
          .digest('base64url');
        const claimed = await claim(deps, scope, key, fingerprint);
        if (claimed === true) return run(deps, req, res, next, scope, key);
        if (claimed.fingerprint !== fingerprint) {
          return answerError(req, res, {
            status: 422,
            code: 'IDEMPOTENCY_KEY_REUSED',
            message: `This ${IDEMPOTENCY_KEY_HEADER} was used with another request (method, path or body): use a new key for a new request.`,
          });
        }
        if (claimed.status === null || claimed.body === null) {
          return answerError(req, res, {
            status: 409,
            code: 'IDEMPOTENCY_KEY_IN_USE',
            message: `A request with this ${IDEMPOTENCY_KEY_HEADER} is still running: try again shortly.`,
            retryAfterSeconds: 1,
          });
        }
        replay(deps, req, res, claimed.status, claimed.body, claimed.content_type);
      })
      .catch(next);
  };
}

/**
 * An Idempotency-Key outside REST (an MCP tool call): `work` runs once per caller scope and key; the same
 * key and fingerprint again answers what the first run answered (`replayed`), another fingerprint is 422
 * IDEMPOTENCY_KEY_REUSED, a run still going 409 IDEMPOTENCY_KEY_IN_USE. Kept as REST keeps answers: 2xx
 * and 4xx, not 5xx, 429 or 401.
 */
export async function runOnce(
  deps: Pick<AppDeps, 'db' | 'secrets' | 'config' | 'inFlight'>,
  opts: { scope: string; key: string; request: string },
  work: () => Promise<{ status: number; body: string }>,
): Promise<{ status: number; body: string; replayed: boolean }> {
  const { scope, key } = opts;
  if (!VALID_KEY.test(key))
    throw new AppError('BAD_REQUEST', `${IDEMPOTENCY_KEY_HEADER} must be 1 to 255 printable ASCII characters.`);
  const fingerprint = crypto
    .createHmac('sha256', fingerprintKeyOf(deps.config))
    .update(opts.request)
    .digest('base64url');
  const claimed = await claim(deps, scope, key, fingerprint);
  if (claimed !== true) {
    if (claimed.fingerprint !== fingerprint)
      throw new AppError(
        'IDEMPOTENCY_KEY_REUSED',
        `This ${IDEMPOTENCY_KEY_HEADER} was used with another request: use a new key for a new request.`,
      );
    if (claimed.status === null || claimed.body === null)
      throw new AppError(
        'IDEMPOTENCY_KEY_IN_USE',
        `A request with this ${IDEMPOTENCY_KEY_HEADER} is still running: try again shortly.`,
      );
    return { status: claimed.status, body: deps.secrets.open(claimed.body), replayed: true };
  }
  const done = deps.inFlight.begin();
  try {
    const answer = await work().catch(async (err: unknown) => {
      await release(deps, scope, key);
      throw err;
    });
    if (!keeps(answer.status)) await release(deps, scope, key);
    else
      await deps.db
        .updateTable('idempotency_keys')
        .where('scope', '=', scope)
        .where('key', '=', key)
        .where('status', 'is', null)
        .set({ status: answer.status, body: deps.secrets.seal(answer.body), content_type: 'application/json' })
        .execute();
    return { ...answer, replayed: false };
  } finally {
    done();
  }
}

const release = (deps: Pick<AppDeps, 'db'>, scope: string, key: string) =>
  deps.db
    .deleteFrom('idempotency_keys')
    .where('scope', '=', scope)
    .where('key', '=', key)
    .where('status', 'is', null)
    .execute();

const fingerprintKeyOf = (config: Pick<AppDeps['config'], 'WEBHOOK_SECRET_ENCRYPTION_KEY'>) =>
  crypto.createHmac('sha256', config.WEBHOOK_SECRET_ENCRYPTION_KEY).update('idempotency-key-fingerprint').digest();

/**
 * Claims the key for this request: true when it is ours to run (new, expired, or abandoned by a process
 * that died), else the row that holds it. Tried again when the holder let go of it meanwhile.
 */
async function claim(deps: Pick<Deps, 'db'>, scope: string, key: string, fingerprint: string): Promise<true | Stored> {
  for (;;) {
    const now = Date.now();
    const claimed = await deps.db
      .insertInto('idempotency_keys')
      .values({ scope, key, fingerprint, expires_at: new Date(now + IDEMPOTENCY_KEY_TTL_MS) })
      .onConflict((oc) =>
        oc
          .columns(['scope', 'key'])
          .doUpdateSet((eb) => ({
            fingerprint: eb.ref('excluded.fingerprint'),
            status: null,
            body: null,
            content_type: null,
            created_at: sql<Date>`now()`,
            expires_at: eb.ref('excluded.expires_at'),
          }))
          .where((eb) =>
            eb.or([
              eb('idempotency_keys.expires_at', '<=', new Date(now)),
              eb.and([
                eb('idempotency_keys.status', 'is', null),
                eb('idempotency_keys.created_at', '<', new Date(now - ABANDONED_CLAIM_MS)),
              ]),
            ]),
          ),
      )
      .returning('key')
      .executeTakeFirst();
    if (claimed) return true;
    const held = await deps.db
      .selectFrom('idempotency_keys')
      .select(['fingerprint', 'status', 'body', 'content_type'])
      .where('scope', '=', scope)
      .where('key', '=', key)
      .executeTakeFirst();
    if (held) return held;
  }
}

/**
 * Whether an answer is kept for replays: those the procedure gave, 2xx and 4xx alike. Not a 5xx (a
 * failure to try again), a 429 (try again later), nor a 401 (the caller was not known).
 */
const keeps = (status: number) => status < 500 && status !== 429 && status !== 401;

/**
 * Runs the request, and keeps its answer before it is sent: once a client has the answer, a retry
 * replays it. An answer that is not kept lets go of the key.
 */
function run(deps: Deps, req: Request, res: Response, next: () => void, scope: string, key: string) {
  const end = res.end.bind(res) as (...args: unknown[]) => Response;
  const done = deps.inFlight.begin();
  res.end = ((...args: unknown[]) => {
    res.end = end as Response['end'];
    const [chunk] = args;
    // What the REST handler and Express write: a string or bytes (nothing else reaches end() here).
    const body =
      typeof chunk === 'string' ? chunk : chunk instanceof Uint8Array ? Buffer.from(chunk).toString('utf8') : '';
    void settle(deps, res, scope, key, body)
      .catch((err: unknown) =>
        deps.logger.warn({ err, requestId: req.id }, 'the answer of an idempotency key could not be kept'),
      )
      .finally(() => {
        done();
        end(...args);
      });
    return res;
  }) as Response['end'];
  // The connection can end before the answer does (the client went away): the answer still settles the key.
  next();
}

async function settle(deps: Deps, res: Response, scope: string, key: string, body: string) {
  if (!keeps(res.statusCode)) {
    await deps.db
      .deleteFrom('idempotency_keys')
      .where('scope', '=', scope)
      .where('key', '=', key)
      .where('status', 'is', null)
      .execute();
    return;
  }
  const contentType = res.getHeader('content-type');
  await deps.db
    .updateTable('idempotency_keys')
    .where('scope', '=', scope)
    .where('key', '=', key)
    .set({
      status: res.statusCode,
      body: deps.secrets.seal(body),
      content_type: typeof contentType === 'string' ? contentType : null,
    })
    .where('status', 'is', null)
    .execute();
}

/** The first answer again: its status and body as they were, with `Idempotent-Replayed: true`. */
function replay(deps: Deps, req: Request, res: Response, status: number, sealed: string, contentType: string | null) {
  const body = deps.secrets.open(sealed);
  if (status >= 400) {
    // The request log and monitoring name the code of a replayed error as they did the first time.
    const code = errorCodeOf(body);
    if (code) noteRequest(req, { error: { status, code, message: 'replayed' }, errorName: 'Replayed' });
  }
  res.status(status);
  res.setHeader(REPLAYED_HEADER, 'true');
  if (contentType) res.setHeader('Content-Type', contentType);
  res.end(body);
}

function errorCodeOf(body: string): string | undefined {
  try {
    const code = (JSON.parse(body) as { code?: unknown } | null)?.code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}

function answerError(req: Request, res: Response, api: ApiError) {
  noteRequest(req, { error: api, errorName: 'IdempotencyKey' });
  res.set(errorHeaders(api));
  res.status(api.status).json(errorBody(api, req.id));
}
