// BILLING_PROVIDER=PROCESSOR_B end to end: the app talks to a fake Lemon Squeezy (a real HTTP server) for
// checkout and cancel, and receives webhooks signed with X-Signature (hex HMAC-SHA256 of the raw body).
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, registerAndLogin, uniqueEmail, type Session } from '../helpers/http.js';
import { lemonEvent, signLemon, startFakeLemonSqueezy, type FakeLemonSqueezy } from '../helpers/fake-lemonsqueezy.js';
import { signStripe, stripeEvent } from '../helpers/fake-stripe.js';
import { registerAs } from '../workspaces/helpers.js';
import {
  ENTERPRISE_LIMITS,
  LITE_LIMITS,
  PRO_LIMITS,
  billingEventsWithId,
  currentOf,
  domainEventTypes,
  historyOf,
  paymentsOf,
  planBySlug,
  randomHex,
  subscriptionsOf,
  workspaceRow,
} from './helpers.js';

const LEMON_KEY = `lemon-key-${randomHex(12)}`;
const LEMON_SECRET = `lemon-secret-${randomHex(12)}`;
const STORE_ID = '4242';
const VARIANTS = { pro: '777', enterprise: '778' };
const SUCCESS_URL = 'https://app.tests.local/billing/b-success';
const SUPPORT_EMAIL = 'billing-help-b@tests.local';
const DEMO_EMAIL = uniqueEmail('proc-b-demo');

let fake: FakeLemonSqueezy;
let app: TestApp;

beforeAll(async () => {
  fake = await startFakeLemonSqueezy({ apiKey: LEMON_KEY });
  app = await startTestApp({
    RATE_LIMIT_ENABLED: 'false',
    BILLING_PROVIDER: 'PROCESSOR_B',
    PROCESSOR_B_API_KEY: LEMON_KEY,
    PROCESSOR_B_STORE_ID: STORE_ID,
    PROCESSOR_B_WEBHOOK_SECRET: LEMON_SECRET,
    PROCESSOR_B_BASE_URL: fake.url,
    PROCESSOR_B_VARIANT_PRO: VARIANTS.pro,
    PROCESSOR_B_VARIANT_ENTERPRISE: VARIANTS.enterprise,
    // On, to show that the portal is PROCESSOR_A's only.
    PROCESSOR_A_CUSTOMER_PORTAL_ENABLED: 'true',
    BILLING_SUCCESS_URL: SUCCESS_URL,
    BILLING_SUPPORT_EMAIL: SUPPORT_EMAIL,
    AI_DEMO_RESTRICTED_EMAILS: DEMO_EMAIL,
  });
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});

// ---------------------------------------------------------------- helpers

function deliverB(raw: string | Buffer, signature: string | undefined) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (signature !== undefined) headers['x-signature'] = signature;
  return app.api('POST', '/billing/webhooks/processor-b', { raw, headers });
}
const deliverSigned = (raw: string) => deliverB(raw, signLemon(raw, LEMON_SECRET));
const eventIdOf = (raw: string | Buffer) => crypto.createHash('sha256').update(raw).digest('hex');
const lemonId = () => String(crypto.randomInt(1_000_000, 2_000_000_000));
const iso = (offsetSeconds: number) => new Date(Date.now() + offsetSeconds * 1000).toISOString().replace('Z', '000Z');

const checkoutRequests = () => fake.requests.filter((r) => r.method === 'POST' && r.path === '/v1/checkouts');

async function startCheckout(s: Session, planCode = 'pro') {
  const before = checkoutRequests().length;
  const res = await app.api('POST', '/billing/checkout', {
    token: s.accessToken,
    body: { workspaceId: s.workspaceId, planCode },
  });
  expect(res.status, res.text).toBe(200);
  expect(checkoutRequests()).toHaveLength(before + 1);
  return { res, request: checkoutRequests().at(-1)! };
}

function subscriptionBody(
  event: string,
  id: string,
  custom: Record<string, string>,
  attributes: Record<string, unknown>,
) {
  return lemonEvent(
    event,
    {
      type: 'subscriptions',
      id,
      attributes: {
        store_id: Number(STORE_ID),
        customer_id: 55,
        variant_id: Number(VARIANTS.pro),
        status: 'active',
        renews_at: iso(30 * 86_400),
        ends_at: null,
        created_at: iso(-3_600),
        updated_at: iso(-3_600),
        ...attributes,
      },
    },
    custom,
  );
}

