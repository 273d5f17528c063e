// Entry point of `npm run worker`: processes `deliver_webhook` jobs (BullMQ) when QUEUES_ENABLED and
// WEBHOOK_QUEUE_ENABLED are on and REDIS_URL is set, and, with MAINTENANCE_SCHEDULER_ENABLED, runs the
// repeatable maintenance jobs (the delivery sweep and the clean-up of expired tokens), and with
// DEMO_RESET_CRON the demo reset (demo/reset.ts) on the same maintenance queue. Its own Redis
// connections (blocking ones need maxRetriesPerRequest: null). SIGTERM closes the workers first (jobs in
// flight finish, within SHUTDOWN_TIMEOUT_MS), then Redis and the database pool, and exits 0. A job whose
// worker died is found stalled and run again; the delivery row makes the second run harmless. Schedulers
// that Redis lost (a restart without persistence) are put back when the connection is ready again.
import { Queue, UnrecoverableError, Worker, type Job, type RepeatOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { loadConfigOrExit } from '../server/platform/config.js';
import { createLogger, exitAfterLogs } from '../server/platform/logger.js';
import { settlesWithin } from '../server/platform/in-flight.js';
import { createMailer } from '../server/platform/email/mailer.js';
import { SecretBox } from '../server/platform/security/secret-box.js';
import { createDb } from '../db/index.js';
import { migrateToLatest } from '../db/migrate.js';
import { attemptDelivery } from '../routers/webhooks/delivery.js';
import {
  DELIVER_WEBHOOK,
  KEEP_ENDED_JOBS,
  MAINTENANCE_QUEUE,
  WEBHOOK_QUEUE,
  attemptsBeforeJob,
  createWebhookQueue,
  stalledIntervalOf,
  webhookQueueEnabled,
  type DeliverWebhookJob,
  type WebhookQueue,
} from './queue.js';
import { WebhookRunner } from './webhook-runner.js';
import { cleanUpExpiredTokens } from './maintenance.js';
import { PasswordHasher } from '../server/platform/security/passwords.js';
import { reconnectDelay } from '../server/platform/redis.js';
import { createStorage } from '../server/platform/storage.js';
import { resetDemo } from '../demo/reset.js';

const { config } = loadConfigOrExit();
const logger = createLogger(config);

if (!webhookQueueEnabled(config)) {
  logger.info(
    { queuesEnabled: config.QUEUES_ENABLED, webhookQueueEnabled: config.WEBHOOK_QUEUE_ENABLED, redis: Boolean(config.REDIS_URL) },
    'the webhook queue is off (QUEUES_ENABLED, WEBHOOK_QUEUE_ENABLED and REDIS_URL are all needed): deliveries run in the API process; nothing for the worker to do',
  );
  await exitAfterLogs(logger, 0);
}

const db = await createDb(config, (err) => logger.error({ err }, 'idle database client failed'));
await migrateToLatest(db);
const mailer = createMailer(config, db);
const deliveryDeps = { db, config, logger, mailer, secrets: new SecretBox(config.WEBHOOK_SECRET_ENCRYPTION_KEY) };
/** How long the closing of the mailer and the database pool may take once the queues are closed. */
const CLOSE_POOL_MS = 5_000;
/** Which ended maintenance jobs Redis keeps: enough to see the latest runs, not one job a minute forever. */
const KEEP_MAINTENANCE_JOBS = { removeOnComplete: { count: 100 }, removeOnFail: { count: 1000 } };
const SWEEP_DELIVERIES = 'sweep-deliveries';
const CLEAN_UP_TOKENS = 'clean-up-tokens';
/** How often the worker checks that Redis still holds the maintenance schedulers. */
const SCHEDULER_CHECK_MS = 60_000;

/** Every Redis connection the worker opens, cut at once when a shutdown cannot wait any longer. */
const connections: Redis[] = [];
const workerConnection = () => {
  const connection = new Redis(config.REDIS_URL!, { maxRetriesPerRequest: null, retryStrategy: reconnectDelay });
  // Its errors reach us through the BullMQ worker or queue using it, but only until that one closes: a
  // connection still trying to reconnect then would print "[ioredis] Unhandled error event" each time.
  connection.on('error', () => undefined);
  connections.push(connection);
  return connection;
};

/**
 * The number of the attempt a job is starting, as BullMQ counts them: every start of the job so far
 * (`attemptsStarted`, which also counts starts whose worker died before it could record anything), after
 * the attempts made before the job was queued (a manual retry's job, `<deliveryId>-retry-<attempts>`).
 */
const attemptOf = (job: Job<DeliverWebhookJob>) => attemptsBeforeJob(job.id) + job.attemptsStarted;

const deliveries = new Worker<DeliverWebhookJob>(
  WEBHOOK_QUEUE,
  async (job: Job<DeliverWebhookJob>) => {
    if (job.name !== DELIVER_WEBHOOK) return;
    const outcome = await attemptDelivery(deliveryDeps, job.data.deliveryId, { attemptAtLeast: attemptOf(job) });
    // A retryable failure goes back to BullMQ, which waits out the exponential backoff. A failed delivery
    // is over (a blocked URL or a 410 will never succeed; the last attempt failed): its job fails without
    // another try and is kept, with the reason, among the failed jobs.
    if (outcome.status === 'retrying') throw new Error('the endpoint did not accept the delivery');
    if (outcome.status === 'failed') throw new UnrecoverableError(outcome.permanent ? 'the delivery cannot succeed' : 'the last attempt of the delivery failed');
  },
  {
    ...KEEP_ENDED_JOBS,
    connection: workerConnection(),
    prefix: config.QUEUE_PREFIX,
    concurrency: config.WEBHOOK_WORKER_CONCURRENCY,
    // A running job's lock is renewed every half of it. A job whose worker died is moved back by a
    // stalled-job check that finds it marked by an earlier check (every renewal clears the mark) and its
    // lock expired; with checks every quarter lock, within one and a half locks of the kill
    // (stalledIntervalOf; docs/decisions.md, "Queues", has the measurement).
    lockDuration: config.WEBHOOK_JOB_LOCK_MS,
    stalledInterval: stalledIntervalOf(config.WEBHOOK_JOB_LOCK_MS),
  },
);
deliveries.on('failed', (job, err) => logger.info({ deliveryId: job?.data.deliveryId, attempts: job?.attemptsMade, reason: err.message }, 'delivery attempt failed'));
deliveries.on('error', (err) => logger.error({ err }, 'delivery worker error'));

let maintenance: Worker | undefined;
let maintenanceQueue: Queue | undefined;
let runnerQueue: WebhookQueue | undefined;
let stopping = false;
// From here on jobs may be in flight: SIGTERM closes gracefully, also while the start-up below waits for
// a Redis that is away.
process.once('SIGTERM', () => void shutdown('SIGTERM'));
process.once('SIGINT', () => void shutdown('SIGINT'));

// Demo reset (DEMO_RESET_CRON): demo/reset.ts's resetDemo as a repeatable job of the maintenance queue.
// Its scheduler is removed when the setting is emptied, so switching it off takes effect.
const DEMO_RESET = 'demo-reset';
const demoDeps = { db, config, passwords: new PasswordHasher(config.BCRYPT_COST), secrets: deliveryDeps.secrets, storage: createStorage(config) };
const demoReset = async () => {
  const summary = await resetDemo(demoDeps, { via: 'schedule' }).catch((err: unknown) => {
    logger.error({ err }, 'demo reset failed');
    throw err;
  });
  logger.info({ removed: summary.removed, written: summary.written, accounts: summary.accounts.map((a) => a.email) }, 'demo data reset');
  return { removed: summary.removed, written: summary.written };
};

if (config.MAINTENANCE_SCHEDULER_ENABLED || config.DEMO_RESET_CRON) {
  // The sweep re-queues deliveries that never reached the queue (Redis was away) and dispatches domain
  // events no API instance picked up.
  runnerQueue = createWebhookQueue(config);
  const runner = new WebhookRunner(deliveryDeps, runnerQueue);
  const maintenanceConnection = workerConnection();
  const queue = new Queue(MAINTENANCE_QUEUE, { connection: maintenanceConnection, prefix: config.QUEUE_PREFIX });
  maintenanceQueue = queue;
  queue.on('error', (err) => logger.warn({ err }, 'maintenance queue: Redis error'));
  // A shutdown during these calls closes the queue under them: their failure then ends nothing more.
  await scheduleMaintenance(queue).catch((err: unknown) => {
    if (!stopping) throw err;
  });
  // A Redis that restarts without persistence comes back without the schedulers: they are put back each
  // time the connection is ready again, and checked every SCHEDULER_CHECK_MS (data lost while connected).
  const restore = () => {
    if (stopping) return;
    restoreSchedulers(queue).catch((err: Error) => {
      logger.warn({ err: { message: err.message } }, 'maintenance schedulers: check failed');
    });
  };
  maintenanceConnection.on('ready', restore);
  setInterval(restore, SCHEDULER_CHECK_MS).unref();
  if (!stopping) {
    maintenance = new Worker(
      MAINTENANCE_QUEUE,
      async (job) => {
        // A job a scheduler queued before its setting was switched off does nothing.
        if (job.name === SWEEP_DELIVERIES && config.MAINTENANCE_SCHEDULER_ENABLED) return { dispatched: await runner.dispatchPending(), swept: await runner.sweep() };
        if (job.name === CLEAN_UP_TOKENS && config.MAINTENANCE_SCHEDULER_ENABLED) return cleanUpExpiredTokens(db);
        if (job.name === DEMO_RESET && config.DEMO_RESET_CRON) return demoReset();
        return undefined;
      },
      { ...KEEP_MAINTENANCE_JOBS, connection: workerConnection(), prefix: config.QUEUE_PREFIX, concurrency: 1 },
    );
    maintenance.on('error', (err) => logger.error({ err }, 'maintenance worker error'));
  }
}

if (!stopping) logger.info({ queue: WEBHOOK_QUEUE, maintenance: config.MAINTENANCE_SCHEDULER_ENABLED, demoResetCron: config.DEMO_RESET_CRON ?? null }, 'worker ready');

/** The maintenance schedulers the settings ask for, with their repeat options; the others are removed. */
function schedulers(): Array<{ id: string; repeat: RepeatOptions; wanted: boolean }> {
  return [
    { id: SWEEP_DELIVERIES, repeat: { every: 60_000 }, wanted: config.MAINTENANCE_SCHEDULER_ENABLED },
    { id: CLEAN_UP_TOKENS, repeat: { pattern: '17 3 * * *' }, wanted: config.MAINTENANCE_SCHEDULER_ENABLED },
    { id: DEMO_RESET, repeat: { pattern: config.DEMO_RESET_CRON ?? '' }, wanted: Boolean(config.DEMO_RESET_CRON) },
  ];
}

/**
 * Makes the schedulers of the maintenance queue match the settings. A scheduler stays in Redis across
 * runs, so one whose setting is now off is removed, or its jobs would go on being queued.
 */
async function scheduleMaintenance(queue: Queue) {
  for (const { id, repeat, wanted } of schedulers()) {
    if (wanted) await queue.upsertJobScheduler(id, repeat, { name: id });
    else await queue.removeJobScheduler(id);
  }
}

/** Puts back the wanted schedulers that Redis no longer holds (the others are left as they are). */
async function restoreSchedulers(queue: Queue) {
  for (const { id, repeat, wanted } of schedulers()) {
    if (!wanted || (await queue.getJobScheduler(id))) continue;
    await queue.upsertJobScheduler(id, repeat, { name: id });
    logger.warn({ scheduler: id }, 'maintenance scheduler was missing from Redis (lost data?): put back');
  }
}

/**
 * Stops the worker: jobs in flight finish, then Redis and the database pool are closed. With Redis away
 * BullMQ's close waits for it without end, so it has SHUTDOWN_TIMEOUT_MS; after that the Redis connections
 * are cut, and a job still running is dropped (its lock expires and another worker runs it again, as a
 * stalled job). Exits 0 either way: the stop was asked for.
 */
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'worker shutting down: finishing jobs in flight');
  const closing = Promise.allSettled([deliveries.close(), maintenance?.close(), maintenanceQueue?.close(), runnerQueue?.close()]);
  const graceful = await settlesWithin(config.SHUTDOWN_TIMEOUT_MS, closing);
  if (!graceful) {
    logger.warn({ timeoutMs: config.SHUTDOWN_TIMEOUT_MS }, 'worker shutdown timed out (Redis away?): closing without waiting for jobs in flight');
    for (const connection of connections) connection.disconnect();
  }
  await settlesWithin(CLOSE_POOL_MS, Promise.allSettled([mailer.close(), db.destroy()]));
  logger.info('worker stopped');
  await exitAfterLogs(logger, 0);
}
