// N API instances and workers act as one: two API processes (`npm start`) and two workers (`npm run
// worker`), real child processes on one Postgres database and one Redis of the test's own, in queue mode
// with the Redis rate limiter. Shown here: the default tier's limit is shared; 500 events fanned out to a
// webhook arrive once each, and still every one of them after a worker is SIGKILLed mid-run (stalled-job
// recovery; a repeat carries the same delivery id); a rolling restart under steady load through a
// health-checking round-robin client loses no request; with Redis stopped, then frozen, no request waits
// longer than the Redis bound, nothing is lost, and Redis is in use again soon after it returns.
//
// Isolation: a database of the file's own (every API instance dispatches and sweeps the whole database,
// see tests/developer/helpers.ts), a redis-server of its own (the test stops and freezes it), and a
// QUEUE_PREFIX of its own. afterAll kills every child process and the Redis.
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, registerAndLogin, STRONG_PASSWORD, uniqueEmail, type Api } from '../helpers/http.js';
import { ledger } from '../helpers/secret-ledger.js';
import { WebhookReceiver, type ReceivedRequest } from '../helpers/webhook-receiver.js';
import { hex, ownDatabase, type OwnDatabase } from '../developer/helpers.js';
import { Balancer } from './balancer.js';
import { RedisServer } from '../helpers/redis-server.js';
import {
  ServiceProcess,
  childEnv,
  freePort,
  killAll,
  startApi,
  startWorker,
  tcpPortsOf,
  type ApiInstance,
} from './processes.js';
import { sleep, waitFor } from '../helpers/wait.js';

/** The default tier's limit (per user and window). */
const LIMIT = 100;
const DRAIN_MS = 1_000;
const HEALTH_INTERVAL_MS = 200;
const JOB_LOCK_MS = 2_000;
const WORKER_CONCURRENCY = 25;
/** The slow lane's slots (jobs/lanes.ts): a worker holds up to both lanes' jobs at once. */
const SLOW_LANE_CONCURRENCY = 10;
const EVENTS = 500;
/** The longest a request may wait on Redis (docs/operations.md), and what the machine may add to it. */
const REDIS_BOUND_MS = 2_000;
const SLACK_MS = 500;
/** Redis is back in use this soon after it returns. */
const RECOVERY_MS = 5_000;
const OUTAGE_MS = 10_000;
const PREFIX = `test-cluster-${hex(6)}`;

let db: OwnDatabase | undefined;
let pool: pg.Pool | undefined;
let redis: RedisServer | undefined;
const receivers: WebhookReceiver[] = [];

interface Node {
  name: string;
  port: number;
  instance: ApiInstance;
  api: Api;
}
const apis: Node[] = [];
const workers: ServiceProcess[] = [];

function env(overrides: Record<string, string> = {}): Record<string, string> {
  return childEnv({
    DATABASE_URL: db!.url,
    REDIS_URL: redis!.url,
    QUEUES_ENABLED: 'true',
    WEBHOOK_QUEUE_ENABLED: 'true',
    QUEUE_PREFIX: PREFIX,
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    WEBHOOK_JOB_LOCK_MS: String(JOB_LOCK_MS),
    WEBHOOK_WORKER_CONCURRENCY: String(WORKER_CONCURRENCY),
    WEBHOOK_SLOW_LANE_CONCURRENCY: String(SLOW_LANE_CONCURRENCY),
    WEBHOOK_RETRY_BACKOFF_SECONDS: '1',
    MAINTENANCE_SCHEDULER_ENABLED: 'false',
    RATE_LIMIT_ENABLED: 'true',
    RATE_LIMIT_MAX_REQUESTS: String(LIMIT),
    // Registrations and the rolling restart's logins (auth tier, by client address) are never limited.
    RATE_LIMIT_AUTH_MAX_REQUESTS: '1000000',
    SHUTDOWN_DRAIN_DELAY_MS: String(DRAIN_MS),
    LOG_LEVEL: 'info',
    ...overrides,
  });
}

