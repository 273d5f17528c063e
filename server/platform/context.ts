// What every procedure receives: the shared services of the process and the facts of this request.
import type { Request, Response } from 'express';
import type { Config } from './config.js';
import type { Db } from '../../db/index.js';
import type { Logger } from './logger.js';
import type { Mailer } from './email/mailer.js';
import type { PasswordHasher } from './security/passwords.js';
import type { RedisConnections } from './redis.js';
import type { PlanCatalog } from '../../routers/billing/plans.js';
import type { Processors } from '../../routers/billing/processors/index.js';
import type { TextProvider } from '../../routers/ai/providers/types.js';
import type { SecretBox } from './security/secret-box.js';
import type { WebhookRunner } from '../../jobs/webhook-runner.js';
import type { Monitor } from './monitoring.js';
import type { Storage } from './storage.js';
import type { InFlight } from './in-flight.js';
import type { FailureLimiter } from './rate-limit.js';

/** Long-lived services, built once at start-up (server/index.ts) and shared by every request. */
export interface AppDeps {
  config: Config;
  db: Db;
  logger: Logger;
  mailer: Mailer;
  passwords: PasswordHasher;
  /** Set when REDIS_URL is. */
  redis: RedisConnections | undefined;
  plans: PlanCatalog;
  processors: Processors;
  /** The text-generation provider AI_PROVIDER selects. */
  ai: TextProvider;
  /** Encrypts webhook signing secrets at rest. */
  secrets: SecretBox;
  webhooks: WebhookRunner;
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
}

export function requestMeta(req: Request): RequestMeta {
  return {
    requestId: req.id,
    ip: req.ip ?? req.socket.remoteAddress ?? 'unknown',
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
