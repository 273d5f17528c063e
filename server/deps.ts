// The composition root's services: every long-lived dependency of the app, built once from the settings
// (database and migrations, Redis, mail, storage, the domains' services and the authenticator the
// platform's procedure builders use), then the start-up seeds. Used by server.ts, the tests and the bench.
import { enforceSsoPolicy } from '../routers/sso/policy.js';
import type { Config } from './platform/config.js';
import type { AppDeps } from './platform/context.js';
import type { Logger } from './platform/logger.js';
import { createMailer } from './platform/email/mailer.js';
import { PasswordHasher } from './platform/security/passwords.js';
import { SecretBox } from './platform/security/secret-box.js';
import { connectRedis } from './platform/redis.js';
import { Monitor } from './platform/monitoring.js';
import { createStorage } from './platform/storage.js';
import { InFlight } from './platform/in-flight.js';
import { createDb } from '../db/index.js';
import { migrateToLatest } from '../db/migrate.js';
import { authenticate } from '../routers/auth/sessions.js';
import { authenticateApiKey, verifiedApiKeyId } from '../routers/api-keys/service.js';
import { seedPlatformAdmins } from '../routers/users/seed.js';
import { PlanCatalog } from '../routers/billing/plans.js';
import { createProcessors } from '../routers/billing/processors/index.js';
import { createTextProvider } from '../routers/ai/providers/index.js';
import { createIdentityProviders } from '../routers/oauth/providers/index.js';
import { WebhookRunner } from '../routers/webhooks/runner.js';
import { ImageWork } from '../routers/files/images.js';
import { webhookQueueEnabled } from './platform/queue-mode.js';

export async function createDeps(config: Config, logger: Logger): Promise<AppDeps> {
  const db = await createDb(config, (err) => logger.error({ err }, 'idle database client failed'));
  try {
    const applied = await migrateToLatest(db);
    if (applied.length) logger.info({ migrations: applied }, 'database migrated');
    const passwords = new PasswordHasher(config.BCRYPT_COST);
    const redis = await connectRedis(config, logger);
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
    const queue = webhookQueueEnabled(config)
      ? await import('../jobs/queue.js').then((q) => q.createWebhookQueue(config))
      : undefined;
    const deps: AppDeps = {
      config,
      db,
      logger,
      mailer,
      passwords,
      redis,
      plans,
      auth: {
        user: (authorization) => authenticate({ config, db }, authorization),
        apiKey: (raw) => authenticateApiKey({ db }, { key: raw }),
        knownApiKeyId: verifiedApiKeyId,
        ssoPolicy: (actor, principal, access) => enforceSsoPolicy({ db }, actor, principal, access),
      },
      processors: await createProcessors(config),
      ai: await createTextProvider(config),
      identityProviders: await createIdentityProviders(config),
      secrets,
      webhooks: new WebhookRunner({ db, config, logger, secrets, mailer }, queue),
      monitor: new Monitor(config),
      storage: createStorage(config),
      imageWork: new ImageWork({ concurrency: config.IMAGE_WORK_CONCURRENCY, queue: config.IMAGE_WORK_QUEUE }),
      inFlight: new InFlight(),
      lifecycle: { draining: false },
      startedAt: new Date(),
    };
    // The dummy hash (a bcrypt hash at BCRYPT_COST, a quarter of a second at 12) is made in the background:
    // the first sign-in of an unknown e-mail waits for it, the start-up does not.
    passwords.warmUp().catch((err: unknown) => logger.error({ err }, 'password hasher warm-up failed'));
    await Promise.all([seedPlatformAdmins(deps), plans.listen()]);
    return deps;
  } catch (err) {
    await db.destroy();
    throw err;
  }
}
