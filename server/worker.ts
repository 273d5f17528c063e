// Entry point of `npm run worker`, the worker's composition root: the one place that runs the queues'
// processors (jobs/processors/, one file each). It runs when QUEUES_ENABLED and WEBHOOK_QUEUE_ENABLED are on and REDIS_URL is set, and owns
// what the processors share: the settings, the database, the Redis connections (each worker its own; the
// blocking ones need maxRetriesPerRequest: null), the workers' logs, the schedulers of the maintenance queue
// and the shutdown.
// - webhooks: `deliver_webhook` (jobs/processors/deliver-webhook.ts), in two lanes (jobs/lanes.ts): the `webhooks`
//   queue, and `webhooks-slow` for endpoints that do not answer promptly.
// - maintenance, with MAINTENANCE_SCHEDULER_ENABLED or DEMO_RESET_CRON: the delivery sweep and the clean-up
//   of expired tokens (jobs/processors/maintenance.ts), the demo reset (jobs/processors/demo-reset.ts), as
//   repeatable jobs (their schedules: maintenanceSchedulers in jobs/queue.ts).
// SIGTERM closes the workers first (jobs in flight finish, within SHUTDOWN_TIMEOUT_MS), then Redis and the
// database pool, and exits 0. A job whose worker died is found stalled and run again; the delivery row
// makes the second run harmless. Schedulers that Redis lost (a restart without persistence) are put back
// when the connection is ready again.
import { Queue, Worker, type Job, type WorkerOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { loadConfigOrExit } from './platform/config.js';
import { createLogger, exitAfterLogs } from './platform/logger.js';
import { settlesWithin } from './platform/in-flight.js';
import { createMailer } from './platform/email/mailer.js';
import { SecretBox } from './platform/security/secret-box.js';
import { PasswordHasher } from './platform/security/passwords.js';
import { reconnectDelay } from './platform/redis.js';
import { createStorage } from './platform/storage.js';
import { createDb } from '../db/index.js';
import { createProcessors } from '../routers/billing/processors/index.js';
import { migrateToLatest } from '../db/migrate.js';
import {
  CLEAN_UP_TOKENS,
  DELIVER_WEBHOOK,
  DEMO_RESET,
  KEEP_ENDED_JOBS,
  KEEP_MAINTENANCE_JOBS,
  MAINTENANCE_QUEUE,
  SWEEP_DELIVERIES,
  WEBHOOK_QUEUE,
  WEBHOOK_SLOW_QUEUE,
  createWebhookQueue,
  deliverJobOptions,
  maintenanceSchedulers,
  stalledIntervalOf,
  type DeliverWebhookJob,
  type WebhookQueue,
} from '../jobs/queue.js';
import { WebhookRunner } from '../routers/webhooks/runner.js';
import { EndpointLanes, slowMarkKey } from '../jobs/lanes.js';
import { deliverWebhook } from '../jobs/processors/deliver-webhook.js';
import { cleanUpTokens, sweepDeliveries } from '../jobs/processors/maintenance.js';
import { demoReset } from '../jobs/processors/demo-reset.js';
import { resetDemo } from '../demo/reset.js';
import { periodicTasks } from './tasks.js';
import { webhookQueueEnabled } from './platform/queue-mode.js';

const { config } = loadConfigOrExit();
const logger = createLogger(config);

if (!webhookQueueEnabled(config)) {
  logger.info(
    {
      queuesEnabled: config.QUEUES_ENABLED,
      webhookQueueEnabled: config.WEBHOOK_QUEUE_ENABLED,
      redis: Boolean(config.REDIS_URL),
    },
    'the webhook queue is off (QUEUES_ENABLED, WEBHOOK_QUEUE_ENABLED and REDIS_URL are all needed): deliveries run in the API process; nothing for the worker to do',
  );
  await exitAfterLogs(logger, 0);
}

const db = await createDb(config, (err) => logger.error({ err }, 'idle database client failed'));
await migrateToLatest(db);
const mailer = createMailer(config, db);
const secrets = new SecretBox(config.WEBHOOK_SECRET_ENCRYPTION_KEY);
const deliveryDeps = { db, config, logger, mailer, secrets };
/** How long the closing of the mailer and the database pool may take once the queues are closed. */
const CLOSE_POOL_MS = 5_000;
/** How often the worker checks that Redis still holds the maintenance schedulers. */
const SCHEDULER_CHECK_MS = 60_000;

// ---------------------------------------------------------------- the registry

/** Every Redis connection the worker opens, cut at once when a shutdown cannot wait any longer. */
const connections: Redis[] = [];
/** The workers, then the queues, the worker has opened: closed at shutdown. */
const workers: Worker[] = [];
const queues: Array<Pick<Queue, 'close'>> = [];

const workerConnection = () => {
  const connection = new Redis(config.REDIS_URL!, { maxRetriesPerRequest: null, retryStrategy: reconnectDelay });
  // Its errors reach us through the BullMQ worker or queue using it, but only until that one closes: a
  // connection still trying to reconnect then would print "[ioredis] Unhandled error event" each time.
  connection.on('error', () => undefined);
  connections.push(connection);
  return connection;
};

/** Runs a job by its name's processor; a job of another name does nothing. */
type Processors<T> = Record<string, (job: Job<T>) => Promise<unknown>>;

/** A BullMQ worker of `queue` on a connection of its own, running `processors`; closed at shutdown. */
function register<T>(queue: string, processors: Processors<T>, options: Omit<WorkerOptions, 'connection' | 'prefix'>) {
  const byName = new Map(Object.entries(processors));
  const worker = new Worker<T>(queue, async (job) => byName.get(job.name)?.(job), {
    ...options,
    connection: workerConnection(),
    prefix: config.QUEUE_PREFIX,
  });
  workers.push(worker as Worker);
  return worker;
}

// ---------------------------------------------------------------- webhooks

// The lanes (lanes.ts): an endpoint that does not answer holds at most WEBHOOK_ENDPOINT_CONCURRENCY of the
// main lane's slots; its other deliveries move to the slow lane, under the same job id.
const marksConnection = workerConnection();
const lanes = new EndpointLanes(config, {
  mark: (webhookId) =>
    void marksConnection
      .set(slowMarkKey(config.QUEUE_PREFIX, webhookId), '1', 'PX', config.WEBHOOK_SLOW_LANE_SECONDS * 1000)
      .catch(() => undefined),
  clear: (webhookId) => void marksConnection.del(slowMarkKey(config.QUEUE_PREFIX, webhookId)).catch(() => undefined),
});
const slowLane = new Queue<DeliverWebhookJob>(WEBHOOK_SLOW_QUEUE, {
  connection: marksConnection,
  prefix: config.QUEUE_PREFIX,
});
slowLane.on('error', (err) => logger.warn({ err }, 'slow lane queue: Redis error'));
queues.push(slowLane);
const mainLane = {
  gate: lanes.main,
  async turnAway(job: Job<DeliverWebhookJob>) {
    const options = deliverJobOptions(config, job.data.deliveryId);
    await slowLane.add(DELIVER_WEBHOOK, job.data, { ...options, jobId: job.id });
  },
};

const deliveries = register<DeliverWebhookJob>(
  WEBHOOK_QUEUE,
  { [DELIVER_WEBHOOK]: deliverWebhook(deliveryDeps, mainLane) },
  {
    ...KEEP_ENDED_JOBS,
    concurrency: config.WEBHOOK_WORKER_CONCURRENCY,
    // A running job's lock is renewed every half of it. A job whose worker died is moved back by a
    // stalled-job check that finds it marked by an earlier check (every renewal clears the mark) and its
    // lock expired; with checks every quarter lock, within one and a half locks of the kill
    // (stalledIntervalOf; docs/decisions.md, "Queues", has the measurement).
    lockDuration: config.WEBHOOK_JOB_LOCK_MS,
    stalledInterval: stalledIntervalOf(config.WEBHOOK_JOB_LOCK_MS),
  },
);
const slowDeliveries = register<DeliverWebhookJob>(
  WEBHOOK_SLOW_QUEUE,
  { [DELIVER_WEBHOOK]: deliverWebhook(deliveryDeps, { gate: lanes.slow }) },
  {
    ...KEEP_ENDED_JOBS,
    concurrency: config.WEBHOOK_SLOW_LANE_CONCURRENCY,
    lockDuration: config.WEBHOOK_JOB_LOCK_MS,
    stalledInterval: stalledIntervalOf(config.WEBHOOK_JOB_LOCK_MS),
  },
);
for (const [lane, worker] of [
  ['main', deliveries],
  ['slow', slowDeliveries],
] as const) {
  worker.on('failed', (job, err) => {
    const attempt = { deliveryId: job?.data.deliveryId, attempts: job?.attemptsMade, reason: err.message, lane };
    logger.info(attempt, 'delivery attempt failed');
  });
  worker.on('error', (err) => logger.error({ err, lane }, 'delivery worker error'));
}

let stopping = false;
// From here on jobs may be in flight: SIGTERM closes gracefully, also while the start-up below waits for
// a Redis that is away.
process.once('SIGTERM', () => void shutdown('SIGTERM'));
process.once('SIGINT', () => void shutdown('SIGINT'));

// ---------------------------------------------------------------- maintenance

const passwords = new PasswordHasher(config.BCRYPT_COST);
const storage = createStorage(config);
const demoDeps = { db, config, passwords, secrets, storage };
// The domains' periodic tasks run here when the queues are on (the API runs them otherwise).
const tasks = periodicTasks({ db, config, storage, logger, mailer, processors: await createProcessors(config) });

{
  // The sweep queues deliveries through the webhooks queue, with a producer of its own.
  const runnerQueue: WebhookQueue = await createWebhookQueue(config);
  const runner = new WebhookRunner(deliveryDeps, runnerQueue);
  const maintenanceConnection = workerConnection();
  const queue = new Queue(MAINTENANCE_QUEUE, { connection: maintenanceConnection, prefix: config.QUEUE_PREFIX });
  queues.push(queue, runnerQueue);
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
    const maintenance = register(
      MAINTENANCE_QUEUE,
      {
        [SWEEP_DELIVERIES]: sweepDeliveries({ config, runner }),
        [CLEAN_UP_TOKENS]: cleanUpTokens({ config, db }),
        [DEMO_RESET]: demoReset({ reset: () => resetDemo(demoDeps, { via: 'schedule' }), config, logger }),
        ...Object.fromEntries(tasks.map((task) => [task.name, () => task.run()])),
      },
      { ...KEEP_MAINTENANCE_JOBS, concurrency: 1 },
    );
    maintenance.on('error', (err) => logger.error({ err }, 'maintenance worker error'));
  }
}

