// Queue mode with an endpoint that never answers: it must not hold up the deliveries of another workspace's
// healthy endpoint (jobs/lanes.ts). The real worker runs as a child process with 4 slots, at most 2 of them
// for an endpoint that is not answering promptly, a 1-slot slow lane and a 4 s delivery timeout: without
// the lanes, 8 deliveries to the hanging endpoint queued first would hold every slot for 4 s, and the
// healthy endpoint's deliveries would wait that long.
//
// Isolation: a database and a QUEUE_PREFIX of the file's own; every key under the prefix is deleted at the end.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { Session } from '../helpers/http.js';
import { TEST_CA_FILE, WebhookReceiver } from '../helpers/webhook-receiver.js';
import { WEBHOOK_QUEUE, WEBHOOK_SLOW_QUEUE } from '../../jobs/queue.js';
import { slowMarkKey } from '../../jobs/lanes.js';
import { createWebhook, hex, ownDatabase, ownerOn, startAppOn, type OwnDatabase } from './helpers.js';
import { WorkerProcess, deleteKeys, workerEnvOf } from './queue-helpers.js';
import { waitFor } from '../helpers/wait.js';

const REDIS_URL = inject('redisUrl');
const PREFIX = `test-lane-${hex(6)}`;
const TIMEOUT_MS = 4_000;
const settings: Record<string, string> = {
  REDIS_URL,
  QUEUES_ENABLED: 'true',
  WEBHOOK_QUEUE_ENABLED: 'true',
  QUEUE_PREFIX: PREFIX,
  WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
  WEBHOOK_MAX_RETRIES: '0',
  WEBHOOK_WORKER_CONCURRENCY: '4',
  WEBHOOK_ENDPOINT_CONCURRENCY: '2',
  WEBHOOK_SLOW_LANE_CONCURRENCY: '1',
  MAINTENANCE_SCHEDULER_ENABLED: 'false',
  RATE_LIMIT_ENABLED: 'false',
};

let db: OwnDatabase;
let app: TestApp;
let worker: WorkerProcess;
let redis: Redis;
let slowLane: Queue;
let mainLane: Queue;
const receivers: WebhookReceiver[] = [];

beforeAll(async () => {
  db = await ownDatabase('lanes');
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  slowLane = new Queue(WEBHOOK_SLOW_QUEUE, { connection: redis, prefix: PREFIX });
  mainLane = new Queue(WEBHOOK_QUEUE, { connection: redis, prefix: PREFIX });
  worker = WorkerProcess.start(
    'lanes',
    workerEnvOf({ ...settings, DATABASE_URL: db.url, NODE_EXTRA_CA_CERTS: TEST_CA_FILE }),
  );
  [app] = await Promise.all([startAppOn(db, settings), worker.waitForLog('worker ready', 30_000)]);
}, 60_000);

afterAll(async () => {
  for (const r of receivers) r.releaseHanging();
  await worker?.stop('SIGKILL');
  await app?.close();
  await Promise.all(receivers.map((r) => r.close()));
  await slowLane?.close();
  await mainLane?.close();
  if (redis) {
    await deleteKeys(redis, PREFIX);
    redis.disconnect();
  }
  await db?.drop();
});

async function hookOf(s: Session, r: WebhookReceiver) {
  return createWebhook(app, s, { url: r.url(), events: ['webhook.test'] });
}

/** POST .../test: queued at once in queue mode; answers the delivery id and when it was queued. */
async function sendTest(s: Session, hookId: string) {
  const res = await app.api('POST', `/workspaces/${s.workspaceId}/webhooks/${hookId}/test`, { token: s.accessToken });
  expect(res.status, res.text).toBe(200);
  expect(res.body.status).toBe('pending');
  return { id: res.body.id as string, queuedAt: Date.now() };
}

const deliveryRow = (id: string) =>
  app.deps.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

