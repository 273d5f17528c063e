// Trials and dunning. A plan with trial days starts TRIALING (MOCK and Stripe's checkout), the owners are
// mailed 3 days before the end, and the processor's events decide what follows (MOCK converts the trial
// itself). A failed invoice makes the subscription PAST_DUE and mails the owners; BILLING_GRACE_DAYS later
// the workspace is on the default plan (plan.downgraded); a paid invoice makes it ACTIVE. Invoices are kept
// from the processor's events (GET /billing/invoices). The clock is moved ahead, never waited for; the
// periodic tasks are called for this file's workspaces only (the database is shared).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { clockAhead } from '../helpers/clock.js';
import { fakeSubscription, signStripe, startFakeStripe, stripeEvent, type FakeStripe } from '../helpers/fake-stripe.js';
import { expectError, registerAndLogin, type Session } from '../helpers/http.js';
import { mailsTo } from '../helpers/mail.js';
import { inviteAndJoin } from '../workspaces/helpers.js';
import { endGracePeriods, endMockTrials, remindTrialsEnding } from '../../routers/billing/lifecycle.js';
import { adminLogin, createPlan, currentOf, domainEventTypes, paymentsOf, randomHex } from './helpers.js';

const DAY = 86_400_000;
const STRIPE_KEY = `sk_test_dunning${randomHex(12)}`;
const WHSEC = `whsec_dunning${randomHex(12)}`;

let app: TestApp;
let stripeApp: TestApp;
let stripe: FakeStripe;
let trialPlan: { id: string; slug: string };
let paidPlan: { id: string; slug: string };

beforeAll(async () => {
  stripe = await startFakeStripe({ apiKey: STRIPE_KEY });
  [app, stripeApp] = await Promise.all([
    startTestApp({ BILLING_PROVIDER: 'MOCK', BILLING_GRACE_DAYS: '7' }),
    startTestApp({
      BILLING_PROVIDER: 'PROCESSOR_A',
      PROCESSOR_A_SECRET_KEY: STRIPE_KEY,
      PROCESSOR_A_WEBHOOK_SECRET: WHSEC,
      PROCESSOR_A_BASE_URL: stripe.url,
    }),
  ]);
  const admin = await adminLogin(app);
  const limits = { members: 5, apiKeys: 0, aiMonthlyGenerations: 50 };
  [trialPlan, paidPlan] = await Promise.all([
    createPlan(app, admin, {
      status: 'PUBLISHED',
      trialDays: 14,
      priceCents: 1900,
      limits,
      providerAPriceId: `price_trial_${randomHex()}`,
    }),
    createPlan(app, admin, {
      status: 'PUBLISHED',
      priceCents: 2500,
      limits,
      providerAPriceId: `price_paid_${randomHex()}`,
    }),
  ]);
});
afterAll(async () => {
  await Promise.all([app?.close(), stripeApp?.close()]);
  await stripe?.close();
});

const only = (s: Session) => ({ workspaceIds: [s.workspaceId] });

async function mockCheckout(s: Session, planCode: string) {
  const res = await app.api('POST', '/billing/checkout', {
    token: s.accessToken,
    body: { workspaceId: s.workspaceId, planCode },
  });
  expect(res.status, res.text).toBe(200);
  return res.body.current as Record<string, any>;
}

async function mockEvent(type: string, workspaceId: string) {
  const res = await app.api('POST', '/billing/webhooks/mock', {
    body: { id: `evt_${randomHex(8)}`, type, data: { workspaceId } },
  });
  expect(res.status, res.text).toBe(200);
}

const mailsOf = async (target: TestApp, to: string, template: string) =>
  (await mailsTo(target, to)).filter((m) => m.template === template);

