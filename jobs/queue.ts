// The queues: their names, job names and options, and the producers. `webhooks` holds the `deliver_webhook`
// jobs. Jobs carry the delivery id only (no secret, no payload copy in Redis); the job id is the delivery
// id, so a delivery is queued once. The producer's Redis connection fails fast: if Redis is away or answers
// nothing for REDIS_COMMAND_TIMEOUT_MS, the delivery stays `pending` and a sweep enqueues it later.
// `maintenance` holds the repeatable jobs the worker schedules (maintenanceSchedulers). The processors are
// in jobs/processors/, registered by the worker (server/worker.ts).
import type { RepeatOptions } from 'bullmq';
import type { Config } from '../server/platform/config.js';
import { settlesWithin } from '../server/platform/in-flight.js';
import { reconnectDelay } from '../server/platform/redis.js';
import { slowMarkKey } from './lanes.js';

export const WEBHOOK_QUEUE = 'webhooks';
/** The slow lane: deliveries to endpoints that do not answer promptly, with a concurrency of their own (lanes.ts). */
export const WEBHOOK_SLOW_QUEUE = 'webhooks-slow';
export const DELIVER_WEBHOOK = 'deliver_webhook';
export const MAINTENANCE_QUEUE = 'maintenance';
/** Jobs of the maintenance queue: the delivery sweep, the clean-up of expired tokens, the demo reset. */
export const SWEEP_DELIVERIES = 'sweep-deliveries';
export const CLEAN_UP_TOKENS = 'clean-up-tokens';
export const DEMO_RESET = 'demo-reset';

export interface DeliverWebhookJob {
  deliveryId: string;
}

/** How a deliver_webhook job is queued: its id is the delivery id (a manual retry gets its own). */
export function deliverJobOptions(
  config: Pick<Config, 'WEBHOOK_MAX_RETRIES' | 'WEBHOOK_RETRY_BACKOFF_SECONDS'>,
  deliveryId: string,
  retry?: number,
) {
  return {
    jobId: retry === undefined ? deliveryId : `${deliveryId}-retry-${retry}`,
    attempts: config.WEBHOOK_MAX_RETRIES + 1,
    backoff: { type: 'exponential', delay: config.WEBHOOK_RETRY_BACKOFF_SECONDS * 1000 },
  };
}

/**
 * Which ended deliver_webhook jobs the worker keeps (its options, so that no job carries them). A
 * completed job is removed at once: it holds nothing its delivery row does not (its id), and
 * keeping the last thousand cost Redis a trim with every completion. Failed jobs stay, the last 5,000, with
 * the reason they failed.
 */
export const KEEP_ENDED_JOBS = { removeOnComplete: { count: 0 }, removeOnFail: { count: 5000 } };

/** Which ended maintenance jobs Redis keeps: enough to see the latest runs, not one job a minute forever. */
export const KEEP_MAINTENANCE_JOBS = { removeOnComplete: { count: 100 }, removeOnFail: { count: 1000 } };

/**
 * The schedulers of the maintenance queue, with their repeat options and whether the settings want them
 * (MAINTENANCE_SCHEDULER_ENABLED: the sweep every minute and a daily clean-up; DEMO_RESET_CRON: the demo
 * reset), and the periodic tasks of the domains (always: server/tasks.ts). The worker removes the ones not
 * wanted, so switching a setting off takes effect.
 */
export function maintenanceSchedulers(
  config: Pick<Config, 'MAINTENANCE_SCHEDULER_ENABLED' | 'DEMO_RESET_CRON'>,
  tasks: ReadonlyArray<{ name: string; everyMs: number }> = [],
): Array<{ id: string; repeat: RepeatOptions; wanted: boolean }> {
  return [
    { id: SWEEP_DELIVERIES, repeat: { every: 60_000 }, wanted: config.MAINTENANCE_SCHEDULER_ENABLED },
    { id: CLEAN_UP_TOKENS, repeat: { pattern: '17 3 * * *' }, wanted: config.MAINTENANCE_SCHEDULER_ENABLED },
    { id: DEMO_RESET, repeat: { pattern: config.DEMO_RESET_CRON ?? '' }, wanted: Boolean(config.DEMO_RESET_CRON) },
    ...tasks.map((task) => ({ id: task.name, repeat: { every: task.everyMs }, wanted: true })),
  ];
}

