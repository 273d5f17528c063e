// Redis frozen (SIGSTOP: connections open, nothing answered, as on a black-holed network) or stopped
// (killed, its data gone) while the API runs in queue mode: requests that touch Redis answer within the
// bound (docs/decisions.md, "Redis away") and go on without it: the test delivery is recorded `pending`
// and delivered once Redis is back (by the late job or the sweep, never twice), the rate limiter falls
// back on its in-memory insurance, /metrics reports the queue as down, a plan change still answers. Within
// 5 s of Redis's return, without a restart, every use of Redis works again: the limiter's count is shared
// by the instances, deliveries go through the queue, plan changes are heard, and a change announced while
// Redis was away reaches the other instance's catalog.
//
// Isolation: a redis-server of the file's own (tests/helpers/redis-server.ts) and a database of its own
// (every app sweeps the whole database); the worker runs as a child process, as `npm run worker` does.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { ApiResponse, Session } from '../helpers/http.js';
import { RedisServer } from '../helpers/redis-server.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { adminSession, createWebhook, hex, ownDatabase, ownerOn, startAppOn } from './helpers.js';
import type { OwnDatabase } from './helpers.js';
import { WorkerProcess, within, workerEnvOf } from './queue-helpers.js';
import { holdsWithin, sleep, waitFor } from '../helpers/wait.js';
import { RECONNECT_MAX_MS } from '../../server/platform/redis.js';

/** The longest a request waits for Redis (the default, set here to be explicit). */
const REDIS_COMMAND_TIMEOUT_MS = 1_000;
/** What a request may take while Redis is away: that bound, the limiter's 100 ms, and a margin for the machine. */
const ANSWER_WITHIN_MS = REDIS_COMMAND_TIMEOUT_MS + 700;
/** How soon after Redis's return the API must use it again. */
const RECOVER_WITHIN_MS = 5_000;
/**
 * How long a client that lost Redis takes to reach its longest reconnection back-off, twice over for the
 * machine: server/platform/redis.ts (reconnectDelay) waits 50 ms before the first attempt, doubling, up to
 * RECONNECT_MAX_MS, each with up to 100 ms of jitter.
 */
const BACKOFF_AT_LONGEST_MS = (() => {
  let total = 0;
  for (let delay = 50; delay < RECONNECT_MAX_MS; delay *= 2) total += delay + 100;
  return 2 * total;
})();
/** An instance closing while Redis answers nothing: the queue, the dispatch and each connection wait the bound. */
const CLOSE_WITHIN_MS = 3 * REDIS_COMMAND_TIMEOUT_MS + 1_500;
const METRICS_TOKEN = `metrics-${hex(16)}`;
const LIMIT = 1_000;
const FIRST_NAME = 'Outage plan';

let redis: RedisServer;
let db: OwnDatabase;
let app: TestApp;
/** A second instance on the same Redis and database: shares the limiter's count and hears plan changes. */
let twin: TestApp;
let worker: WorkerProcess;
let receiver: WebhookReceiver;
let admin: Session;

const settings = () => ({
  REDIS_URL: redis.url,
  REDIS_COMMAND_TIMEOUT_MS: String(REDIS_COMMAND_TIMEOUT_MS),
  QUEUES_ENABLED: 'true',
  WEBHOOK_QUEUE_ENABLED: 'true',
  QUEUE_PREFIX: `test-ro-${hex(4)}`,
  WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  WEBHOOK_RETRY_BACKOFF_SECONDS: '1',
  MAINTENANCE_SCHEDULER_ENABLED: 'false',
  RATE_LIMIT_ENABLED: 'true',
  RATE_LIMIT_WINDOW_SECONDS: '600',
  RATE_LIMIT_MAX_REQUESTS: String(LIMIT),
  RATE_LIMIT_AUTH_MAX_REQUESTS: String(LIMIT),
  METRICS_TOKEN,
});

