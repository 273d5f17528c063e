// The two payment-processor adapters on their own (no app): outbound calls against local fakes of the
// Stripe (PROCESSOR_A) and Lemon Squeezy (PROCESSOR_B) APIs, and inbound webhook verification and
// translation. PROCESSOR_A signatures come from the official SDK's test helper, PROCESSOR_B's from node:crypto.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStripeProcessor } from '../../routers/billing/processors/stripe.js';
import { createLemonSqueezyProcessor } from '../../routers/billing/processors/lemon-squeezy.js';
import type { CheckoutRequest, PaymentProcessor } from '../../routers/billing/processors/types.js';
import { AppError, type ErrorCode } from '../../server/platform/errors.js';
import {
  FAKE_STRIPE_ERROR_DETAIL,
  fakeSubscription,
  signStripe,
  startFakeStripe,
  stripeEvent,
  type FakeStripe,
} from '../helpers/fake-stripe.js';
import {
  FAKE_LEMON_ERROR_DETAIL,
  lemonEvent,
  signLemon,
  startFakeLemonSqueezy,
  type FakeLemonSqueezy,
} from '../helpers/fake-lemonsqueezy.js';

const STRIPE_KEY = 'sk_test_fakeKey0123456789abcdef';
const STRIPE_WHSEC = 'whsec_fakeSecret0123456789abcdef';
const LEMON_KEY = 'lemon-test-api-key-0123456789abcdef';
const LEMON_SECRET = 'lemon-webhook-secret-0123456789';
const LEMON_STORE = '4242';

const WORKSPACE_ID = '5b3f0c5e-4a63-4f43-9d0b-0f0f7f1b2c3d';
const PLAN_ID = '9e8d7c6b-5a49-4382-9170-6f5e4d3c2b1a';

