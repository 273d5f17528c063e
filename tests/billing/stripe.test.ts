// BILLING_PROVIDER=PROCESSOR_A end to end: the app talks to a fake Stripe (a real HTTP server, through the
// official SDK) for checkout, cancel and the billing portal, and receives webhooks signed by the SDK's own
// test-header helper. Idempotency under concurrent re-delivery, out-of-order events, signature failures,
// demo accounts, and an app whose PROCESSOR_A keys are missing.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, registerAndLogin, uniqueEmail, type Session } from '../helpers/http.js';
import { fakeSubscription, signStripe, startFakeStripe, stripeEvent, type FakeStripe } from '../helpers/fake-stripe.js';
import { lemonEvent, signLemon } from '../helpers/fake-lemonsqueezy.js';
import { inviteAndJoin, registerAs } from '../workspaces/helpers.js';
import {
  ENTERPRISE_LIMITS,
  LITE_LIMITS,
  PRO_LIMITS,
  adminLogin,
  atStartOfSecond,
  billingEventsWithId,
  createPlan,
  currentOf,
  domainEventTypes,
  historyOf,
  liveSubscriptionsOf,
  nowSeconds,
  paymentsOf,
  planBySlug,
  randomHex,
  subscriptionsOf,
  workspaceRow,
} from './helpers.js';

const STRIPE_KEY = `sk_test_procA${randomHex(12)}`;
const WHSEC = `whsec_procA${randomHex(12)}`;
const LEMON_SECRET = `lemon-late-events-${randomHex(12)}`;
const PRICES = { lite: 'price_lite_test', pro: 'price_pro_test', enterprise: 'price_enterprise_test' };
const SUCCESS_URL = 'https://app.tests.local/billing/a-success';
const CANCEL_URL = 'https://app.tests.local/billing/a-cancel';
const SUPPORT_EMAIL = 'billing-help-a@tests.local';
const DEMO_EMAIL = uniqueEmail('proc-a-demo');

let fake: FakeStripe;
let app: TestApp;

beforeAll(async () => {
  fake = await startFakeStripe({ apiKey: STRIPE_KEY });
  app = await startTestApp({
    RATE_LIMIT_ENABLED: 'false',
    BILLING_PROVIDER: 'PROCESSOR_A',
    PROCESSOR_A_SECRET_KEY: STRIPE_KEY,
    PROCESSOR_A_WEBHOOK_SECRET: WHSEC,
    PROCESSOR_A_BASE_URL: fake.url,
    PROCESSOR_A_PRICE_LITE: PRICES.lite,
    PROCESSOR_A_PRICE_PRO: PRICES.pro,
    PROCESSOR_A_PRICE_ENTERPRISE: PRICES.enterprise,
    PROCESSOR_A_CUSTOMER_PORTAL_ENABLED: 'true',
    BILLING_SUCCESS_URL: SUCCESS_URL,
    BILLING_CANCEL_URL: CANCEL_URL,
    BILLING_SUPPORT_EMAIL: SUPPORT_EMAIL,
    AI_DEMO_RESTRICTED_EMAILS: DEMO_EMAIL,
  });
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});

// ---------------------------------------------------------------- helpers

type Headers = Record<string, string>;

/** POSTs a raw webhook body with the given Stripe-Signature (none when undefined). */
function deliverA(target: TestApp, payload: string | Buffer, signature: string | undefined) {
  const headers: Headers = { 'content-type': 'application/json' };
  if (signature !== undefined) headers['stripe-signature'] = signature;
  return target.api('POST', '/billing/webhooks/processor-a', { raw: payload, headers });
}

const deliverSigned = (payload: string, target: TestApp = app) => deliverA(target, payload, signStripe(payload, WHSEC));

const checkoutRequests = () => fake.requests.filter((r) => r.method === 'POST' && r.path === '/v1/checkout/sessions');

/** Starts a checkout of `planCode` and answers the recorded Checkout Session request. */
async function startCheckout(s: Session, planCode = 'pro', workspaceId = s.workspaceId) {
  const before = checkoutRequests().length;
  const res = await app.api('POST', '/billing/checkout', { token: s.accessToken, body: { workspaceId, planCode } });
  expect(res.status, res.text).toBe(200);
  expect(checkoutRequests()).toHaveLength(before + 1);
  return { res, request: checkoutRequests().at(-1)! };
}

/** checkout.session.completed for a subscription-mode session, with the metadata the checkout sent. */
function sessionCompleted(
  metadata: Record<string, string>,
  ids: { subscription: string; customer: string },
  created: number,
  eventId = `evt_${randomHex(10)}`,
) {
  return stripeEvent(
    'checkout.session.completed',
    {
      id: `cs_test_${randomHex(10)}`,
      object: 'checkout.session',
      mode: 'subscription',
      payment_status: 'paid',
      status: 'complete',
      subscription: ids.subscription,
      customer: ids.customer,
      client_reference_id: metadata.workspaceId,
      metadata,
      amount_total: 2900,
      currency: 'usd',
      payment_intent: null,
    },
    { id: eventId, created },
  );
}

function subscriptionEvent(type: string, subscriptionId: string, created: number, overrides: Record<string, unknown>) {
  return stripeEvent(type, fakeSubscription(subscriptionId, overrides), { id: `evt_${randomHex(10)}`, created });
}

function invoicePaid(
  subscriptionId: string,
  created: number,
  extra: Record<string, unknown> = {},
  eventId = `evt_${randomHex(10)}`,
) {
  const invoiceId = `in_${randomHex(10)}`;
  return {
    invoiceId,
    eventId,
    payload: stripeEvent(
      'invoice.paid',
      {
        id: invoiceId,
        object: 'invoice',
        amount_paid: 2900,
        amount_due: 2900,
        currency: 'usd',
        subscription: subscriptionId,
        hosted_invoice_url: `https://invoice.stripe.test/i/${invoiceId}`,
        invoice_pdf: null,
        ...extra,
      },
      { id: eventId, created },
    ),
  };
}

/** A workspace with a PROCESSOR_A subscription to Pro, confirmed by checkout.session.completed. */
async function subscribed(prefix: string, created: number) {
  const s = await registerAndLogin(app.api, { prefix });
  const { request } = await startCheckout(s);
  const ids = { subscription: `sub_${randomHex(10)}`, customer: `cus_${randomHex(10)}` };
  const res = await deliverSigned(sessionCompleted(request.body.metadata, ids, created));
  expect(res.status, res.text).toBe(200);
  expect(res.body).toEqual({ received: true, outcome: 'applied' });
  return { s, ids };
}

/** The metadata checkout gives a subscription to the plan. */
async function metadataOf(workspaceId: string, slug: string) {
  return { workspaceId, planId: (await planBySlug(app, slug)).id, planSlug: slug };
}
const proMetadata = (workspaceId: string) => metadataOf(workspaceId, 'pro');
const enterpriseMetadata = (workspaceId: string) => metadataOf(workspaceId, 'enterprise');