/**
 * How often a worker checks for jobs whose worker died (BullMQ's stalledInterval): every quarter of the job
 * lock (WEBHOOK_JOB_LOCK_MS). A check marks the jobs running, every lock renewal clears the mark, and a
 * later check moves back the jobs still marked whose lock has expired. A check is skipped while the marker
 * key of the previous one lives (one interval), so the workers share one check per interval; a worker's own
 * next check often comes a hair early and is skipped too, so checks can be two intervals apart. A killed
 * worker's lock was renewed at most half a lock before the kill, so its job runs again between half a lock
 * and a lock plus two intervals (one and a half locks) after the kill; a worker started after the kill
 * moves it back within three intervals of its start. At a whole lock (as before), that was up to four
 * locks, and a worker started after the kill needed up to three locks.
 */
export const stalledIntervalOf = (lockMs: number) => Math.round(lockMs / 4);

/** The attempts a delivery had before its job was queued: a manual retry's job id carries them. */
export const attemptsBeforeJob = (jobId: string | undefined) => Number(/-retry-(\d+)$/.exec(jobId ?? '')?.[1] ?? 0);

/**
 * A delivery to queue (`retry`: the attempts made so far, for a manual retry; `webhookId`: its endpoint, whose
 * slow mark sends it to the slow lane), and one that was not.
 */
type Entry = { deliveryId: string; retry?: number; webhookId?: string };
type Failure = { deliveryId: string; error: Error };

/**
 * The producer of the webhooks queue. BullMQ and ioredis are loaded here, on the first call: a process
 * whose settings keep the queue off (the API with no Redis) never loads them.
 */
