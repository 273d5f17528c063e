// Usage-based overage: on a metered plan, generations past the plan's amount are allowed up to
// AI_MONTHLY_GENERATION_LIMIT and each becomes one meter event sent from the billing outbox (Stripe Billing
// Meter events, in batches on its v2 meter event stream, with the generation id as `identifier`; Lemon
// Squeezy usage records). A lost
// acknowledgement is sent again and Stripe counts it once. GET /billing/current shows the usage.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { clockAhead } from '../helpers/clock.js';
import { startFakeStripe, type FakeStripe } from '../helpers/fake-stripe.js';
import { lemonEvent, signLemon, startFakeLemonSqueezy, type FakeLemonSqueezy } from '../helpers/fake-lemonsqueezy.js';
import { expectError, registerAndLogin, type Session } from '../helpers/http.js';
import { drainBillingOutbox } from '../../routers/billing/outbox.js';
import { adminLogin, createPlan, currentOf, randomHex, subscribeAtFakeStripe } from './helpers.js';

const STRIPE_KEY = `sk_test_usage${randomHex(12)}`;
const WHSEC = `whsec_usage${randomHex(12)}`;
const LEMON_KEY = `lemon-usage-key-${randomHex(12)}`;
const LEMON_SECRET = `lemon-usage-secret-${randomHex(12)}`;
const CEILING = 6;
const INCLUDED = 2;

let stripe: FakeStripe;
let lemon: FakeLemonSqueezy;
let app: TestApp;
let lemonApp: TestApp;
let metered: { id: string; slug: string };
let flat: { id: string; slug: string };

beforeAll(async () => {
  [stripe, lemon] = await Promise.all([
    startFakeStripe({ apiKey: STRIPE_KEY }),
    startFakeLemonSqueezy({ apiKey: LEMON_KEY }),
  ]);
  const shared = {
    AI_MONTHLY_GENERATION_LIMIT: String(CEILING),
    PROCESSOR_A_SECRET_KEY: STRIPE_KEY,
    PROCESSOR_A_WEBHOOK_SECRET: WHSEC,
    PROCESSOR_A_BASE_URL: stripe.url,
    PROCESSOR_B_API_KEY: LEMON_KEY,
    PROCESSOR_B_STORE_ID: '78',
    PROCESSOR_B_WEBHOOK_SECRET: LEMON_SECRET,
    PROCESSOR_B_BASE_URL: lemon.url,
  };
  [app, lemonApp] = await Promise.all([
    startTestApp({ BILLING_PROVIDER: 'PROCESSOR_A', ...shared }),
    startTestApp({ BILLING_PROVIDER: 'PROCESSOR_B', ...shared }),
  ]);
  const admin = await adminLogin(app);
  const limits = { members: 5, apiKeys: 0, aiMonthlyGenerations: INCLUDED };
  [metered, flat] = await Promise.all([
    createPlan(app, admin, {
      status: 'PUBLISHED',
      limits,
      meteredOverage: true,
      providerAPriceId: `price_metered_${randomHex()}`,
      providerAMeterEventName: 'ai_generations',
      providerBVariantId: String(Math.floor(Math.random() * 1e6)),
    }),
    createPlan(app, admin, { status: 'PUBLISHED', limits, providerAPriceId: `price_flat_${randomHex()}` }),
  ]);
});
afterAll(async () => {
  await Promise.all([app?.close(), lemonApp?.close()]);
  await Promise.all([stripe?.close(), lemon?.close()]);
});

/** The workspace of a new account, subscribed to `plan` at the fake Stripe; answers its customer id. */
const subscribedAtStripe = (owner: Session, plan: { id: string }) =>
  subscribeAtFakeStripe(app, stripe, WHSEC, owner, plan);

async function generate(target: TestApp, owner: Session) {
  return target.api('POST', '/ai/generate', {
    token: owner.accessToken,
    body: { workspaceId: owner.workspaceId, prompt: `usage ${randomHex()}` },
  });
}

async function generateTimes(target: TestApp, owner: Session, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await generate(target, owner);
    expect(res.status, res.text).toBe(200);
    ids.push(res.body.id as string);
  }
  return ids;
}

const drain = (target: TestApp, owner: Session) =>
  drainBillingOutbox(target.deps, { workspaceIds: [owner.workspaceId] });