async function startNode(name: string, port: number): Promise<Node> {
  const instance = await startApi(name, env({ PORT: String(port) }));
  return { name, port, instance, api: apiClient(instance.url) };
}

const startWorkerNode = (name: string) => startWorker(name, env());

beforeAll(async () => {
  [db, redis] = await Promise.all([ownDatabase('cluster'), RedisServer.start()]);
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const [portA, portB] = [await freePort(), await freePort()];
  // The first instance migrates the new database; the others start beside it (the migrator takes a lock).
  const [a, b, w1, w2] = await Promise.all([
    startNode('api-a', portA),
    startNode('api-b', portB),
    startWorkerNode('worker-1'),
    startWorkerNode('worker-2'),
  ]);
  apis.push(a, b);
  workers.push(w1, w2);
}, 90_000);

afterAll(async () => {
  await killAll();
  for (const r of receivers) await r.close().catch(() => undefined);
  await pool?.end().catch(() => undefined);
  await redis?.close().catch(() => undefined);
  await db?.drop();
}, 60_000);

/** An owner whose workspace has a webhook to a new receiver for `webhook.test` events. */
async function ownerWithHook(api: Api, reply: Parameters<WebhookReceiver['reply']>[0]) {
  const receiver = (await WebhookReceiver.start()).reply(reply);
  receivers.push(receiver);
  return { receiver, ...(await ownerWithHookTo(api, receiver, 'cluster')) };
}

/** An owner whose workspace has a webhook to `receiver` for `webhook.test` events. */
async function ownerWithHookTo(api: Api, receiver: WebhookReceiver, prefix: string) {
  const s = await registerAndLogin(api, { prefix });
  const res = await api('POST', `/workspaces/${s.workspaceId}/webhooks`, {
    token: s.accessToken,
    body: { name: `cluster ${hex()}`, url: receiver.url(), events: ['webhook.test'] },
  });
  expect(res.status, res.text).toBe(201);
  ledger.sent(res.body.secret, 'a webhook signing secret');
  return { s, hookId: res.body.id as string };
}

interface Timed {
  phase: string;
  node: string;
  what: string;
  ms: number;
  status: number;
  body?: any;
  error?: string;
}

/**
 * One request to `node`, timed by the client; given up after 4 times the Redis bound (status 0 and the
 * error then), so that a request hanging on Redis fails the test instead of holding it.
 */
async function timed(node: Node, phase: string, method: string, path: string, token?: string): Promise<Timed> {
  const what = `${method} ${path.replace(/[0-9a-f-]{36}/g, '{id}')}`;
  const started = performance.now();
  const ms = () => Math.round(performance.now() - started);
  try {
    const res = await fetch(node.instance.url + path, {
      method,
      headers: token ? { authorization: `Bearer ${token}` } : {},
      signal: AbortSignal.timeout(4 * REDIS_BOUND_MS),
    });
    const text = await res.text();
    ledger.observe(`${method} ${path}`, text);
    return { phase, node: node.name, what, ms: ms(), status: res.status, body: text ? JSON.parse(text) : undefined };
  } catch (err) {
    return { phase, node: node.name, what, ms: ms(), status: 0, error: String(err) };
  }
}

/** Writes `n` `webhook.test` events of the workspace into the outbox (what a domain action does). */
async function insertEvents(workspaceId: string, n: number, batch: string): Promise<void> {
  await pool!.query(
    `insert into domain_events (workspace_id, type, payload)
     select $1, 'webhook.test', jsonb_build_object('batch', $2::text, 'seq', i) from generate_series(1, $3::int) i`,
    [workspaceId, batch, n],
  );
}

const allSucceeded = async (hookId: string) => (await deliveryStatuses(hookId)).success === EVENTS;
const deliveryId = (r: ReceivedRequest) => String(r.headers['x-service-delivery']);
const seqOf = (r: ReceivedRequest) => (JSON.parse(r.body) as { data: { seq: number } }).data.seq;

