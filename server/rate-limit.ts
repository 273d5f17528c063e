// Rate limiting in tiers (spec: Limits > Rate limiting), on rate-limiter-flexible: fixed windows of
// RATE_LIMIT_WINDOW_SECONDS; in memory, or in Redis (atomic, shared by every instance) when REDIS_URL is
// set, with an in-memory insurance limiter that takes over when Redis fails or takes longer than 100 ms.
// Client identity: `user:{userId}:{tier}` for a request with a valid access token, `key:{prefix}:{tier}`
// for a well-formed API key, else the client address (X-Forwarded-For as TRUST_PROXY allows).
import type { Request, RequestHandler } from 'express';
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, RLWrapperTimeouts, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from './config.js';
import { errorBody } from './errors.js';
import type { Logger } from './logger.js';
import type { RouteTemplates } from './route-templates.js';
import { noteRequest } from './monitoring.js';
import { bearerToken, verifyAccessToken } from './security/jwt.js';

export type Tier = 'default' | 'auth' | 'contact' | 'upload' | 'publicApi' | 'webhook';

export const RATE_LIMIT_MESSAGE = 'Too many requests. Please try again later.';

const AUTH_ROUTES = new Set(['/auth/login', '/auth/register', '/auth/forgot-password', '/auth/resend-verification', '/auth/reset-password', '/auth/verify-email']);
const CONTACT_ROUTES = new Set(['/contact/messages', '/support/tickets']);
const UPLOAD_ROUTES = [/^\/storage\/upload$/, /^\/profile\/avatar$/, /^\/workspaces\/\{workspaceId\}\/branding\/logo$/];
/** Never limited: status checks, CORS preflights, and the docs UI. */
const SKIPPED = new Set(['GET /health', 'GET /search/status', 'GET /security/status']);

/** The tier of a request by its method and route template (or raw path when it matches no route). */
export function tierOf(method: string, template: string): Tier | undefined {
  if (method === 'OPTIONS' || SKIPPED.has(`${method} ${template}`) || template.startsWith('/docs')) return undefined;
  if (method === 'POST' && AUTH_ROUTES.has(template)) return 'auth';
  if (method === 'POST' && CONTACT_ROUTES.has(template)) return 'contact';
  if (method === 'POST' && UPLOAD_ROUTES.some((r) => r.test(template))) return 'upload';
  if (method === 'GET' && template.startsWith('/public-api/')) return 'publicApi';
  if (method === 'POST' && template.startsWith('/billing/webhooks/')) return 'webhook';
  return 'default';
}

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
    default:
      // The contact tier uses the default tier's value (spec).
      return config.RATE_LIMIT_MAX_REQUESTS;
  }
}

/** The client a request is counted against. */
function clientKey(config: Config, req: Request, tier: Tier): string {
  const token = bearerToken(req.headers.authorization);
  const apiKey = typeof req.headers['x-api-key'] === 'string' ? req.headers['x-api-key'] : token?.startsWith('wsk_') ? token : undefined;
  if (apiKey && /^wsk_[A-Za-z0-9]{40}$/.test(apiKey)) return `key:${apiKey.slice(0, 12)}:${tier}`;
  const claims = token ? verifyAccessToken(config, token) : null;
  if (claims) return `user:${claims.userId}:${tier}`;
  return `ip:${req.ip ?? req.socket.remoteAddress ?? 'unknown'}:${tier}`;
}

function buildLimiters(config: Config, redis: Redis | undefined): Record<Tier, RateLimiterAbstract> {
  const tiers: Tier[] = ['default', 'auth', 'contact', 'upload', 'publicApi', 'webhook'];
  const duration = config.RATE_LIMIT_WINDOW_SECONDS;
  return Object.fromEntries(
    tiers.map((tier) => {
      const opts = { points: points(config, tier), duration, keyPrefix: `rl:${tier}` };
      const memory = new RateLimiterMemory(opts);
      if (!redis) return [tier, memory];
      const shared = new RateLimiterRedis({ ...opts, storeClient: redis, rejectIfRedisNotReady: true });
      return [tier, new RLWrapperTimeouts({ limiter: shared, timeoutMs: 100, insuranceLimiter: memory })];
    }),
  ) as Record<Tier, RateLimiterAbstract>;
}

function headers(limit: number, windowSeconds: number, res: RateLimiterRes) {
  const reset = Math.max(1, Math.ceil(res.msBeforeNext / 1000));
  return {
    'RateLimit-Policy': `${limit};w=${windowSeconds}`,
    RateLimit: `limit=${limit}, remaining=${Math.max(0, res.remainingPoints)}, reset=${reset}`,
    reset,
  };
}

export function rateLimiter(deps: { config: Config; logger: Logger; redis?: Redis; routes: RouteTemplates }): RequestHandler {
  const { config, routes } = deps;
  const limiters = buildLimiters(config, deps.redis);
  return async (req, res, next) => {
    const path = req.path;
    // /trpc calls count in the tier of the procedure's REST route.
    const route = path.startsWith('/trpc/') ? routes.ofProcedure(path.slice(6).split(',')[0]!) : routes.match(req.method, path);
    const tier = tierOf(route?.method ?? req.method, route?.template ?? path);
    if (!tier) return next();
    const limit = points(config, tier);
    try {
      const result = await limiters[tier].consume(clientKey(config, req, tier));
      const h = headers(limit, config.RATE_LIMIT_WINDOW_SECONDS, result);
      res.setHeader('RateLimit-Policy', h['RateLimit-Policy']);
      res.setHeader('RateLimit', h.RateLimit);
      next();
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) {
        // Neither Redis nor the insurance limiter answered: serve rather than fail the request.
        deps.logger.error({ err: rejection }, 'rate limiter failed');
        return next();
      }
      const h = headers(limit, config.RATE_LIMIT_WINDOW_SECONDS, rejection);
      res.setHeader('Retry-After', String(h.reset));
      res.setHeader('RateLimit-Policy', h['RateLimit-Policy']);
      res.setHeader('RateLimit', h.RateLimit);
      const api = { status: 429, code: 'RATE_LIMITED', message: RATE_LIMIT_MESSAGE };
      noteRequest(req, { error: api, errorName: 'RateLimited' });
      res.status(429).json(errorBody(api, req.id));
    }
  };
}
