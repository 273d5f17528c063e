// Queue mode: with QUEUES_ENABLED + WEBHOOK_QUEUE_ENABLED + REDIS_URL the API queues `deliver_webhook` jobs
// (BullMQ) and the worker (`server/worker.ts`, run here as a real child process, as `npm run worker` runs
// it) delivers them. What a receiver gets and what the delivery log says; BullMQ's backoff retries and
// the 410 that is final; what the jobs in Redis carry; a worker killed mid-delivery (stalled-job
// recovery) and one stopped with SIGTERM (the job in flight finishes first); Redis away when the API
// queues; the worker with queues off; and no secret in the worker's output.
//
// Isolation: the file has a database of its own (every app sweeps and dispatches the whole database, see
// helpers.ts) and a QUEUE_PREFIX of its own, so no other worker or app sharing the Redis sees its jobs.
// Every key under the prefix is deleted at the end.
import util from 'node:util';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { TEST_JWT_ACCESS_SECRET, TEST_JWT_REFRESH_SECRET, testEnv, type TestApp } from '../helpers/app.js';
import type { Session } from '../helpers/http.js';
import { ledger } from '../helpers/secret-ledger.js';
import {
  TEST_CA_FILE,
  WebhookReceiver,
  expectedSignature,
  signaturesOf,
  type ReceivedRequest,
  type Reply,
} from '../helpers/webhook-receiver.js';
import { WEBHOOK_QUEUE } from '../../jobs/queue.js';
import { createKey, createWebhook, hex, ownDatabase, ownerOn, startAppOn, type OwnDatabase } from './helpers.js';
import { TcpProxy, WorkerProcess, closedPort, deleteKeys, dumpKeys, within } from './queue-helpers.js';
import { waitFor } from '../helpers/wait.js';

const REDIS_URL = inject('redisUrl');
const PREFIX = `test-q-${hex(6)}`;
const USER_AGENT = `QueueTests-Hooks/${hex(2)}`;
const MAX_RETRIES = 2;
const BACKOFF_SECONDS = 1;
const JOB_LOCK_MS = 2_000;
const DELIVERY_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The queue settings of every app and worker of this file (REDIS_URL aside). */
const queueSettings = (redisUrl = REDIS_URL): Record<string, string> => ({
  REDIS_URL: redisUrl,
  QUEUES_ENABLED: 'true',
  WEBHOOK_QUEUE_ENABLED: 'true',
  QUEUE_PREFIX: PREFIX,
  WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  WEBHOOK_RETRY_BACKOFF_SECONDS: String(BACKOFF_SECONDS),
  WEBHOOK_MAX_RETRIES: String(MAX_RETRIES),
  WEBHOOK_TIMEOUT_MS: '5000',
  WEBHOOK_USER_AGENT: USER_AGENT,
  // A killed worker's job is found stalled within seconds (the default is 30 s).
  WEBHOOK_JOB_LOCK_MS: String(JOB_LOCK_MS),
  MAINTENANCE_SCHEDULER_ENABLED: 'false',
  RATE_LIMIT_ENABLED: 'false',
});

let db: OwnDatabase;
let app: TestApp;
let redis: Redis;
/** A BullMQ handle on the file's queue, to read job states (it adds nothing). */
let inspect: Queue;
let inspectConnection: Redis;
const workers: WorkerProcess[] = [];
const queueOff: WorkerProcess[] = [];
const receivers: WebhookReceiver[] = [];
const extraApps: TestApp[] = [];
const proxies: TcpProxy[] = [];
/** App start-ups that did not finish in time: closed if they ever do. */
const hangingStarts: Array<Promise<TestApp>> = [];

/** What must never reach Redis or the worker's output. */
const seen = {
  secrets: [] as string[],
  urls: [] as string[],
  bodies: [] as string[],
  hookNames: [] as string[],
  deliveryIds: [] as string[],
  tokens: [] as string[],
};

function workerEnv(overrides: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string | undefined> = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    // Workers trust the test CA of the https receiver (tests/fixtures/tls).
    NODE_EXTRA_CA_CERTS: TEST_CA_FILE,
    ...testEnv({ DATABASE_URL: db.url, ...queueSettings(), ...overrides }),
  };
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

/** Starts the real worker and waits for its 'worker ready' line. */
async function startWorker(label: string, overrides: Record<string, string> = {}) {
  const w = WorkerProcess.start(label, workerEnv(overrides));
  workers.push(w);
  await w.waitForLog('worker ready', 30_000);
  return w;
}

/**
 * console.error of this process: BullMQ writes a queue's connection errors there when nobody listens to
 * them. Connection-refused noise is kept here (and asserted on) instead of being printed.
 */
const consoleErrors: string[] = [];

beforeAll(async () => {
  const print = console.error.bind(console);
  vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
    const text = util.format(...args);
    consoleErrors.push(text);
    if (!text.includes('ECONNREFUSED')) print(...args);
  });
  db = await ownDatabase('queue');
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  inspectConnection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  inspect = new Queue(WEBHOOK_QUEUE, { connection: inspectConnection, prefix: PREFIX });
  // The workers of 'the worker with the queue off' exit at once: started now, so their start-up overlaps
  // the rest of the file.
  queueOff.push(
    WorkerProcess.start('queues off', workerEnv({ QUEUES_ENABLED: 'false' })),
    WorkerProcess.start('no redis', { ...workerEnv(), REDIS_URL: '' }),
  );
  workers.push(...queueOff);
  // The app and the worker both migrate the new database at start-up (the migrator takes a lock).
  [app] = await Promise.all([startAppOn(db, queueSettings()), startWorker('first')]);
});

