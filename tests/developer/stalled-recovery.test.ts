// How soon a killed worker's delivery runs again (BullMQ stalled-job recovery; docs/decisions.md,
// "Queues"). A worker checks for stalled jobs every quarter of WEBHOOK_JOB_LOCK_MS (jobs/queue.ts,
// stalledIntervalOf): a check marks the jobs running, every lock renewal clears the mark, and a later check
// moves back the jobs still marked whose lock has expired; a check can come an interval late. Each test
// SIGKILLs the worker running a delivery (its receiver never answers), then times the pick-up by another
// worker:
// - started after the kill, once the lock has surely expired, the job not marked at the kill (a renewal
//   came after the last check, the usual case): its first check marks the job, its next one moves it back,
//   one or two intervals later. With checks every whole lock (as before) that was one or two whole locks.
//   To kill at such a moment, the test holds the marker key of the last check (no worker checks while it
//   lives) until the lock renewal that clears the mark, and lets it go just before the second worker starts.
// - already running at the kill: between half a lock and one and a half locks after the kill.
// The lock is 4 s here, the interval 1 s (the defaults are 30 s and 7.5 s; the figures scale with them).
//
// Isolation: a redis-server and a database of the file's own; the workers are child processes.
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { RedisServer } from '../helpers/redis-server.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { WEBHOOK_QUEUE } from '../../jobs/queue.js';
import { createWebhook, hex, ownDatabase, ownerOn, startAppOn, type OwnDatabase } from './helpers.js';
import { WorkerProcess, workerEnvOf } from './queue-helpers.js';
import { waitFor } from '../helpers/wait.js';

const LOCK_MS = 4_000;
const INTERVAL_MS = LOCK_MS / 4;
const PREFIX = `test-sr-${hex(4)}`;
/** Timers, the pick-up and the machine's load, on top of the figures of the formula. */
const MARGIN_MS = 600;

let redis: RedisServer;
let db: OwnDatabase;
let app: TestApp;
let receiver: WebhookReceiver;
let client: Redis;
const workers: WorkerProcess[] = [];

const settings = () => ({
  REDIS_URL: redis.url,
  QUEUES_ENABLED: 'true',
  WEBHOOK_QUEUE_ENABLED: 'true',
  QUEUE_PREFIX: PREFIX,
  WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  WEBHOOK_TIMEOUT_MS: '60000',
  WEBHOOK_JOB_LOCK_MS: String(LOCK_MS),
  MAINTENANCE_SCHEDULER_ENABLED: 'false',
});

beforeAll(async () => {
  [redis, db, receiver] = await Promise.all([RedisServer.start(), ownDatabase('stalled'), WebhookReceiver.start()]);
  client = new Redis(redis.url);
  app = await startAppOn(db, settings());
});

afterEach(async () => {
  // No worker of one test may take the next one's delivery.
  for (const w of workers.splice(0)) await w.stop('SIGKILL');
});

afterAll(async () => {
  client?.disconnect();
  await app?.close();
  await redis?.close();
  await receiver?.close();
  await db?.drop();
});

/** Starts a worker; answers it and when it was ready (its log line's time). */
async function startWorker(label: string) {
  const w = WorkerProcess.start(label, workerEnvOf({ DATABASE_URL: db.url, ...settings() }));
  workers.push(w);
  const ready = await w.waitForLog('worker ready', 30_000);
  return { worker: w, readyAt: ready.time as number };
}

const key = (name: string) => `${PREFIX}:${WEBHOOK_QUEUE}:${name}`;
const isMarked = async (jobId: string) => (await client.sismember(key('stalled'), jobId)) === 1;

/**
 * A delivery whose receiver holds the first request (the worker running it is busy) and answers the
 * next; answers its id and the receiver's request count before it.
 */
async function heldDelivery() {
  const s = await ownerOn(app, 'lite', 'stalled');
  const hook = await createWebhook(app, s, { url: receiver.url() });
  const before = receiver.requests.length;
  receiver.reply((_req, i) => (i === before ? 'hang' : { status: 200, body: 'picked up' }));
  const sent = await app.api('POST', `/workspaces/${s.workspaceId}/webhooks/${hook.id}/test`, { token: s.accessToken });
  expect(sent.status).toBe(200);
  await receiver.waitForRequests(before + 1);
  return { id: sent.body.id as string, before };
}

/** Holds the marker key of the last stalled check: no worker checks until it is deleted. */
const holdChecks = () => client.set(key('stalled-check'), 'held by the test', 'PX', 60_000);
const releaseChecks = () => client.del(key('stalled-check'));

/** SIGKILLs `victim`; answers when. */
async function kill(victim: WorkerProcess): Promise<number> {
  victim.child.kill('SIGKILL');
  const killedAt = Date.now();
  await victim.exited;
  return killedAt;
}

/** When the receiver got the delivery again (the second request of it). */
async function pickedUpAt(before: number): Promise<number> {
  const requests = await receiver.waitForRequests(before + 2, 6 * LOCK_MS);
  return requests[before + 1].receivedAt;
}

it('a worker started after the kill (lock expired) picks the job up within two intervals of being ready', async () => {
  const first = await startWorker('first');
  const { id, before } = await heldDelivery();
  await holdChecks();
  // The next lock renewal (within a quarter lock) clears a mark, and no check comes to set it again.
  await waitFor(async () => !(await isMarked(id)), {
    timeout: LOCK_MS,
    interval: 10,
    message: 'a lock renewal to clear the mark',
  });
  const killedAt = await kill(first.worker);
  expect(await isMarked(id)).toBe(false);
  // The replacement comes up once the lock has expired (its key gone from Redis): its own checks decide
  // the timing.
  expect(await client.exists(key(`${id}:lock`)), 'the job still locked at the kill').toBe(1);
  await waitFor(async () => (await client.exists(key(`${id}:lock`))) === 0, {
    timeout: LOCK_MS + 2_000,
    interval: 10,
    message: `the lock of job ${id} to expire`,
  });
  await releaseChecks();
  const second = await startWorker('second');
  const at = await pickedUpAt(before);
  const afterReady = at - second.readyAt;
  const figure = `picked up ${afterReady} ms after the second worker was ready (${at - killedAt} ms after the kill)`;
  expect(afterReady, figure).toBeGreaterThanOrEqual(INTERVAL_MS - 100);
  expect(afterReady, figure).toBeLessThan(2 * INTERVAL_MS + MARGIN_MS);
}, 60_000);

it('a worker already running at the kill picks the job up within one and a half locks of it', async () => {
  const first = await startWorker('first again');
  const { before } = await heldDelivery();
  await startWorker('survivor');
  // Whatever the moment: the bound holds for every phase of the checks and renewals.
  const killedAt = await kill(first.worker);
  const at = await pickedUpAt(before);
  const afterKill = at - killedAt;
  const figure = `picked up ${afterKill} ms after the kill`;
  // The lock was renewed at most half a lock before the kill.
  expect(afterKill, figure).toBeGreaterThanOrEqual(LOCK_MS / 2 - 100);
  expect(afterKill, figure).toBeLessThan(LOCK_MS + 2 * INTERVAL_MS + MARGIN_MS);
}, 60_000);