const subscriptionRow = (subscriptionId: string) =>
  app.deps.db
    .selectFrom('subscriptions')
    .selectAll()
    .where('provider', '=', 'PROCESSOR_A')
    .where('provider_subscription_id', '=', subscriptionId)
    .executeTakeFirst();

// ---------------------------------------------------------------- status and settings

describe('provider status and settings with PROCESSOR_A configured', () => {
  it('GET /billing/provider-status says configured, test mode, portal on, and shows no key', async () => {
    const res = await app.api('GET', '/billing/provider-status');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      provider: 'PROCESSOR_A',
      configured: true,
      mode: 'test',
      customerPortalEnabled: true,
      message: expect.any(String),
    });
    expect(res.text).not.toContain(STRIPE_KEY);
    expect(res.text).not.toContain(WHSEC);
  });

  it('GET /admin/billing/settings shows PROCESSOR_A active and configured, as booleans only', async () => {
    const admin = await adminLogin(app);
    const res = await app.api('GET', '/admin/billing/settings', { token: admin.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      provider: 'PROCESSOR_A',
      customerPortalEnabled: true,
      mockWebhookEnabled: false,
      successUrl: SUCCESS_URL,
      cancelUrl: CANCEL_URL,
      processorA: {
        active: true,
        configured: true,
        webhookConfigured: true,
        mode: 'test',
        pricesConfigured: { lite: true, pro: true, enterprise: true },
      },
      processorB: { active: false, configured: false, webhookConfigured: false },
    });
    for (const secret of [STRIPE_KEY, WHSEC, ...Object.values(PRICES)]) expect(res.text).not.toContain(secret);
  });
});

// ---------------------------------------------------------------- checkout

describe('POST /billing/checkout with PROCESSOR_A', () => {
  it('creates a Checkout Session through the SDK and answers its checkoutUrl; nothing changes before the webhook', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'proc-a-checkout' });
    const { res, request } = await startCheckout(s);
    expect(res.body).toEqual({
      provider: 'PROCESSOR_A',
      checkoutUrl: expect.stringMatching(/^https:\/\/checkout\.stripe\.test\/c\/pay\/cs_test_/),
    });
    const pro = await planBySlug(app, 'pro');
    expect(request.headers.authorization).toBe(`Bearer ${STRIPE_KEY}`);
    expect(request.body).toMatchObject({
      mode: 'subscription',
      line_items: [{ price: PRICES.pro, quantity: '1' }],
      success_url: SUCCESS_URL,
      cancel_url: CANCEL_URL,
      client_reference_id: s.workspaceId,
      customer_email: s.email,
      metadata: { workspaceId: s.workspaceId, planId: pro.id },
      subscription_data: { metadata: { workspaceId: s.workspaceId, planId: pro.id } },
    });
    // Status syncs only after the webhook confirms it.
    expect(await subscriptionsOf(app, s.workspaceId)).toEqual([]);
    expect(await currentOf(app, s.accessToken, s.workspaceId)).toMatchObject({ edition: 'LITE', status: 'FREE' });
  });

  it("uses the edition's price setting for Enterprise", async () => {
    const s = await registerAndLogin(app.api, { prefix: 'proc-a-ent' });
    const { request } = await startCheckout(s, 'enterprise');
    expect(request.body.line_items).toEqual([{ price: PRICES.enterprise, quantity: '1' }]);
  });

  it("prefers the plan's own providerAPriceId over the edition's setting", async () => {
    const admin = await adminLogin(app);
    const ownPrice = `price_own_${randomHex()}`;
    const plan = await createPlan(app, admin, {
      edition: 'PRO',
      status: 'PUBLISHED',
      priceCents: 3900,
      providerAPriceId: ownPrice,
      sortOrder: 9_500,
    });
    try {
      const s = await registerAndLogin(app.api, { prefix: 'proc-a-own' });
      const { request } = await startCheckout(s, plan.slug);
      expect(request.body.line_items).toEqual([{ price: ownPrice, quantity: '1' }]);
      expect(request.body.metadata).toMatchObject({ planId: plan.id });
    } finally {
      await app.api('DELETE', `/admin/billing/plans/${plan.id}`, { token: admin.accessToken });
    }
  });

  it('answers 503 BILLING_NOT_CONFIGURED naming BILLING_SUPPORT_EMAIL for a plan with no PROCESSOR_A price', async () => {
    const admin = await adminLogin(app);
    const plan = await createPlan(app, admin, {
      edition: 'CUSTOM',
      status: 'PUBLISHED',
      priceCents: 100,
      sortOrder: 9_600,
    });
    try {
      const s = await registerAndLogin(app.api, { prefix: 'proc-a-noprice' });
      const before = checkoutRequests().length;
      const err = expectError(
        await app.api('POST', '/billing/checkout', { token: s.accessToken, body: { planCode: plan.slug } }),
        503,
        'BILLING_NOT_CONFIGURED',
      );
      expect(err.message).toContain(SUPPORT_EMAIL);
      expect(checkoutRequests()).toHaveLength(before);
    } finally {
      await app.api('DELETE', `/admin/billing/plans/${plan.id}`, { token: admin.accessToken });
    }
  });

  it('refuses a demo account with 403 DEMO_READ_ONLY and calls nothing', async () => {
    const demo = await registerAs(app, DEMO_EMAIL, 'Demo person');
    const before = fake.requests.length;
    expectError(
      await app.api('POST', '/billing/checkout', { token: demo.accessToken, body: { planCode: 'pro' } }),
      403,
      'DEMO_READ_ONLY',
    );
    expect(fake.requests.length).toBe(before);
  });

  it('does not grant a free upgrade through the legacy mock-checkout route', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'proc-a-legacy' });
    const res = await app.api('POST', `/workspaces/${s.workspaceId}/billing/mock-checkout`, {
      token: s.accessToken,
      body: { planCode: 'pro' },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.provider).toBe('PROCESSOR_A');
    expect(res.body.checkoutUrl).toEqual(expect.any(String));
    expect((await workspaceRow(app, s.workspaceId)).edition).toBe('LITE');
  });
});

// ---------------------------------------------------------------- the whole flow