afterAll(async () => {
  const attempt = async (fn: () => unknown) => {
    try {
      await fn();
    } catch {
      /* clean up the rest anyway */
    }
  };
  for (const w of workers) await attempt(() => within(10_000, w.stop('SIGKILL'), `killing worker ${w.label}`));
  for (const r of receivers) await attempt(() => r.close());
  for (const p of proxies) await attempt(() => p.close());
  for (const a of extraApps) await attempt(() => within(10_000, a.close(), 'closing an extra app'));
  for (const s of hangingStarts) void s.then((a) => a.close()).catch(() => undefined);
  await attempt(() => app?.close());
  await attempt(() => inspect?.close());
  inspectConnection?.disconnect();
  if (redis) {
    await attempt(() => deleteKeys(redis, PREFIX));
    redis.disconnect();
  }
  await attempt(() => db?.drop());
  // console.error stays captured: an instance whose start-up never finished may still be retrying Redis.
});

async function receiver(
  reply?: Reply | Reply[] | ((req: ReceivedRequest, i: number) => Reply),
  opts: { tls?: boolean } = {},
) {
  const r = await WebhookReceiver.start(opts);
  receivers.push(r);
  if (reply) r.reply(reply);
  return r;
}

async function owner(plan: 'lite' | 'pro', prefix: string) {
  const s = await ownerOn(app, plan, prefix);
  seen.tokens.push(s.accessToken, s.refreshToken);
  return s;
}

async function hookTo(s: Session, r: WebhookReceiver, events: string[] = ['webhook.test'], url = r.url()) {
  const name = `queued hook ${hex(4)}`;
  const hook = await createWebhook(app, s, { url, events, name });
  seen.secrets.push(hook.secret);
  seen.urls.push(hook.url);
  seen.hookNames.push(name);
  return hook;
}

const testPath = (s: Session, hookId: string) => `/workspaces/${s.workspaceId}/webhooks/${hookId}/test`;

/** POST .../test through `via`; answers the delivery as the API reported it. */
async function sendTest(s: Session, hookId: string, via: TestApp = app) {
  const res = await via.api('POST', testPath(s, hookId), { token: s.accessToken });
  expect(res.status, res.text).toBe(200);
  seen.deliveryIds.push(res.body.id);
  return res.body as Record<string, any>;
}

const deliveryRow = (id: string) =>
  app.deps.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const deliveriesOf = (webhookId: string) =>
  app.deps.db.selectFrom('webhook_deliveries').selectAll().where('webhook_id', '=', webhookId).execute();

/** Waits until the delivery row has `status`; answers the row. */
const until = (id: string, status: string, timeoutMs = 15_000) =>
  waitFor(
    async () => {
      const row = await deliveryRow(id);
      return row.status === status ? row : undefined;
    },
    { timeout: timeoutMs, interval: 50, message: `delivery ${id} to be ${status}` },
  );

const jobState = (id: string) => inspect.getJobState(id);
/** The state BullMQ answers for a job it no longer holds: a completed deliver_webhook job is removed at once. */
const REMOVED = 'unknown';
const waitForJobState = (id: string, states: string[], timeoutMs = 10_000) =>
  waitFor(
    async () => {
      const state = await jobState(id);
      return states.includes(state) ? state : undefined;
    },
    { timeout: timeoutMs, interval: 50, message: `job ${id} to be ${states.join(' or ')}` },
  );

/** The owner of the marker webhooks of laterDelivery (one for the file). */
let markerOwner: Promise<Session> | undefined;

/**
 * A later delivery through the same path, waited for until it has arrived and is recorded: a test delivery
 * of a webhook of its own, queued by the API and sent by the worker, answered 500 `retries` times first
 * (BullMQ's backoff: 1 s, then 2 s). What that path would have sent before it (a second run of a job, a
 * retry due as soon) has arrived by then: "nothing more was sent" is checked after this, not after a
 * sleep. With `to`, it goes to that receiver (whose answers must suit); answers the delivery's id.
 */
async function laterDelivery(opts: { retries?: number; to?: WebhookReceiver } = {}): Promise<string> {
  const retries = opts.retries ?? 0;
  const s = await (markerOwner ??= owner('lite', 'q-marker'));
  const replies: Reply[] = [...Array.from({ length: retries }, () => ({ status: 500 })), { status: 200 }];
  const r = opts.to ?? (await receiver(replies));
  const hook = await hookTo(s, r);
  const d = await sendTest(s, hook.id);
  const arrived = () => r.requests.filter((q) => q.headers['x-service-delivery'] === d.id).length;
  await waitFor(() => arrived() > retries, { timeout: 15_000, message: 'the later delivery to arrive' });
  await until(d.id, 'success');
  const deleted = await app.api('DELETE', `/workspaces/${s.workspaceId}/webhooks/${hook.id}`, {
    token: s.accessToken,
  });
  expect(deleted.status, deleted.text).toBe(200);
  return d.id as string;
}