describe('an endpoint that never answers does not hold up the deliveries to other endpoints', () => {
  it('the healthy endpoint gets its deliveries at once while the hanging one holds at most its share of the slots; the rest move to the slow lane, job id = delivery id', async () => {
    const hanging = await WebhookReceiver.start();
    hanging.reply('hang');
    const healthy = await WebhookReceiver.start();
    healthy.reply({ status: 200, body: 'ok' });
    receivers.push(hanging, healthy);
    const badOwner = await ownerOn(app, 'pro', 'lane-bad');
    const goodOwner = await ownerOn(app, 'pro', 'lane-good');
    const bad = await hookOf(badOwner, hanging);
    const good = await hookOf(goodOwner, healthy);

    // The hanging endpoint's deliveries first: enough to take every slot of the worker.
    const badSent: Array<{ id: string; queuedAt: number }> = [];
    for (let i = 0; i < 8; i++) badSent.push(await sendTest(badOwner, bad.id));
    await waitFor(async () => hanging.requests.length >= 2 || undefined, {
      message: 'the hanging endpoint to hold requests',
    });
    const goodSent: Array<{ id: string; queuedAt: number }> = [];
    for (let i = 0; i < 6; i++) goodSent.push(await sendTest(goodOwner, good.id));

    const received = await healthy.waitForRequests(goodSent.length);
    for (const sent of goodSent) {
      const req = received.find((r) => r.headers['x-service-delivery'] === sent.id);
      expect(req, `delivery ${sent.id} reached the healthy endpoint`).toBeDefined();
      // Well inside the timeout a slot held by the hanging endpoint would have cost.
      expect(req!.receivedAt - sent.queuedAt).toBeLessThan(TIMEOUT_MS / 2);
    }
    // At most 2 (main lane) + 1 (slow lane) requests of the hanging endpoint were open at once: those that
    // arrived before the first one could time out.
    const firstHeld = Math.min(...hanging.requests.map((r) => r.receivedAt));
    expect(hanging.requests.filter((r) => r.receivedAt < firstHeld + TIMEOUT_MS).length).toBeLessThanOrEqual(3);
    for (const sent of goodSent) {
      await waitFor(async () => (await deliveryRow(sent.id)).status === 'success', {
        message: `delivery ${sent.id} recorded`,
      });
    }

    // The turned-away deliveries wait in the slow lane under their own ids, nothing sent and nothing recorded.
    const inSlowLane = await waitFor(
      async () => {
        const jobs = await Promise.all(badSent.map((s) => slowLane.getJob(s.id)));
        const there = jobs.filter((j) => j !== undefined);
        return there.length >= 4 ? there : undefined;
      },
      { message: 'deliveries moved to the slow lane' },
    );
    for (const job of inSlowLane) expect(job.id).toBe(job.data.deliveryId);
    const waiting = await deliveryRow(inSlowLane[inSlowLane.length - 1].id!);
    expect(waiting).toMatchObject({ status: 'pending', attempts: 0 });

    // The first attempts time out: recorded as such, and the endpoint is marked slow in Redis.
    const first = await waitFor(
      async () => {
        const rows = await Promise.all(badSent.map((s) => deliveryRow(s.id)));
        return rows.find((r) => r.status === 'failed');
      },
      { timeout: 20_000, message: 'a timed-out attempt to be recorded' },
    );
    expect(first).toMatchObject({ attempts: 1, response_status: null });
    expect(first.last_error).toMatch(new RegExp(`no answer within ${TIMEOUT_MS} ms`));
    await waitFor(async () => (await redis.exists(slowMarkKey(PREFIX, bad.id))) === 1 || undefined, {
      message: 'the slow mark',
    });

    // A new delivery to the marked endpoint is queued straight into the slow lane; the healthy one's still
    // go through the main lane and arrive at once.
    const later = await sendTest(badOwner, bad.id);
    expect((await slowLane.getJob(later.id))?.id).toBe(later.id);
    expect(await mainLane.getJob(later.id)).toBeUndefined();
    const again = await sendTest(goodOwner, good.id);
    const [req] = await healthy.waitForRequests(goodSent.length + 1);
    const last = healthy.requests.find((r) => r.headers['x-service-delivery'] === again.id) ?? req;
    expect(last.receivedAt - again.queuedAt).toBeLessThan(TIMEOUT_MS / 2);
  }, 60_000);
});