describe('a subscription from checkout to deletion', () => {
  const base = nowSeconds() - 3_600;
  let s: Session;
  let metadata: Record<string, string>;
  const ids = { subscription: `sub_${randomHex(10)}`, customer: `cus_${randomHex(10)}` };

  beforeAll(async () => {
    s = await registerAndLogin(app.api, { prefix: 'proc-a-flow' });
    metadata = (await startCheckout(s)).request.body.metadata;
  });

  it('checkout.session.completed (metadata of the checkout) puts the workspace on Pro, ACTIVE, with billing.updated', async () => {
    const res = await deliverSigned(sessionCompleted(metadata, ids, base));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ received: true, outcome: 'applied' });
    const current = await currentOf(app, s.accessToken, s.workspaceId);
    expect(current).toMatchObject({
      edition: 'PRO',
      plan: { slug: 'pro' },
      limits: PRO_LIMITS,
      status: 'ACTIVE',
      subscription: { provider: 'PROCESSOR_A', status: 'ACTIVE' },
    });
    expect((await workspaceRow(app, s.workspaceId)).processor_a_customer_id).toBe(ids.customer);
    expect(await domainEventTypes(app, s.workspaceId)).toEqual(
      expect.arrayContaining(['subscription.created', 'billing.updated']),
    );
  });

  it('invoice.paid records a payment; history shows invoiceUrl, and receiptUrl only when the invoice has a PDF', async () => {
    const withPdf = invoicePaid(ids.subscription, base + 1, { invoice_pdf: 'https://pay.stripe.test/invoice.pdf' });
    const withoutPdf = invoicePaid(ids.subscription, base + 2, { amount_paid: 3100 });
    expect((await deliverSigned(withPdf.payload)).body).toEqual({ received: true, outcome: 'applied' });
    expect((await deliverSigned(withoutPdf.payload)).body).toEqual({ received: true, outcome: 'applied' });

    const history = await historyOf(app, s.accessToken, s.workspaceId);
    expect(history.total).toBe(2);
    const first = history.items.find((p) => p.amountCents === 2900)!;
    const second = history.items.find((p) => p.amountCents === 3100)!;
    expect(first).toMatchObject({
      provider: 'PROCESSOR_A',
      status: 'SUCCEEDED',
      currency: 'USD',
      invoiceUrl: `https://invoice.stripe.test/i/${withPdf.invoiceId}`,
      receiptUrl: 'https://pay.stripe.test/invoice.pdf',
    });
    expect(second).toMatchObject({ invoiceUrl: `https://invoice.stripe.test/i/${withoutPdf.invoiceId}` });
    expect(second).not.toHaveProperty('receiptUrl');
    const [sub] = await subscriptionsOf(app, s.workspaceId);
    expect((await paymentsOf(app, s.workspaceId)).map((p) => p.subscription_id)).toEqual([sub.id, sub.id]);
    expect(await domainEventTypes(app, s.workspaceId)).toContain('payment.succeeded');
  });

  it('customer.subscription.updated carries cancel_at_period_end and the period into the current plan', async () => {
    const periodEnd = nowSeconds() + 20 * 86_400;
    const period = {
      items: {
        object: 'list',
        data: [{ id: 'si_x', current_period_start: nowSeconds() - 86_400, current_period_end: periodEnd }],
      },
    };
    const ending = subscriptionEvent('customer.subscription.updated', ids.subscription, base + 10, {
      customer: ids.customer,
      cancel_at_period_end: true,
      metadata,
      ...period,
    });
    expect((await deliverSigned(ending)).body).toEqual({ received: true, outcome: 'applied' });
    let current = await currentOf(app, s.accessToken, s.workspaceId);
    expect(current).toMatchObject({
      edition: 'PRO',
      status: 'ACTIVE',
      currentPeriodEnd: new Date(periodEnd * 1000).toISOString(),
      subscription: { cancelAtPeriodEnd: true },
    });

    // Resumed in the processor's portal.
    const resumed = subscriptionEvent('customer.subscription.updated', ids.subscription, base + 11, {
      customer: ids.customer,
      cancel_at_period_end: false,
      metadata,
      ...period,
    });
    expect((await deliverSigned(resumed)).body.outcome).toBe('applied');
    current = await currentOf(app, s.accessToken, s.workspaceId);
    expect(current.subscription.cancelAtPeriodEnd).toBe(false);
  });

  it('POST /billing/cancel asks the processor to cancel at period end; the plan stays until then', async () => {
    const before = fake.requests.length;
    const res = await app.api('POST', '/billing/cancel', {
      token: s.accessToken,
      body: { workspaceId: s.workspaceId },
    });
    expect(res.status, res.text).toBe(200);
    const calls = fake.requests.slice(before);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({
      method: 'POST',
      path: `/v1/subscriptions/${ids.subscription}`,
      body: { cancel_at_period_end: 'true' },
    });
    expect(res.body).toMatchObject({
      edition: 'PRO',
      status: 'ACTIVE',
      subscription: { status: 'ACTIVE', cancelAtPeriodEnd: true },
    });
    expect(res.body.currentPeriodEnd).toEqual(expect.any(String));
    expect(await currentOf(app, s.accessToken, s.workspaceId)).toEqual(res.body);
  });

  it("POST /billing/portal answers a billing-portal URL for the workspace's customer", async () => {
    const before = fake.requests.length;
    const res = await app.api('POST', '/billing/portal', {
      token: s.accessToken,
      body: { workspaceId: s.workspaceId },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ portalUrl: expect.stringMatching(/^https:\/\/billing\.stripe\.test\/p\/session\//) });
    const [call] = fake.requests.slice(before);
    expect(call).toMatchObject({
      method: 'POST',
      path: '/v1/billing_portal/sessions',
      body: { customer: ids.customer },
    });
  });

  it('customer.subscription.deleted ends it: back to the default plan (Lite), FREE, subscription.canceled', async () => {
    const deleted = subscriptionEvent('customer.subscription.deleted', ids.subscription, base + 30, {
      status: 'canceled',
      customer: ids.customer,
      metadata,
    });
    expect((await deliverSigned(deleted)).body).toEqual({ received: true, outcome: 'applied' });
    const current = await currentOf(app, s.accessToken, s.workspaceId);
    expect(current).toMatchObject({
      edition: 'LITE',
      plan: { slug: 'lite' },
      limits: LITE_LIMITS,
      status: 'FREE',
      subscription: { status: 'CANCELED' },
    });
    const types = await domainEventTypes(app, s.workspaceId);
    expect(types).toContain('subscription.canceled');
    expect(types.filter((t) => t === 'billing.updated').length).toBeGreaterThanOrEqual(6);
  });
});

describe('POST /billing/portal', () => {
  it('answers 409 CONFLICT for a workspace without a processor customer', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'proc-a-noportal' });
    expectError(await app.api('POST', '/billing/portal', { token: s.accessToken, body: {} }), 409, 'CONFLICT');
  });

  it('needs billing.manage: a MEMBER gets 403 PERMISSION_DENIED, an anonymous caller 401', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'proc-a-portal-owner' });
    const member = await inviteAndJoin(app, owner.accessToken, owner.workspaceId, 'MEMBER', 'proc-a-portal-member');
    expectError(
      await app.api('POST', '/billing/portal', { token: member.accessToken, body: { workspaceId: owner.workspaceId } }),
      403,
      'PERMISSION_DENIED',
    );
    expectError(await app.api('POST', '/billing/portal', { body: {} }), 401, 'UNAUTHORIZED');
  });
});

