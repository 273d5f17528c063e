// Rate limiting in tiers (spec: Limits > Rate limiting), on rate-limiter-flexible: fixed windows of
// RATE_LIMIT_WINDOW_SECONDS; in memory, or in Redis (atomic, shared by every instance) when REDIS_URL is
// set, with an in-memory insurance limiter that takes over when Redis fails or takes longer than 100 ms.
// Client identity: `user:{userId}:{tier}` for a request with a valid access token; for a credential this
// instance has verified before, its holder: `key:{keyId}:{tier}` (an API key), `scim:{tokenId}:{tier}` (a
// SCIM token), `grant:{grantId}:{tier}` (an MCP client's OAuth access token); else the client address
// (req.ip: the X-Forwarded-For entry TRUST_PROXY names). A /trpc batch is charged one point per call, each
// in its procedure's tier.
// FailureLimiter counts failed attempts per key whatever the client (sign-ins per account).
import crypto from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { TRPCError } from '@trpc/server';
import type { Redis } from 'ioredis';
import {
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
  RLWrapperTimeouts,
  type RateLimiterAbstract,
} from 'rate-limiter-flexible';
import type { Config } from './config.js';
import { AppError, errorBody, trpcErrorShape, type ApiError } from './errors.js';
import type { Logger } from './logger.js';
import type { RouteTemplates } from './route-templates.js';
import { TIERS, type Tier } from './route-meta.js';
import { trpcProcedures } from './trpc-path.js';
import { noteRequest } from './monitoring.js';
import { bearerToken, verifyAccessToken } from './security/jwt.js';
import { batched, groupPositions } from '../../db/batched.js';
import { clientAddress } from './client-address.js';

export const RATE_LIMIT_MESSAGE = 'Too many requests. Please try again later.';

const SCIM_ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';

/** Directory sync's mount (routers/scim/protocol.ts), any case as Express matches it. */
export const isScimPath = (path: string) => /^\/scim\/v2(?:\/|$)/i.test(path);

/** The docs UI's mount: `/docs` and what is under it, not every path that merely starts with `/docs`. */
export const isDocsPath = (path: string) => path === '/docs' || path.startsWith('/docs/');

function points(config: Config, tier: Tier): number {
  switch (tier) {
    case 'auth':
      return config.RATE_LIMIT_AUTH_MAX_REQUESTS;
    case 'upload':
      return config.RATE_LIMIT_UPLOAD_MAX_REQUESTS;
    case 'publicApi':
      return config.RATE_LIMIT_PUBLIC_API_MAX_REQUESTS;
    case 'webhook':
      return config.RATE_LIMIT_WEBHOOK_MAX_REQUESTS;
    case 'scim':
      return config.RATE_LIMIT_SCIM_MAX_REQUESTS;
    default:
      // The contact tier uses the default tier's value (spec).
      return config.RATE_LIMIT_MAX_REQUESTS;
  }
}

/** Who a request is counted against (the tier is added per limiter key). */
function clientOf(config: Config, req: Request, knownCredential: ((raw: string) => string | undefined) | undefined) {
  const token = bearerToken(req.headers.authorization);
  const claims = token ? verifyAccessToken(config, token) : null;
  if (claims) return `user:${claims.userId}`;
  const header = req.headers['x-api-key'];
  const raw = token ?? (typeof header === 'string' ? header.trim() : undefined);
  return (raw && knownCredential?.(raw)) || `ip:${clientAddress(req) ?? 'unknown'}`;
}

type Limiters = Record<Tier, RateLimiterAbstract>;

/**
 * A fixed-window limiter: in memory, or in Redis with an in-memory insurance limiter that answers when
 * Redis fails or takes longer than 100 ms.
 */
function fixedWindow(opts: { points: number; duration: number; keyPrefix: string }, redis: Redis | undefined) {
  const memory = new RateLimiterMemory(opts);
  if (!redis) return memory as RateLimiterAbstract;
  const shared = new RateLimiterRedis({ ...opts, storeClient: redis, rejectIfRedisNotReady: true });
  return new RLWrapperTimeouts({ limiter: shared, timeoutMs: 100, insuranceLimiter: memory });
}

function buildLimiters(config: Config, redis: Redis | undefined): Limiters {
  const duration = config.RATE_LIMIT_WINDOW_SECONDS;
  return Object.fromEntries(
    TIERS.map((tier) => {
      const opts = { points: points(config, tier), duration, keyPrefix: `rl:${tier}` };
      return [tier, fixedWindow(opts, redis)];
    }),
  ) as Limiters;
}

interface Charge {
  tier: Tier;
  /** The limiter key: client and tier. */
  key: string;
  cost: number;
  /** The tier's points per window. */
  limit: number;
}

/**
 * Charges requests, batched (db/batched.ts): the charges of requests that arrive while earlier ones are on
 * their way to Redis wait, and the charges of one key in a batch go as ONE consume of their total. That
 * keeps the count exact: the key's counter moves by the same points, in one atomic step, and each request
 * learns its own place in it, as if they had come one after another: it is refused when its place is
 * past the limit, and its remaining points are those left after it. Different keys are consumed side by
 * side (auto-pipelined). An error (Redis and the insurance limiter both failing) fails that key's requests.
 */