function paymentBody(subscriptionId: string, custom: Record<string, string>, total = 2900) {
  const invoiceId = lemonId();
  return {
    invoiceId,
    raw: lemonEvent(
      'subscription_payment_success',
      {
        type: 'subscription-invoices',
        id: invoiceId,
        attributes: {
          store_id: Number(STORE_ID),
          subscription_id: Number(subscriptionId),
          customer_id: 55,
          billing_reason: 'initial',
          status: 'paid',
          total,
          currency: 'USD',
          urls: { invoice_url: `https://app.lemonsqueezy.test/my-orders/invoice/${invoiceId}` },
          created_at: iso(-3_500),
          updated_at: iso(-3_500),
        },
      },
      custom,
    ),
  };
}

const subscriptionRow = (id: string) =>
  app.deps.db
    .selectFrom('subscriptions')
    .selectAll()
    .where('provider', '=', 'PROCESSOR_B')
    .where('provider_subscription_id', '=', id)
    .executeTakeFirst();

// ---------------------------------------------------------------- status and checkout

describe('PROCESSOR_B configured', () => {
  it('provider status: configured, test mode, no portal, no key in the body', async () => {
    const res = await app.api('GET', '/billing/provider-status');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      provider: 'PROCESSOR_B',
      configured: true,
      mode: 'test',
      customerPortalEnabled: false,
      message: expect.any(String),
    });
    expect(res.text).not.toContain(LEMON_KEY);
    expect(res.text).not.toContain(LEMON_SECRET);
  });

  it('checkout creates a Lemon Squeezy checkout for the variant with custom data and answers its checkoutUrl', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'proc-b-checkout' });
    const { res, request } = await startCheckout(s);
    expect(res.body).toEqual({
      provider: 'PROCESSOR_B',
      checkoutUrl: expect.stringMatching(/^https:\/\/store\.lemonsqueezy\.test\/checkout\/custom\//),
    });
    const pro = await planBySlug(app, 'pro');
    expect(request.headers.authorization).toBe(`Bearer ${LEMON_KEY}`);
    expect(request.body.data).toMatchObject({
      type: 'checkouts',
      attributes: {
        checkout_data: {
          email: s.email,
          custom: { workspace_id: s.workspaceId, plan_id: pro.id, plan_slug: 'pro', plan_interval: 'MONTHLY' },
        },
        product_options: { redirect_url: SUCCESS_URL },
      },
      relationships: {
        store: { data: { type: 'stores', id: STORE_ID } },
        variant: { data: { type: 'variants', id: VARIANTS.pro } },
      },
    });
    expect(await subscriptionsOf(app, s.workspaceId)).toEqual([]);
    expect((await workspaceRow(app, s.workspaceId)).edition).toBe('LITE');
  });

  it('answers 503 BILLING_NOT_CONFIGURED naming the support address for a plan without a variant (Lite)', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'proc-b-novariant' });
    const err = expectError(
      await app.api('POST', '/billing/checkout', { token: s.accessToken, body: { planCode: 'lite' } }),
      503,
      'BILLING_NOT_CONFIGURED',
    );
    expect(err.message).toContain(SUPPORT_EMAIL);
  });

  it('refuses a demo account with 403 DEMO_READ_ONLY', async () => {
    const demo = await registerAs(app, DEMO_EMAIL);
    const before = fake.requests.length;
    expectError(
      await app.api('POST', '/billing/checkout', { token: demo.accessToken, body: { planCode: 'pro' } }),
      403,
      'DEMO_READ_ONLY',
    );
    expect(fake.requests.length).toBe(before);
  });

  it('has no billing portal: POST /billing/portal answers 404 NOT_FOUND', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'proc-b-portal' });
    expectError(await app.api('POST', '/billing/portal', { token: s.accessToken, body: {} }), 404, 'NOT_FOUND');
  });

  it('answers a processor-a webhook with 503 BILLING_NOT_CONFIGURED (no PROCESSOR_A webhook secret here)', async () => {
    const payload = stripeEvent('invoice.paid', { id: 'in_x', object: 'invoice', amount_paid: 1, currency: 'usd' });
    const res = await app.api('POST', '/billing/webhooks/processor-a', {
      raw: payload,
      headers: {
        'content-type': 'application/json',
        'stripe-signature': signStripe(payload, 'whsec_whatever0123456789'),
      },
    });
    expectError(res, 503, 'BILLING_NOT_CONFIGURED');
  });

  it('has no mock webhook route (404)', async () => {
    expectError(
      await app.api('POST', '/billing/webhooks/mock', { body: { id: 'x', type: 'checkout.completed' } }),
      404,
      'NOT_FOUND',
    );
  });
});

