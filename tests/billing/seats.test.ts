// Seats of PER_SEAT plans follow the active members to the processor through the billing outbox: Stripe's
// subscription item quantity with prorations, Lemon Squeezy's subscription item quantity; coalesced to one
// update a minute per workspace, retried until the processor acknowledges it. The outbox is drained by
// calling its task (tests turn the periodic timers off); the minute passes with the clock moved ahead.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { clockAhead } from '../helpers/clock.js';
import { signStripe, startFakeStripe, stripeEvent, fakeSubscription, type FakeStripe } from '../helpers/fake-stripe.js';
import { lemonEvent, signLemon, startFakeLemonSqueezy, type FakeLemonSqueezy } from '../helpers/fake-lemonsqueezy.js';
import { registerAndLogin, type Session } from '../helpers/http.js';
import { inviteAndJoin } from '../workspaces/helpers.js';
import { drainBillingOutbox } from '../../routers/billing/outbox.js';
import { adminLogin, createPlan, currentOf, randomHex } from './helpers.js';

const STRIPE_KEY = `sk_test_seats${randomHex(12)}`;
const WHSEC = `whsec_seats${randomHex(12)}`;
const LEMON_KEY = `lemon-seats-key-${randomHex(12)}`;
const LEMON_SECRET = `lemon-seats-secret-${randomHex(12)}`;

let stripe: FakeStripe;
let lemon: FakeLemonSqueezy;
let app: TestApp;
let lemonApp: TestApp;
let plan: { id: string; slug: string };

beforeAll(async () => {
  [stripe, lemon] = await Promise.all([
    startFakeStripe({ apiKey: STRIPE_KEY }),
    startFakeLemonSqueezy({ apiKey: LEMON_KEY }),
  ]);
  const shared = {
    PROCESSOR_A_SECRET_KEY: STRIPE_KEY,
    PROCESSOR_A_WEBHOOK_SECRET: WHSEC,
    PROCESSOR_A_BASE_URL: stripe.url,
    PROCESSOR_B_API_KEY: LEMON_KEY,
    PROCESSOR_B_STORE_ID: '77',
    PROCESSOR_B_WEBHOOK_SECRET: LEMON_SECRET,
    PROCESSOR_B_BASE_URL: lemon.url,
  };
  [app, lemonApp] = await Promise.all([
    startTestApp({ BILLING_PROVIDER: 'PROCESSOR_A', ...shared }),
    startTestApp({ BILLING_PROVIDER: 'PROCESSOR_B', ...shared }),
  ]);
  const admin = await adminLogin(app);
  plan = await createPlan(app, admin, {
    status: 'PUBLISHED',
    pricingModel: 'PER_SEAT',
    includedSeats: 2,
    limits: { members: 50, apiKeys: 0, aiMonthlyGenerations: 100 },
    providerAPriceId: 'price_team_base',
    providerASeatPriceId: 'price_team_seat',
    providerBVariantId: '500',
    providerBSeatVariantId: '501',
  });
});
afterAll(async () => {
  await Promise.all([app?.close(), lemonApp?.close()]);
  await Promise.all([stripe?.close(), lemon?.close()]);
});

const seatUpdates = (subscriptionItem: string) =>
  stripe.requests.filter((r) => r.method === 'POST' && r.path === `/v1/subscription_items/${subscriptionItem}`);

async function deliverStripe(payload: string) {
  const res = await app.api('POST', '/billing/webhooks/processor-a', {
    raw: payload,
    headers: { 'content-type': 'application/json', 'stripe-signature': signStripe(payload, WHSEC) },
  });
  expect(res.status, res.text).toBe(200);
}

