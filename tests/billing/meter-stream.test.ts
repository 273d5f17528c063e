// Stripe meter events in batches: the billing outbox sends the meter commands of overage generations on
// Stripe's v2 meter event stream, up to 100 events a request, authenticated with a meter event session's
// short-lived token (created with the secret key, reused until shortly before it expires). A batch is
// acknowledged as a whole after Stripe's 2xx, or retried as a whole with the same identifiers (counted
// once). The fake Stripe (tests/helpers/fake-stripe.ts) requires the session token on the stream, answers
// 401 for an expired one, and counts events once per identifier.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { clockAhead } from '../helpers/clock.js';
import { startFakeStripe, type FakeStripe } from '../helpers/fake-stripe.js';
import { registerAndLogin, type Session } from '../helpers/http.js';
import { drainBillingOutbox } from '../../routers/billing/outbox.js';
import { adminLogin, createPlan, currentOf, randomHex, subscribeAtFakeStripe } from './helpers.js';

const STRIPE_KEY = `sk_test_stream${randomHex(12)}`;
const WHSEC = `whsec_stream${randomHex(12)}`;
const INCLUDED = 1;
const MANY = 250;
const STREAM = '/v2/billing/meter_event_stream';

let stripe: FakeStripe;
let app: TestApp;
let metered: { id: string };

beforeAll(async () => {
  stripe = await startFakeStripe({ apiKey: STRIPE_KEY });
  app = await startTestApp({
    AI_MONTHLY_GENERATION_LIMIT: String(INCLUDED + MANY),
    BILLING_PROVIDER: 'PROCESSOR_A',
    PROCESSOR_A_SECRET_KEY: STRIPE_KEY,
    PROCESSOR_A_WEBHOOK_SECRET: WHSEC,
    PROCESSOR_A_BASE_URL: stripe.url,
  });
  const admin = await adminLogin(app);
  metered = await createPlan(app, admin, {
    status: 'PUBLISHED',
    limits: { members: 5, apiKeys: 0, aiMonthlyGenerations: INCLUDED },
    meteredOverage: true,
    providerAPriceId: `price_stream_${randomHex()}`,
    providerAMeterEventName: 'ai_generations',
  });
});
afterAll(async () => {
  await app?.close();
  await stripe?.close();
});

/** A new account whose workspace is subscribed to the metered plan at the fake Stripe, and its customer. */
async function subscribed(): Promise<{ owner: Session; customer: string }> {
  const owner = await registerAndLogin(app.api, { prefix: 'meter-stream' });
  return { owner, customer: await subscribeAtFakeStripe(app, stripe, WHSEC, owner, metered) };
}

/** `n` overage generations (after the included ones, on a new workspace), 10 at a time: their ids. */
async function overage(owner: Session, n: number, { fresh = true } = {}): Promise<string[]> {
  const ids: string[] = [];
  const total = (fresh ? INCLUDED : 0) + n;
  for (let i = 0; i < total; i += 10) {
    const answers = await Promise.all(
      Array.from({ length: Math.min(10, total - i) }, () =>
        app.api('POST', '/ai/generate', {
          token: owner.accessToken,
          body: { workspaceId: owner.workspaceId, prompt: `stream ${randomHex()}` },
        }),
      ),
    );
    for (const res of answers) {
      expect(res.status, res.text).toBe(200);
      if ((res.body.usage.used as number) > INCLUDED) ids.push(res.body.id as string);
    }
  }
  expect(ids).toHaveLength(n);
  return ids;
}

const drain = (owner: Session) => drainBillingOutbox(app.deps, { workspaceIds: [owner.workspaceId] });
const streamRequests = () => stripe.requests.filter((r) => r.path === STREAM);

it('many overage generations reach Stripe in a few stream requests, every identifier once', async () => {
  const { owner, customer } = await subscribed();
  const ids = await overage(owner, MANY);
  const [requests, received, streamed] = [
    stripe.meterEventRequests(),
    stripe.meterEventsReceived(),
    streamRequests().length,
  ];

  expect(await drain(owner)).toEqual({ acked: MANY, failed: 0 });
  // 100 events a request at most: 250 events are 3 requests.
  const sent = streamRequests().slice(streamed);
  expect(sent).toHaveLength(Math.ceil(MANY / 100));
  expect(stripe.meterEventRequests() - requests).toBe(sent.length);
  for (const r of sent) {
    expect(r.body.events.length).toBeLessThanOrEqual(100);
    // The session's token, not the secret key, authenticates the stream.
    expect(r.headers.authorization).toMatch(/^Bearer mes_token_/);
  }
  const identifiers = sent.flatMap((r) => r.body.events.map((e: { identifier: string }) => e.identifier));
  expect(identifiers.sort()).toEqual([...ids].sort());
  expect(stripe.meterEventsReceived() - received).toBe(MANY);
  for (const id of ids) {
    expect(stripe.meterEvents.get(id)).toMatchObject({
      event_name: 'ai_generations',
      payload: { stripe_customer_id: customer, value: '1' },
    });
  }
  expect((await currentOf(app, owner.accessToken, owner.workspaceId)).usage).toMatchObject({
    overage: MANY,
    reported: MANY,
  });
});