beforeAll(async () => {
  [redis, db] = await Promise.all([RedisServer.start(), ownDatabase('redis_outage')]);
  const env = settings();
  app = await startAppOn(db, env);
  worker = WorkerProcess.start('outage', workerEnvOf({ DATABASE_URL: db.url, ...env }));
  [twin, receiver] = await Promise.all([
    startAppOn(db, env),
    WebhookReceiver.start(),
    worker.waitForLog('worker ready', 30_000),
  ]);
  receiver.reply({ status: 200, body: 'ok' });
  admin = await adminSession(app);
});

afterAll(async () => {
  // Redis first: nothing then waits on a frozen one while closing.
  await redis?.close();
  await worker?.stop('SIGKILL');
  for (const a of [app, twin]) await a?.close().catch(() => undefined);
  await receiver?.close();
  await db?.drop();
});

/** Runs `request`, failing if it takes longer than ANSWER_WITHIN_MS. */
const timed = <T>(what: string, request: () => Promise<T>): Promise<T> =>
  within(ANSWER_WITHIN_MS, request(), `${what} with Redis away`);

const testPath = (s: Session, hookId: string) => `/workspaces/${s.workspaceId}/webhooks/${hookId}/test`;
const deliveryRow = (id: string) =>
  app.deps.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const until = (id: string, status: string, timeoutMs = 15_000) =>
  waitFor(
    async () => {
      const row = await deliveryRow(id);
      return row.status === status ? row : undefined;
    },
    { timeout: timeoutMs, interval: 50, message: `delivery ${id} to be ${status}` },
  );
const requestsFor = (deliveryId: string) =>
  receiver.requests.filter((r) => r.headers['x-service-delivery'] === deliveryId);
/**
 * A later test delivery through `app` (queued, sent by the worker), waited for until it arrived: what the
 * queue was to send before it (a second run of a job) has arrived by then.
 */
async function laterDelivery(s: Session, hookId: string) {
  const res = await app.api('POST', testPath(s, hookId), { token: s.accessToken });
  expect(res.status, res.text).toBe(200);
  await waitFor(() => requestsFor(res.body.id).length > 0, { timeout: 15_000, message: 'a later delivery to arrive' });
}
/** Makes a pending delivery look stuck for longer than the sweep waits (30 s). */
const backdate = (id: string) =>
  sql`update webhook_deliveries set created_at = now() - interval '31 seconds' where id = ${id}`.execute(app.deps.db);

const remaining = (res: ApiResponse) => Number(/remaining=(\d+)/.exec(res.headers.get('ratelimit') ?? '')?.[1]);

/**
 * Whether the limiter counts in Redis: a request on each instance by a user who sent nothing before, so
 * that in-memory counts (one per instance) would both answer LIMIT - 1; a shared count answers one less
 * on the second.
 */
async function countsInRedis(): Promise<boolean> {
  const u = await ownerOn(app, 'lite', 'ro-count');
  const first = await app.api('GET', '/auth/me', { token: u.accessToken });
  const second = await twin.api('GET', '/auth/me', { token: u.accessToken });
  expect([first.status, second.status]).toEqual([200, 200]);
  return remaining(second) === remaining(first) - 1;
}

interface Plan {
  id: string;
  slug: string;
}

async function publishedPlan(): Promise<Plan> {
  const slug = `outage-${hex(4)}`;
  const body = { name: FIRST_NAME, slug, priceCents: 100, status: 'PUBLISHED' };
  const res = await app.api('POST', '/admin/billing/plans', { token: admin.accessToken, body });
  expect(res.status, res.text).toBe(201);
  return { id: res.body.id, slug };
}

/** The name an instance's public catalog answers for the plan. */
async function catalogName(instance: TestApp, slug: string): Promise<string | undefined> {
  const items = (await instance.api('GET', '/billing/plans')).body.items as Array<{ slug: string; name: string }>;
  return items.find((p) => p.slug === slug)?.name;
}

const renamePlan = (via: TestApp, planId: string, name: string) =>
  via.api('PATCH', `/admin/billing/plans/${planId}`, { token: admin.accessToken, body: { name } });