/** The documented headers and a signature that verifies with `secret`; answers the parsed envelope. */
function expectSigned(req: ReceivedRequest, secret: string, event: string, deliveryId?: string) {
  seen.bodies.push(req.body);
  expect(req.method).toBe('POST');
  expect(req.url).toBe('/hook');
  expect(req.headers['content-type']).toMatch(/^application\/json\b/);
  expect(req.headers['user-agent']).toBe(USER_AGENT);
  expect(req.headers['x-service-event']).toBe(event);
  expect(req.headers['x-service-delivery']).toMatch(DELIVERY_ID);
  if (deliveryId) expect(req.headers['x-service-delivery']).toBe(deliveryId);
  const ts = String(req.headers['x-service-timestamp']);
  expect(ts).toMatch(/^\d+$/);
  expect(Math.abs(Number(ts) - req.receivedAt / 1000)).toBeLessThan(10);
  const signatures = signaturesOf(req);
  expect(signatures).toHaveLength(1);
  expect(signatures[0]).toBe(expectedSignature(secret, ts, req.body));
  expect(signatures[0]).not.toBe(expectedSignature(`${secret}x`, ts, req.body));
  const envelope = JSON.parse(req.body);
  expect(Object.keys(envelope).sort()).toEqual(['createdAt', 'data', 'event', 'workspaceId']);
  expect(envelope.event).toBe(event);
  return envelope as { event: string; createdAt: string; workspaceId: string; data: Record<string, unknown> };
}

describe('deliveries go through the queue', () => {
  it('a test delivery: the API queues it and answers `pending`; the worker sends the signed request once; the row ends success, attempts 1', async () => {
    const s = await owner('lite', 'q-test');
    // The answer waits for the test (release below), so the API's answer cannot already show an attempt of a
    // fast worker.
    const r = await receiver({ status: 200, body: 'queued ok', held: true });
    const hook = await hookTo(s, r);

    const answered = await sendTest(s, hook.id);
    expect(answered).toMatchObject({
      webhookId: hook.id,
      event: 'webhook.test',
      status: 'pending',
      attempts: 0,
      responseStatus: null,
      durationMs: null,
    });
    const job = await inspect.getJob(answered.id);
    expect(job?.name).toBe('deliver_webhook');
    expect(job?.data).toEqual({ deliveryId: answered.id });

    const [req] = await r.waitForRequests(1);
    r.release();
    const envelope = expectSigned(req, hook.secret, 'webhook.test', answered.id);
    expect(envelope.workspaceId).toBe(s.workspaceId);
    expect(envelope.data).toMatchObject({ webhookId: hook.id });

    const done = await until(answered.id, 'success');
    expect(done).toMatchObject({
      attempts: 1,
      response_status: 200,
      response_preview: 'queued ok',
      next_retry_at: null,
      last_error: null,
    });
    expect(done.payload).toEqual(JSON.parse(req.body));
    // The worker ran the job to its end, and the completed job is not kept: the delivery row is the record.
    await waitForJobState(answered.id, [REMOVED]);
    expect(await inspect.getJob(answered.id)).toBeUndefined();

    const log = await app.api('GET', `/workspaces/${s.workspaceId}/webhook-deliveries?webhookId=${hook.id}`, {
      token: s.accessToken,
    });
    expect(log.status, log.text).toBe(200);
    expect(log.body.items).toHaveLength(1);
    expect(log.body.items[0]).toMatchObject({
      id: answered.id,
      status: 'success',
      attempts: 1,
      responseStatus: 200,
      responsePreview: 'queued ok',
    });

    // Delivered once: the API did not send it itself as well (checked once a later delivery has arrived).
    await laterDelivery();
    expect(r.requests).toHaveLength(1);
  });

  it('a domain event (api_key.created) is dispatched by the API, queued, and delivered by the worker, signed, once', async () => {
    const s = await owner('pro', 'q-event');
    // The answer waits for the test (release below): the job is still there to be looked at.
    const r = await receiver({ status: 200, body: 'got it', held: true });
    const hook = await hookTo(s, r, ['api_key.created']);
    const key = await createKey(app, s, { name: 'queued key', scopes: ['read'] });
    seen.tokens.push(key.rawKey);

    const [req] = await r.waitForRequests(1);
    const envelope = expectSigned(req, hook.secret, 'api_key.created');
    expect(envelope.workspaceId).toBe(s.workspaceId);
    expect(envelope.data).toMatchObject({ apiKeyId: key.id, name: 'queued key' });
    expect(req.body).not.toContain(key.rawKey);

    const deliveryId = String(req.headers['x-service-delivery']);
    seen.deliveryIds.push(deliveryId);
    expect((await inspect.getJob(deliveryId))?.data).toEqual({ deliveryId });
    r.release();
    const done = await until(deliveryId, 'success');
    expect(done).toMatchObject({
      webhook_id: hook.id,
      event: 'api_key.created',
      attempts: 1,
      response_status: 200,
      response_preview: 'got it',
    });
    // A later event of the same kind, in another workspace, dispatched, queued and delivered: a second
    // dispatch or delivery of the first would have come before it.
    const other = await owner('pro', 'q-event-later');
    const later = await receiver({ status: 200 });
    await hookTo(other, later, ['api_key.created']);
    seen.tokens.push((await createKey(app, other, { name: 'later key', scopes: ['read'] })).rawKey);
    await later.waitForRequests(1);
    expect(await deliveriesOf(hook.id)).toHaveLength(1);
    expect(r.requests).toHaveLength(1);
  });
});