const checkoutRequest = (overrides: Partial<CheckoutRequest> = {}): CheckoutRequest => ({
  workspaceId: WORKSPACE_ID,
  planId: PLAN_ID,
  planSlug: 'pro',
  planName: 'Pro',
  interval: 'MONTHLY',
  priceRef: 'price_pro_monthly',
  customerEmail: 'owner@tests.local',
  customerId: null,
  successUrl: 'http://app.tests.local/billing/success',
  cancelUrl: 'http://app.tests.local/billing/cancel',
  ...overrides,
});

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** The AppError a call throws (sync or async); fails the test when it throws nothing else. */
async function appErrorOf(run: () => unknown): Promise<AppError> {
  try {
    await run();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error('expected an AppError, nothing was thrown');
}

async function expectAppError(run: () => unknown, code: ErrorCode): Promise<AppError> {
  const err = await appErrorOf(run);
  expect(err.code).toBe(code);
  return err;
}

/** A port nothing listens on. */
async function closedPortUrl(): Promise<string> {
  const fake = await startFakeStripe({ apiKey: 'unused' });
  await fake.close();
  return fake.url;
}

// ======================================================================== PROCESSOR_A (Stripe)

describe('PROCESSOR_A outbound (official SDK against a fake Stripe)', () => {
  let fake: FakeStripe;
  let a: PaymentProcessor;

  beforeAll(async () => {
    fake = await startFakeStripe({ apiKey: STRIPE_KEY });
    a = createStripeProcessor(
      { PROCESSOR_A_SECRET_KEY: STRIPE_KEY, PROCESSOR_A_WEBHOOK_SECRET: STRIPE_WHSEC, PROCESSOR_A_BASE_URL: fake.url },
      { timeoutMs: 500 },
    );
  });
  afterAll(() => fake?.close());

  const lastRequest = () => fake.requests.at(-1)!;

  it('reports its settings', () => {
    expect(a.name).toBe('PROCESSOR_A');
    expect(a.configured).toBe(true);
    expect(a.webhookConfigured).toBe(true);
    expect(a.mode).toBe('test');
  });

  it('creates a subscription Checkout Session with metadata, URLs and the e-mail of a new customer', async () => {
    const { checkoutUrl } = await a.createCheckout(checkoutRequest());
    const req = lastRequest();
    expect(req.method).toBe('POST');
    expect(req.path).toBe('/v1/checkout/sessions');
    expect(req.headers.authorization).toBe(`Bearer ${STRIPE_KEY}`);
    const metadata = { workspaceId: WORKSPACE_ID, planId: PLAN_ID, planSlug: 'pro' };
    expect(req.body).toMatchObject({
      mode: 'subscription',
      line_items: [{ price: 'price_pro_monthly', quantity: '1' }],
      success_url: 'http://app.tests.local/billing/success',
      cancel_url: 'http://app.tests.local/billing/cancel',
      client_reference_id: WORKSPACE_ID,
      customer_email: 'owner@tests.local',
      metadata,
      subscription_data: { metadata },
    });
    expect(req.body.customer).toBeUndefined();
    expect(req.body.payment_intent_data).toBeUndefined();
    expect(req.body.customer_creation).toBeUndefined();
    expect(checkoutUrl).toMatch(/^https:\/\/checkout\.stripe\.test\/c\/pay\/cs_test_/);
  });

  it('uses payment mode for a one-time plan and the known customer instead of the e-mail', async () => {
    await a.createCheckout(checkoutRequest({ interval: 'ONE_TIME', priceRef: 'price_once', customerId: 'cus_known' }));
    const body = lastRequest().body;
    expect(body).toMatchObject({
      mode: 'payment',
      line_items: [{ price: 'price_once', quantity: '1' }],
      customer: 'cus_known',
      payment_intent_data: { metadata: { workspaceId: WORKSPACE_ID, planId: PLAN_ID, planSlug: 'pro' } },
    });
    expect(body.customer_email).toBeUndefined();
    expect(body.subscription_data).toBeUndefined();
  });

  it('asks Stripe to create a customer in payment mode when the workspace has none', async () => {
    await a.createCheckout(checkoutRequest({ interval: 'ONE_TIME' }));
    expect(lastRequest().body).toMatchObject({
      mode: 'payment',
      customer_email: 'owner@tests.local',
      customer_creation: 'always',
    });
  });

  it('cancels at the end of the period and answers the subscription as Stripe reports it', async () => {
    const periodEnd = nowSeconds() + 10 * 86_400;
    fake.subscriptions.set(
      'sub_cancel_me',
      fakeSubscription('sub_cancel_me', {
        items: {
          object: 'list',
          data: [{ id: 'si_1', current_period_start: nowSeconds(), current_period_end: periodEnd }],
        },
      }),
    );
    const result = await a.cancelSubscription('sub_cancel_me');
    expect(lastRequest()).toMatchObject({
      method: 'POST',
      path: '/v1/subscriptions/sub_cancel_me',
      body: { cancel_at_period_end: 'true' },
    });
    expect(fake.subscriptions.get('sub_cancel_me')!.cancel_at_period_end).toBe(true);
    expect(result).toEqual({ status: 'ACTIVE', cancelAtPeriodEnd: true, currentPeriodEnd: new Date(periodEnd * 1000) });
  });

  it('opens a billing-portal session for the customer', async () => {
    const url = await a.createPortalSession!('cus_portal', 'http://app.tests.local/billing');
    expect(lastRequest()).toMatchObject({
      method: 'POST',
      path: '/v1/billing_portal/sessions',
      body: { customer: 'cus_portal', return_url: 'http://app.tests.local/billing' },
    });
    expect(url).toMatch(/^https:\/\/billing\.stripe\.test\/p\/session\//);
  });

  it('turns a provider 500 into BAD_GATEWAY without the provider body or the key', async () => {
    const before = fake.requests.length;
    fake.failNext(500);
    const err = await expectAppError(() => a.createCheckout(checkoutRequest()), 'BAD_GATEWAY');
    expect(err.status).toBe(502);
    expect(err.message).not.toContain(FAKE_STRIPE_ERROR_DETAIL);
    expect(err.message).not.toContain(STRIPE_KEY);
    // One attempt only (no SDK retries: the buyer is waiting), and the next call works again.
    expect(fake.requests.length).toBe(before + 1);
    expect((await a.createCheckout(checkoutRequest())).checkoutUrl).toBeTruthy();
  });

  it('turns a rejected key into BAD_GATEWAY without the key', async () => {
    const wrongKey = 'sk_test_wrongKey0123456789abcdef';
    const other = createStripeProcessor({ PROCESSOR_A_SECRET_KEY: wrongKey, PROCESSOR_A_BASE_URL: fake.url });
    const err = await expectAppError(() => other.cancelSubscription('sub_x'), 'BAD_GATEWAY');
    expect(err.message).not.toContain(wrongKey);
  });

  it('gives up on a hanging provider within the timeout', async () => {
    fake.failNext('hang');
    const started = Date.now();
    await expectAppError(() => a.createPortalSession!('cus_slow', 'http://app.tests.local/billing'), 'BAD_GATEWAY');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('answers BAD_GATEWAY when the provider is unreachable', async () => {
    const down = createStripeProcessor({
      PROCESSOR_A_SECRET_KEY: STRIPE_KEY,
      PROCESSOR_A_BASE_URL: await closedPortUrl(),
    });
    await expectAppError(() => down.createCheckout(checkoutRequest()), 'BAD_GATEWAY');
  });

  it('answers BILLING_NOT_CONFIGURED without a secret key, and tells live keys from test keys', async () => {
    const bare = createStripeProcessor({});
    expect(bare.configured).toBe(false);
    expect(bare.webhookConfigured).toBe(false);
    await expectAppError(() => bare.createCheckout(checkoutRequest()), 'BILLING_NOT_CONFIGURED');
    await expectAppError(() => bare.cancelSubscription('sub_x'), 'BILLING_NOT_CONFIGURED');
    expect(createStripeProcessor({ PROCESSOR_A_SECRET_KEY: 'sk_live_abc' }).mode).toBe('live');
    expect(createStripeProcessor({ PROCESSOR_A_SECRET_KEY: 'rk_live_abc' }).mode).toBe('live');
    expect(createStripeProcessor({ PROCESSOR_A_SECRET_KEY: 'rk_test_abc' }).mode).toBe('test');
  });
});

describe('PROCESSOR_A webhooks: translation', () => {
  const a = createStripeProcessor({ PROCESSOR_A_WEBHOOK_SECRET: STRIPE_WHSEC });
  const parse = (payload: string) =>
    a.parseWebhook(Buffer.from(payload), { 'stripe-signature': signStripe(payload, STRIPE_WHSEC) });
  const metadata = { workspaceId: WORKSPACE_ID, planId: PLAN_ID, planSlug: 'pro' };

  it('keeps the event id, type and time', () => {
    const created = nowSeconds() - 60;
    const event = parse(
      stripeEvent('customer.created', { id: 'cus_1', object: 'customer' }, { id: 'evt_keep', created }),
    );
    expect(event).toEqual({
      id: 'evt_keep',
      type: 'customer.created',
      occurredAt: new Date(created * 1000),
      changes: [],
    });
  });

  it('checkout.session.completed (subscription mode) links the subscription to the workspace and plan', () => {
    const event = parse(
      stripeEvent('checkout.session.completed', {
        id: 'cs_test_sub',
        object: 'checkout.session',
        mode: 'subscription',
        payment_status: 'paid',
        subscription: 'sub_123',
        customer: 'cus_123',
        client_reference_id: WORKSPACE_ID,
        metadata,
        amount_total: 2900,
        currency: 'usd',
        payment_intent: null,
      }),
    );
    expect(event.changes).toEqual([
      {
        kind: 'subscription',
        providerSubscriptionId: 'sub_123',
        workspaceId: WORKSPACE_ID,
        planId: PLAN_ID,
        customerId: 'cus_123',
        status: 'ACTIVE',
      },
    ]);
  });

  it('checkout.session.completed (payment mode) is a one-time subscription plus its payment', () => {
    const event = parse(
      stripeEvent('checkout.session.completed', {
        id: 'cs_test_once',
        object: 'checkout.session',
        mode: 'payment',
        payment_status: 'paid',
        subscription: null,
        customer: 'cus_once',
        metadata,
        amount_total: 4900,
        currency: 'eur',
        payment_intent: 'pi_once',
      }),
    );
    expect(event.changes).toEqual([
      {
        kind: 'subscription',
        providerSubscriptionId: 'onetime_cs_test_once',
        workspaceId: WORKSPACE_ID,
        planId: PLAN_ID,
        customerId: 'cus_once',
        status: 'ACTIVE',
        currentPeriodEnd: null,
      },
      {
        kind: 'payment',
        providerPaymentId: 'pi_once',
        providerSubscriptionId: 'onetime_cs_test_once',
        workspaceId: WORKSPACE_ID,
        planId: PLAN_ID,
        amountCents: 4900,
        currency: 'EUR',
        status: 'SUCCEEDED',
      },
    ]);
  });

  it('waits for async_payment_succeeded when a one-time checkout completes unpaid', () => {
    const session = {
      id: 'cs_test_async',
      object: 'checkout.session',
      mode: 'payment',
      payment_status: 'unpaid',
      customer: 'cus_a',
      metadata,
      amount_total: 4900,
      currency: 'usd',
      payment_intent: 'pi_async',
    };
    expect(parse(stripeEvent('checkout.session.completed', session)).changes).toEqual([]);
    const later = parse(
      stripeEvent('checkout.session.async_payment_succeeded', { ...session, payment_status: 'paid' }),
    );
    expect(later.changes.map((c) => c.kind)).toEqual(['subscription', 'payment']);
  });

  it('customer.subscription.updated with periods on the subscription (older API versions)', () => {
    const start = nowSeconds() - 86_400;
    const end = start + 30 * 86_400;
    const event = parse(
      stripeEvent('customer.subscription.updated', {
        id: 'sub_old',
        object: 'subscription',
        status: 'active',
        customer: 'cus_old',
        cancel_at_period_end: true,
        current_period_start: start,
        current_period_end: end,
        metadata,
      }),
    );
    expect(event.changes).toEqual([
      {
        kind: 'subscription',
        providerSubscriptionId: 'sub_old',
        workspaceId: WORKSPACE_ID,
        planId: PLAN_ID,
        customerId: 'cus_old',
        status: 'ACTIVE',
        currentPeriodStart: new Date(start * 1000),
        currentPeriodEnd: new Date(end * 1000),
        cancelAtPeriodEnd: true,
      },
    ]);
  });

  it('customer.subscription.created with periods on its items (newer API versions) and no metadata', () => {
    const sub = fakeSubscription('sub_new', {
      status: 'trialing',
      customer: { id: 'cus_expanded', object: 'customer' },
      metadata: {},
    });
    const [change] = parse(stripeEvent('customer.subscription.created', sub)).changes;
    expect(change).toEqual({
      kind: 'subscription',
      providerSubscriptionId: 'sub_new',
      workspaceId: undefined,
      planId: undefined,
      customerId: 'cus_expanded',
      status: 'TRIALING',
      currentPeriodStart: new Date(sub.items.data[0].current_period_start * 1000),
      currentPeriodEnd: new Date(sub.items.data[0].current_period_end * 1000),
      cancelAtPeriodEnd: false,
    });
  });

  it.each([
    // unpaid and paused collect nothing: not live, so the workspace does not keep a paid plan for free.
    ['active', 'ACTIVE'],
    ['trialing', 'TRIALING'],
    ['past_due', 'PAST_DUE'],
    ['unpaid', 'CANCELED'],
    ['paused', 'CANCELED'],
    ['canceled', 'CANCELED'],
    ['incomplete_expired', 'CANCELED'],
    ['incomplete', 'INCOMPLETE'],
  ])('maps the subscription status %s to %s', (stripeStatus, status) => {
    const [change] = parse(
      stripeEvent('customer.subscription.updated', fakeSubscription('sub_s', { status: stripeStatus })),
    ).changes;
    expect(change).toMatchObject({ kind: 'subscription', status });
  });

  it("names the subscription's price (first item) as its priceRef, expanded or not", () => {
    const item = (price: unknown) => ({
      items: { object: 'list', data: [{ id: 'si_p', price, current_period_start: 1, current_period_end: 2 }] },
    });
    const priceOf = (price: unknown) =>
      parse(stripeEvent('customer.subscription.updated', fakeSubscription('sub_p', { metadata, ...item(price) })))
        .changes[0];
    expect(priceOf({ id: 'price_ent', object: 'price' })).toMatchObject({ priceRef: 'price_ent', planId: PLAN_ID });
    expect(priceOf('price_pro')).toMatchObject({ priceRef: 'price_pro' });
  });

  it('leaves out metadata ids that are not UUIDs (they could name nothing here)', () => {
    const odd = { workspaceId: 'abc', planId: "1' or '1'='1" };
    const [sub] = parse(
      stripeEvent('customer.subscription.created', fakeSubscription('sub_odd', { metadata: odd })),
    ).changes;
    expect(sub).toMatchObject({ workspaceId: undefined, planId: undefined });
    const [payment] = parse(
      stripeEvent('invoice.paid', {
        id: 'in_odd',
        object: 'invoice',
        amount_paid: 1,
        currency: 'usd',
        subscription_details: { metadata: odd },
      }),
    ).changes;
    expect(payment).toMatchObject({ workspaceId: undefined, planId: undefined });
    const [session] = parse(
      stripeEvent('checkout.session.completed', {
        id: 'cs_odd',
        object: 'checkout.session',
        mode: 'subscription',
        subscription: 'sub_odd',
        client_reference_id: 'abc',
        metadata: {},
      }),
    ).changes;
    expect(session).toMatchObject({ workspaceId: undefined, planId: undefined });
  });

  it('customer.subscription.deleted ends the subscription; an unknown status changes nothing', () => {
    const [ended] = parse(
      stripeEvent('customer.subscription.deleted', fakeSubscription('sub_d', { status: 'canceled' })),
    ).changes;
    expect(ended).toMatchObject({ providerSubscriptionId: 'sub_d', status: 'CANCELED', cancelAtPeriodEnd: false });
    expect(
      parse(stripeEvent('customer.subscription.updated', fakeSubscription('sub_u', { status: 'brand_new_status' })))
        .changes,
    ).toEqual([]);
  });

  it('a subscription ending at a set time (cancel_at) counts as cancelling at period end', () => {
    const sub = fakeSubscription('sub_at', { cancel_at: nowSeconds() + 86_400 });
    expect(parse(stripeEvent('customer.subscription.updated', sub)).changes[0]).toMatchObject({
      cancelAtPeriodEnd: true,
    });
  });

  it('invoice.paid (older API versions: invoice.subscription, subscription_details) is a payment', () => {
    const event = parse(
      stripeEvent('invoice.paid', {
        id: 'in_old',
        object: 'invoice',
        amount_paid: 2900,
        amount_due: 2900,
        currency: 'usd',
        subscription: 'sub_123',
        subscription_details: { metadata },
        hosted_invoice_url: 'https://invoice.stripe.test/i/in_old',
        invoice_pdf: 'https://pay.stripe.test/in_old.pdf',
      }),
    );
    expect(event.changes.filter((c) => c.kind !== 'invoice')).toEqual([
      {
        kind: 'payment',
        providerPaymentId: 'in_old',
        providerSubscriptionId: 'sub_123',
        workspaceId: WORKSPACE_ID,
        planId: PLAN_ID,
        amountCents: 2900,
        currency: 'USD',
        status: 'SUCCEEDED',
        invoiceUrl: 'https://invoice.stripe.test/i/in_old',
        receiptUrl: 'https://pay.stripe.test/in_old.pdf',
      },
    ]);
  });

  it('invoice.payment_succeeded (newer API versions: parent.subscription_details) without a PDF has no receipt', () => {
    const event = parse(
      stripeEvent('invoice.payment_succeeded', {
        id: 'in_new',
        object: 'invoice',
        amount_paid: 9900,
        currency: 'usd',
        invoice_pdf: null,
        hosted_invoice_url: 'https://invoice.stripe.test/i/in_new',
        parent: { type: 'subscription_details', subscription_details: { subscription: 'sub_456', metadata: null } },
      }),
    );
    expect(event.changes.filter((c) => c.kind !== 'invoice')).toEqual([
      {
        kind: 'payment',
        providerPaymentId: 'in_new',
        providerSubscriptionId: 'sub_456',
        workspaceId: undefined,
        planId: undefined,
        amountCents: 9900,
        currency: 'USD',
        status: 'SUCCEEDED',
        invoiceUrl: 'https://invoice.stripe.test/i/in_new',
      },
    ]);
    expect(event.changes[0]).not.toHaveProperty('receiptUrl');
  });

  it('invoice.payment_failed is a failed payment of the amount due, under an id of its own', () => {
    const [change] = parse(
      stripeEvent('invoice.payment_failed', {
        id: 'in_fail',
        object: 'invoice',
        amount_paid: 0,
        amount_due: 2900,
        attempt_count: 2,
        currency: 'usd',
        parent: { subscription_details: { subscription: 'sub_789', metadata } },
      }),
    ).changes;
    expect(change).toMatchObject({
      kind: 'payment',
      providerPaymentId: 'in_fail_failed_2',
      providerSubscriptionId: 'sub_789',
      amountCents: 2900,
      status: 'FAILED',
    });
  });

  it('other event types change nothing', () => {
    expect(parse(stripeEvent('payment_intent.created', { id: 'pi_1', object: 'payment_intent' })).changes).toEqual([]);
  });
});

describe('PROCESSOR_A webhooks: signatures', () => {
  const a = createStripeProcessor({ PROCESSOR_A_WEBHOOK_SECRET: STRIPE_WHSEC });
  const payload = stripeEvent(
    'invoice.paid',
    { id: 'in_sig', object: 'invoice', amount_paid: 100, currency: 'usd' },
    { id: 'evt_sig' },
  );
  const body = Buffer.from(payload);
  const parseWith =
    (header: string | string[] | undefined, raw: Buffer = body) =>
    () =>
      a.parseWebhook(raw, { 'stripe-signature': header });

  it('accepts a valid signature', () => {
    expect(a.parseWebhook(body, { 'stripe-signature': signStripe(payload, STRIPE_WHSEC) }).id).toBe('evt_sig');
  });

  it('accepts a header with several v1 signatures when one matches (secret rotation)', () => {
    const header = signStripe(payload, STRIPE_WHSEC);
    const withOld = header.replace(',v1=', `,v1=${'0'.repeat(64)},v0=${'1'.repeat(64)},v1=`);
    expect(withOld.match(/v1=/g)).toHaveLength(2);
    expect(a.parseWebhook(body, { 'stripe-signature': withOld }).id).toBe('evt_sig');
  });

  it('accepts a timestamp slightly ahead of our clock', () => {
    expect(a.parseWebhook(body, { 'stripe-signature': signStripe(payload, STRIPE_WHSEC, nowSeconds() + 60) }).id).toBe(
      'evt_sig',
    );
  });

  it.each<[string, () => string | string[] | undefined, Buffer?]>([
    ['a missing header', () => undefined],
    ['an empty header', () => ''],
    ['a malformed header', () => 't=abc,v1=zz'],
    ['a header without signatures', () => `t=${nowSeconds()}`],
    ['a timestamp with trailing junk', () => signStripe(payload, STRIPE_WHSEC).replace(/^t=(\d+)/, 't=$1abc')],
    ['a header given twice', () => [signStripe(payload, STRIPE_WHSEC), signStripe(payload, STRIPE_WHSEC)]],
    ['the wrong secret', () => signStripe(payload, 'whsec_someoneElse0123456789')],
    [
      'a tampered body',
      () => signStripe(payload, STRIPE_WHSEC),
      Buffer.from(payload.replace('"amount_paid":100', '"amount_paid":999')),
    ],
    ['an empty body', () => signStripe(payload, STRIPE_WHSEC), Buffer.alloc(0)],
    ['a stale timestamp (301 s old)', () => signStripe(payload, STRIPE_WHSEC, nowSeconds() - 301)],
    ['a timestamp from the future beyond the tolerance', () => signStripe(payload, STRIPE_WHSEC, nowSeconds() + 400)],
  ])('refuses %s with INVALID_SIGNATURE', async (_label, header, raw) => {
    const err = await expectAppError(parseWith(header(), raw ?? body), 'INVALID_SIGNATURE');
    expect(err.status).toBe(400);
    expect(err.message).not.toContain(STRIPE_WHSEC);
  });

  it('refuses a correctly signed body that is not an event with BAD_REQUEST', async () => {
    await expectAppError(parseWith(signStripe('not json', STRIPE_WHSEC), Buffer.from('not json')), 'BAD_REQUEST');
    await expectAppError(
      parseWith(signStripe('{"id":"evt_x"}', STRIPE_WHSEC), Buffer.from('{"id":"evt_x"}')),
      'BAD_REQUEST',
    );
  });

  it('answers BILLING_NOT_CONFIGURED without a webhook secret', async () => {
    const bare = createStripeProcessor({ PROCESSOR_A_SECRET_KEY: STRIPE_KEY });
    expect(bare.webhookConfigured).toBe(false);
    await expectAppError(
      () => bare.parseWebhook(body, { 'stripe-signature': signStripe(payload, STRIPE_WHSEC) }),
      'BILLING_NOT_CONFIGURED',
    );
  });
});

// ======================================================================== PROCESSOR_B (Lemon Squeezy)

describe('PROCESSOR_B outbound (fetch client against a fake Lemon Squeezy)', () => {
  let fake: FakeLemonSqueezy;
  let b: PaymentProcessor;

  beforeAll(async () => {
    fake = await startFakeLemonSqueezy({ apiKey: LEMON_KEY });
    b = createLemonSqueezyProcessor(
      {
        PROCESSOR_B_API_KEY: LEMON_KEY,
        PROCESSOR_B_STORE_ID: LEMON_STORE,
        PROCESSOR_B_WEBHOOK_SECRET: LEMON_SECRET,
        PROCESSOR_B_BASE_URL: fake.url,
      },
      { timeoutMs: 500 },
    );
  });
  afterAll(() => fake?.close());

  const lastRequest = () => fake.requests.at(-1)!;

  it('reports its settings; test mode is the only mode it claims, and it has no portal', () => {
    expect(b.name).toBe('PROCESSOR_B');
    expect(b.configured).toBe(true);
    expect(b.webhookConfigured).toBe(true);
    expect(b.mode).toBe('test');
    expect(b.createPortalSession).toBeUndefined();
  });

  it('creates a checkout for the variant with the e-mail, custom data and redirect URL', async () => {
    const { checkoutUrl } = await b.createCheckout(checkoutRequest({ priceRef: '777' }));
    const req = lastRequest();
    expect(req.method).toBe('POST');
    expect(req.path).toBe('/v1/checkouts');
    expect(req.headers).toMatchObject({
      accept: 'application/vnd.api+json',
      'content-type': 'application/vnd.api+json',
      authorization: `Bearer ${LEMON_KEY}`,
    });
    expect(req.body).toEqual({
      data: {
        type: 'checkouts',
        attributes: {
          checkout_data: {
            email: 'owner@tests.local',
            custom: { workspace_id: WORKSPACE_ID, plan_id: PLAN_ID, plan_slug: 'pro', plan_interval: 'MONTHLY' },
          },
          product_options: { redirect_url: 'http://app.tests.local/billing/success' },
        },
        relationships: {
          store: { data: { type: 'stores', id: LEMON_STORE } },
          variant: { data: { type: 'variants', id: '777' } },
        },
      },
    });
    expect(checkoutUrl).toMatch(/^https:\/\/store\.lemonsqueezy\.test\/checkout\/custom\/[0-9a-f-]{36}$/);
  });

  it('cancels with DELETE: still active until ends_at', async () => {
    const result = await b.cancelSubscription('31337');
    expect(lastRequest()).toMatchObject({ method: 'DELETE', path: '/v1/subscriptions/31337' });
    expect(lastRequest().headers.authorization).toBe(`Bearer ${LEMON_KEY}`);
    expect(result).toEqual({ status: 'ACTIVE', cancelAtPeriodEnd: true, currentPeriodEnd: new Date(fake.endsAt) });
  });

  it('turns a provider 500 into BAD_GATEWAY without the provider body or the key', async () => {
    fake.failNext(500);
    const err = await expectAppError(() => b.createCheckout(checkoutRequest()), 'BAD_GATEWAY');
    expect(err.status).toBe(502);
    expect(err.message).not.toContain(FAKE_LEMON_ERROR_DETAIL);
    expect(err.message).not.toContain(LEMON_KEY);
  });

  it('turns a rejected key into BAD_GATEWAY without the key', async () => {
    const wrongKey = 'lemon-wrong-key-0123456789abcdef';
    const other = createLemonSqueezyProcessor({
      PROCESSOR_B_API_KEY: wrongKey,
      PROCESSOR_B_STORE_ID: LEMON_STORE,
      PROCESSOR_B_BASE_URL: fake.url,
    });
    const err = await expectAppError(() => other.cancelSubscription('1'), 'BAD_GATEWAY');
    expect(err.message).not.toContain(wrongKey);
  });

  it('gives up on a hanging provider within the timeout', async () => {
    fake.failNext('hang');
    const started = Date.now();
    await expectAppError(() => b.cancelSubscription('2'), 'BAD_GATEWAY');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('answers BAD_GATEWAY when the provider is unreachable', async () => {
    const down = createLemonSqueezyProcessor({
      PROCESSOR_B_API_KEY: LEMON_KEY,
      PROCESSOR_B_STORE_ID: LEMON_STORE,
      PROCESSOR_B_BASE_URL: await closedPortUrl(),
    });
    await expectAppError(() => down.createCheckout(checkoutRequest()), 'BAD_GATEWAY');
  });

  it('answers BILLING_NOT_CONFIGURED without an API key or a store id, sending nothing', async () => {
    const before = fake.requests.length;
    for (const config of [{ PROCESSOR_B_API_KEY: LEMON_KEY }, { PROCESSOR_B_STORE_ID: LEMON_STORE }]) {
      const bare = createLemonSqueezyProcessor({ ...config, PROCESSOR_B_BASE_URL: fake.url });
      expect(bare.configured).toBe(false);
      await expectAppError(() => bare.createCheckout(checkoutRequest()), 'BILLING_NOT_CONFIGURED');
      await expectAppError(() => bare.cancelSubscription('1'), 'BILLING_NOT_CONFIGURED');
    }
    expect(fake.requests.length).toBe(before);
  });
});

describe('PROCESSOR_B webhooks: translation', () => {
  const b = createLemonSqueezyProcessor({ PROCESSOR_B_WEBHOOK_SECRET: LEMON_SECRET });
  const parse = (raw: string) => b.parseWebhook(Buffer.from(raw), { 'x-signature': signLemon(raw, LEMON_SECRET) });
  const custom = { workspace_id: WORKSPACE_ID, plan_id: PLAN_ID, plan_slug: 'pro', plan_interval: 'MONTHLY' };
  const subscription = (attributes: Record<string, unknown>) => ({
    type: 'subscriptions',
    id: '1001',
    attributes: {
      store_id: 4242,
      customer_id: 55,
      order_id: 9,
      variant_id: 777,
      status: 'active',
      renews_at: '2030-02-01T10:00:00.000000Z',
      ends_at: null,
      trial_ends_at: null,
      created_at: '2030-01-01T10:00:00.000000Z',
      updated_at: '2030-01-01T10:05:00.000000Z',
      ...attributes,
    },
  });

  it('uses the body hash as the event id (a re-delivery is identical) and updated_at as its time', () => {
    const raw = lemonEvent('subscription_created', subscription({}), custom);
    const first = parse(raw);
    expect(first.id).toBe(crypto.createHash('sha256').update(raw).digest('hex'));
    expect(parse(raw).id).toBe(first.id);
    expect(first.type).toBe('subscription_created');
    expect(first.occurredAt).toEqual(new Date('2030-01-01T10:05:00Z'));
    const noUpdate = parse(lemonEvent('subscription_created', subscription({ updated_at: undefined }), custom));
    expect(noUpdate.occurredAt).toEqual(new Date('2030-01-01T10:00:00Z'));
  });

  it('subscription_created is the subscription, linked by custom data', () => {
    expect(parse(lemonEvent('subscription_created', subscription({}), custom)).changes).toEqual([
      {
        kind: 'subscription',
        providerSubscriptionId: '1001',
        workspaceId: WORKSPACE_ID,
        planId: PLAN_ID,
        priceRef: '777',
        customerId: '55',
        status: 'ACTIVE',
        currentPeriodEnd: new Date('2030-02-01T10:00:00Z'),
        cancelAtPeriodEnd: false,
        trialEndsAt: null,
      },
    ]);
  });

  it.each([
    // paused and unpaid collect nothing: not live, so the workspace does not keep a paid plan for free.
    ['on_trial', 'TRIALING', false],
    ['active', 'ACTIVE', false],
    ['paused', 'CANCELED', false],
    ['past_due', 'PAST_DUE', false],
    ['unpaid', 'CANCELED', false],
    ['cancelled', 'ACTIVE', true],
    ['expired', 'CANCELED', false],
  ] as const)(
    'maps the subscription status %s to %s (cancel at period end: %s)',
    (lemonStatus, status, cancelAtPeriodEnd) => {
      const [change] = parse(lemonEvent('subscription_updated', subscription({ status: lemonStatus }), custom)).changes;
      expect(change).toMatchObject({ kind: 'subscription', status, cancelAtPeriodEnd });
    },
  );

  it.each([
    'subscription_resumed',
    'subscription_cancelled',
    'subscription_expired',
    'subscription_paused',
    'subscription_unpaused',
  ])('%s is a subscription change', (name) => {
    expect(parse(lemonEvent(name, subscription({}), custom)).changes).toHaveLength(1);
  });

  it('leaves out custom data ids that are not UUIDs (they could name nothing here)', () => {
    const odd = { ...custom, workspace_id: 'abc', plan_id: '42' };
    expect(parse(lemonEvent('subscription_created', subscription({}), odd)).changes[0]).toMatchObject({
      workspaceId: undefined,
      planId: undefined,
    });
    const oneTime = parse(
      lemonEvent(
        'order_created',
        { type: 'orders', id: '8', attributes: { status: 'paid', total: 1 } },
        { ...odd, plan_interval: 'ONE_TIME' },
      ),
    );
    expect(
      oneTime.changes.map((c) => (c.kind === 'subscription' || c.kind === 'payment') && [c.workspaceId, c.planId]),
    ).toEqual([
      [undefined, undefined],
      [undefined, undefined],
    ]);
  });

  it('a cancelled subscription runs until ends_at', () => {
    const [change] = parse(
      lemonEvent(
        'subscription_cancelled',
        subscription({
          status: 'cancelled',
          renews_at: '2030-02-01T10:00:00.000000Z',
          ends_at: '2030-02-01T10:00:00.000000Z',
        }),
        custom,
      ),
    ).changes;
    expect(change).toMatchObject({
      status: 'ACTIVE',
      cancelAtPeriodEnd: true,
      currentPeriodEnd: new Date('2030-02-01T10:00:00Z'),
    });
  });

  it('an unknown subscription status changes nothing', () => {
    expect(
      parse(lemonEvent('subscription_updated', subscription({ status: 'something_new' }), custom)).changes,
    ).toEqual([]);
  });

  const invoice = {
    type: 'subscription-invoices',
    id: '5005',
    attributes: {
      store_id: 4242,
      subscription_id: 1001,
      customer_id: 55,
      billing_reason: 'renewal',
      status: 'paid',
      total: 2900,
      currency: 'USD',
      urls: { invoice_url: 'https://app.lemonsqueezy.test/my-orders/x/subscription-invoice/5005' },
      created_at: '2030-02-01T10:00:00.000000Z',
      updated_at: '2030-02-01T10:00:05.000000Z',
    },
  };

  it('subscription_payment_success is a payment of the subscription', () => {
    expect(parse(lemonEvent('subscription_payment_success', invoice, custom)).changes.slice(0, 1)).toEqual([
      {
        kind: 'payment',
        providerPaymentId: '5005',
        providerSubscriptionId: '1001',
        workspaceId: WORKSPACE_ID,
        planId: PLAN_ID,
        amountCents: 2900,
        currency: 'USD',
        status: 'SUCCEEDED',
        invoiceUrl: invoice.attributes.urls.invoice_url,
      },
    ]);
  });

  it('subscription_payment_failed is a failed payment under an id of its own; recovered succeeds', () => {
    const [failed] = parse(
      lemonEvent(
        'subscription_payment_failed',
        { ...invoice, attributes: { ...invoice.attributes, status: 'pending' } },
        custom,
      ),
    ).changes;
    expect(failed).toMatchObject({
      kind: 'payment',
      providerPaymentId: '5005_failed',
      status: 'FAILED',
      amountCents: 2900,
    });
    const [recovered] = parse(lemonEvent('subscription_payment_recovered', invoice, custom)).changes;
    expect(recovered).toMatchObject({ kind: 'payment', providerPaymentId: '5005', status: 'SUCCEEDED' });
  });

  const order = {
    type: 'orders',
    id: '8008',
    attributes: {
      store_id: 4242,
      customer_id: 56,
      identifier: 'b1a2',
      order_number: 12,
      status: 'paid',
      total: 4900,
      currency: 'EUR',
      urls: { receipt: 'https://app.lemonsqueezy.test/my-orders/b1a2' },
      created_at: '2030-03-01T10:00:00.000000Z',
      updated_at: '2030-03-01T10:00:00.000000Z',
    },
  };

  it('order_created for a one-time plan is a one-time subscription plus its payment', () => {
    const event = parse(lemonEvent('order_created', order, { ...custom, plan_interval: 'ONE_TIME' }));
    expect(event.changes).toEqual([
      {
        kind: 'subscription',
        providerSubscriptionId: 'onetime_8008',
        workspaceId: WORKSPACE_ID,
        planId: PLAN_ID,
        customerId: '56',
        status: 'ACTIVE',
        currentPeriodEnd: null,
      },
      {
        kind: 'payment',
        providerPaymentId: '8008',
        providerSubscriptionId: 'onetime_8008',
        workspaceId: WORKSPACE_ID,
        planId: PLAN_ID,
        amountCents: 4900,
        currency: 'EUR',
        status: 'SUCCEEDED',
        receiptUrl: 'https://app.lemonsqueezy.test/my-orders/b1a2',
      },
    ]);
  });

  it('order_created of a subscription, or of an unknown checkout, is left to the subscription events', () => {
    expect(parse(lemonEvent('order_created', order, custom)).changes).toEqual([]);
    expect(parse(lemonEvent('order_created', order)).changes).toEqual([]);
  });

  it('other events change nothing', () => {
    expect(
      parse(lemonEvent('license_key_created', { type: 'license-keys', id: '1', attributes: {} }, custom)).changes,
    ).toEqual([]);
  });
});

describe('PROCESSOR_B webhooks: signatures', () => {
  const b = createLemonSqueezyProcessor({ PROCESSOR_B_WEBHOOK_SECRET: LEMON_SECRET });
  const raw = lemonEvent('subscription_payment_success', {
    type: 'subscription-invoices',
    id: '1',
    attributes: { subscription_id: 2, total: 100, currency: 'USD' },
  });
  const body = Buffer.from(raw);
  const parseWith =
    (signature: string | string[] | undefined, rawBody: Buffer = body) =>
    () =>
      b.parseWebhook(rawBody, { 'x-signature': signature });

  it('accepts the hex HMAC of the raw body, in either letter case', () => {
    expect(b.parseWebhook(body, { 'x-signature': signLemon(raw, LEMON_SECRET) }).changes).toHaveLength(2);
    expect(b.parseWebhook(body, { 'x-signature': signLemon(raw, LEMON_SECRET).toUpperCase() }).changes).toHaveLength(2);
  });

  it.each<[string, () => string | string[] | undefined, Buffer?]>([
    ['a missing header', () => undefined],
    ['an empty header', () => ''],
    ['a malformed header', () => 'zz'],
    ['a truncated signature', () => signLemon(raw, LEMON_SECRET).slice(0, 62)],
    ['a signature with junk appended', () => `${signLemon(raw, LEMON_SECRET)}00`],
    ['a header given twice', () => [signLemon(raw, LEMON_SECRET), signLemon(raw, LEMON_SECRET)]],
    ['the wrong secret', () => signLemon(raw, 'another-secret-0123456789')],
    ['a tampered body', () => signLemon(raw, LEMON_SECRET), Buffer.from(raw.replace('"total":100', '"total":1'))],
  ])('refuses %s with INVALID_SIGNATURE', async (_label, header, rawBody) => {
    const err = await expectAppError(parseWith(header(), rawBody ?? body), 'INVALID_SIGNATURE');
    expect(err.message).not.toContain(LEMON_SECRET);
  });

  it('refuses a correctly signed body that is not an event with BAD_REQUEST', async () => {
    await expectAppError(parseWith(signLemon('nope', LEMON_SECRET), Buffer.from('nope')), 'BAD_REQUEST');
    await expectAppError(parseWith(signLemon('{"meta":{}}', LEMON_SECRET), Buffer.from('{"meta":{}}')), 'BAD_REQUEST');
  });

  it('answers BILLING_NOT_CONFIGURED without a webhook secret', async () => {
    const bare = createLemonSqueezyProcessor({ PROCESSOR_B_API_KEY: LEMON_KEY, PROCESSOR_B_STORE_ID: LEMON_STORE });
    expect(bare.webhookConfigured).toBe(false);
    await expectAppError(
      () => bare.parseWebhook(body, { 'x-signature': signLemon(raw, LEMON_SECRET) }),
      'BILLING_NOT_CONFIGURED',
    );
  });
});
