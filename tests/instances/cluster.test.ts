// N API instances and workers act as one: two API processes (`npm start`) and two workers (`npm run
// worker`), real child processes on one Postgres database and one Redis of the test's own, in queue mode
// with the Redis rate limiter. Shown here: the default tier's limit is shared; 500 events fanned out to a
// webhook arrive once each, and still every one of them after a worker is SIGKILLed mid-run (stalled-job
// recovery; a repeat carries the same delivery id); a rolling restart under steady load through a
// health-checking round-robin client loses no request; Redis stopped and frozen.
//
// Isolation: a database of the file's own (every API instance dispatches and sweeps the whole database,
// see tests/developer/helpers.ts), a redis-server of its own (the test stops and freezes it), and a
// QUEUE_PREFIX of its own. afterAll kills every child process and the Redis.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, registerAndLogin, STRONG_PASSWORD, uniqueEmail, type Api } from '../helpers/http.js';
import { ledger } from '../helpers/secret-ledger.js';
import { WebhookReceiver, type ReceivedRequest } from '../helpers/webhook-receiver.js';
import { hex, ownDatabase, type OwnDatabase } from '../developer/helpers.js';
import { Balancer } from './balancer.js';
import { RedisServer } from './redis-server.js';
import {
  ServiceProcess,
  childEnv,
  freePort,
  startApi,
  startWorker,
  waitFor,
  type ApiInstance,
} from './processes.js';

/** The default tier's limit (per user and window). */
const LIMIT = 100;
const DRAIN_MS = 1_000;
const HEALTH_INTERVAL_MS = 200;
const JOB_LOCK_MS = 2_000;
const WORKER_CONCURRENCY = 25;
const EVENTS = 500;

let db: OwnDatabase | undefined;
let pool: pg.Pool | undefined;
let redis: RedisServer | undefined;
const procs: ServiceProcess[] = [];
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
const PREFIX = `test-cluster-${hex(6)}`;

async function startNode(name: string, port: number): Promise<Node> {
  const instance = await startApi(name, env({ PORT: String(port) }));
  procs.push(instance.proc);
  return { name, port, instance, api: apiClient(instance.url) };
}

async function startWorkerNode(name: string): Promise<ServiceProcess> {
  const w = await startWorker(name, env());
  procs.push(w);
  return w;
}

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
  for (const p of procs) await p.stop('SIGKILL').catch(() => undefined);
  for (const r of receivers) await r.close().catch(() => undefined);
  await pool?.end().catch(() => undefined);
  await redis?.close().catch(() => undefined);
  await db?.drop();
}, 60_000);

/** An owner whose workspace has a webhook to a new receiver for `webhook.test` events. */
async function ownerWithHook(api: Api, reply: Parameters<WebhookReceiver['reply']>[0]) {
  const receiver = (await WebhookReceiver.start()).reply(reply);
  receivers.push(receiver);
  const s = await registerAndLogin(api, { prefix: 'cluster' });
  const res = await api('POST', `/workspaces/${s.workspaceId}/webhooks`, {
    token: s.accessToken,
    body: { name: `cluster ${hex()}`, url: receiver.url(), events: ['webhook.test'] },
  });
  expect(res.status, res.text).toBe(201);
  ledger.sent(res.body.secret, 'a webhook signing secret');
  return { s, receiver, hookId: res.body.id as string };
}

/** Writes `n` `webhook.test` events of the workspace into the outbox (what a domain action does). */
async function insertEvents(workspaceId: string, n: number, batch: string): Promise<void> {
  await pool!.query(
    `insert into domain_events (workspace_id, type, payload)
     select $1, 'webhook.test', jsonb_build_object('batch', $2::text, 'seq', i) from generate_series(1, $3::int) i`,
    [workspaceId, batch, n],
  );
}

const deliveryId = (r: ReceivedRequest) => String(r.headers['x-service-delivery']);
const seqOf = (r: ReceivedRequest) => (JSON.parse(r.body) as { data: { seq: number } }).data.seq;