describe('https', () => {
  it('delivers to a host name over TLS: the certificate is checked against that name, on a connection to the checked address', async () => {
    const s = await owner('lite', 'q-tls');
    const r = await receiver({ status: 200, body: 'secure' }, { tls: true });
    // The receiver's certificate names `localhost` only; the worker trusts its CA (NODE_EXTRA_CA_CERTS).
    const hook = await hookTo(s, r);
    expect(hook.url).toBe(`https://localhost:${r.port}/hook`);

    const answered = await sendTest(s, hook.id);
    const [req] = await r.waitForRequests(1);
    expectSigned(req, hook.secret, 'webhook.test', answered.id);
    expect(req.headers.host).toBe(`localhost:${r.port}`);
    const done = await until(answered.id, 'success');
    expect(done).toMatchObject({ attempts: 1, response_status: 200, response_preview: 'secure', last_error: null });
  });

  it('refuses a certificate that does not name the host of the URL: the same endpoint by its address is a failure, and nothing is sent', async () => {
    const s = await owner('lite', 'q-tls-ip');
    const r = await receiver({ status: 200, body: 'should not be read' }, { tls: true });
    const hook = await hookTo(s, r, ['webhook.test'], r.url('/hook', '127.0.0.1'));

    const answered = await sendTest(s, hook.id);
    const row = await until(answered.id, 'retrying');
    expect(row).toMatchObject({ attempts: 1, response_status: null, response_preview: null });
    expect(row.last_error).toMatch(/certificate|altnames/i);
    expect(r.requests).toHaveLength(0);
    expect(
      (await app.api('DELETE', `/workspaces/${s.workspaceId}/webhooks/${hook.id}`, { token: s.accessToken })).status,
    ).toBe(200);
  });
});

describe.concurrent(
  `retries by BullMQ (WEBHOOK_MAX_RETRIES=${MAX_RETRIES}, backoff ${BACKOFF_SECONDS} s doubling)`,
  () => {
    it('500, 500, then 200: retried after about 1 s and 2 s with the same X-Service-Delivery; the row ends success with attempts 3', async ({
      expect,
    }) => {
      const s = await owner('lite', 'q-retry');
      const r = await receiver([
        { status: 500, body: 'boom' },
        { status: 500, body: 'boom again' },
        { status: 200, body: 'third time lucky' },
      ]);
      const hook = await hookTo(s, r);
      const d = await sendTest(s, hook.id);

      // Between attempts the log shows the failure and when the next attempt is due.
      const between = await waitFor(
        async () => {
          const row = await deliveryRow(d.id);
          return row.attempts >= 1 ? row : undefined;
        },
        { timeout: 10_000, interval: 25, message: 'the first attempt to be recorded' },
      );
      expect(between).toMatchObject({
        status: 'retrying',
        attempts: 1,
        response_status: 500,
        response_preview: 'boom',
      });
      expect(between.last_error).toMatch(/500/);
      expect(between.next_retry_at).not.toBeNull();

      const reqs = await r.waitForRequests(3, 15_000);
      const done = await until(d.id, 'success');
      expect(done).toMatchObject({
        attempts: 3,
        response_status: 200,
        response_preview: 'third time lucky',
        next_retry_at: null,
        last_error: null,
      });
      for (const req of reqs) expectSigned(req, hook.secret, 'webhook.test', d.id);
      const stamps = reqs.map((q) => Number(q.headers['x-service-timestamp']));
      expect(stamps[2]).toBeGreaterThan(stamps[0]);
      // BullMQ's exponential backoff: 1 s, then 2 s.
      expect(reqs[1].receivedAt - reqs[0].receivedAt).toBeGreaterThanOrEqual(900);
      expect(reqs[2].receivedAt - reqs[1].receivedAt).toBeGreaterThanOrEqual(1_900);
      expect(await waitForJobState(d.id, [REMOVED])).toBe(REMOVED);
      expect(await deliveriesOf(hook.id)).toHaveLength(1);
    });

    it(`always 500: ends failed after ${MAX_RETRIES + 1} attempts, and no further attempt is scheduled`, async ({
      expect,
    }) => {
      const s = await owner('lite', 'q-fail');
      const r = await receiver({ status: 500, body: 'down' });
      const hook = await hookTo(s, r);
      const d = await sendTest(s, hook.id);
      await r.waitForRequests(MAX_RETRIES + 1, 15_000);
      const done = await until(d.id, 'failed');
      expect(done).toMatchObject({ attempts: MAX_RETRIES + 1, response_status: 500, next_retry_at: null });
      expect(done.last_error).toMatch(/500/);
      // Nothing waits in BullMQ for another try: the job failed with the delivery and is kept with why.
      expect(await waitForJobState(d.id, ['failed'])).toBe('failed');
      const job = await inspect.getJob(d.id);
      expect(job).toMatchObject({
        attemptsMade: MAX_RETRIES + 1,
        failedReason: 'the last attempt of the delivery failed',
      });
      // A later delivery retried once (after the 1 s backoff) has arrived: no attempt came meanwhile.
      await laterDelivery({ retries: 1 });
      expect(r.requests).toHaveLength(MAX_RETRIES + 1);
      expect((await deliveryRow(d.id)).attempts).toBe(MAX_RETRIES + 1);
    });

    it('410 Gone: failed at once, and never retried (the job fails as unrecoverable)', async ({ expect }) => {
      const s = await owner('lite', 'q-gone');
      const r = await receiver({ status: 410, body: 'gone' });
      const hook = await hookTo(s, r);
      const d = await sendTest(s, hook.id);
      const [req] = await r.waitForRequests(1);
      expectSigned(req, hook.secret, 'webhook.test', d.id);
      const done = await until(d.id, 'failed');
      expect(done).toMatchObject({ attempts: 1, response_status: 410, next_retry_at: null });
      expect(done.last_error).toMatch(/410/);
      expect(await waitForJobState(d.id, ['failed'])).toBe('failed');
      const job = await inspect.getJob(d.id);
      expect(job?.attemptsMade).toBe(1);
      // The first retry would have come after 1 s: before the retry of a later delivery, after the same 1 s.
      await laterDelivery({ retries: 1 });
      expect(r.requests).toHaveLength(1);
      expect((await deliveryRow(d.id)).attempts).toBe(1);
    });
  },
);