describe('metered overage at Stripe', () => {
  it('allows generations past the plan up to the ceiling, and reports each overage one as a meter event', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'usage-metered' });
    const customer = await subscribedAtStripe(owner, metered);
    const ids = await generateTimes(app, owner, CEILING);
    // The service's ceiling still holds.
    expectError(await generate(app, owner), 403, 'AI_MONTHLY_LIMIT_REACHED');

    let current = await currentOf(app, owner.accessToken, owner.workspaceId);
    expect(current.usage).toEqual({
      generations: CEILING,
      included: INCLUDED,
      overage: CEILING - INCLUDED,
      reported: 0,
    });

    await drain(app, owner);
    const overageIds = ids.slice(INCLUDED);
    for (const id of overageIds) {
      expect(stripe.meterEvents.get(id)).toMatchObject({
        event_name: 'ai_generations',
        payload: { stripe_customer_id: customer, value: '1' },
      });
    }
    // The included generations are not metered.
    for (const id of ids.slice(0, INCLUDED)) expect(stripe.meterEvents.has(id)).toBe(false);
    current = await currentOf(app, owner.accessToken, owner.workspaceId);
    expect(current.usage).toMatchObject({ overage: CEILING - INCLUDED, reported: CEILING - INCLUDED });
  });

  it('a flat plan still refuses generations past its amount', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'usage-flat' });
    await subscribedAtStripe(owner, flat);
    await generateTimes(app, owner, INCLUDED);
    expectError(await generate(app, owner), 403, 'AI_MONTHLY_LIMIT_REACHED');
    const current = await currentOf(app, owner.accessToken, owner.workspaceId);
    expect(current.usage).toEqual({ generations: INCLUDED, included: INCLUDED, overage: 0, reported: 0 });
  });

  it('a meter event whose acknowledgement was lost is sent again with the same identifier and counted once', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'usage-lost' });
    await subscribedAtStripe(owner, metered);
    const ids = await generateTimes(app, owner, INCLUDED + 1);
    const overageId = ids.at(-1)!;
    const before = stripe.meterEventRequests();

    stripe.loseNextMeterAnswer(500);
    expect(await drain(app, owner)).toEqual({ acked: 0, failed: 1 });
    expect(stripe.meterEventRequests()).toBe(before + 1);
    expect((await currentOf(app, owner.accessToken, owner.workspaceId)).usage.reported).toBe(0);

    await clockAhead(5_000, () => drain(app, owner));
    // Both sends went to the meter event stream with the same identifier (what makes the resend idempotent
    // at Stripe: API v2's idempotency keys are the SDK's own, new for each call).
    const sent = stripe.requests.filter((r) => r.path === '/v2/billing/meter_event_stream').slice(-2);
    expect(sent.map((r) => r.body.events.map((e: { identifier: string }) => e.identifier))).toEqual([
      [overageId],
      [overageId],
    ]);
    expect([...stripe.meterEvents.keys()].filter((k) => k === overageId)).toHaveLength(1);
    expect((await currentOf(app, owner.accessToken, owner.workspaceId)).usage.reported).toBe(1);
  });
});

describe('metered overage at Lemon Squeezy', () => {
  it('each overage generation is one usage record on the subscription item', async () => {
    const owner = await registerAndLogin(lemonApp.api, { prefix: 'usage-ls' });
    const subscriptionId = String(Math.floor(Math.random() * 1e8));
    const payload = lemonEvent(
      'subscription_created',
      {
        type: 'subscriptions',
        id: subscriptionId,
        attributes: {
          status: 'active',
          customer_id: 10,
          renews_at: new Date(Date.now() + 30 * 86_400_000).toISOString(),
          created_at: new Date().toISOString(),
          updated_at: new Date().toISOString(),
        },
      },
      { workspace_id: owner.workspaceId, plan_id: metered.id },
    );
    const res = await lemonApp.api('POST', '/billing/webhooks/processor-b', {
      raw: payload,
      headers: { 'content-type': 'application/json', 'x-signature': signLemon(payload, LEMON_SECRET) },
    });
    expect(res.status, res.text).toBe(200);
    await generateTimes(lemonApp, owner, INCLUDED + 2);
    await drain(lemonApp, owner);
    const records = lemon.usageRecords.filter((r) => r.subscriptionItemId === `${subscriptionId}1`);
    expect(records).toEqual([
      { subscriptionItemId: `${subscriptionId}1`, quantity: 1, action: 'increment' },
      { subscriptionItemId: `${subscriptionId}1`, quantity: 1, action: 'increment' },
    ]);
    expect((await currentOf(lemonApp, owner.accessToken, owner.workspaceId)).usage).toMatchObject({
      overage: 2,
      reported: 2,
    });
  });
});