export async function createWebhookQueue(config: Config) {
  const [{ Queue }, { Redis }] = await Promise.all([import('bullmq'), import('ioredis')]);
  /** The longest an enqueue takes, waiting for a connection that is not ready included. */
  const waitMs = config.REDIS_COMMAND_TIMEOUT_MS;
  const connection = new Redis(config.REDIS_URL!, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 2000,
    commandTimeout: waitMs,
    retryStrategy: reconnectDelay,
  });
  connection.on('error', () => {
    /* reported by the callers whose commands fail */
  });
  const queue = new Queue<DeliverWebhookJob>(WEBHOOK_QUEUE, { connection, prefix: config.QUEUE_PREFIX });
  const slowQueue = new Queue<DeliverWebhookJob>(WEBHOOK_SLOW_QUEUE, { connection, prefix: config.QUEUE_PREFIX });
  for (const q of [queue, slowQueue])
    q.on('error', () => {
      /* connection errors: the enqueue that meets one fails, and its caller logs it */
    });
  /**
   * Promotes the delivery's own job (in either lane) if it waits out a backoff; false when that job has
   * ended (or is gone).
   */
  async function runOwnJobNow(deliveryId: string): Promise<boolean> {
    for (const q of [queue, slowQueue]) {
      const job = await q.getJob(deliveryId);
      if (!job) continue;
      const state = await job.getState();
      if (state === 'delayed') await job.promote().catch(() => undefined); // it may have just moved on by itself
      if (state === 'delayed' || state === 'waiting' || state === 'prioritized' || state === 'active') return true;
    }
    return false;
  }

  /** The lane of each entry: the slow one when its endpoint is marked slow (one MGET for them all). */
  async function lanesOf(entries: Entry[]): Promise<Array<typeof queue>> {
    const hooks = [...new Set(entries.flatMap((e) => (e.webhookId ? [e.webhookId] : [])))];
    if (hooks.length === 0) return entries.map(() => queue);
    const marks = await connection.mget(hooks.map((id) => slowMarkKey(config.QUEUE_PREFIX, id)));
    const slow = new Set(hooks.filter((_, i) => marks[i] !== null));
    return entries.map((e) => (e.webhookId && slow.has(e.webhookId) ? slowQueue : queue));
  }

  /**
   * Runs again a job that has ended although its delivery still waits for an attempt: its attempts were
   * used up by failures that were not the endpoint's (Postgres away through all of them), and while it
   * exists, adding a job of the same id does nothing. False when there is no such job.
   */
  async function reviveEndedJob(jobId: string): Promise<boolean> {
    for (const q of [queue, slowQueue]) {
      const job = await q.getJob(jobId);
      const state = job ? await job.getState() : undefined;
      if (!job || (state !== 'failed' && state !== 'completed')) continue;
      await job.retry(state, { resetAttemptsMade: true, resetAttemptsStarted: true });
      return true;
    }
    return false;
  }

  /** Resolves once the connection is ready; rejects after `waitMs` (a request must not wait long). */
  async function ready(): Promise<void> {
    if (connection.status === 'ready') return;
    let timer: NodeJS.Timeout | undefined;
    let onReady: (() => void) | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        connection.once('ready', (onReady = resolve));
        const notReady = () => new Error(`Redis is not ready (${connection.status}): the delivery stays pending`);
        timer = setTimeout(() => reject(notReady()), waitMs);
      });
    } finally {
      clearTimeout(timer);
      if (onReady) connection.off('ready', onReady);
    }
  }

  /**
   * Queues the deliveries' jobs: a first attempt's by one bulk add, a manual retry's (`retry`: the attempts
   * made so far) one by one, each running the delivery's own job now where that job has not ended. Takes at
   * most `waitMs` in all, waiting for a connection that is not ready included: past it every delivery
   * counts as not queued and stays pending, and the sweep queues it later. A command Redis executes after
   * that (a frozen Redis runs what it was sent once it thaws) queues the same job id as the sweep will, and
   * BullMQ keeps one job per id; a job run after its delivery succeeded finds the row final and sends
   * nothing (routers/webhooks/delivery.ts). Answers the deliveries that could not be queued, with the
   * reason. `swept`: the deliveries were found waiting too long (the sweep), so a job of theirs that has
   * ended is run again rather than added.
   */
  async function enqueueAll(entries: Entry[], opts: { swept?: boolean } = {}): Promise<Failure[]> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<Failure[]>((resolve) => {
      const error = new Error(`Redis did not answer within ${waitMs} ms: the delivery stays pending`);
      timer = setTimeout(() => resolve(entries.map(({ deliveryId }) => ({ deliveryId, error }))), waitMs);
    });
    try {
      return await Promise.race([enqueue(entries, opts), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  async function enqueue(entries: Entry[], opts: { swept?: boolean }): Promise<Failure[]> {
    const failed = (list: typeof entries, error: Error) => list.map(({ deliveryId }) => ({ deliveryId, error }));
    try {
      await ready();
    } catch (err) {
      return failed(entries, err as Error);
    }
    let firsts = entries.filter((e) => e.retry === undefined);
    const retries = entries.filter((e) => e.retry !== undefined);
    const failures: Failure[] = [];
    if (opts.swept) {
      const revived = await Promise.all(firsts.map(({ deliveryId }) => reviveEndedJob(deliveryId).catch(() => false)));
      firsts = firsts.filter((_, i) => !revived[i]);
    }
    let lanes: Array<typeof queue>;
    try {
      lanes = await lanesOf(entries);
    } catch (err) {
      return failed(entries, err as Error);
    }
    const laneOf = new Map(entries.map((e, i) => [e, lanes[i]]));
    for (const lane of [queue, slowQueue]) {
      const list = firsts.filter((e) => laneOf.get(e) === lane);
      if (list.length === 0) continue;
      await lane
        .addBulk(
          list.map(({ deliveryId }) => ({
            name: DELIVER_WEBHOOK,
            data: { deliveryId },
            opts: deliverJobOptions(config, deliveryId),
          })),
        )
        .catch((err: Error) => failures.push(...failed(list, err)));
    }
    for (const entry of retries) {
      const { deliveryId, retry } = entry;
      try {
        if (await runOwnJobNow(deliveryId)) continue;
        const options = deliverJobOptions(config, deliveryId, retry);
        if (!(await reviveEndedJob(options.jobId)))
          await laneOf.get(entry)!.add(DELIVER_WEBHOOK, { deliveryId }, options);
      } catch (err) {
        failures.push({ deliveryId, error: err as Error });
      }
    }
    return failures;
  }

  return {
    queue,
    enqueueAll,
    async close() {
      // BullMQ's close waits for a connection that never came, or for the answers of a Redis that gives
      // none; without them there is nothing to flush.
      if (connection.status !== 'ready') connection.disconnect();
      await settlesWithin(waitMs, Promise.all([queue.close(), slowQueue.close()]));
      connection.disconnect();
    },
  };
}

export type WebhookQueue = Awaited<ReturnType<typeof createWebhookQueue>>;
