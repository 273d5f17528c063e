// The billing outbox under the real worker (server/worker.ts as a child process, its periodic task on the
// maintenance queue): a worker SIGKILLed after Stripe counted a batch of meter events but before the
// worker recorded the acknowledgement leaves the commands claimed; once their lease ends
// (BILLING_OUTBOX_LEASE_SECONDS, short here) another worker sends them again with the same identifiers, and
// Stripe counts each once.
// Isolation: a redis-server and a database of the file's own.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { RedisServer } from '../helpers/redis-server.js';
import type { TestApp } from '../helpers/app.js';
import { fakeSubscription, signStripe, startFakeStripe, stripeEvent, type FakeStripe } from '../helpers/fake-stripe.js';
import { registerAndLogin } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';
import { hex, ownDatabase, startAppOn, type OwnDatabase } from '../developer/helpers.js';
import { WorkerProcess, workerEnvOf } from '../developer/queue-helpers.js';
import { adminLogin, createPlan, currentOf, randomHex } from './helpers.js';

const STRIPE_KEY = `sk_test_kill${randomHex(12)}`;
const WHSEC = `whsec_kill${randomHex(12)}`;
const INCLUDED = 1;
const OVERAGE = 8;

let redis: RedisServer;
let db: OwnDatabase;
let stripe: FakeStripe;
let app: TestApp;
const workers: WorkerProcess[] = [];

const settings = () => ({
  REDIS_URL: redis.url,
  QUEUES_ENABLED: 'true',
  WEBHOOK_QUEUE_ENABLED: 'true',
  QUEUE_PREFIX: `test-bill-${hex(4)}`,
  MAINTENANCE_SCHEDULER_ENABLED: 'false',
  BILLING_PROVIDER: 'PROCESSOR_A',
  PROCESSOR_A_SECRET_KEY: STRIPE_KEY,
  PROCESSOR_A_WEBHOOK_SECRET: WHSEC,
  PROCESSOR_A_BASE_URL: stripe.url,
  AI_MONTHLY_GENERATION_LIMIT: String(INCLUDED + OVERAGE),
  BILLING_OUTBOX_LEASE_SECONDS: '2',
});

beforeAll(async () => {
  [redis, db, stripe] = await Promise.all([
    RedisServer.start(),
    ownDatabase('billkill'),
    startFakeStripe({ apiKey: STRIPE_KEY }),
  ]);
  app = await startAppOn(db, settings());
});
afterAll(async () => {
  for (const w of workers.splice(0)) await w.stop('SIGKILL');
  await app?.close();
  await stripe?.close();
  await redis?.close();
  await db?.drop();
});

function startWorker(label: string) {
  const worker = WorkerProcess.start(label, workerEnvOf({ DATABASE_URL: db.url, ...settings() }));
  workers.push(worker);
  return worker;
}

it('a worker killed between sending a meter event and recording it: sent again, counted once', async () => {
  const admin = await adminLogin(app);
  const plan = await createPlan(app, admin, {
    status: 'PUBLISHED',
    limits: { members: 5, apiKeys: 0, aiMonthlyGenerations: INCLUDED },
    meteredOverage: true,
    providerAPriceId: 'price_kill',
    providerAMeterEventName: 'ai_generations',
  });
  const owner = await registerAndLogin(app.api, { prefix: 'usage-kill' });
  const subscription = fakeSubscription(`sub_${randomHex(8)}`, {
    customer: `cus_${randomHex(6)}`,
    metadata: { workspaceId: owner.workspaceId, planId: plan.id },
  });
  const payload = stripeEvent('customer.subscription.created', subscription);
  const hook = await app.api('POST', '/billing/webhooks/processor-a', {
    raw: payload,
    headers: { 'content-type': 'application/json', 'stripe-signature': signStripe(payload, WHSEC) },
  });
  expect(hook.status, hook.text).toBe(200);
  for (let i = 0; i < INCLUDED + OVERAGE; i++) {
    const res = await app.api('POST', '/ai/generate', {
      token: owner.accessToken,
      body: { workspaceId: owner.workspaceId, prompt: `kill ${i}` },
    });
    expect(res.status, res.text).toBe(200);
  }

  // Stripe counts the first batch of events it receives but its answer never comes back; the worker is
  // killed then.
  stripe.loseNextMeterAnswer('hang');
  const first = startWorker('first');
  await waitFor(() => stripe.meterEventRequests() >= 1, { timeout: 30_000, message: 'a first meter event batch' });
  await first.stop('SIGKILL');
  const unacked = await app.deps.db
    .selectFrom('billing_commands')
    .select(['identifier', 'locked_until'])
    .where('workspace_id', '=', owner.workspaceId)
    .where('acked_at', 'is', null)
    .execute();
  expect(unacked.length).toBeGreaterThanOrEqual(1);

  // Another worker takes the rest, and the killed one's claim once its lease has ended.
  startWorker('second');
  await waitFor(async () => (await currentOf(app, owner.accessToken, owner.workspaceId)).usage.reported === OVERAGE, {
    timeout: 60_000,
    interval: 200,
    message: 'every overage generation reported',
  });
  const ids = (
    await app.deps.db
      .selectFrom('billing_commands')
      .select('identifier')
      .where('workspace_id', '=', owner.workspaceId)
      .where('kind', '=', 'METER_EVENT')
      .execute()
  ).map((r) => r.identifier);
  expect(ids).toHaveLength(OVERAGE);
  for (const id of ids) expect(stripe.meterEvents.has(id)).toBe(true);
  expect(stripe.meterEvents.size).toBe(OVERAGE);
  // The batch whose answer was lost went twice; Stripe counted each of its events once.
  expect(stripe.meterEventsReceived()).toBeGreaterThan(OVERAGE);
  expect(stripe.meterEventDuplicates()).toBe(stripe.meterEventsReceived() - OVERAGE);
});