// ---------------------------------------------------------------- the whole flow

describe('a PROCESSOR_B subscription from checkout to expiry', () => {
  let s: Session;
  let custom: Record<string, string>;
  const subscriptionId = lemonId();
  let payment: { invoiceId: string; raw: string };

  beforeAll(async () => {
    s = await registerAndLogin(app.api, { prefix: 'proc-b-flow' });
    custom = (await startCheckout(s)).request.body.data.attributes.checkout_data.custom;
  });

  it('subscription_created with the checkout custom data puts the workspace on Pro, ACTIVE, with billing.updated', async () => {
    const renewsAt = iso(30 * 86_400);
    const res = await deliverSigned(
      subscriptionBody('subscription_created', subscriptionId, custom, { renews_at: renewsAt }),
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ received: true, outcome: 'applied' });
    const current = await currentOf(app, s.accessToken, s.workspaceId);
    expect(current).toMatchObject({
      edition: 'PRO',
      plan: { slug: 'pro' },
      limits: PRO_LIMITS,
      status: 'ACTIVE',
      currentPeriodEnd: new Date(renewsAt).toISOString(),
      subscription: { provider: 'PROCESSOR_B', status: 'ACTIVE', cancelAtPeriodEnd: false },
    });
    expect(await domainEventTypes(app, s.workspaceId)).toEqual(
      expect.arrayContaining(['subscription.created', 'billing.updated']),
    );
  });

  it('subscription_payment_success records a payment with invoiceUrl (and no receiptUrl)', async () => {
    payment = paymentBody(subscriptionId, custom);
    expect((await deliverSigned(payment.raw)).body).toEqual({ received: true, outcome: 'applied' });
    const history = await historyOf(app, s.accessToken, s.workspaceId);
    expect(history.total).toBe(1);
    expect(history.items[0]).toMatchObject({
      provider: 'PROCESSOR_B',
      status: 'SUCCEEDED',
      amountCents: 2900,
      currency: 'USD',
      invoiceUrl: `https://app.lemonsqueezy.test/my-orders/invoice/${payment.invoiceId}`,
    });
    expect(history.items[0]).not.toHaveProperty('receiptUrl');
    expect(await domainEventTypes(app, s.workspaceId)).toContain('payment.succeeded');
  });

  it('a re-delivery of the same bytes answers 200 duplicate and gives no second payment', async () => {
    const eventsBefore = await domainEventTypes(app, s.workspaceId);
    const again = await deliverSigned(payment.raw);
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ received: true, outcome: 'duplicate' });
    expect(await paymentsOf(app, s.workspaceId)).toHaveLength(1);
    expect(await billingEventsWithId(app, 'PROCESSOR_B', eventIdOf(payment.raw))).toHaveLength(1);
    expect(await domainEventTypes(app, s.workspaceId)).toEqual(eventsBefore);
  });

  it('POST /billing/cancel sends DELETE to the processor; the subscription runs until ends_at', async () => {
    const before = fake.requests.length;
    const res = await app.api('POST', '/billing/cancel', {
      token: s.accessToken,
      body: { workspaceId: s.workspaceId },
    });
    expect(res.status, res.text).toBe(200);
    const calls = fake.requests.slice(before);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ method: 'DELETE', path: `/v1/subscriptions/${subscriptionId}` });
    expect(calls[0].headers.authorization).toBe(`Bearer ${LEMON_KEY}`);
    expect(res.body).toMatchObject({
      edition: 'PRO',
      status: 'ACTIVE',
      currentPeriodEnd: new Date(fake.endsAt).toISOString(),
      subscription: { status: 'ACTIVE', cancelAtPeriodEnd: true },
    });
    expect(await currentOf(app, s.accessToken, s.workspaceId)).toEqual(res.body);
  });

  it('subscription_expired ends it: back to Lite, FREE', async () => {
    const raw = subscriptionBody('subscription_expired', subscriptionId, custom, {
      status: 'expired',
      ends_at: iso(-60),
      updated_at: iso(-30),
    });
    expect((await deliverSigned(raw)).body).toEqual({ received: true, outcome: 'applied' });
    expect(await currentOf(app, s.accessToken, s.workspaceId)).toMatchObject({
      edition: 'LITE',
      plan: { slug: 'lite' },
      limits: LITE_LIMITS,
      status: 'FREE',
      subscription: { status: 'CANCELED' },
    });
    expect(await domainEventTypes(app, s.workspaceId)).toContain('subscription.canceled');
  });
});

