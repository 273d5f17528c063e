// A delivery whose BullMQ job used up its attempts while Postgres was away (the worker could not read the
// delivery, so no attempt was made or recorded) stays `pending`, and while the failed job exists, queuing
// a job of the same id does nothing. The sweep finds such a delivery and runs its job again, and it is
// delivered once. Its own database and queue prefix: no other worker of the suite may take its jobs.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { afterAll, expect, inject, it } from 'vitest';
import { testEnv, type TestApp } from '../helpers/app.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { WEBHOOK_QUEUE } from '../../jobs/queue.js';
import { WorkerProcess, deleteKeys } from './queue-helpers.js';
import { createWebhook, hex, ownDatabase, ownerOn, startAppOn, type OwnDatabase } from './helpers.js';
import { waitFor } from '../helpers/wait.js';

const REDIS_URL = inject('redisUrl');
const PREFIX = `test-qr-${hex(6)}`;
const SETTINGS = {
  REDIS_URL,
  QUEUES_ENABLED: 'true',
  WEBHOOK_QUEUE_ENABLED: 'true',
  QUEUE_PREFIX: PREFIX,
  WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  WEBHOOK_RETRY_BACKOFF_SECONDS: '1',
  WEBHOOK_MAX_RETRIES: '1',
  MAINTENANCE_SCHEDULER_ENABLED: 'false',
  RATE_LIMIT_ENABLED: 'false',
};

let db: OwnDatabase | undefined;
let app: TestApp | undefined;
let proxy: TcpProxy | undefined;
let worker: WorkerProcess | undefined;
let receiver: WebhookReceiver | undefined;
const redis = new Redis(REDIS_URL);
const jobs = new Queue(WEBHOOK_QUEUE, { connection: redis, prefix: PREFIX });

afterAll(async () => {
  worker?.child.kill('SIGKILL');
  await app?.close();
  await proxy?.close();
  await receiver?.close();
  await jobs.close();
  await deleteKeys(redis, PREFIX);
  redis.disconnect();
  await db?.drop();
});

it('a delivery whose job failed all its attempts while Postgres was away is found by the sweep, its job run again, and delivered once', async () => {
  db = await ownDatabase('queue_recovery');
  app = await startAppOn(db, SETTINGS);
  // The worker reaches Postgres through a proxy the test cuts; the API does not.
  proxy = await TcpProxy.start(new URL(db.url));
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, ...testEnv({ DATABASE_URL: proxy.url, ...SETTINGS }) };
  worker = WorkerProcess.start(
    'recovery',
    Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === 'string')),
  );
  await worker.waitForLog('worker ready', 30_000);
  const s = await ownerOn(app, 'lite', 'qr');
  receiver = await WebhookReceiver.start();
  receiver.reply({ status: 200 });
  const hook = await createWebhook(app, s, { url: receiver.url() });

  await proxy.cut();
  const sent = await app.api('POST', `/workspaces/${s.workspaceId}/webhooks/${hook.id}/test`, { token: s.accessToken });
  expect(sent.body).toMatchObject({ status: 'pending', attempts: 0 });
  const id = sent.body.id as string;
  // Two tries, 1 s apart, both failing to read the delivery: the job fails for good.
  await waitFor(
    async () => ((await jobs.getJob(id)) && (await (await jobs.getJob(id))!.getState()) === 'failed') || undefined,
    { timeout: 15_000, interval: 100, message: 'the job to fail for good' },
  );
  await proxy.restore();
  const row = () =>
    app!.deps.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  expect(await row()).toMatchObject({ status: 'pending', attempts: 0 });
  expect(receiver.requests).toHaveLength(0);

  // The sweep takes deliveries pending for more than 30 s.
  await sql`update webhook_deliveries set created_at = now() - interval '31 seconds' where id = ${id}`.execute(
    app.deps.db,
  );
  expect(await app.deps.webhooks.sweep()).toBeGreaterThanOrEqual(1);
  const done = await waitFor(async () => ((await row()).status === 'success' ? row() : undefined), {
    timeout: 15_000,
    interval: 100,
    message: 'the delivery to succeed',
  });
  expect(done).toMatchObject({ status: 'success', attempts: 1, response_status: 200 });
  // Delivered once: checked after a later delivery to the same receiver, queued and sent the same way, came.
  const laterHook = await createWebhook(app, s, { url: receiver.url('/later') });
  const later = await app.api('POST', `/workspaces/${s.workspaceId}/webhooks/${laterHook.id}/test`, {
    token: s.accessToken,
  });
  expect(later.status, later.text).toBe(200);
  await receiver.waitForRequests(2);
  expect(receiver.requests.map((q) => q.headers['x-service-delivery'])).toEqual([id, later.body.id]);
}, 90_000);