if (!stopping) {
  const settings = { maintenance: config.MAINTENANCE_SCHEDULER_ENABLED, demoResetCron: config.DEMO_RESET_CRON ?? null };
  logger.info({ queue: WEBHOOK_QUEUE, ...settings }, 'worker ready');
}

/**
 * Makes the schedulers of the maintenance queue match the settings. A scheduler stays in Redis across
 * runs, so one whose setting is now off is removed, or its jobs would go on being queued.
 */
async function scheduleMaintenance(queue: Queue) {
  for (const { id, repeat, wanted } of maintenanceSchedulers(config, tasks)) {
    if (wanted) await queue.upsertJobScheduler(id, repeat, { name: id });
    else await queue.removeJobScheduler(id);
  }
}

/** Puts back the wanted schedulers that Redis no longer holds (the others are left as they are). */
async function restoreSchedulers(queue: Queue) {
  for (const { id, repeat, wanted } of maintenanceSchedulers(config, tasks)) {
    if (!wanted || (await queue.getJobScheduler(id))) continue;
    await queue.upsertJobScheduler(id, repeat, { name: id });
    logger.warn({ scheduler: id }, 'maintenance scheduler was missing from Redis (lost data?): put back');
  }
}

// ---------------------------------------------------------------- shutdown

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
  const closing = Promise.allSettled([...workers, ...queues].map((closable) => closable.close()));
  const graceful = await settlesWithin(config.SHUTDOWN_TIMEOUT_MS, closing);
  if (!graceful) {
    logger.warn(
      { timeoutMs: config.SHUTDOWN_TIMEOUT_MS },
      'worker shutdown timed out (Redis away?): closing without waiting for jobs in flight',
    );
    for (const connection of connections) connection.disconnect();
  }
  await settlesWithin(CLOSE_POOL_MS, Promise.allSettled([mailer.close(), db.destroy()]));
  logger.info('worker stopped');
  await exitAfterLogs(logger, 0);
}