const chargeTogether = batched<Charge, { result: RateLimiterRes; rejected: boolean }, Limiters>(
  async (limiters, charges) => {
    const outcomes = new Array<{ result: RateLimiterRes; rejected: boolean } | Error>(charges.length);
    await Promise.all(
      groupPositions(charges, (c) => c.key).map(async (members) => {
        const { tier, key, limit } = charges[members[0]];
        const total = members.reduce((sum, i) => sum + charges[i].cost, 0);
        let after: RateLimiterRes;
        try {
          after = await limiters[tier].consume(key, total);
        } catch (rejection) {
          if (!(rejection instanceof RateLimiterRes)) {
            for (const i of members)
              outcomes[i] = rejection instanceof Error ? rejection : new Error(String(rejection));
            return;
          }
          after = rejection;
        }
        let place = after.consumedPoints - total;
        for (const i of members) {
          place += charges[i].cost;
          const result = new RateLimiterRes(
            Math.max(0, limit - place),
            after.msBeforeNext,
            place,
            after.isFirstInDuration && place === charges[i].cost,
          );
          outcomes[i] = { result, rejected: place > limit };
        }
      }),
    );
    return outcomes;
  },
  // One consume at a time per limiter set: the charges that arrive meanwhile go together in the next one,
  // so under load a Redis command serves several requests, and alone a request waits for no one.
  { inFlight: 1 },
);

function headers(limit: number, windowSeconds: number, res: RateLimiterRes) {
  const reset = Math.max(1, Math.ceil(res.msBeforeNext / 1000));
  return {
    'RateLimit-Policy': `${limit};w=${windowSeconds}`,
    RateLimit: `limit=${limit}, remaining=${Math.max(0, res.remainingPoints)}, reset=${reset}`,
    reset,
  };
}

export function rateLimiter(deps: {
  config: Config;
  logger: Logger;
  redis?: Redis;
  routes: RouteTemplates;
  /** Told of every 429 (the metrics counter). */
  onRejected?: (tier: Tier) => void;
  /**
   * Who holds a credential this instance has verified before, without a lookup (`key:{id}`, `scim:{id}`,
   * `grant:{id}`: server/app.ts), else undefined: such a caller is counted by it, not by its address.
   */
  knownCredential?: (raw: string) => string | undefined;
  /** Paths served outside the routes, with their tier (/mcp: the public API's). */
  otherPaths?: Readonly<Record<string, Tier>>;
}): RequestHandler {
  const { config, routes } = deps;
  const limiters = buildLimiters(config, deps.redis);

  /**
   * Points per tier: one for a REST call, in its route's tier (its meta's `rateLimit`); one per call of a
   * /trpc batch, in its procedure's tier. Paths of no route count in the default tier, except the docs UI
   * and CORS preflights, which are never limited.
   */
  function charges(req: Request): Map<Tier, number> {
    const charged = new Map<Tier, number>();
    const add = (tier: Tier | undefined) => {
      if (tier) charged.set(tier, (charged.get(tier) ?? 0) + 1);
    };
    if (req.method === 'OPTIONS') return charged;
    const path = req.path;
    const procedures = trpcProcedures(path);
    if (!procedures) {
      // Directory sync (/scim/v2) is a plain router outside the document: its own tier.
      if (isScimPath(path)) {
        add('scim');
        return charged;
      }
      const route = routes.matchRequest(req, path);
      add(route ? route.tier : (deps.otherPaths?.[path] ?? (isDocsPath(path) ? undefined : 'default')));
      return charged;
    }
    for (const procedure of procedures) add(routes.tierOfProcedure(procedure));
    return charged;
  }

  return async (req, res, next) => {
    const charged = charges(req);
    if (charged.size === 0) return next();
    const client = clientOf(config, req, deps.knownCredential);
    // Every tier is charged; the answer's headers describe the tightest one.
    const charge = ([tier, cost]: [Tier, number]) =>
      chargeTogether(limiters, { tier, key: `${client}:${tier}`, cost, limit: points(config, tier) }).then(
        ({ result, rejected }) => ({ tier, result, rejected }),
        (err: unknown) => ({ tier, result: err, rejected: true }),
      );
    // Most requests are charged in one tier: no Promise.all for them.
    const tiers = [...charged];
    const outcomes = tiers.length === 1 ? [await charge(tiers[0])] : await Promise.all(tiers.map(charge));
    const answered: Array<{ tier: Tier; result: RateLimiterRes; rejected: boolean }> = [];
    for (const { tier, result, rejected } of outcomes) {
      if (result instanceof RateLimiterRes) answered.push({ tier, result, rejected });
      // Neither Redis nor the insurance limiter answered: serve rather than fail the request.
      else deps.logger.error({ err: result }, 'rate limiter failed');
    }
    // The tightest tier speaks for the answer: a refusing one first, else the one with the fewest points left.
    const shown = answered.sort(
      (a, b) => Number(b.rejected) - Number(a.rejected) || a.result.remainingPoints - b.result.remainingPoints,
    )[0];
    if (!shown) return next();
    const limit = points(config, shown.tier);
    const h = headers(limit, config.RATE_LIMIT_WINDOW_SECONDS, shown.result);
    res.setHeader('RateLimit-Policy', h['RateLimit-Policy']);
    res.setHeader('RateLimit', h.RateLimit);
    if (!shown.rejected) return next();

    res.setHeader('Retry-After', String(h.reset));
    const api = { status: 429, code: 'RATE_LIMITED', message: RATE_LIMIT_MESSAGE };
    noteRequest(req, { error: api, errorName: 'RateLimited' });
    deps.onRejected?.(shown.tier);
    // Directory sync answers in SCIM's error shape (RFC 7644 3.12), as every other /scim/v2 answer.
    if (isScimPath(req.path))
      return void res
        .status(429)
        .type('application/scim+json')
        .send(JSON.stringify({ schemas: [SCIM_ERROR], status: '429', detail: RATE_LIMIT_MESSAGE }));
    const procedures = trpcProcedures(req.path);
    res.status(429).json(procedures ? trpcRateLimited(req, procedures, api) : errorBody(api, req.id));
  };
}