/** A workspace subscribed at the fake Stripe to the per-seat plan (checkout, then its webhook). */
async function subscribedAtStripe(owner: Session) {
  const checkout = await app.api('POST', '/billing/checkout', {
    token: owner.accessToken,
    body: { workspaceId: owner.workspaceId, planCode: plan.slug },
  });
  expect(checkout.status, checkout.text).toBe(200);
  const subscriptionId = `sub_${randomHex(8)}`;
  const subscription = fakeSubscription(subscriptionId, {
    customer: `cus_${randomHex(6)}`,
    metadata: { workspaceId: owner.workspaceId, planId: plan.id },
  });
  subscription.items.data[0].price = { id: 'price_team_seat', object: 'price' };
  subscription.items.data[0].quantity = 2;
  stripe.subscriptions.set(subscriptionId, subscription);
  await deliverStripe(stripeEvent('customer.subscription.created', subscription));
  return { subscriptionId, itemId: subscription.items.data[0].id as string };
}

describe('seats at Stripe', () => {
  it('checkout of a per-seat plan bills the seat price for the included seats when fewer members are active', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'seats-checkout' });
    const res = await app.api('POST', '/billing/checkout', {
      token: owner.accessToken,
      body: { workspaceId: owner.workspaceId, planCode: plan.slug },
    });
    expect(res.status, res.text).toBe(200);
    const sent = stripe.requests.filter((r) => r.path === '/v1/checkout/sessions').at(-1)!;
    expect(sent.body.line_items).toEqual([{ price: 'price_team_seat', quantity: '2' }]);
  });

  it('a member joining past the included seats raises the item quantity with prorations; /billing/current shows it', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'seats-owner' });
    const { itemId } = await subscribedAtStripe(owner);
    let current = await currentOf(app, owner.accessToken, owner.workspaceId);
    expect(current.seats).toEqual({ used: 1, included: 2, billed: 2 });

    // The subscription went live: its quantity is set to the seats billed now.
    await drainBillingOutbox(app.deps, { workspaceIds: [owner.workspaceId] });
    expect(seatUpdates(itemId).map((r) => r.body.quantity)).toEqual(['2']);

    await inviteAndJoin(app, owner.accessToken, owner.workspaceId, 'MEMBER');
    await inviteAndJoin(app, owner.accessToken, owner.workspaceId, 'MEMBER');
    current = await currentOf(app, owner.accessToken, owner.workspaceId);
    expect(current.seats).toEqual({ used: 3, included: 2, billed: 3 });

    await clockAhead(61_000, () => drainBillingOutbox(app.deps, { workspaceIds: [owner.workspaceId] }));
    const updates = seatUpdates(itemId);
    expect(updates.map((r) => r.body.quantity)).toEqual(['2', '3']);
    expect(updates[1].body).toMatchObject({ quantity: '3', proration_behavior: 'create_prorations' });
  });

  it('changes within a minute are coalesced into one update, sent once the minute has passed', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'seats-coalesce' });
    const { itemId } = await subscribedAtStripe(owner);
    await drainBillingOutbox(app.deps, { workspaceIds: [owner.workspaceId] });
    expect(seatUpdates(itemId).map((r) => r.body.quantity)).toEqual(['2']);

    // Three join and one leaves within the minute: nothing is sent yet.
    await inviteAndJoin(app, owner.accessToken, owner.workspaceId, 'MEMBER');
    await inviteAndJoin(app, owner.accessToken, owner.workspaceId, 'MEMBER');
    const late = await inviteAndJoin(app, owner.accessToken, owner.workspaceId, 'MEMBER');
    const left = await app.api('POST', `/workspaces/${owner.workspaceId}/leave`, { token: late.accessToken });
    expect(left.status, left.text).toBe(200);
    await drainBillingOutbox(app.deps, { workspaceIds: [owner.workspaceId] });
    expect(seatUpdates(itemId)).toHaveLength(1);

    // A minute later one update carries the count as it is then.
    await clockAhead(61_000, () => drainBillingOutbox(app.deps, { workspaceIds: [owner.workspaceId] }));
    expect(seatUpdates(itemId).map((r) => r.body.quantity)).toEqual(['2', '3']);
    const pending = await app.deps.db
      .selectFrom('billing_commands')
      .select('id')
      .where('workspace_id', '=', owner.workspaceId)
      .where('acked_at', 'is', null)
      .execute();
    expect(pending).toHaveLength(0);
  });

  it('an update Stripe refuses stays in the outbox and is sent again until acknowledged', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'seats-retry' });
    const { itemId } = await subscribedAtStripe(owner);
    stripe.failNext(500);
    const first = await drainBillingOutbox(app.deps, { workspaceIds: [owner.workspaceId] });
    expect(first.failed).toBe(1);
    const pending = await app.deps.db
      .selectFrom('billing_commands')
      .selectAll()
      .where('workspace_id', '=', owner.workspaceId)
      .where('acked_at', 'is', null)
      .executeTakeFirstOrThrow();
    expect(pending.last_error).not.toContain('fake-stripe');
    expect(seatUpdates(itemId)).toHaveLength(0);

    // Retried after its back-off (the clock moved past it).
    await clockAhead(5_000, () => drainBillingOutbox(app.deps, { workspaceIds: [owner.workspaceId] }));
    expect(seatUpdates(itemId).map((r) => r.body.quantity)).toEqual(['2']);
    const left = await app.deps.db
      .selectFrom('billing_commands')
      .select('id')
      .where('workspace_id', '=', owner.workspaceId)
      .where('acked_at', 'is', null)
      .execute();
    expect(left).toHaveLength(0);
  });

  it('members removed lower the quantity, but never below the included seats', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'seats-remove' });
    const { itemId } = await subscribedAtStripe(owner);
    await drainBillingOutbox(app.deps, { workspaceIds: [owner.workspaceId] });
    const members = [];
    for (let i = 0; i < 3; i++) members.push(await inviteAndJoin(app, owner.accessToken, owner.workspaceId, 'MEMBER'));
    await clockAhead(61_000, () => drainBillingOutbox(app.deps, { workspaceIds: [owner.workspaceId] }));
    for (const m of members) {
      const res = await app.api('DELETE', `/workspaces/${owner.workspaceId}/members/${m.userId}`, {
        token: owner.accessToken,
      });
      expect(res.status, res.text).toBe(200);
    }
    await clockAhead(122_000, () => drainBillingOutbox(app.deps, { workspaceIds: [owner.workspaceId] }));
    expect(seatUpdates(itemId).map((r) => r.body.quantity)).toEqual(['2', '4', '2']);
  });
});