// ---------------------------------------------------------------- idempotency and ordering

describe('re-deliveries and out-of-order events', () => {
  it('20 concurrent deliveries of one invoice.paid give one payment and one stored event, all answered 200', async () => {
    const { s, ids } = await subscribed('proc-a-burst', nowSeconds() - 600);
    const invoice = invoicePaid(ids.subscription, nowSeconds() - 500);
    const signature = signStripe(invoice.payload, WHSEC);
    const answers = await Promise.all(Array.from({ length: 20 }, () => deliverA(app, invoice.payload, signature)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    const outcomes = answers.map((a) => a.body.outcome).sort();
    expect(outcomes).toEqual(['applied', ...Array(19).fill('duplicate')]);

    const payments = await app.deps.db
      .selectFrom('payments')
      .select('id')
      .where('provider', '=', 'PROCESSOR_A')
      .where('provider_payment_id', '=', invoice.invoiceId)
      .execute();
    expect(payments).toHaveLength(1);
    expect(await billingEventsWithId(app, 'PROCESSOR_A', invoice.eventId)).toHaveLength(1);
    expect(await paymentsOf(app, s.workspaceId)).toHaveLength(1);
    expect((await domainEventTypes(app, s.workspaceId)).filter((t) => t === 'payment.succeeded')).toHaveLength(1);
  });

  it('a later duplicate delivery answers 200 duplicate and changes nothing', async () => {
    const { s, ids } = await subscribed('proc-a-dup', nowSeconds() - 600);
    const invoice = invoicePaid(ids.subscription, nowSeconds() - 500);
    expect((await deliverSigned(invoice.payload)).body.outcome).toBe('applied');
    const eventsBefore = await domainEventTypes(app, s.workspaceId);
    const again = await deliverSigned(invoice.payload);
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ received: true, outcome: 'duplicate' });
    expect(await paymentsOf(app, s.workspaceId)).toHaveLength(1);
    expect(await domainEventTypes(app, s.workspaceId)).toEqual(eventsBefore);
  });

  it('an older customer.subscription.updated after a newer one changes nothing', async () => {
    const base = nowSeconds() - 1_000;
    const { s, ids } = await subscribed('proc-a-order', base);
    const newerEnd = nowSeconds() + 30 * 86_400;
    const newer = subscriptionEvent('customer.subscription.updated', ids.subscription, base + 20, {
      status: 'active',
      cancel_at_period_end: true,
      customer: ids.customer,
      items: { object: 'list', data: [{ id: 'si_n', current_period_start: base, current_period_end: newerEnd }] },
    });
    const older = subscriptionEvent('customer.subscription.updated', ids.subscription, base + 10, {
      status: 'past_due',
      cancel_at_period_end: false,
      customer: ids.customer,
      items: {
        object: 'list',
        data: [{ id: 'si_o', current_period_start: base - 100, current_period_end: base + 100 }],
      },
    });
    expect((await deliverSigned(newer)).body.outcome).toBe('applied');
    const before = await subscriptionRow(ids.subscription);
    const eventsBefore = await domainEventTypes(app, s.workspaceId);

    const res = await deliverSigned(older);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true, outcome: 'stale' });
    expect(await subscriptionRow(ids.subscription)).toEqual(before);
    expect(before).toMatchObject({
      status: 'ACTIVE',
      cancel_at_period_end: true,
      current_period_end: new Date(newerEnd * 1000),
    });
    expect(await domainEventTypes(app, s.workspaceId)).toEqual(eventsBefore);
    expect((await workspaceRow(app, s.workspaceId)).edition).toBe('PRO');

    // An old deletion does not end a subscription that was updated after it either.
    const oldDelete = subscriptionEvent('customer.subscription.deleted', ids.subscription, base + 15, {
      status: 'canceled',
      customer: ids.customer,
    });
    expect((await deliverSigned(oldDelete)).body.outcome).toBe('stale');
    expect((await workspaceRow(app, s.workspaceId)).edition).toBe('PRO');
  });
});

describe('re-deliveries and out-of-order events in the same second', () => {
  it('a created (incomplete) arriving after the updated (active) of the same second is stale: still Pro, ACTIVE', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'proc-a-second' });
    const metadata = await proMetadata(s.workspaceId);
    const subscription = `sub_${randomHex(10)}`;
    const at = nowSeconds() - 5;
    expect(
      (
        await deliverSigned(
          subscriptionEvent('customer.subscription.updated', subscription, at, { status: 'active', metadata }),
        )
      ).body.outcome,
    ).toBe('applied');
    const late = await deliverSigned(
      subscriptionEvent('customer.subscription.created', subscription, at, { status: 'incomplete', metadata }),
    );
    expect(late.status, late.text).toBe(200);
    expect(late.body).toEqual({ received: true, outcome: 'stale' });
    expect(await currentOf(app, s.accessToken, s.workspaceId)).toMatchObject({
      edition: 'PRO',
      status: 'ACTIVE',
      subscription: { status: 'ACTIVE' },
    });
  });

  it('an active of the same second as the deletion does not bring the subscription back', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'proc-a-second-del' });
    const metadata = await proMetadata(s.workspaceId);
    const subscription = `sub_${randomHex(10)}`;
    const at = nowSeconds() - 5;
    expect(
      (await deliverSigned(subscriptionEvent('customer.subscription.created', subscription, at - 60, { metadata })))
        .body.outcome,
    ).toBe('applied');
    expect(
      (
        await deliverSigned(
          subscriptionEvent('customer.subscription.deleted', subscription, at, { status: 'canceled', metadata }),
        )
      ).body.outcome,
    ).toBe('applied');
    expect(
      (
        await deliverSigned(
          subscriptionEvent('customer.subscription.updated', subscription, at, { status: 'active', metadata }),
        )
      ).body.outcome,
    ).toBe('stale');
    expect(await currentOf(app, s.accessToken, s.workspaceId)).toMatchObject({
      edition: 'LITE',
      status: 'FREE',
      subscription: { status: 'CANCELED' },
    });
  });
});

