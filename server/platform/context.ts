// What every procedure receives: the shared services of the process and the facts of this request.
import type { Request, Response } from 'express';
import type { Config } from './config.js';
import type { Db } from '../../db/index.js';
import type { Logger } from './logger.js';
import type { Mailer } from './email/mailer.js';
import type { PasswordHasher } from './security/passwords.js';
import type { RedisConnections } from './redis.js';
import type { SecretBox } from './security/secret-box.js';
import type { Monitor } from './monitoring.js';
import type { Storage } from './storage.js';
import type { InFlight } from './in-flight.js';
import type { FailureLimiter } from './rate-limit.js';
import type { Authenticator, McpCredential } from './principal.js';
import { clientAddress } from './client-address.js';

/**
 * The domains' long-lived services (the plan catalog, payment processors, the AI provider, webhook
 * delivery). Empty here: each is added by the domain that owns it, in routers/services.ts (TypeScript
 * declaration merging), so the platform names no domain type while every procedure's ctx is fully typed.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface DomainServices {}

/**
 * Long-lived services, built once at start-up by the composition root (server/deps.ts) and shared by
 * every request: the platform's own, and the domains' (DomainServices).
 */
export interface AppDeps extends DomainServices {
  config: Config;
  db: Db;
  logger: Logger;
  mailer: Mailer;
  passwords: PasswordHasher;
  /** Set when REDIS_URL is. */
  redis: RedisConnections | undefined;
  /** Who is calling: access tokens and API keys, checked by the auth and API-key domains. */
  auth: Authenticator;
  /** Encrypts webhook signing secrets at rest. */
  secrets: SecretBox;
  monitor: Monitor;
  storage: Storage;
  /** Requests and procedures not finished yet: a shutdown waits for them before it closes the pool. */
  inFlight: InFlight;
  /** Set when a shutdown begins: GET /health answers 503 `draining`, so load balancers stop sending here. */
  lifecycle: { draining: boolean };
  startedAt: Date;
  /** Failed sign-ins per account, set by createApp while rate limiting is on (server/platform/rate-limit.ts). */
  failedSignIns?: FailureLimiter;
}

export interface RequestMeta {
  requestId: string;
  ip: string;
  userAgent: string | undefined;
}

export interface Context extends AppDeps, RequestMeta {
  req: Request;
  res: Response;
  /** A success status other than 200, set from the procedure's meta (201 on creation). */
  response: { status?: number };
  /** Set by the MCP endpoint (routers/mcp) for a tool call: the credential the builders check. */
  mcp?: McpCredential;
}

export function requestMeta(req: Request): RequestMeta {
  return {
    requestId: req.id,
    ip: clientAddress(req) ?? 'unknown',
    userAgent: req.get('user-agent')?.slice(0, 512),
  };
}

export function contextFactory(deps: AppDeps) {
  return ({ req, res }: { req: Request; res: Response }): Context => ({
    ...deps,
    ...requestMeta(req),
    req,
    res,
    response: {},
  });
}