describe('trials (MOCK)', () => {
  it('checkout of a plan with trial days starts TRIALING with trialEndsAt, and charges nothing yet', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'trial-start' });
    const before = Date.now();
    const current = await mockCheckout(owner, trialPlan.slug);
    expect(current.status).toBe('TRIALING');
    const endsAt = Date.parse(current.trialEndsAt as string);
    expect(endsAt).toBeGreaterThanOrEqual(before + 14 * DAY - 1000);
    expect(endsAt).toBeLessThanOrEqual(Date.now() + 14 * DAY);
    expect(current.plan.id).toBe(trialPlan.id);
    expect(await paymentsOf(app, owner.workspaceId)).toHaveLength(0);
  });

  it('mails the owners once, 3 days before the end, then converts the trial to a paid subscription', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'trial-remind' });
    const member = await inviteAndJoin(app, owner.accessToken, owner.workspaceId, 'MEMBER');
    await mockCheckout(owner, trialPlan.slug);

    // Ten days in: too early.
    await clockAhead(10 * DAY, () => remindTrialsEnding(app.deps, only(owner)));
    expect(await mailsOf(app, owner.email, 'billing-trial-ending')).toHaveLength(0);

    // Eleven and a half days in: the owner (not the member) is mailed, once.
    await clockAhead(11.5 * DAY, () => remindTrialsEnding(app.deps, only(owner)));
    await clockAhead(12 * DAY, () => remindTrialsEnding(app.deps, only(owner)));
    const mails = await mailsOf(app, owner.email, 'billing-trial-ending');
    expect(mails).toHaveLength(1);
    expect(mails[0].link).toBe('http://app.tests.local/settings/billing');
    expect(await mailsOf(app, member.email, 'billing-trial-ending')).toHaveLength(0);
    expect(await domainEventTypes(app, owner.workspaceId)).toContain('subscription.trial_will_end');

    // Past the end: MOCK charges the plan and the subscription is ACTIVE.
    await clockAhead(14 * DAY + 60_000, () => endMockTrials(app.deps, only(owner)));
    const current = await currentOf(app, owner.accessToken, owner.workspaceId);
    expect(current).toMatchObject({ status: 'ACTIVE', trialEndsAt: null });
    expect((await paymentsOf(app, owner.workspaceId)).map((p) => [p.status, p.amount_cents])).toEqual([
      ['SUCCEEDED', 1900],
    ]);
  });
});

describe('dunning (MOCK)', () => {
  it('a failed invoice makes it PAST_DUE and mails the owners; after the grace days, the default plan', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'dunning' });
    await mockCheckout(owner, paidPlan.slug);
    await mockEvent('invoice.payment_failed', owner.workspaceId);

    let current = await currentOf(app, owner.accessToken, owner.workspaceId);
    expect(current.status).toBe('PAST_DUE');
    expect(current.pastDueSince).toEqual(expect.any(String));
    // Access stays during the grace period.
    expect(current.plan.id).toBe(paidPlan.id);
    const mails = await mailsOf(app, owner.email, 'billing-payment-failed');
    expect(mails).toHaveLength(1);
    expect(mails[0].text).toContain('7 days');

    const invoices = await app.api('GET', `/billing/invoices?workspaceId=${owner.workspaceId}`, {
      token: owner.accessToken,
    });
    expect(invoices.status, invoices.text).toBe(200);
    expect(invoices.body.items).toEqual([
      expect.objectContaining({ status: 'FAILED', amountCents: 2500, currency: 'USD', hostedUrl: null }),
    ]);

    await clockAhead(6 * DAY, () => endGracePeriods(app.deps, only(owner)));
    expect((await currentOf(app, owner.accessToken, owner.workspaceId)).status).toBe('PAST_DUE');

    await clockAhead(7 * DAY + 60_000, () => endGracePeriods(app.deps, only(owner)));
    current = await currentOf(app, owner.accessToken, owner.workspaceId);
    expect(current.status).toBe('FREE');
    expect(current.plan.isDefault).toBe(true);
    expect(current.edition).toBe('LITE');
    const events = await domainEventTypes(app, owner.workspaceId);
    expect(events).toContain('invoice.payment_failed');
    expect(events).toContain('plan.downgraded');
  });

  it('a paid invoice during the grace period makes it ACTIVE again, and the grace period no longer applies', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'dunning-paid' });
    await mockCheckout(owner, paidPlan.slug);
    await mockEvent('invoice.payment_failed', owner.workspaceId);
    await mockEvent('invoice.paid', owner.workspaceId);
    const current = await currentOf(app, owner.accessToken, owner.workspaceId);
    expect(current).toMatchObject({ status: 'ACTIVE', pastDueSince: null });
    await clockAhead(8 * DAY, () => endGracePeriods(app.deps, only(owner)));
    expect((await currentOf(app, owner.accessToken, owner.workspaceId)).plan.id).toBe(paidPlan.id);
    expect(await domainEventTypes(app, owner.workspaceId)).toContain('invoice.paid');
  });

  it('GET /billing/invoices pages like the other lists and refuses bad paging with 400', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'invoices-list' });
    await mockCheckout(owner, paidPlan.slug);
    for (let i = 0; i < 3; i++) await mockEvent('invoice.payment_failed', owner.workspaceId);
    const first = await app.api('GET', `/billing/invoices?workspaceId=${owner.workspaceId}&limit=2`, {
      token: owner.accessToken,
    });
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ page: 1, limit: 2, total: 3, totalPages: 2 });
    const next = await app.api(
      'GET',
      `/billing/invoices?workspaceId=${owner.workspaceId}&limit=2&cursor=${encodeURIComponent(first.body.nextCursor)}`,
      { token: owner.accessToken },
    );
    expect(next.status, next.text).toBe(200);
    expect(next.body.items).toHaveLength(1);
    expectError(
      await app.api('GET', `/billing/invoices?workspaceId=${owner.workspaceId}&limit=101`, {
        token: owner.accessToken,
      }),
      400,
      'BAD_REQUEST',
    );
    // Another account cannot read them.
    const stranger = await registerAndLogin(app.api, { prefix: 'invoices-stranger' });
    expectError(
      await app.api('GET', `/billing/invoices?workspaceId=${owner.workspaceId}`, { token: stranger.accessToken }),
      404,
      'NOT_FOUND',
    );
  });
});