describe('a new subscription replacing the live one', () => {
  /** A workspace on Pro (sub A, created 100 s ago) that then subscribed to Enterprise (sub B, 50 s ago). */
  async function upgraded(prefix: string, beforeB?: () => void) {
    const s = await registerAndLogin(app.api, { prefix });
    const [pro, enterprise] = [await proMetadata(s.workspaceId), await enterpriseMetadata(s.workspaceId)];
    const ids = { a: `sub_A${randomHex(8)}`, b: `sub_B${randomHex(8)}` };
    const now = nowSeconds();
    expect(
      (await deliverSigned(subscriptionEvent('customer.subscription.created', ids.a, now - 100, { metadata: pro })))
        .body.outcome,
    ).toBe('applied');
    const before = fake.requests.length;
    beforeB?.();
    const res = await deliverSigned(
      subscriptionEvent('customer.subscription.created', ids.b, now - 50, { metadata: enterprise }),
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ received: true, outcome: 'applied' });
    return { s, ids, now, pro, calls: fake.requests.slice(before) };
  }

  it('cancels the replaced one at the processor, at the end of its period', async () => {
    const { s, ids, calls } = await upgraded('proc-a-replace');
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({
      method: 'POST',
      path: `/v1/subscriptions/${ids.a}`,
      body: { cancel_at_period_end: 'true' },
    });
    expect(await currentOf(app, s.accessToken, s.workspaceId)).toMatchObject({
      edition: 'ENTERPRISE',
      limits: ENTERPRISE_LIMITS,
      status: 'ACTIVE',
    });
  });

  it('still answers 200 applied when the processor fails the cancel, and logs the failure', async () => {
    const { s, ids } = await upgraded('proc-a-replace-fail', () => fake.failNext(500));
    expect((await workspaceRow(app, s.workspaceId)).edition).toBe('ENTERPRISE');
    const [replaced] = (await subscriptionsOf(app, s.workspaceId)).filter(
      (sub) => sub.provider_subscription_id === ids.a,
    );
    expect(replaced.status).toBe('CANCELED');
    expect(
      app.logs.some((line) => line.includes('could not cancel a replaced subscription') && line.includes(replaced.id)),
    ).toBe(true);
  });

  it('a later renewal of the replaced one answers 200 ignored and leaves it CANCELED beside the new one (was a 500 on the one-live index)', async () => {
    const { s, ids, now, pro } = await upgraded('proc-a-revive');
    const renewal = await deliverSigned(
      subscriptionEvent('customer.subscription.updated', ids.a, now, { status: 'active', metadata: pro }),
    );
    expect(renewal.status, renewal.text).toBe(200);
    expect(renewal.body).toEqual({ received: true, outcome: 'ignored' });
    expect((await liveSubscriptionsOf(app, s.workspaceId)).map((sub) => sub.provider_subscription_id)).toEqual([ids.b]);
    expect(await currentOf(app, s.accessToken, s.workspaceId)).toMatchObject({
      edition: 'ENTERPRISE',
      status: 'ACTIVE',
    });
    const [old] = (await subscriptionsOf(app, s.workspaceId)).filter((sub) => sub.provider_subscription_id === ids.a);
    expect(old.status).toBe('CANCELED');
    expect(
      app.logs.some((line) => line.includes('canceled subscription was not revived') && line.includes(old.id)),
    ).toBe(true);
  });

  it('an upgrade still incomplete leaves the live plan in GET /billing/current; once paid it replaces it', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'proc-a-incomplete' });
    const [pro, enterprise] = [await proMetadata(s.workspaceId), await enterpriseMetadata(s.workspaceId)];
    const ids = { a: `sub_A${randomHex(8)}`, b: `sub_B${randomHex(8)}` };
    const now = nowSeconds();
    expect(
      (await deliverSigned(subscriptionEvent('customer.subscription.created', ids.a, now - 100, { metadata: pro })))
        .body.outcome,
    ).toBe('applied');
    expect(
      (
        await deliverSigned(
          subscriptionEvent('customer.subscription.created', ids.b, now - 50, {
            status: 'incomplete',
            metadata: enterprise,
          }),
        )
      ).body.outcome,
    ).toBe('applied');
    const [subA] = await liveSubscriptionsOf(app, s.workspaceId);
    expect(await currentOf(app, s.accessToken, s.workspaceId)).toMatchObject({
      edition: 'PRO',
      status: 'ACTIVE',
      currentPeriodEnd: expect.any(String),
      subscription: { id: subA.id, status: 'ACTIVE' },
    });

    const before = fake.requests.length;
    const paid = await deliverSigned(
      subscriptionEvent('customer.subscription.updated', ids.b, now - 40, { status: 'active', metadata: enterprise }),
    );
    expect(paid.status, paid.text).toBe(200);
    expect(paid.body.outcome).toBe('applied');
    expect((await liveSubscriptionsOf(app, s.workspaceId)).map((sub) => sub.provider_subscription_id)).toEqual([ids.b]);
    expect((await workspaceRow(app, s.workspaceId)).edition).toBe('ENTERPRISE');
    expect(fake.requests.slice(before)).toMatchObject([{ method: 'POST', path: `/v1/subscriptions/${ids.a}` }]);
  });
});

describe('events of one workspace arriving together', () => {
  it("an upgrade going live, a renewal of the plan it replaces and the upgrade's invoice never deadlock (10 trials, no 5xx)", async () => {
    for (let i = 0; i < 10; i++) {
      const s = await registerAndLogin(app.api, { prefix: 'proc-a-together' });
      const [pro, enterprise] = [await proMetadata(s.workspaceId), await enterpriseMetadata(s.workspaceId)];
      const ids = { a: `sub_A${randomHex(8)}`, b: `sub_B${randomHex(8)}` };
      const now = nowSeconds();
      expect(
        (await deliverSigned(subscriptionEvent('customer.subscription.created', ids.a, now - 100, { metadata: pro })))
          .body.outcome,
      ).toBe('applied');
      expect(
        (
          await deliverSigned(
            subscriptionEvent('customer.subscription.created', ids.b, now - 50, {
              status: 'incomplete',
              metadata: enterprise,
            }),
          )
        ).body.outcome,
      ).toBe('applied');
      const answers = await Promise.all([
        deliverSigned(
          subscriptionEvent('customer.subscription.updated', ids.b, now - 40, {
            status: 'active',
            metadata: enterprise,
          }),
        ),
        deliverSigned(
          subscriptionEvent('customer.subscription.updated', ids.a, now - 40, { status: 'active', metadata: pro }),
        ),
        deliverSigned(invoicePaid(ids.b, now - 40).payload),
        deliverSigned(invoicePaid(ids.a, now - 40).payload),
      ]);
      expect(
        answers.map((a) => a.status),
        answers.map((a) => a.text).join('\n'),
      ).toEqual([200, 200, 200, 200]);
      // Whatever the order, the upgrade is the one live subscription.
      expect((await liveSubscriptionsOf(app, s.workspaceId)).map((sub) => sub.provider_subscription_id)).toEqual([
        ids.b,
      ]);
      expect((await workspaceRow(app, s.workspaceId)).edition).toBe('ENTERPRISE');
    }
  });
});