describe('POST .../webhook-deliveries/:deliveryId/retry in queue mode', () => {
  const retryPath = (s: Session, id: string) => `/workspaces/${s.workspaceId}/webhook-deliveries/${id}/retry`;

  it('sends a delivery that waits out its backoff now, by running its own job: no second job, one more attempt', async () => {
    // An app whose deliveries back off for a minute: without the retry route nothing would happen soon.
    const patient = await startAppOn(db, { ...queueSettings(), WEBHOOK_RETRY_BACKOFF_SECONDS: '60' });
    extraApps.push(patient);
    const s = await owner('lite', 'q-manual');
    const r = await receiver([
      { status: 500, body: 'not yet' },
      { status: 200, body: 'now' },
    ]);
    const hook = await hookTo(s, r);
    const d = await sendTest(s, hook.id, patient);
    await waitForJobState(d.id, ['delayed']);
    expect(await deliveryRow(d.id)).toMatchObject({ status: 'retrying', attempts: 1, response_status: 500 });

    const res = await patient.api('POST', retryPath(s, d.id), { token: s.accessToken });
    expect(res.status, res.text).toBe(200);
    const done = await until(d.id, 'success');
    expect(done).toMatchObject({
      attempts: 2,
      response_status: 200,
      response_preview: 'now',
      next_retry_at: null,
      last_error: null,
    });
    const reqs = await r.waitForRequests(2);
    for (const req of reqs) expectSigned(req, hook.secret, 'webhook.test', d.id);
    expect(await waitForJobState(d.id, [REMOVED])).toBe(REMOVED);
    expect(await inspect.getJob(`${d.id}-retry-1`)).toBeUndefined();
    await laterDelivery();
    expect(r.requests).toHaveLength(2);
  });

  it('sends a failed delivery again as a job of its own, which ends it success', async () => {
    const s = await owner('lite', 'q-manual-failed');
    const r = await receiver([
      { status: 410, body: 'gone for now' },
      // Held until the test has looked at the retry's job (release below).
      { status: 200, body: 'back', held: true },
    ]);
    const hook = await hookTo(s, r);
    const d = await sendTest(s, hook.id);
    await until(d.id, 'failed');
    expect(await waitForJobState(d.id, ['failed'])).toBe('failed');

    const res = await app.api('POST', retryPath(s, d.id), { token: s.accessToken });
    expect(res.status, res.text).toBe(200);
    await r.waitForRequests(2);
    expect((await inspect.getJob(`${d.id}-retry-1`))?.data).toEqual({ deliveryId: d.id });
    r.release();
    const done = await until(d.id, 'success');
    expect(done).toMatchObject({ attempts: 2, response_status: 200, response_preview: 'back' });
    await laterDelivery();
    expect(r.requests).toHaveLength(2);
  });

  it('makes one more attempt: a sweep while the endpoint holds the retry job adds no second job, and nothing is sent twice', async () => {
    const s = await owner('lite', 'q-manual-slow');
    // The retry's answer is held until the test has swept (release below).
    const r = await receiver([{ status: 410 }, { status: 200, body: 'slow but fine', held: true }]);
    const hook = await hookTo(s, r);
    const d = await sendTest(s, hook.id);
    await until(d.id, 'failed');
    // Older than 30 s, as a delivery retried by hand usually is: pending again, the sweep takes it.
    await sql`update webhook_deliveries set created_at = now() - interval '31 seconds' where id = ${d.id}`.execute(
      app.deps.db,
    );

    const res = await app.api('POST', retryPath(s, d.id), { token: s.accessToken });
    expect(res.status, res.text).toBe(200);
    await r.waitForRequests(2);
    // The sweep takes the delivery, and queues it under the job id of the retry's job, which is running.
    expect(await app.deps.webhooks.sweep()).toBeGreaterThanOrEqual(1);
    r.release();
    const done = await until(d.id, 'success');
    expect(done).toMatchObject({ attempts: 2, response_preview: 'slow but fine' });
    await laterDelivery();
    expect(r.requests).toHaveLength(2);
  });

  it('refuses a delivery that already succeeded with 409 INVALID_STATE, and queues nothing', async () => {
    const s = await owner('lite', 'q-manual-done');
    const r = await receiver({ status: 200, body: 'fine' });
    const hook = await hookTo(s, r);
    const d = await sendTest(s, hook.id);
    await until(d.id, 'success');
    const res = await app.api('POST', retryPath(s, d.id), { token: s.accessToken });
    expect(res.status, res.text).toBe(409);
    expect(res.body.code).toBe('INVALID_STATE');
    expect(await inspect.getJob(`${d.id}-retry-1`)).toBeUndefined();
    await laterDelivery();
    expect(r.requests).toHaveLength(1);
  });
});