it('one meter event session serves many batches; an expired one is renewed and the batch sent again', async () => {
  const { owner } = await subscribed();
  const ids = await overage(owner, 6);
  // The first batch creates a session if no earlier one did; the next one reuses it.
  await drainBillingOutbox(app.deps, { workspaceIds: [owner.workspaceId] });
  const sessions = stripe.meterSessionsCreated();
  expect(sessions).toBeGreaterThanOrEqual(1);
  const first = await overage(owner, 3, { fresh: false }).then((more) => [...ids, ...more]);
  expect(await drain(owner)).toEqual({ acked: 3, failed: 0 });
  expect(stripe.meterSessionsCreated()).toBe(sessions);

  // Stripe ends the session before its expires_at: the stream answers 401, the adapter creates a new
  // session and sends the batch again at once.
  stripe.expireMeterSessions();
  const before = streamRequests().length;
  const second = await overage(owner, 3, { fresh: false });
  expect(await drain(owner)).toEqual({ acked: 3, failed: 0 });
  expect(stripe.meterSessionsCreated()).toBe(sessions + 1);
  const sent = streamRequests().slice(before);
  expect(sent).toHaveLength(2);
  expect(sent[0].headers.authorization).not.toBe(sent[1].headers.authorization);
  for (const id of [...first, ...second]) expect(stripe.meterEvents.has(id)).toBe(true);

  // Past its expires_at (15 minutes) by our clock: renewed before the request, no 401 on the way.
  const third = await overage(owner, 3, { fresh: false });
  const renewedBefore = streamRequests().length;
  expect(await clockAhead(16 * 60_000, () => drain(owner))).toEqual({ acked: 3, failed: 0 });
  expect(stripe.meterSessionsCreated()).toBe(sessions + 2);
  expect(streamRequests().slice(renewedBefore)).toHaveLength(1);
  for (const id of third) expect(stripe.meterEvents.has(id)).toBe(true);
  expect((await currentOf(app, owner.accessToken, owner.workspaceId)).usage.reported).toBe(15);
});

it('a batch Stripe answered 500 is retried as a whole and each event counted once', async () => {
  const { owner } = await subscribed();
  const ids = await overage(owner, 5);
  const [received, duplicates] = [stripe.meterEventsReceived(), stripe.meterEventDuplicates()];

  // Stripe counts the batch but the answer is a 500: nothing is acknowledged.
  stripe.loseNextMeterAnswer(500);
  expect(await drain(owner)).toEqual({ acked: 0, failed: 5 });
  expect(stripe.meterEventsReceived() - received).toBe(5);
  expect((await currentOf(app, owner.accessToken, owner.workspaceId)).usage.reported).toBe(0);
  const pending = await app.deps.db
    .selectFrom('billing_commands')
    .select(['acked_at', 'last_error', 'locked_until'])
    .where('workspace_id', '=', owner.workspaceId)
    .execute();
  expect(pending).toHaveLength(5);
  for (const row of pending) expect(row).toMatchObject({ acked_at: null, locked_until: null });

  // After the backoff: the same batch again, same identifiers; Stripe counts none of them twice.
  const before = streamRequests().length;
  expect(await clockAhead(5_000, () => drain(owner))).toEqual({ acked: 5, failed: 0 });
  const [resent] = streamRequests().slice(before);
  expect(resent.body.events.map((e: { identifier: string }) => e.identifier).sort()).toEqual([...ids].sort());
  expect(stripe.meterEventsReceived() - received).toBe(10);
  expect(stripe.meterEventDuplicates() - duplicates).toBe(5);
  for (const id of ids) expect([...stripe.meterEvents.keys()].filter((k) => k === id)).toHaveLength(1);
  expect((await currentOf(app, owner.accessToken, owner.workspaceId)).usage.reported).toBe(5);
});