/** The 429 in tRPC's envelope (one per call of a batch), so `@trpc/client` reads it like its own errors. */
function trpcRateLimited(req: Request, procedures: string[], api: ApiError) {
  const error = (path: string) => ({ error: trpcErrorShape(api, TRPC_TOO_MANY_REQUESTS, req.id, path) });
  return req.query.batch === undefined ? error(procedures[0]) : procedures.map(error);
}

/** JSON-RPC code of tRPC's TOO_MANY_REQUESTS. */
const TRPC_TOO_MANY_REQUESTS = -32029;

/** One attempt of a FailureLimiter, to be settled once its outcome is known. */
export interface Attempt {
  /** The attempt failed: its point stays counted. Otherwise it is given back. */
  settle(failed: boolean): void;
}

/**
 * Failed attempts per key, beside the tiers' counts per client: more than `limit` failures of one key
 * within RATE_LIMIT_WINDOW_SECONDS refuse its attempts with the limiter's 429 until the window ends,
 * whoever makes them. The sign-ins of one account are the use (routers/auth): an attacker with many
 * addresses still gets `limit` guesses per account and window. Each attempt takes its point before it is
 * made, so attempts made at once cannot pass the limit together, and gives it back unless it failed: only
 * failures are counted. Kept in Redis when REDIS_URL is set (as the tiers, with the in-memory insurance),
 * under a digest of the key, so Redis holds no e-mail address.
 */
export class FailureLimiter {
  private readonly limiter: RateLimiterAbstract;

  constructor(
    private readonly deps: {
      config: Config;
      logger: Logger;
      redis?: Redis;
      /** Told of every 429, with the tier this count belongs to (the metrics counter). */
      onRejected?: (tier: Tier) => void;
    },
    private readonly opts: { name: string; tier: Tier; limit: number },
  ) {
    const duration = deps.config.RATE_LIMIT_WINDOW_SECONDS;
    this.limiter = fixedWindow({ points: opts.limit, duration, keyPrefix: `rl:${opts.name}` }, deps.redis);
  }

  /**
   * Takes the place of an attempt of `key`. Past the limit it sets the 429's headers on `res` and throws
   * the 429 (a TRPCError, so /trpc answers it in the envelope of the limiter's own 429). When neither Redis
   * nor the insurance answers, the attempt goes ahead uncounted, as the tiers serve such a request.
   */
  async begin(res: Response, key: string): Promise<Attempt> {
    const digest = crypto.createHash('sha256').update(key).digest('base64url');
    let result: RateLimiterRes;
    try {
      result = await this.limiter.consume(digest);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) {
        this.deps.logger.error({ err: rejection }, 'rate limiter failed');
        return { settle: () => undefined };
      }
      result = rejection;
    }
    if (result.consumedPoints > this.opts.limit) {
      const h = headers(this.opts.limit, this.deps.config.RATE_LIMIT_WINDOW_SECONDS, result);
      res.setHeader('RateLimit-Policy', h['RateLimit-Policy']);
      res.setHeader('RateLimit', h.RateLimit);
      res.setHeader('Retry-After', String(h.reset));
      this.deps.onRejected?.(this.opts.tier);
      throw rateLimitedError();
    }
    return {
      settle: (failed) => {
        if (failed) return;
        this.limiter.reward(digest).catch((err: unknown) => this.deps.logger.error({ err }, 'rate limiter failed'));
      },
    };
  }
}

/**
 * The limiter's 429 raised inside a procedure: RATE_LIMITED to REST, TOO_MANY_REQUESTS (-32029) to /trpc,
 * recorded by monitoring under the name the middleware's 429 has.
 */
function rateLimitedError() {
  const cause = new AppError('RATE_LIMITED', RATE_LIMIT_MESSAGE);
  cause.name = 'RateLimited';
  return new TRPCError({ code: 'TOO_MANY_REQUESTS', message: RATE_LIMIT_MESSAGE, cause });
}