describe('PROCESSOR_B re-deliveries and ordering', () => {
  it('10 concurrent deliveries of one payment give one payment row', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'proc-b-burst' });
    const custom = (await startCheckout(s)).request.body.data.attributes.checkout_data.custom;
    const subscriptionId = lemonId();
    expect((await deliverSigned(subscriptionBody('subscription_created', subscriptionId, custom, {}))).status).toBe(
      200,
    );
    const { raw } = paymentBody(subscriptionId, custom);
    const signature = signLemon(raw, LEMON_SECRET);
    const answers = await Promise.all(Array.from({ length: 10 }, () => deliverB(raw, signature)));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(answers.map((a) => a.body.outcome).sort()).toEqual(['applied', ...Array(9).fill('duplicate')]);
    expect(await paymentsOf(app, s.workspaceId)).toHaveLength(1);
  });

  it('an older subscription_updated after a newer one changes nothing', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'proc-b-order' });
    const custom = (await startCheckout(s)).request.body.data.attributes.checkout_data.custom;
    const subscriptionId = lemonId();
    expect(
      (await deliverSigned(subscriptionBody('subscription_created', subscriptionId, custom, { updated_at: iso(-600) })))
        .body.outcome,
    ).toBe('applied');
    expect(
      (await deliverSigned(subscriptionBody('subscription_updated', subscriptionId, custom, { updated_at: iso(-100) })))
        .body.outcome,
    ).toBe('applied');
    const before = await subscriptionRow(subscriptionId);
    const stale = await deliverSigned(
      subscriptionBody('subscription_expired', subscriptionId, custom, { status: 'expired', updated_at: iso(-300) }),
    );
    expect(stale.status).toBe(200);
    expect(stale.body.outcome).toBe('stale');
    expect(await subscriptionRow(subscriptionId)).toEqual(before);
    expect((await workspaceRow(app, s.workspaceId)).edition).toBe('PRO');
  });
});