/** The requests of the outage, each within the bound; answers the test delivery's id and the new plan name. */
async function requestsWhileAway(s: Session, hookId: string, planId: string) {
  // First, while nothing else waits on Redis: a command queued behind others on the auto-pipelined
  // connection could wait for theirs to time out before its own time starts.
  const name = `Renamed while away ${hex(3)}`;
  const change = await timed('PATCH /admin/billing/plans/{id}', () => renamePlan(app, planId, name));
  expect(change.status, change.text).toBe(200);

  const sendTest = () => app.api('POST', testPath(s, hookId), { token: s.accessToken });
  const sent = await timed('POST .../webhooks/{id}/test', sendTest);
  expect(sent.status, sent.text).toBe(200);
  expect(sent.body).toMatchObject({ status: 'pending', attempts: 0 });
  expect(await deliveryRow(sent.body.id)).toMatchObject({ status: 'pending', attempts: 0 });

  // A rate-limited route: the in-memory insurance answers and counts.
  const me = await timed('GET /auth/me', () => app.api('GET', '/auth/me', { token: s.accessToken }));
  expect(me.status).toBe(200);
  expect(me.headers.get('ratelimit')).toMatch(/^limit=1000, remaining=\d+/);

  const scrape = await timed('GET /metrics', () => app.api('GET', '/metrics', { token: METRICS_TOKEN }));
  expect(scrape.status).toBe(200);
  expect(scrape.text).toMatch(/^webhook_queue_up 0$/m);
  return { deliveryId: sent.body.id as string, name };
}

describe('Redis frozen (SIGSTOP)', () => {
  it('answers within the bound, then delivers once and counts in Redis again within 5 s of SIGCONT', async () => {
    const s = await ownerOn(app, 'lite', 'ro-frozen');
    const hook = await createWebhook(app, s, { url: receiver.url() });
    const plan = await publishedPlan();
    expect(await countsInRedis()).toBe(true);
    // An instance to shut down while Redis is frozen (its connections are up).
    const leaving = await startAppOn(db, settings());
    expect((await leaving.api('GET', '/auth/me', { token: s.accessToken })).status).toBe(200);

    redis.freeze();
    let id: string;
    try {
      ({ deliveryId: id } = await requestsWhileAway(s, hook.id, plan.id));
      // The sweep while still frozen: its enqueue is bounded too, and queues the same job id again.
      await backdate(id);
      expect(await timed('the delivery sweep', () => app.deps.webhooks.sweep())).toBeGreaterThanOrEqual(1);
      // A shutdown does not wait for Redis either (QUIT would wait for an answer forever).
      await within(CLOSE_WITHIN_MS, leaving.close(), 'closing an instance with Redis frozen');
    } finally {
      redis.thaw();
    }
    const thawed = performance.now();

    // The job sent while frozen runs once Redis answers (BullMQ keeps one job per id): one request.
    expect(await until(id, 'success')).toMatchObject({ status: 'success', attempts: 1 });
    await waitFor(countsInRedis, {
      timeout: RECOVER_WITHIN_MS + 5_000,
      interval: 100,
      message: 'the rate limiter to count in Redis again',
    });
    expect(performance.now() - thawed).toBeLessThan(RECOVER_WITHIN_MS);
    await laterDelivery(s, hook.id);
    expect(requestsFor(id)).toHaveLength(1);
  }, 90_000);
});

