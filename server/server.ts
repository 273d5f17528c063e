// Boots the service from a parsed Config: database and migrations, seeds, the HTTP server, and an orderly
// close (stop accepting, let in-flight requests finish, then close the mailer and the pool). Used by
// server/index.ts, the tests and the benchmark alike.
import http from 'node:http';
import crypto from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Config } from './config.js';
import type { AppDeps } from './context.js';
import type { Logger } from './logger.js';
import { createApp } from './app.js';
import { createMailer } from './email/mailer.js';
import { errorBody, httpError } from './errors.js';
import { PasswordHasher } from './security/passwords.js';
import { createDb, databaseKind } from '../db/index.js';
import { migrateToLatest } from '../db/migrate.js';
import { seedPlatformAdmins } from '../db/seed.js';
import { connectRedis } from './redis.js';
import { PlanCatalog } from '../routers/billing/plans.js';
import { createProcessors } from '../routers/billing/processors/index.js';
import { createTextProvider } from '../routers/ai/providers/index.js';
import { SecretBox } from './security/secret-box.js';
import { WebhookRunner } from '../jobs/webhook-runner.js';
import { createWebhookQueue, webhookQueueEnabled } from '../jobs/queue.js';
import { Monitor } from './monitoring.js';
import { createStorage } from './storage.js';
import { InFlight } from './in-flight.js';

export interface RunningServer {
  url: string;
  deps: AppDeps;
  close(): Promise<void>;
}

export async function createDeps(config: Config, logger: Logger): Promise<AppDeps> {
  const db = await createDb(config, (err) => logger.error({ err }, 'idle database client failed'));
  try {
    const applied = await migrateToLatest(db);
    if (applied.length) logger.info({ migrations: applied }, 'database migrated');
    const passwords = new PasswordHasher(config.BCRYPT_COST);
    const redis = connectRedis(config, logger);
    // With Redis every instance hears about plan changes at once; without it, copies refresh within 5 s.
    const plans = new PlanCatalog(db, {
      ttlMs: redis ? 60_000 : 5_000,
      publisher: redis?.commands,
      publishTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS,
      subscriber: redis?.subscriber,
      logger,
    });
    const mailer = createMailer(config, db);
    const secrets = new SecretBox(config.WEBHOOK_SECRET_ENCRYPTION_KEY);
    const queue = webhookQueueEnabled(config) ? createWebhookQueue(config) : undefined;
    const deps: AppDeps = {
      config,
      db,
      logger,
      mailer,
      passwords,
      redis,
      plans,
      processors: createProcessors(config),
      ai: createTextProvider(config),
      secrets,
      webhooks: new WebhookRunner({ db, config, logger, secrets, mailer }, queue),
      monitor: new Monitor(config),
      storage: createStorage(config),
      inFlight: new InFlight(),
      startedAt: new Date(),
    };
    await Promise.all([seedPlatformAdmins(deps), passwords.warmUp(), plans.listen()]);
    return deps;
  } catch (err) {
    await db.destroy();
    throw err;
  }
}

/**
 * Answers malformed requests that never reach Express (headers over Node's 16 KiB limit, broken HTTP)
 * with the same JSON error body as everything else.
 */
function answerClientErrors(server: http.Server) {
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
    const requestId = crypto.randomUUID();
    const api =
      status === 431
        ? { status, code: 'REQUEST_HEADER_FIELDS_TOO_LARGE', message: 'Request headers are too large (limit 16 KiB).' }
        : httpError(400, 'Malformed HTTP request.');
    const body = JSON.stringify(errorBody(api, requestId));
    socket.end(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}

export async function startServer(config: Config, logger: Logger): Promise<RunningServer> {
  const deps = await createDeps(config, logger);
  const app = createApp(deps);
  deps.webhooks.startTimers();
  let closing: Promise<void> | undefined;
  // While closing, every answer ends its keep-alive connection, so clients stop sending on it.
  const server = http.createServer((req, res) => {
    if (closing) res.setHeader('Connection', 'close');
    res.once('close', deps.inFlight.begin());
    app(req, res);
  });
  answerClientErrors(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.PORT, config.HOST, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST;
  logger.info({ port, database: databaseKind(config), emailProvider: config.EMAIL_PROVIDER }, 'listening');

  const close = () =>
    (closing ??= (async () => {
      const deadline = Date.now() + config.SHUTDOWN_TIMEOUT_MS;
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => server.closeAllConnections(), config.SHUTDOWN_TIMEOUT_MS);
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      });
      // Connections are closed; a procedure whose client went away may still be running.
      if (!(await deps.inFlight.drained(Math.max(0, deadline - Date.now())))) {
        logger.warn({ inFlight: deps.inFlight.size }, 'shutdown: requests still running after SHUTDOWN_TIMEOUT_MS; closing anyway');
      }
      await deps.webhooks.stop();
      await deps.mailer.close();
      await deps.redis?.close();
      await deps.db.destroy();
    })());

  return { url: `http://${host}:${port}`, deps, close };
}