describe('PROCESSOR_B plan changes and statuses', () => {
  it("follows the subscription's variant over the checkout's custom data (a plan changed at the processor)", async () => {
    const s = await registerAndLogin(app.api, { prefix: 'proc-b-variant' });
    const custom = (await startCheckout(s)).request.body.data.attributes.checkout_data.custom;
    const subscriptionId = lemonId();
    expect(
      (await deliverSigned(subscriptionBody('subscription_created', subscriptionId, custom, { updated_at: iso(-600) })))
        .body.outcome,
    ).toBe('applied');
    expect((await workspaceRow(app, s.workspaceId)).edition).toBe('PRO');
    const changed = subscriptionBody('subscription_updated', subscriptionId, custom, {
      variant_id: Number(VARIANTS.enterprise),
      updated_at: iso(-300),
    });
    expect((await deliverSigned(changed)).body.outcome).toBe('applied');
    expect(await currentOf(app, s.accessToken, s.workspaceId)).toMatchObject({
      edition: 'ENTERPRISE',
      plan: { slug: 'enterprise' },
      limits: ENTERPRISE_LIMITS,
    });
  });

  it.each(['unpaid', 'paused'])('%s ends the plan (back to Lite, FREE); past_due keeps it', async (status) => {
    const s = await registerAndLogin(app.api, { prefix: `proc-b-${status}` });
    const custom = (await startCheckout(s)).request.body.data.attributes.checkout_data.custom;
    const subscriptionId = lemonId();
    expect(
      (await deliverSigned(subscriptionBody('subscription_created', subscriptionId, custom, { updated_at: iso(-600) })))
        .body.outcome,
    ).toBe('applied');
    expect(
      (
        await deliverSigned(
          subscriptionBody('subscription_updated', subscriptionId, custom, {
            status: 'past_due',
            updated_at: iso(-500),
          }),
        )
      ).body.outcome,
    ).toBe('applied');
    expect(await currentOf(app, s.accessToken, s.workspaceId)).toMatchObject({ edition: 'PRO', status: 'PAST_DUE' });
    expect(
      (
        await deliverSigned(
          subscriptionBody('subscription_updated', subscriptionId, custom, { status, updated_at: iso(-400) }),
        )
      ).body.outcome,
    ).toBe('applied');
    expect(await currentOf(app, s.accessToken, s.workspaceId)).toMatchObject({
      edition: 'LITE',
      limits: LITE_LIMITS,
      status: 'FREE',
    });
  });

  it.each([
    ['a workspace id that is not a UUID', (c: Record<string, string>) => ({ ...c, workspace_id: 'abc' })],
    ['a plan id that is not a UUID', (c: Record<string, string>) => ({ ...c, plan_id: 'abc' })],
  ])('subscription_created with %s answers 200 unmatched (was a 500)', async (_label, spoil) => {
    const s = await registerAndLogin(app.api, { prefix: 'proc-b-foreign' });
    const custom = spoil((await startCheckout(s)).request.body.data.attributes.checkout_data.custom);
    // A variant no plan uses, so only the custom data could name the plan.
    const res = await deliverSigned(
      subscriptionBody('subscription_created', lemonId(), custom, { variant_id: 999_999 }),
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ received: true, outcome: 'unmatched' });
    expect(await subscriptionsOf(app, s.workspaceId)).toEqual([]);
  });

  it('a payment naming an unknown workspace answers 200 unmatched (was a 500)', async () => {
    const { raw } = paymentBody(lemonId(), {
      workspace_id: crypto.randomUUID(),
      plan_id: crypto.randomUUID(),
      plan_interval: 'MONTHLY',
    });
    const res = await deliverSigned(raw);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ received: true, outcome: 'unmatched' });
  });
});

// ---------------------------------------------------------------- signatures

describe('POST /billing/webhooks/processor-b signatures', () => {
  let s: Session;
  let custom: Record<string, string>;
  beforeAll(async () => {
    s = await registerAndLogin(app.api, { prefix: 'proc-b-sig' });
    const pro = await planBySlug(app, 'pro');
    custom = { workspace_id: s.workspaceId, plan_id: pro.id, plan_slug: 'pro', plan_interval: 'MONTHLY' };
  });

  const cases: Array<[string, (raw: string) => { signature: string | undefined; body?: string }]> = [
    ['a missing X-Signature header', () => ({ signature: undefined })],
    ['an empty header', () => ({ signature: '' })],
    ['a signature made with another secret', (raw) => ({ signature: signLemon(raw, 'another-secret-0123456789') })],
    [
      'a tampered body',
      (raw) => ({
        signature: signLemon(raw, LEMON_SECRET),
        body: raw.replace('"status":"active"', '"status":"active" '),
      }),
    ],
    ['a malformed header', () => ({ signature: 'zz' })],
    ['a truncated signature', (raw) => ({ signature: signLemon(raw, LEMON_SECRET).slice(0, 62) })],
    ['a signature with junk appended', (raw) => ({ signature: `${signLemon(raw, LEMON_SECRET)}00` })],
    [
      'a Stripe-style header',
      (raw) => ({ signature: `t=${Math.floor(Date.now() / 1000)},v1=${signLemon(raw, LEMON_SECRET)}` }),
    ],
  ];

  it.each(cases)('refuses %s with 400 INVALID_SIGNATURE and stores nothing', async (_label, make) => {
    const subscriptionId = lemonId();
    const raw = subscriptionBody('subscription_created', subscriptionId, custom, {});
    const { signature, body } = make(raw);
    const sent = body ?? raw;
    const err = expectError(await deliverB(sent, signature), 400, 'INVALID_SIGNATURE');
    expect(err.message).not.toContain(LEMON_SECRET);
    expect(await billingEventsWithId(app, 'PROCESSOR_B', eventIdOf(sent))).toEqual([]);
    expect(await subscriptionRow(subscriptionId)).toBeUndefined();
    expect((await workspaceRow(app, s.workspaceId)).edition).toBe('LITE');
  });

  it('accepts the correct signature, in either letter case', async () => {
    const raw = subscriptionBody('subscription_created', lemonId(), custom, {});
    const res = await deliverB(raw, signLemon(raw, LEMON_SECRET).toUpperCase());
    expect(res.status, res.text).toBe(200);
    expect(res.body.outcome).toBe('applied');
    expect((await workspaceRow(app, s.workspaceId)).edition).toBe('PRO');
  });
});