describe('what Redis holds', () => {
  it('every job carries the delivery id only: no secret, URL, payload or webhook name under the prefix', async () => {
    const keys = await dumpKeys(redis, PREFIX);
    const jobKey = new RegExp(`^${PREFIX}:${WEBHOOK_QUEUE}:([0-9a-f-]{36})(-retry-\\d+)?$`);
    const jobs = [...keys].filter(([k, v]) => v.type === 'hash' && jobKey.test(k));
    expect(seen.deliveryIds.length).toBeGreaterThanOrEqual(5);
    // Completed jobs are removed; the failed ones of this file (always 500, 410) are kept and looked at.
    expect(jobs.length).toBeGreaterThanOrEqual(2);
    for (const [key, dump] of jobs) {
      const deliveryId = jobKey.exec(key)![1];
      expect(dump.fields?.name).toBe('deliver_webhook');
      expect(JSON.parse(dump.fields!.data)).toEqual({ deliveryId });
    }

    const everything = [...keys].map(([k, v]) => `${k} ${v.text}`).join('\n');
    expect(seen.bodies.length).toBeGreaterThanOrEqual(5);
    expect(everything).not.toContain('whsec_');
    for (const secret of seen.secrets) expect(everything).not.toContain(secret.slice('whsec_'.length));
    for (const url of seen.urls) {
      expect(everything).not.toContain(url);
      expect(everything).not.toContain(new URL(url).host);
    }
    for (const body of seen.bodies) {
      expect(everything).not.toContain(body);
      expect(everything).not.toContain(JSON.stringify(JSON.parse(body).data));
    }
    for (const name of seen.hookNames) expect(everything).not.toContain(name);
    for (const token of seen.tokens) expect(everything).not.toContain(token);
  });
});

describe('a worker killed in the middle of a delivery', () => {
  it('SIGKILL while the receiver holds the request: a second worker picks the stalled job up and the delivery ends success as attempt 2, one row, no duplicate', async () => {
    const first = workers.find((w) => w.label === 'first');
    expect(first?.running).toBe(true);
    const s = await owner('lite', 'q-crash');
    const r = await receiver((_req, i) => (i === 0 ? 'hang' : { status: 200, body: 'second worker' }));
    const hook = await hookTo(s, r);
    const d = await sendTest(s, hook.id);
    const [held] = await r.waitForRequests(1);
    expectSigned(held, hook.secret, 'webhook.test', d.id);
    expect(await jobState(d.id)).toBe('active');

    const exit = await first!.stop('SIGKILL');
    expect(exit.signal).toBe('SIGKILL');
    // The attempt never finished: nothing recorded, the job is still `active` with nobody working on it.
    expect(await deliveryRow(d.id)).toMatchObject({ status: 'pending', attempts: 0 });
    expect(await jobState(d.id)).toBe('active');

    // The job's lock (WEBHOOK_JOB_LOCK_MS, 2 s here) expires on its own; the second worker's stalled-job
    // checks (every quarter lock) then find the job and run it again: within a few seconds, where the
    // defaults would take tens of seconds (tests/developer/stalled-recovery.test.ts times it).
    const killedAt = Date.now();
    await startWorker('second');

    const reqs = await r.waitForRequests(2, 20_000);
    expect(reqs[1].receivedAt - killedAt).toBeLessThan(6 * JOB_LOCK_MS);
    expectSigned(reqs[1], hook.secret, 'webhook.test', d.id);
    const done = await until(d.id, 'success', 10_000);
    // The killed attempt never got an answer; it still counts: the second worker's attempt is attempt 2.
    expect(done).toMatchObject({
      attempts: 2,
      response_status: 200,
      response_preview: 'second worker',
      last_error: null,
      next_retry_at: null,
    });
    expect(await waitForJobState(d.id, [REMOVED])).toBe(REMOVED);
    await laterDelivery();
    expect(r.requests).toHaveLength(2);
    const rows = await deliveriesOf(hook.id);
    expect(rows.map((row) => [row.id, row.status])).toEqual([[d.id, 'success']]);
  }, 60_000);
});