describe('the plan changed at the processor', () => {
  const priced = (price: string) => ({
    items: {
      object: 'list',
      data: [
        {
          id: `si_${randomHex(6)}`,
          price: { id: price, object: 'price' },
          current_period_start: nowSeconds() - 60,
          current_period_end: nowSeconds() + 86_400,
        },
      ],
    },
  });

  it("follows the subscription's price (an edition's price setting) over the checkout's metadata", async () => {
    const s = await registerAndLogin(app.api, { prefix: 'proc-a-price' });
    const metadata = await enterpriseMetadata(s.workspaceId);
    const subscription = `sub_${randomHex(10)}`;
    const now = nowSeconds();
    expect(
      (
        await deliverSigned(
          subscriptionEvent('customer.subscription.created', subscription, now - 100, {
            metadata,
            ...priced(PRICES.enterprise),
          }),
        )
      ).body.outcome,
    ).toBe('applied');
    expect((await workspaceRow(app, s.workspaceId)).edition).toBe('ENTERPRISE');
    // Downgraded in Stripe's portal: the price changes, the metadata stays.
    expect(
      (
        await deliverSigned(
          subscriptionEvent('customer.subscription.updated', subscription, now - 50, {
            metadata,
            ...priced(PRICES.pro),
          }),
        )
      ).body.outcome,
    ).toBe('applied');
    expect(await currentOf(app, s.accessToken, s.workspaceId)).toMatchObject({
      edition: 'PRO',
      plan: { slug: 'pro' },
      limits: PRO_LIMITS,
    });
    expect((await subscriptionRow(subscription))!.plan_id).toBe((await planBySlug(app, 'pro')).id);
  });

  it("follows a plan's own providerAPriceId", async () => {
    const admin = await adminLogin(app);
    const ownPrice = `price_own_${randomHex()}`;
    const plan = await createPlan(app, admin, {
      edition: 'PRO',
      status: 'PUBLISHED',
      priceCents: 3900,
      providerAPriceId: ownPrice,
      sortOrder: 9_700,
    });
    const s = await registerAndLogin(app.api, { prefix: 'proc-a-own-price' });
    const subscription = `sub_${randomHex(10)}`;
    const res = await deliverSigned(
      subscriptionEvent('customer.subscription.created', subscription, nowSeconds(), {
        metadata: await proMetadata(s.workspaceId),
        ...priced(ownPrice),
      }),
    );
    expect(res.body.outcome).toBe('applied');
    expect((await workspaceRow(app, s.workspaceId)).plan_id).toBe(plan.id);
  });

  it('falls back to the metadata for a price no plan uses', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'proc-a-other-price' });
    const res = await deliverSigned(
      subscriptionEvent('customer.subscription.created', `sub_${randomHex(10)}`, nowSeconds(), {
        metadata: await proMetadata(s.workspaceId),
        ...priced(`price_unknown_${randomHex()}`),
      }),
    );
    expect(res.body.outcome).toBe('applied');
    expect((await workspaceRow(app, s.workspaceId)).edition).toBe('PRO');
  });
});

describe('statuses in which nothing is collected', () => {
  it.each(['unpaid', 'paused'])(
    '%s ends the plan (back to Lite, FREE); past_due keeps it; a later active brings it back',
    async (status) => {
      const s = await registerAndLogin(app.api, { prefix: `proc-a-${status}` });
      const metadata = await proMetadata(s.workspaceId);
      const subscription = `sub_${randomHex(10)}`;
      const now = nowSeconds();
      expect(
        (await deliverSigned(subscriptionEvent('customer.subscription.created', subscription, now - 100, { metadata })))
          .body.outcome,
      ).toBe('applied');
      expect(
        (
          await deliverSigned(
            subscriptionEvent('customer.subscription.updated', subscription, now - 80, {
              status: 'past_due',
              metadata,
            }),
          )
        ).body.outcome,
      ).toBe('applied');
      expect(await currentOf(app, s.accessToken, s.workspaceId)).toMatchObject({ edition: 'PRO', status: 'PAST_DUE' });

      expect(
        (
          await deliverSigned(
            subscriptionEvent('customer.subscription.updated', subscription, now - 60, { status, metadata }),
          )
        ).body.outcome,
      ).toBe('applied');
      expect(await currentOf(app, s.accessToken, s.workspaceId)).toMatchObject({
        edition: 'LITE',
        limits: LITE_LIMITS,
        status: 'FREE',
        subscription: { status: 'CANCELED' },
      });

      expect(
        (
          await deliverSigned(
            subscriptionEvent('customer.subscription.updated', subscription, now - 40, { status: 'active', metadata }),
          )
        ).body.outcome,
      ).toBe('applied');
      expect(await currentOf(app, s.accessToken, s.workspaceId)).toMatchObject({ edition: 'PRO', status: 'ACTIVE' });
    },
  );
});

describe('signed events naming a workspace or plan that is not ours', () => {
  const unknownId = '00000000-0000-4000-8000-000000000000';

  it.each([
    ['an unknown workspace', () => unknownId, 'pro'],
    ['a workspace id that is not a UUID', () => 'abc', 'pro'],
  ])('invoice.paid for %s answers 200 unmatched and records no payment (was a 500)', async (_label, workspaceId) => {
    const invoice = invoicePaid(`sub_${randomHex(10)}`, nowSeconds(), {
      subscription_details: { metadata: { workspaceId: workspaceId(), planId: unknownId } },
    });
    const res = await deliverSigned(invoice.payload);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ received: true, outcome: 'unmatched' });
    expect(
      await app.deps.db
        .selectFrom('payments')
        .select('id')
        .where('provider_payment_id', '=', invoice.invoiceId)
        .execute(),
    ).toEqual([]);
  });

  it.each([
    ['a workspace id that is not a UUID', (ws: string, plan: string) => ({ workspaceId: 'abc', planId: plan })],
    ['a plan id that is not a UUID', (ws: string) => ({ workspaceId: ws, planId: 'abc' })],
    ['an unknown plan', (ws: string) => ({ workspaceId: ws, planId: unknownId })],
  ])('customer.subscription.created with %s answers 200 unmatched (was a 500)', async (_label, metadataOf) => {
    const s = await registerAndLogin(app.api, { prefix: 'proc-a-foreign' });
    const metadata = metadataOf(s.workspaceId, (await planBySlug(app, 'pro')).id);
    const res = await deliverSigned(
      subscriptionEvent('customer.subscription.created', `sub_${randomHex(10)}`, nowSeconds(), { metadata }),
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ received: true, outcome: 'unmatched' });
    expect(await subscriptionsOf(app, s.workspaceId)).toEqual([]);
  });

  it("an invoice of a known subscription whose metadata names an unknown plan is recorded under the subscription's plan", async () => {
    const { s, ids } = await subscribed('proc-a-foreign-plan', nowSeconds() - 600);
    const invoice = invoicePaid(ids.subscription, nowSeconds(), {
      subscription_details: { metadata: { workspaceId: s.workspaceId, planId: unknownId } },
    });
    expect((await deliverSigned(invoice.payload)).body).toEqual({ received: true, outcome: 'applied' });
    expect((await paymentsOf(app, s.workspaceId)).map((p) => p.plan_id)).toEqual([(await planBySlug(app, 'pro')).id]);
  });
});