async function deliveryStatuses(hookId: string): Promise<Record<string, number>> {
  const { rows } = await pool!.query<{ status: string; n: number }>(
    'select status, count(*)::int as n from webhook_deliveries where webhook_id = $1 group by status',
    [hookId],
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

describe('two API instances and two workers on one Postgres and one Redis', () => {
  it(`the default tier's limit is shared: ${LIMIT + 1} requests spread over both instances get exactly one 429`, async () => {
    const [a, b] = apis;
    const s = await registerAndLogin(a!.api, { prefix: 'shared-limit' });
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT + 1; i++) {
      const node = i % 2 === 0 ? a! : b!;
      statuses.push((await node.api('GET', '/auth/me', { token: s.accessToken })).status);
    }
    expect(statuses.filter((st) => st === 429)).toHaveLength(1);
    expect(statuses.slice(0, LIMIT).every((st) => st === 200)).toBe(true);
    expect(statuses[LIMIT]).toBe(429);
  }, 60_000);

  it(`${EVENTS} events fanned out to a webhook are delivered exactly once each, and nothing fails`, async () => {
    const { s, receiver, hookId } = await ownerWithHook(apis[0]!.api, { status: 200, body: 'ok' });
    await insertEvents(s.workspaceId, EVENTS, 'once');

    await receiver.waitForRequests(EVENTS, 60_000);
    await waitFor('every delivery to be recorded a success', async () => (await deliveryStatuses(hookId)).success === EVENTS, 15_000, 200);
    // Nothing arrives twice, also a little later.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(receiver.requests).toHaveLength(EVENTS);
    expect(new Set(receiver.requests.map(deliveryId)).size).toBe(EVENTS);
    expect(new Set(receiver.requests.map(seqOf)).size).toBe(EVENTS);
    expect(await deliveryStatuses(hookId)).toEqual({ success: EVENTS });
    const { rows } = await pool!.query('select max(attempts)::int as most from webhook_deliveries where webhook_id = $1', [hookId]);
    expect(rows[0].most).toBe(1);
  }, 90_000);

  it(`a worker SIGKILLed in the middle of ${EVENTS} deliveries: every event still arrives, a repeat carries the same delivery id`, async () => {
    // Each answer takes 250 ms: the run lasts seconds, and the killed worker holds deliveries in flight.
    const { s, receiver, hookId } = await ownerWithHook(apis[1]!.api, { status: 200, body: 'ok', delayMs: 250 });
    await insertEvents(s.workspaceId, EVENTS, 'kill');

    await receiver.waitForRequests(100, 60_000);
    const victim = workers.shift()!;
    const exit = await victim.stop('SIGKILL');
    expect(exit.signal).toBe('SIGKILL');
    const killedAt = Date.now();

    await waitFor('every event to arrive', () => new Set(receiver.requests.map(seqOf)).size === EVENTS, 60_000, 100);
    await waitFor('every delivery to be recorded a success', async () => (await deliveryStatuses(hookId)).success === EVENTS, 30_000, 200);
    expect(await deliveryStatuses(hookId)).toEqual({ success: EVENTS });

    // One delivery id per event, and a repeat is the same delivery (same id, same event).
    const byDelivery = new Map<string, Set<number>>();
    for (const r of receiver.requests) byDelivery.set(deliveryId(r), (byDelivery.get(deliveryId(r)) ?? new Set()).add(seqOf(r)));
    expect(byDelivery.size).toBe(EVENTS);
    expect([...byDelivery.values()].every((seqs) => seqs.size === 1)).toBe(true);
    // The repeats are the deliveries the killed worker had in flight, sent again once their lock expired.
    const repeats = receiver.requests.length - EVENTS;
    expect(repeats).toBeGreaterThan(0);
    expect(repeats).toBeLessThanOrEqual(WORKER_CONCURRENCY);
    const firstRepeatAt = Math.min(
      ...receiver.requests.filter((r, i) => receiver.requests.findIndex((x) => deliveryId(x) === deliveryId(r)) !== i).map((r) => r.receivedAt),
    );
    expect(firstRepeatAt - killedAt).toBeLessThan(3 * JOB_LOCK_MS + 2_000);

    // Two workers again for what follows.
    workers.push(await startWorkerNode('worker-3'));
  }, 120_000);

  it('a rolling restart under steady load loses no request: each instance answers /health 503 draining, serves what it accepted, exits 0, and comes back', async () => {
    const users = await Promise.all([0, 1, 2].map(async () => {
      const email = uniqueEmail('rolling');
      const reg = await apis[0]!.api('POST', '/auth/register', { body: { email, password: STRONG_PASSWORD, name: 'R' } });
      expect(reg.status, reg.text).toBe(201);
      return { email, userId: reg.body.user.id as string };
    }));
    const lb = new Balancer(apis.map((n) => ({ name: n.name, url: n.instance.url })), HEALTH_INTERVAL_MS);
    await lb.start();

    // Steady load: three clients signing in over and over through the balancer.
    let loading = true;
    const load = users.map(async (u) => {
      while (loading) {
        await lb.request('POST', '/auth/login', { body: { email: u.email, password: STRONG_PASSWORD } });
        await new Promise((r) => setTimeout(r, 20));
      }
    });

    const restarts: Array<{ name: string; signalledAt: number; exitedAt: number }> = [];
    try {
      await waitFor('load on both instances', () => apis.every((n) => lb.sent.some((x) => x.backend === n.name && x.status === 200)), 10_000);
      for (const node of apis) {
        const signalledAt = Date.now();
        node.instance.proc.signal('SIGTERM');
        const exit = await node.instance.proc.exited;
        expect(exit, node.instance.proc.tail()).toMatchObject({ code: 0, signal: null });
        restarts.push({ name: node.name, signalledAt, exitedAt: exit.at });
        const fresh = await startNode(node.name, node.port);
        node.instance = fresh.instance;
        node.api = fresh.api;
        await waitFor(`${node.name} back in the balancer`, () => lb.isUp(node.name), 10_000);
        await waitFor(`load on ${node.name} again`, () => lb.sent.some((x) => x.backend === node.name && x.sentAt > exit.at && x.status === 200), 10_000);
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
      const checks = lb.checks(r.name).filter((c) => c.at >= r.signalledAt && c.at <= r.exitedAt + HEALTH_INTERVAL_MS);
      const firstDraining = checks.findIndex((c) => c.status === 503 && c.says === 'draining');
      expect(firstDraining, `${r.name}: ${JSON.stringify(checks)}`).toBeGreaterThanOrEqual(0);
      expect(checks.slice(firstDraining).every((c) => c.status === 0 || c.says === 'draining'), JSON.stringify(checks)).toBe(true);
      expect(checks.slice(0, firstDraining).every((c) => c.status === 200)).toBe(true);
      // Requests it had accepted after the signal (during the drain) were answered.
      const duringDrain = answered.filter((x) => x.backend === r.name && x.sentAt >= r.signalledAt && x.sentAt <= r.exitedAt);
      expect(duringDrain.length, r.name).toBeGreaterThan(0);
      expect(duringDrain.every((x) => x.status === 200)).toBe(true);
    }
  }, 120_000);
});