describe('Redis unreachable when the API queues a delivery', () => {
  /** The outage of the second test: the proxy's port and what the instance wrote meanwhile. */
  let outage: { port: number; consoleErrors: string[]; logs: string[] } | undefined;

  it('an API instance whose REDIS_URL points at a closed port starts, answers the test delivery without a 5xx, and leaves it pending', async () => {
    const s = await owner('lite', 'q-noredis');
    const r = await receiver({ status: 200 });
    const hook = await hookTo(s, r);
    const port = await closedPort();

    const starting = startAppOn(db, queueSettings(`redis://127.0.0.1:${port}`));
    hangingStarts.push(starting);
    const away = await within(6_000, starting, 'an API instance starting while Redis is unreachable');
    extraApps.push(away);
    try {
      const res = await within(
        5_000,
        away.api('POST', testPath(s, hook.id), { token: s.accessToken }),
        'the test-delivery answer while Redis is unreachable',
      );
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({ webhookId: hook.id, status: 'pending', attempts: 0 });
      // A later delivery to the same receiver, through the instance whose Redis answers, has arrived.
      const laterId = await laterDelivery({ to: r });
      expect(await deliveryRow(res.body.id)).toMatchObject({ status: 'pending', attempts: 0 });
      expect(await inspect.getJob(res.body.id)).toBeUndefined();
      expect(r.requests.map((q) => q.headers['x-service-delivery'])).toEqual([laterId]);
    } finally {
      await within(10_000, away.close(), 'closing the instance without Redis');
    }
  });

  it('a sweep of several stuck deliveries waits for the unreachable Redis once, not once per delivery, and logs each one it could not queue', async () => {
    const s = await owner('lite', 'q-noredis-sweep');
    const r = await receiver({ status: 200 });
    const hook = await hookTo(s, r);
    const starting = startAppOn(db, queueSettings(`redis://127.0.0.1:${await closedPort()}`));
    hangingStarts.push(starting);
    const away = await within(6_000, starting, 'an API instance starting while Redis is unreachable');
    extraApps.push(away);
    try {
      // Six deliveries left pending for longer than the sweep's 30 s.
      const stuck = await sql<{
        id: string;
      }>`insert into webhook_deliveries (webhook_id, workspace_id, event, payload, status, created_at)
        select ${hook.id}, ${s.workspaceId}, 'webhook.test', '{}'::jsonb, 'pending', now() - interval '31 seconds' from generate_series(1, 6) returning id`.execute(
        away.deps.db,
      );
      const ids = stuck.rows.map((row) => row.id);

      const started = Date.now();
      const swept = await within(20_000, away.deps.webhooks.sweep(), 'a sweep while Redis is unreachable');
      // One wait of 2 s for Redis; one per delivery took 12 s.
      expect(Date.now() - started).toBeLessThan(4_000);
      expect(swept).toBeGreaterThanOrEqual(ids.length);
      // (What happens to them next is not this instance's: the file's other instance, whose Redis answers,
      // sweeps them too.)
      for (const id of ids) {
        expect(
          away.logs.some((l) => l.includes('enqueue failed') && l.includes(id)),
          `the failed enqueue of ${id} logged`,
        ).toBe(true);
      }
    } finally {
      await within(10_000, away.close(), 'closing the instance without Redis');
    }
  });

  it('Redis going away after start-up: the test delivery is answered 200 `pending` at once; with Redis back, a sweep queues it and the worker delivers it', async () => {
    const proxy = await TcpProxy.start(new URL(REDIS_URL));
    proxies.push(proxy);
    const b = await startAppOn(db, queueSettings(proxy.url));
    extraApps.push(b);
    const s = await owner('lite', 'q-away');
    // The swept delivery's answer waits for the test (release below): its job is still there to be looked at.
    const r = await receiver([
      { status: 200, body: 'after the outage' },
      { status: 200, body: 'after the outage', held: true },
    ]);
    const hook = await hookTo(s, r);

    // Through the proxy the instance queues like any other.
    const before = await sendTest(s, hook.id, b);
    expect(before.status).toBe('pending');
    expect((await until(before.id, 'success')).attempts).toBe(1);

    const errorsBefore = consoleErrors.length;
    const logsBefore = b.logs.length;
    await proxy.cut();
    const started = Date.now();
    const res = await within(
      5_000,
      b.api('POST', testPath(s, hook.id), { token: s.accessToken }),
      'the test-delivery answer while Redis is away',
    );
    expect(res.status, res.text).toBe(200);
    expect(Date.now() - started).toBeLessThan(3_000);
    const stuck = res.body as Record<string, any>;
    seen.deliveryIds.push(stuck.id);
    expect(stuck).toMatchObject({ webhookId: hook.id, status: 'pending', attempts: 0 });
    expect(b.logs.some((l) => l.includes('enqueue failed') && l.includes(stuck.id))).toBe(true);
    await laterDelivery();
    expect(await deliveryRow(stuck.id)).toMatchObject({ status: 'pending', attempts: 0 });
    expect(await inspect.getJob(stuck.id)).toBeUndefined();
    expect(r.requests).toHaveLength(1);

    // Redis is back: wait for the instance's connections to come through the proxy again.
    const answeredBefore = proxy.answered;
    outage = { port: proxy.port, consoleErrors: consoleErrors.slice(errorsBefore), logs: b.logs.slice(logsBefore) };
    await proxy.restore();
    await waitFor(async () => proxy.answered >= answeredBefore + 3 || undefined, {
      timeout: 10_000,
      interval: 50,
      message: 'the instance to reconnect to Redis',
    });
    // The sweep takes pending deliveries older than 30 s: make this one that old.
    await sql`update webhook_deliveries set created_at = now() - interval '31 seconds' where id = ${stuck.id}`.execute(
      b.deps.db,
    );
    // (Swept again until its queue connection is back; until then a sweep logs the failed enqueue.)
    const job = await waitFor(
      async () => {
        await b.deps.webhooks.sweep();
        return inspect.getJob(stuck.id);
      },
      { timeout: 10_000, interval: 250, message: 'a sweep of the instance to queue the stuck delivery' },
    );
    expect(job.data).toEqual({ deliveryId: stuck.id });
    r.release();
    const done = await until(stuck.id, 'success');
    expect(done).toMatchObject({ attempts: 1, response_status: 200, response_preview: 'after the outage' });
    await r.waitForRequests(2);
    expect(r.requests).toHaveLength(2);
    expectSigned(r.requests[1], hook.secret, 'webhook.test', stuck.id);

    // And the instance queues new deliveries again.
    const after = await sendTest(s, hook.id, b);
    expect((await until(after.id, 'success')).attempts).toBe(1);
  });

  it('while Redis is away, the instance reports it in its JSON log, and writes no raw error to the console', () => {
    expect(outage, 'the outage of the previous test').toBeDefined();
    const { port, consoleErrors: raw, logs } = outage!;
    expect(logs.some((l) => JSON.parse(l).msg === 'redis connection error')).toBe(true);
    const unstructured = raw.filter((t) => t.includes(`:${port}`));
    expect(unstructured, `first raw console.error: ${unstructured[0]?.slice(0, 300)}`).toEqual([]);
  });
});