// ---------------------------------------------------------------- signatures

describe('POST /billing/webhooks/processor-a signatures', () => {
  let s: Session;
  let metadata: Record<string, string>;
  beforeAll(async () => {
    s = await registerAndLogin(app.api, { prefix: 'proc-a-sig' });
    metadata = { workspaceId: s.workspaceId, planId: (await planBySlug(app, 'pro')).id, planSlug: 'pro' };
  });

  /** A checkout.session.completed that would move the workspace to Pro if it were accepted. */
  const attempt = () => {
    const eventId = `evt_${randomHex(10)}`;
    const subscription = `sub_${randomHex(10)}`;
    return {
      eventId,
      subscription,
      payload: sessionCompleted(metadata, { subscription, customer: `cus_${randomHex(8)}` }, nowSeconds(), eventId),
    };
  };

  async function expectNothingStored(eventId: string, subscription: string) {
    expect(await billingEventsWithId(app, 'PROCESSOR_A', eventId)).toEqual([]);
    expect(await subscriptionRow(subscription)).toBeUndefined();
    expect(await subscriptionsOf(app, s.workspaceId)).toEqual([]);
    expect((await workspaceRow(app, s.workspaceId)).edition).toBe('LITE');
  }

  const cases: Array<[string, (payload: string) => { signature: string | undefined; body?: string }]> = [
    ['a missing Stripe-Signature header', () => ({ signature: undefined })],
    ['an empty header', () => ({ signature: '' })],
    ['a signature made with another secret', (p) => ({ signature: signStripe(p, 'whsec_someoneElse0123456789') })],
    [
      'a tampered body',
      (p) => ({ signature: signStripe(p, WHSEC), body: p.replace('"mode":"subscription"', '"mode":"subscription" ') }),
    ],
    ['a stale timestamp (301 s old)', (p) => ({ signature: signStripe(p, WHSEC, nowSeconds() - 301) })],
    ['a timestamp 301 s in the future', (p) => ({ signature: signStripe(p, WHSEC, nowSeconds() + 301) })],
    ['a malformed header (garbage)', () => ({ signature: 'not-a-signature' })],
    ['a malformed header (t=abc)', () => ({ signature: 't=abc,v1=zz' })],
    ['a header without v1 signature', () => ({ signature: `t=${nowSeconds()}` })],
    ['a header without timestamp', (p) => ({ signature: signStripe(p, WHSEC).replace(/^t=\d+,/, '') })],
    ['a timestamp with trailing junk', (p) => ({ signature: signStripe(p, WHSEC).replace(/^t=(\d+)/, 't=$1abc') })],
  ];

  it.each(cases)('refuses %s with 400 INVALID_SIGNATURE and stores nothing', async (_label, make) => {
    const { eventId, subscription, payload } = attempt();
    await atStartOfSecond();
    const { signature, body } = make(payload);
    const res = await deliverA(app, body ?? payload, signature);
    const err = expectError(res, 400, 'INVALID_SIGNATURE');
    expect(err.message).not.toContain(WHSEC);
    await expectNothingStored(eventId, subscription);
  });

  it('accepts the same event when it is correctly signed (so the refusals above are about the signature)', async () => {
    const { eventId, subscription, payload } = attempt();
    const res = await deliverSigned(payload);
    expect(res.status, res.text).toBe(200);
    expect(res.body.outcome).toBe('applied');
    expect(await billingEventsWithId(app, 'PROCESSOR_A', eventId)).toHaveLength(1);
    expect(await subscriptionRow(subscription)).toBeDefined();
    expect((await workspaceRow(app, s.workspaceId)).edition).toBe('PRO');
  });

  it.each([-290, 290])('accepts a timestamp %i s away, within the 300 s tolerance', async (offset) => {
    const other = await registerAndLogin(app.api, { prefix: 'proc-a-tolerance' });
    const meta = { ...metadata, workspaceId: other.workspaceId };
    const payload = sessionCompleted(
      meta,
      { subscription: `sub_${randomHex(10)}`, customer: `cus_${randomHex(8)}` },
      nowSeconds(),
    );
    await atStartOfSecond();
    const res = await deliverA(app, payload, signStripe(payload, WHSEC, nowSeconds() + offset));
    expect(res.status, res.text).toBe(200);
    expect((await workspaceRow(app, other.workspaceId)).edition).toBe('PRO');
  });

  it('refuses a correctly signed body that is not JSON with 400 BAD_REQUEST', async () => {
    const payload = 'not json at all';
    expectError(await deliverA(app, payload, signStripe(payload, WHSEC)), 400, 'BAD_REQUEST');
  });
});

describe('POST /billing/webhooks/mock while PROCESSOR_A is active', () => {
  it('does not exist (404 NOT_FOUND) and changes nothing', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'proc-a-mock' });
    const res = await app.api('POST', '/billing/webhooks/mock', {
      body: {
        id: `mock_${randomHex()}`,
        type: 'checkout.completed',
        data: { workspaceId: s.workspaceId, planCode: 'pro' },
      },
    });
    expectError(res, 404, 'NOT_FOUND');
    expect((await workspaceRow(app, s.workspaceId)).edition).toBe('LITE');
  });
});

// ---------------------------------------------------------------- PROCESSOR_A without keys