describe('seats at Lemon Squeezy', () => {
  it('a member joining sets the subscription item quantity', async () => {
    const owner = await registerAndLogin(lemonApp.api, { prefix: 'seats-ls' });
    const subscriptionId = String(Math.floor(Math.random() * 1e8));
    const payload = lemonEvent(
      'subscription_created',
      {
        type: 'subscriptions',
        id: subscriptionId,
        attributes: {
          status: 'active',
          variant_id: 501,
          customer_id: 9,
          renews_at: new Date(Date.now() + 30 * 86_400_000).toISOString(),
          created_at: new Date().toISOString(),
          updated_at: new Date().toISOString(),
        },
      },
      { workspace_id: owner.workspaceId, plan_id: plan.id },
    );
    const res = await lemonApp.api('POST', '/billing/webhooks/processor-b', {
      raw: payload,
      headers: { 'content-type': 'application/json', 'x-signature': signLemon(payload, LEMON_SECRET) },
    });
    expect(res.status, res.text).toBe(200);
    await drainBillingOutbox(lemonApp.deps, { workspaceIds: [owner.workspaceId] });
    const item = `${subscriptionId}1`;
    // Live: the quantity is set to the seats billed (the included 2).
    expect(lemon.itemQuantities.get(item)).toBe(2);

    for (let i = 0; i < 2; i++) await inviteAndJoin(lemonApp, owner.accessToken, owner.workspaceId, 'MEMBER');
    await clockAhead(61_000, () => drainBillingOutbox(lemonApp.deps, { workspaceIds: [owner.workspaceId] }));
    expect(lemon.itemQuantities.get(item)).toBe(3);
    const patch = lemon.requests.filter((r) => r.method === 'PATCH').at(-1)!;
    expect(patch.path).toBe(`/v1/subscription-items/${item}`);
    expect(patch.body.data).toEqual({ type: 'subscription-items', id: item, attributes: { quantity: 3 } });
  });
});