describe('Redis stopped (killed) and started again empty', () => {
  it('answers within the bound; Redis in use again within 5 s of its restart; the delivery swept once', async () => {
    const s = await ownerOn(app, 'lite', 'ro-killed');
    const hook = await createWebhook(app, s, { url: receiver.url() });
    // One plan renamed while Redis is away; one each to see that each instance hears changes again.
    const plan = await publishedPlan();
    const [heardByApp, heardByTwin] = [await publishedPlan(), await publishedPlan()];
    // The twin caches the catalog (the plan under its first name).
    const listed = async () => (await catalogName(twin, plan.slug)) === FIRST_NAME;
    await waitFor(listed, { timeout: 5_000, interval: 100, message: 'the twin to list the plan' });
    expect(await countsInRedis()).toBe(true);

    await redis.stop();
    const away = await requestsWhileAway(s, hook.id, plan.id);
    // A long outage: every client's reconnection back-off grows to its longest. A fixed wait: the back-off
    // is in the clients of three processes (two here, the worker), out of reach of fake timers, and they
    // show no sign of it; its length comes from the back-off's own formula (BACKOFF_AT_LONGEST_MS).
    await sleep(BACKOFF_AT_LONGEST_MS);
    // The twin heard nothing of the change: Redis was away when it was announced.
    expect(await catalogName(twin, plan.slug)).toBe(FIRST_NAME);

    // Back at the worst moment: a client has just failed an attempt to reconnect.
    const returned = await redis.nextConnectionAttempt();
    await redis.restart();
    const renamed = { ...plan, name: away.name };
    const back = await everythingBackAfter(returned, { s, hookId: hook.id, renamed, heardByApp, heardByTwin });
    expect(back.twinFresh, 'the lost plan change reached the twin').toBeLessThan(RECOVER_WITHIN_MS);
    expect(back.all, JSON.stringify(back)).toBeLessThan(RECOVER_WITHIN_MS);

    // The delivery never reached the queue (Redis was down, then empty): the API's own sweep queues it.
    expect(await deliveryRow(away.deliveryId)).toMatchObject({ status: 'pending', attempts: 0 });
    await backdate(away.deliveryId);
    expect(await until(away.deliveryId, 'success', 20_000)).toMatchObject({ status: 'success', attempts: 1 });
    await laterDelivery(s, hook.id);
    expect(requestsFor(away.deliveryId)).toHaveLength(1);
  }, 120_000);
});

/**
 * Polls every use of Redis of both instances and the worker from `since` on; answers how many ms after
 * `since` each worked again, and all of them: the twin's catalog fresh after the change it could not hear
 * (first and alone: any change heard later would refresh the whole catalog too), then side by side the
 * limiter's shared count (both command connections), a test delivery through each instance delivered at
 * once (their queue connections and the worker's), and a plan change on each instance heard by the other
 * (both subscribers).
 */
async function everythingBackAfter(
  since: number,
  opts: { s: Session; hookId: string; renamed: Plan & { name: string }; heardByApp: Plan; heardByTwin: Plan },
) {
  const { s, hookId, renamed } = opts;
  const after = async (what: string, probe: () => Promise<boolean>) => {
    await waitFor(probe, { timeout: RECOVER_WITHIN_MS + 10_000, interval: 50, message: what });
    return Math.round(performance.now() - since);
  };
  const deliveredAtOnce = async (via: TestApp) => {
    const res = await via.api('POST', testPath(s, hookId), { token: s.accessToken });
    expect(res.status).toBe(200);
    return holdsWithin(async () => (await deliveryRow(res.body.id)).status === 'success', 1_000);
  };
  const heardBy = async (listener: TestApp, changer: TestApp, plan: Plan) => {
    const name = `Heard ${hex(3)}`;
    await catalogName(listener, plan.slug); // cached now
    expect((await renamePlan(changer, plan.id, name)).status).toBe(200);
    return holdsWithin(async () => (await catalogName(listener, plan.slug)) === name, 500);
  };
  const twinFresh = await after('the twin to list the plan renamed while Redis was away', async () => {
    return (await catalogName(twin, renamed.slug)) === renamed.name;
  });
  const [counted, viaApp, viaTwin, appHears, twinHears] = await Promise.all([
    after('the rate limiter to count in Redis again', countsInRedis),
    after('a delivery through the first instance', () => deliveredAtOnce(app)),
    after('a delivery through the twin', () => deliveredAtOnce(twin)),
    after('the first instance to hear a plan change', () => heardBy(app, twin, opts.heardByApp)),
    after('the twin to hear a plan change', () => heardBy(twin, app, opts.heardByTwin)),
  ]);
  const all = Math.max(twinFresh, counted, viaApp, viaTwin, appHears, twinHears);
  return { twinFresh, counted, viaApp, viaTwin, appHears, twinHears, all };
}