describe('trials and dunning at Stripe', () => {
  async function deliver(payload: string) {
    const res = await stripeApp.api('POST', '/billing/webhooks/processor-a', {
      raw: payload,
      headers: { 'content-type': 'application/json', 'stripe-signature': signStripe(payload, WHSEC) },
    });
    expect(res.status, res.text).toBe(200);
  }

  it('checkout asks Stripe for the trial; a trialing subscription shows trialEndsAt', async () => {
    const owner = await registerAndLogin(stripeApp.api, { prefix: 'stripe-trial' });
    const res = await stripeApp.api('POST', '/billing/checkout', {
      token: owner.accessToken,
      body: { workspaceId: owner.workspaceId, planCode: trialPlan.slug },
    });
    expect(res.status, res.text).toBe(200);
    const sent = stripe.requests.filter((r) => r.path === '/v1/checkout/sessions').at(-1)!;
    expect(sent.body.subscription_data).toMatchObject({ trial_period_days: '14' });

    const trialEnd = Math.floor(Date.now() / 1000) + 14 * 86_400;
    await deliver(
      stripeEvent(
        'customer.subscription.created',
        fakeSubscription(`sub_${randomHex(8)}`, {
          status: 'trialing',
          trial_end: trialEnd,
          metadata: { workspaceId: owner.workspaceId, planId: trialPlan.id },
        }),
      ),
    );
    const current = await currentOf(stripeApp, owner.accessToken, owner.workspaceId);
    expect(current).toMatchObject({ status: 'TRIALING', trialEndsAt: new Date(trialEnd * 1000).toISOString() });
  });

  it('invoice.payment_failed makes it PAST_DUE, invoice.paid ACTIVE; the invoice is kept with its number and page', async () => {
    const owner = await registerAndLogin(stripeApp.api, { prefix: 'stripe-dunning' });
    const subscriptionId = `sub_${randomHex(8)}`;
    await deliver(
      stripeEvent(
        'customer.subscription.created',
        fakeSubscription(subscriptionId, { metadata: { workspaceId: owner.workspaceId, planId: paidPlan.id } }),
      ),
    );
    const invoice = {
      id: `in_${randomHex(8)}`,
      object: 'invoice',
      number: 'ABC-0001',
      amount_due: 2500,
      amount_paid: 0,
      attempt_count: 1,
      currency: 'usd',
      hosted_invoice_url: 'https://invoice.stripe.test/i/abc',
      period_start: Math.floor(Date.now() / 1000) - 86_400,
      period_end: Math.floor(Date.now() / 1000),
      parent: { subscription_details: { subscription: subscriptionId, metadata: {} } },
    };
    await deliver(stripeEvent('invoice.payment_failed', invoice));
    expect((await currentOf(stripeApp, owner.accessToken, owner.workspaceId)).status).toBe('PAST_DUE');
    expect(await mailsOf(stripeApp, owner.email, 'billing-payment-failed')).toHaveLength(1);

    await deliver(stripeEvent('invoice.paid', { ...invoice, amount_paid: 2500, attempt_count: 2 }));
    expect((await currentOf(stripeApp, owner.accessToken, owner.workspaceId)).status).toBe('ACTIVE');
    const list = await stripeApp.api('GET', `/billing/invoices?workspaceId=${owner.workspaceId}`, {
      token: owner.accessToken,
    });
    expect(list.body.items).toEqual([
      {
        id: expect.any(String),
        number: 'ABC-0001',
        amountCents: 2500,
        currency: 'USD',
        status: 'PAID',
        periodStart: new Date(invoice.period_start * 1000).toISOString(),
        periodEnd: new Date(invoice.period_end * 1000).toISOString(),
        hostedUrl: 'https://invoice.stripe.test/i/abc',
        createdAt: expect.any(String),
      },
    ]);
  });
});