/** The deliveries of a webhook by status. */
async function deliveryStatuses(hookId: string): Promise<Record<string, number>> {
  const { rows } = await pool!.query<{ status: string; n: number }>(
    'select status, count(*)::int as n from webhook_deliveries where webhook_id = $1 group by status',
    [hookId],
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

describe('two API instances and two workers on one Postgres and one Redis', () => {
  it(`the default tier's limit is shared: ${LIMIT + 1} requests spread over both instances get one 429`, async () => {
    const [a, b] = apis;
    const s = await registerAndLogin(a.api, { prefix: 'shared-limit' });
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT + 1; i++) {
      const node = i % 2 === 0 ? a : b;
      statuses.push((await node.api('GET', '/auth/me', { token: s.accessToken })).status);
    }
    expect(statuses.filter((st) => st === 429)).toHaveLength(1);
    expect(statuses.slice(0, LIMIT).every((st) => st === 200)).toBe(true);
    expect(statuses[LIMIT]).toBe(429);
  }, 60_000);

  it(`${EVENTS} events fanned out to a webhook are delivered exactly once each, and nothing fails`, async () => {
    const { s, receiver, hookId } = await ownerWithHook(apis[0].api, { status: 200, body: 'ok' });
    await insertEvents(s.workspaceId, EVENTS, 'once');

    await receiver.waitForRequests(EVENTS, 60_000);
    await waitFor(async () => await allSucceeded(hookId), {
      timeout: 15_000,
      interval: 200,
      message: 'every delivery recorded a success',
    });
    // Nothing arrives twice, also later: a later event, dispatched, queued and delivered the same way, has
    // arrived first.
    const later = await ownerWithHook(apis[1].api, { status: 200, body: 'ok' });
    await insertEvents(later.s.workspaceId, 1, 'later');
    await later.receiver.waitForRequests(1, 30_000);
    expect(receiver.requests).toHaveLength(EVENTS);
    expect(new Set(receiver.requests.map(deliveryId)).size).toBe(EVENTS);
    expect(new Set(receiver.requests.map(seqOf)).size).toBe(EVENTS);
    expect(await deliveryStatuses(hookId)).toEqual({ success: EVENTS });
    const most = 'select max(attempts)::int as most from webhook_deliveries where webhook_id = $1';
    const { rows } = await pool!.query(most, [hookId]);
    expect(rows[0].most).toBe(1);
  }, 90_000);

  it(
    `a worker SIGKILLed in the middle of ${EVENTS} deliveries: every event still arrives, ` +
      'a repeat carries the same delivery id',
    async () => {
      // Each answer takes 250 ms: the run lasts seconds, and the killed worker holds deliveries in flight.
      const { s, receiver, hookId } = await ownerWithHook(apis[1].api, { status: 200, body: 'ok', delayMs: 250 });
      await insertEvents(s.workspaceId, EVENTS, 'kill');

      await receiver.waitForRequests(100, 60_000);
      // The kill comes while the victim has a request at the receiver that arrived just now: its answer
      // (250 ms) cannot have been written yet, so the victim dies holding at least one delivery.
      const victim = workers.shift()!;
      const victimPid = victim.child.pid!;
      await waitFor(
        () => {
          const ports = tcpPortsOf(victimPid);
          return receiver.requests.some(
            (r, i) =>
              receiver.answeredAt[i] === undefined && ports.has(r.remotePort) && Date.now() - r.receivedAt < 100,
          );
        },
        { timeout: 30_000, interval: 5, message: 'a request of the victim just arrived' },
      );
      const exit = await victim.stop('SIGKILL');
      expect(exit.signal).toBe('SIGKILL');
      const killedAt = Date.now();

      await waitFor(() => new Set(receiver.requests.map(seqOf)).size === EVENTS, {
        timeout: 60_000,
        interval: 100,
        message: 'every event to arrive',
      });
      await waitFor(async () => await allSucceeded(hookId), {
        timeout: 30_000,
        interval: 200,
        message: 'every delivery recorded a success',
      });
      expect(await deliveryStatuses(hookId)).toEqual({ success: EVENTS });

      // One delivery id per event, and a repeat is the same delivery (same id, same event).
      const byDelivery = new Map<string, Set<number>>();
      for (const r of receiver.requests) {
        byDelivery.set(deliveryId(r), (byDelivery.get(deliveryId(r)) ?? new Set()).add(seqOf(r)));
      }
      expect(byDelivery.size).toBe(EVENTS);
      expect([...byDelivery.values()].every((seqs) => seqs.size === 1)).toBe(true);
      // The repeats are the deliveries the killed worker had in flight, sent again once their lock expired:
      // at least those it died waiting on (the receiver saw their connections close unanswered).
      const repeats = receiver.requests.length - EVENTS;
      expect(receiver.abandoned.size).toBeGreaterThan(0);
      expect(repeats).toBeGreaterThanOrEqual(receiver.abandoned.size);
      // At most what the killed worker could hold: a full main lane and, for the deliveries over the one
      // endpoint's cap, a full slow lane (two CI runs counted 35 = 25 + 10).
      expect(repeats).toBeLessThanOrEqual(WORKER_CONCURRENCY + SLOW_LANE_CONCURRENCY);
      const firstIndex = (r: ReceivedRequest) => receiver.requests.findIndex((x) => deliveryId(x) === deliveryId(r));
      const firstRepeatAt = Math.min(
        ...receiver.requests.filter((r, i) => firstIndex(r) !== i).map((r) => r.receivedAt),
      );
      expect(firstRepeatAt - killedAt).toBeLessThan(3 * JOB_LOCK_MS + 2_000);

      // Two workers again for what follows.
      workers.push(await startWorkerNode('worker-3'));
    },
    120_000,
  );

  it(
    'a rolling restart under steady load loses no request: each instance answers /health 503 draining, ' +
      'serves what it accepted, exits 0, and comes back',
    async () => {
      const users = await Promise.all(
        [0, 1, 2].map(async () => {
          const email = uniqueEmail('rolling');
          const body = { email, password: STRONG_PASSWORD, name: 'R' };
          const reg = await apis[0].api('POST', '/auth/register', { body });
          expect(reg.status, reg.text).toBe(201);
          return { email, userId: reg.body.user.id as string };
        }),
      );
      const lb = new Balancer(
        apis.map((n) => ({ name: n.name, url: n.instance.url })),
        HEALTH_INTERVAL_MS,
      );
      await lb.start();

      // Steady load: three clients signing in over and over through the balancer.
      let loading = true;
      const load = users.map(async (u) => {
        while (loading) {
          await lb.request('POST', '/auth/login', { body: { email: u.email, password: STRONG_PASSWORD } });
          // A fixed wait: the load's pace (a client's think time between sign-ins), not a wait for anything.
          await sleep(20);
        }
      });

      const restarts: Array<{ name: string; signalledAt: number; exitedAt: number }> = [];
      try {
        const served = (name: string, after = 0) =>
          lb.sent.some((x) => x.backend === name && x.sentAt > after && x.status === 200);
        await waitFor(() => apis.every((n) => served(n.name)), { timeout: 10_000, message: 'load on both instances' });
        for (const node of apis) {
          const signalledAt = Date.now();
          // SIGTERM; killed (and so failing below) if it has not exited 15 s after its drain.
          const stopping = node.instance.proc.stop('SIGTERM', DRAIN_MS + 15_000);
          // A request sent straight to the instance during its drain (the balancer may already have taken
          // it out) is still served, with its real answer.
          await node.instance.proc.waitForLog(/^draining/, DRAIN_MS + 5_000);
          const direct = await node.api('POST', '/auth/login', {
            body: { email: users[0].email, password: STRONG_PASSWORD },
          });
          expect(direct.status, direct.text).toBe(200);
          expect(direct.body.user.id).toBe(users[0].userId);
          const exit = await stopping;
          expect(exit, node.instance.proc.tail()).toMatchObject({ code: 0, signal: null });
          restarts.push({ name: node.name, signalledAt, exitedAt: exit.at });
          const fresh = await startNode(node.name, node.port);
          node.instance = fresh.instance;
          node.api = fresh.api;
          await waitFor(() => lb.isUp(node.name), { timeout: 10_000, message: `${node.name} back in the balancer` });
          await waitFor(() => served(node.name, exit.at), { timeout: 10_000, message: `load on ${node.name} again` });
        }
      } finally {
        loading = false;
        await Promise.all(load);
        await lb.stop();
      }

      // Every request got its real answer: a session of the user it signed in.
      const answered = lb.sent.filter((x) => !x.refused);
      const wrong = answered.filter((x) => x.status !== 200 || !users.some((u) => u.userId === x.body?.user?.id));
      expect(wrong).toEqual([]);
      // Nothing was refused: the balancer had taken the instance out during its drain.
      expect(lb.sent.filter((x) => x.refused)).toEqual([]);
      for (const r of restarts) {
        // After the signal the balancer saw `draining`, and from then on only that until the port closed.
        const checks = lb
          .checks(r.name)
          .filter((c) => c.at >= r.signalledAt && c.at <= r.exitedAt + HEALTH_INTERVAL_MS);
        const firstDraining = checks.findIndex((c) => c.status === 503 && c.says === 'draining');
        expect(firstDraining, `${r.name}: ${JSON.stringify(checks)}`).toBeGreaterThanOrEqual(0);
        const afterwards = checks.slice(firstDraining);
        expect(
          afterwards.every((c) => c.status === 0 || c.says === 'draining'),
          JSON.stringify(checks),
        ).toBe(true);
        expect(checks.slice(0, firstDraining).every((c) => c.status === 200)).toBe(true);
        // Requests the balancer sent it after the signal (during the drain) were answered; whether it sent
        // any depends on when its next health check fell, so the direct request above is the sure one.
        const duringDrain = answered.filter(
          (x) => x.backend === r.name && x.sentAt >= r.signalledAt && x.sentAt <= r.exitedAt,
        );
        expect(duringDrain.every((x) => x.status === 200)).toBe(true);
      }
    },
    120_000,
  );
  it(
    'Redis stopped for 10 s, then frozen for 10 s: no request waits longer than 2 s, nothing is lost, and ' +
      'Redis is used again within 5 s of its return, without a restart',
    async () => {
      const receiver = (await WebhookReceiver.start()).reply({ status: 200, body: 'ok' });
      receivers.push(receiver);
      const inspect = new Redis(redis!.url, {
        maxRetriesPerRequest: 1,
        retryStrategy: () => 200,
        commandTimeout: 1_000,
      });
      inspect.on('error', () => undefined);
      const timings: Timed[] = [];
      const hookIds: string[] = [];

      /** A webhook owner (its test deliveries) and another user (GET /auth/me), fresh so no limit is near. */
      async function actors(label: string) {
        const { s, hookId } = await ownerWithHookTo(apis[0].api, receiver, label);
        hookIds.push(hookId);
        const reader = await registerAndLogin(apis[1].api, { prefix: `${label}-reader` });
        return { testPath: `/workspaces/${s.workspaceId}/webhooks/${hookId}/test`, owner: s.accessToken, reader };
      }
      type Actors = Awaited<ReturnType<typeof actors>>;

      /** Steady requests to both instances for OUTAGE_MS: /health, GET /auth/me and a test delivery, timed. */
      async function load(who: Actors, phase: string) {
        const until = Date.now() + OUTAGE_MS;
        await Promise.all(
          apis.map(async (node) => {
            while (Date.now() < until) {
              timings.push(await timed(node, phase, 'GET', '/health'));
              timings.push(await timed(node, phase, 'GET', '/auth/me', who.reader.accessToken));
              timings.push(await timed(node, phase, 'POST', who.testPath, who.owner));
              // A fixed wait: the load's pace through the outage (steady requests for OUTAGE_MS).
              await sleep(300);
            }
          }),
        );
      }

      /** The reader's count in the Redis rate limiter (server/platform/rate-limit.ts: the tier, the client, the tier). */
      const counted = async (who: Actors) =>
        Number((await inspect.get(`rl:default:user:${who.reader.userId}:default`)) ?? 0);

      /**
       * How long after `since` Redis was in use again by both instances: a request is counted in Redis, and
       * a test delivery goes through the queue to the receiver at once (not by the sweep, 30 s later).
       */
      async function recovery(who: Actors, since: number, phase: string): Promise<number> {
        const inUse = async (node: Node) => {
          const before = await counted(who);
          const me = await timed(node, phase, 'GET', '/auth/me', who.reader.accessToken);
          timings.push(me);
          if (me.status !== 200 || (await counted(who)) !== before + 1) return false;
          const sent = await timed(node, phase, 'POST', who.testPath, who.owner);
          timings.push(sent);
          if (sent.status !== 200) return false;
          const arrived = () => receiver.requests.some((r) => deliveryId(r) === sent.body.id);
          return waitFor(arrived, { timeout: 1_000, interval: 25, message: 'the probe delivery' }).then(
            () => true,
            () => false,
          );
        };
        await waitFor(
          async () => {
            for (const node of apis) if (!(await inUse(node).catch(() => false))) return false;
            return true;
          },
          { timeout: RECOVERY_MS + 10_000, interval: 100, message: `Redis in use again (${phase})` },
        );
        return Date.now() - since;
      }

      // Stopped: connections are refused, and its data is gone.
      const down = await actors('redis-down');
      await redis!.stop();
      await load(down, 'stopped');
      await redis!.restart();
      const backAfterStop = await recovery(down, Date.now(), 'after the stop');

      // Frozen: connections stay open, nothing answers.
      const frozen = await actors('redis-frozen');
      redis!.freeze();
      await load(frozen, 'frozen');
      redis!.thaw();
      const backAfterFreeze = await recovery(frozen, Date.now(), 'after the freeze');
      inspect.disconnect();

      // Soft: each failure is reported, and the check that nothing was lost still runs.
      const slow = timings.filter((t) => t.ms > REDIS_BOUND_MS + SLACK_MS);
      expect.soft(slow.map((t) => `${t.phase} ${t.node} ${t.what}: ${t.ms} ms, ${t.status}`)).toEqual([]);
      const failed = timings.filter((t) => t.status !== 200);
      expect.soft(failed.map((t) => `${t.phase} ${t.node} ${t.what}: ${t.status} ${t.error ?? ''}`)).toEqual([]);
      const processes = [...apis.map((n) => n.instance.proc), ...workers];
      expect
        .soft(
          processes.every((p) => p.running),
          'no process restarted',
        )
        .toBe(true);
      expect.soft(backAfterStop, 'ms until Redis was in use again after the stop').toBeLessThanOrEqual(RECOVERY_MS);
      expect.soft(backAfterFreeze, 'ms until Redis was in use again after the freeze').toBeLessThanOrEqual(RECOVERY_MS);

      // Nothing lost: every delivery recorded during the scenario (also of a request whose client gave up)
      // arrives exactly once and ends success; those whose enqueue failed are queued by the sweep (30 s).
      const accepted = timings
        .filter((t) => t.what.startsWith('POST') && t.status === 200)
        .map((t) => t.body.id as string);
      expect(accepted.length).toBeGreaterThan(10);
      const rows = async () => {
        const sql = 'select id, status from webhook_deliveries where webhook_id = any($1::uuid[])';
        return (await pool!.query<{ id: string; status: string }>(sql, [hookIds])).rows;
      };
      const done = await waitFor(
        async () => {
          const all = await rows();
          return all.every((r) => r.status === 'success') && all;
        },
        { timeout: 60_000, interval: 250, message: 'every delivery of the scenario to succeed' },
      );
      expect(done.map((r) => r.id)).toEqual(expect.arrayContaining(accepted));
      const arrivals = new Map<string, number>();
      for (const r of receiver.requests) arrivals.set(deliveryId(r), (arrivals.get(deliveryId(r)) ?? 0) + 1);
      expect(done.filter((r) => arrivals.get(r.id) !== 1)).toEqual([]);
      expect(arrivals.size).toBe(done.length);
    },
    150_000,
  );
});