describe('an app with BILLING_PROVIDER=PROCESSOR_A but no PROCESSOR_A keys', () => {
  let bare: TestApp;
  beforeAll(async () => {
    bare = await startTestApp({
      RATE_LIMIT_ENABLED: 'false',
      BILLING_PROVIDER: 'PROCESSOR_A',
      PROCESSOR_A_PRICE_PRO: PRICES.pro,
      PROCESSOR_B_WEBHOOK_SECRET: LEMON_SECRET,
      BILLING_SUPPORT_EMAIL: SUPPORT_EMAIL,
    });
  });
  afterAll(() => bare?.close());

  it('starts, and its provider status says configured: false', async () => {
    const res = await bare.api('GET', '/billing/provider-status');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ provider: 'PROCESSOR_A', configured: false, customerPortalEnabled: false });
    expect(res.body.message).toContain(SUPPORT_EMAIL);
  });

  it('answers checkout with 503 BILLING_NOT_CONFIGURED and a friendly message naming BILLING_SUPPORT_EMAIL', async () => {
    const s = await registerAndLogin(bare.api, { prefix: 'proc-a-bare' });
    const err = expectError(
      await bare.api('POST', '/billing/checkout', { token: s.accessToken, body: { planCode: 'pro' } }),
      503,
      'BILLING_NOT_CONFIGURED',
    );
    expect(err.message).toContain(SUPPORT_EMAIL);
    expect(await subscriptionsOf(bare, s.workspaceId)).toEqual([]);
  });

  it('answers POST /billing/portal with 404 NOT_FOUND while PROCESSOR_A_CUSTOMER_PORTAL_ENABLED is off', async () => {
    const s = await registerAndLogin(bare.api, { prefix: 'proc-a-bare-portal' });
    expectError(await bare.api('POST', '/billing/portal', { token: s.accessToken, body: {} }), 404, 'NOT_FOUND');
  });

  it('answers a processor-a webhook with 503 BILLING_NOT_CONFIGURED (no webhook secret), storing nothing', async () => {
    const eventId = `evt_${randomHex(10)}`;
    const payload = stripeEvent(
      'invoice.paid',
      { id: `in_${randomHex(6)}`, object: 'invoice', amount_paid: 100, currency: 'usd' },
      { id: eventId },
    );
    expectError(await deliverA(bare, payload, signStripe(payload, WHSEC)), 503, 'BILLING_NOT_CONFIGURED');
    expect(await billingEventsWithId(bare, 'PROCESSOR_A', eventId)).toEqual([]);
  });

  it('still accepts a processor-b webhook signed with PROCESSOR_B_WEBHOOK_SECRET (late events after a switch)', async () => {
    const s = await registerAndLogin(bare.api, { prefix: 'proc-a-late-b' });
    const pro = await planBySlug(bare, 'pro');
    const raw = lemonEvent(
      'subscription_created',
      {
        type: 'subscriptions',
        id: String(crypto.randomInt(1_000_000, 2_000_000_000)),
        attributes: {
          status: 'active',
          customer_id: 77,
          renews_at: new Date(Date.now() + 30 * 86_400_000).toISOString(),
          ends_at: null,
          created_at: new Date().toISOString(),
          updated_at: new Date().toISOString(),
        },
      },
      { workspace_id: s.workspaceId, plan_id: pro.id, plan_slug: 'pro', plan_interval: 'MONTHLY' },
    );
    const res = await bare.api('POST', '/billing/webhooks/processor-b', {
      raw,
      headers: { 'content-type': 'application/json', 'x-signature': signLemon(raw, LEMON_SECRET) },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ received: true, outcome: 'applied' });
    expect(await currentOf(bare, s.accessToken, s.workspaceId)).toMatchObject({
      edition: 'PRO',
      status: 'ACTIVE',
      subscription: { provider: 'PROCESSOR_B' },
    });
  });
});

describe("an event whose id and type hold a NUL character (signed: the processor's own text)", () => {
  it('is recorded with U+FFFD in their place and answered 200 (the insert failed: a 500, and the processor would have retried it forever)', async () => {
    const id = `evt_${randomHex(8)}\u0000x`;
    const payload = stripeEvent(
      'customer.unknown\u0000thing',
      { id: `cus_${randomHex(8)}`, object: 'customer' },
      { id, created: nowSeconds() },
    );
    const res = await deliverSigned(payload);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ received: true, outcome: 'ignored' });
    const row = await app.deps.db
      .selectFrom('billing_events')
      .select(['event_id', 'event_type'])
      .where('event_id', '=', id.replace('\u0000', '\ufffd'))
      .executeTakeFirst();
    expect(row).toEqual({ event_id: id.replace('\u0000', '\ufffd'), event_type: 'customer.unknown\ufffdthing' });
  });
});

describe('charge.refunded', () => {
  const charge = (over: Record<string, unknown>) =>
    stripeEvent(
      'charge.refunded',
      { id: `ch_${randomHex(10)}`, object: 'charge', amount: 2900, currency: 'usd', ...over },
      { id: `evt_${randomHex(10)}`, created: nowSeconds() },
    );

  it('a partial refund leaves the payment SUCCEEDED; the full refund moves it to REFUNDED once, with billing.updated', async () => {
    const { s, ids } = await subscribed('proc-a-refund', nowSeconds() - 600);
    const paid = invoicePaid(ids.subscription, nowSeconds() - 500);
    expect((await deliverSigned(paid.payload)).body).toEqual({ received: true, outcome: 'applied' });
    const updatesBefore = (await domainEventTypes(app, s.workspaceId)).filter((t) => t === 'billing.updated').length;

    const partial = await deliverSigned(
      charge({ invoice: paid.invoiceId, payment_intent: `pi_${randomHex(10)}`, refunded: false, amount_refunded: 900 }),
    );
    expect(partial.body).toEqual({ received: true, outcome: 'ignored' });
    expect((await historyOf(app, s.accessToken, s.workspaceId)).items[0]).toMatchObject({ status: 'SUCCEEDED' });

    const full = await deliverSigned(charge({ invoice: paid.invoiceId, refunded: true, amount_refunded: 2900 }));
    expect(full.body).toEqual({ received: true, outcome: 'applied' });
    expect((await historyOf(app, s.accessToken, s.workspaceId)).items[0]).toMatchObject({
      status: 'REFUNDED',
      amountCents: 2900,
    });
    const updatesAfter = (await domainEventTypes(app, s.workspaceId)).filter((t) => t === 'billing.updated').length;
    expect(updatesAfter).toBe(updatesBefore + 1);

    // A second refund event of the same charge (a new event id) finds it already refunded.
    const again = await deliverSigned(charge({ invoice: paid.invoiceId, refunded: true, amount_refunded: 2900 }));
    expect(again.body).toEqual({ received: true, outcome: 'ignored' });
  });

  it('matches a one-time payment through its PaymentIntent', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'proc-a-refund-once' });
    const pi = `pi_${randomHex(10)}`;
    const session = stripeEvent(
      'checkout.session.completed',
      {
        id: `cs_test_${randomHex(10)}`,
        object: 'checkout.session',
        mode: 'payment',
        payment_status: 'paid',
        status: 'complete',
        customer: `cus_${randomHex(10)}`,
        client_reference_id: s.workspaceId,
        metadata: { workspaceId: s.workspaceId, planId: (await planBySlug(app, 'pro')).id },
        amount_total: 29000,
        currency: 'usd',
        payment_intent: pi,
      },
      { id: `evt_${randomHex(10)}`, created: nowSeconds() },
    );
    expect((await deliverSigned(session)).body).toEqual({ received: true, outcome: 'applied' });
    expect((await deliverSigned(charge({ payment_intent: pi, refunded: true }))).body).toEqual({
      received: true,
      outcome: 'applied',
    });
    expect((await paymentsOf(app, s.workspaceId)).map((p) => p.status)).toEqual(['REFUNDED']);
  });

  it('answers 200 unmatched for a refund of a payment it never recorded, and changes nothing', async () => {
    const res = await deliverSigned(charge({ payment_intent: `pi_${randomHex(10)}`, refunded: true }));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true, outcome: 'unmatched' });
  });
});