describe('an app with BILLING_PROVIDER=PROCESSOR_B but no PROCESSOR_B keys', () => {
  let bare: TestApp;
  beforeAll(async () => {
    bare = await startTestApp({
      RATE_LIMIT_ENABLED: 'false',
      BILLING_PROVIDER: 'PROCESSOR_B',
      PROCESSOR_B_VARIANT_PRO: VARIANTS.pro,
      BILLING_SUPPORT_EMAIL: SUPPORT_EMAIL,
    });
  });
  afterAll(() => bare?.close());

  it('starts; provider status configured: false; checkout 503 BILLING_NOT_CONFIGURED naming the support address', async () => {
    const status = await bare.api('GET', '/billing/provider-status');
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({ provider: 'PROCESSOR_B', configured: false });
    const s = await registerAndLogin(bare.api, { prefix: 'proc-b-bare' });
    const err = expectError(
      await bare.api('POST', '/billing/checkout', { token: s.accessToken, body: { planCode: 'pro' } }),
      503,
      'BILLING_NOT_CONFIGURED',
    );
    expect(err.message).toContain(SUPPORT_EMAIL);
  });

  it('answers a processor-b webhook with 503 BILLING_NOT_CONFIGURED without its secret', async () => {
    const raw = lemonEvent('subscription_created', {
      type: 'subscriptions',
      id: lemonId(),
      attributes: { status: 'active' },
    });
    const res = await bare.api('POST', '/billing/webhooks/processor-b', {
      raw,
      headers: { 'content-type': 'application/json', 'x-signature': signLemon(raw, LEMON_SECRET) },
    });
    expectError(res, 503, 'BILLING_NOT_CONFIGURED');
    expect(await billingEventsWithId(bare, 'PROCESSOR_B', eventIdOf(raw))).toEqual([]);
  });
});

describe('refunds from PROCESSOR_B', () => {
  it('subscription_payment_refunded moves a fully refunded invoice payment to REFUNDED; a partial refund changes nothing', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'proc-b-refund' });
    const custom = (await startCheckout(s)).request.body.data.attributes.checkout_data.custom;
    const subscriptionId = lemonId();
    expect((await deliverSigned(subscriptionBody('subscription_created', subscriptionId, custom, {}))).body).toEqual({
      received: true,
      outcome: 'applied',
    });
    const payment = paymentBody(subscriptionId, custom);
    expect((await deliverSigned(payment.raw)).body).toEqual({ received: true, outcome: 'applied' });

    const refund = (refunded: boolean) =>
      lemonEvent(
        'subscription_payment_refunded',
        {
          type: 'subscription-invoices',
          id: payment.invoiceId,
          attributes: {
            subscription_id: Number(subscriptionId),
            status: refunded ? 'refunded' : 'partial_refund',
            refunded,
            total: 2900,
            currency: 'USD',
          },
        },
        custom,
      );
    expect((await deliverSigned(refund(false))).body).toEqual({ received: true, outcome: 'ignored' });
    expect((await paymentsOf(app, s.workspaceId)).map((p) => p.status)).toEqual(['SUCCEEDED']);
    expect((await deliverSigned(refund(true))).body).toEqual({ received: true, outcome: 'applied' });
    expect((await historyOf(app, s.accessToken, s.workspaceId)).items[0]).toMatchObject({
      status: 'REFUNDED',
      amountCents: 2900,
    });
  });

  it('order_refunded of an order it never recorded answers 200 unmatched', async () => {
    const raw = lemonEvent('order_refunded', {
      type: 'orders',
      id: lemonId(),
      attributes: { status: 'refunded', refunded: true, total: 2900 },
    });
    const res = await deliverSigned(raw);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true, outcome: 'unmatched' });
  });
});