describe('SIGTERM', () => {
  it('lets the job in flight finish (the receiver answers after the signal), records it, then exits with code 0', async () => {
    const live = workers.filter((w) => w.running && !queueOff.includes(w));
    expect(live).toHaveLength(1);
    const [worker] = live;
    const s = await owner('lite', 'q-term');
    const r = await receiver({ status: 200, body: 'slow but fine', held: true });
    const hook = await hookTo(s, r);
    const d = await sendTest(s, hook.id);
    const [req] = await r.waitForRequests(1);
    expectSigned(req, hook.secret, 'webhook.test', d.id);

    const signalledAt = Date.now();
    worker.child.kill('SIGTERM');
    // The receiver answers once the worker is shutting down with the job in flight.
    await worker.waitForLog('worker shutting down: finishing jobs in flight', 10_000);
    r.release();
    const exit = await within(10_000, worker.exited, 'the worker exiting after SIGTERM');
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect(r.answeredAt[0]).toBeDefined();
    expect(r.answeredAt[0]!).toBeGreaterThanOrEqual(signalledAt);
    expect(exit.at).toBeGreaterThan(r.answeredAt[0]!);

    expect(await deliveryRow(d.id)).toMatchObject({
      status: 'success',
      attempts: 1,
      response_status: 200,
      response_preview: 'slow but fine',
    });
    expect(await jobState(d.id)).toBe(REMOVED);
    expect(await inspect.getActiveCount()).toBe(0);
    const messages = worker.logs().map((l) => l.msg);
    expect(messages).toContain('worker shutting down: finishing jobs in flight');
    expect(messages.at(-1)).toBe('worker stopped');
  });
});

describe('the worker with the queue off', () => {
  it('exits 0 at once, saying why, whether QUEUES_ENABLED is false or REDIS_URL is unset', async () => {
    const [off, noRedis] = queueOff;
    expect(noRedis).toBeDefined();
    for (const w of [off, noRedis]) {
      const exit = await within(20_000, w.exited, `worker "${w.label}" exiting`);
      expect(exit, w.output).toMatchObject({ code: 0, signal: null });
      const line = w.logs().find((l) => typeof l.msg === 'string' && l.msg.startsWith('the webhook queue is off'));
      expect(line, w.output).toBeDefined();
      expect(line!.msg).toMatch(/QUEUES_ENABLED, WEBHOOK_QUEUE_ENABLED and REDIS_URL are all needed/);
      expect(w.logs().map((l) => l.msg)).not.toContain('worker ready');
    }
    expect(off.logs().find((l) => String(l.msg).startsWith('the webhook queue is off'))).toMatchObject({
      queuesEnabled: false,
      webhookQueueEnabled: true,
      redis: true,
    });
    expect(noRedis.logs().find((l) => String(l.msg).startsWith('the webhook queue is off'))).toMatchObject({
      queuesEnabled: true,
      webhookQueueEnabled: true,
      redis: false,
    });
  });
});

describe("the worker's output", () => {
  it('never contains a webhook secret, the encryption key, a JWT secret, a token or an API key', () => {
    const output = workers.map((w) => w.output).join('\n');
    ledger.observe("the workers' output", output);
    // Not vacuous: the workers did log, including the failed attempts of the retry tests.
    expect(output).toContain('worker ready');
    expect(output).toContain('delivery attempt failed');
    const key = workerEnv().WEBHOOK_SECRET_ENCRYPTION_KEY;
    expect(key.length).toBeGreaterThanOrEqual(32);
    expect(seen.secrets.length).toBeGreaterThanOrEqual(8);
    expect(output).not.toContain('whsec_');
    for (const secret of seen.secrets) expect(output).not.toContain(secret.slice('whsec_'.length));
    for (const value of [key, TEST_JWT_ACCESS_SECRET, TEST_JWT_REFRESH_SECRET, ...seen.tokens])
      expect(output).not.toContain(value);
  });
});
