// Fixtures shared by the billing integration tests: admin sessions, plans of our own (unique slugs: the
// plans table is shared by every test file running against the run's database), polling, and reads of the
// billing tables scoped to one workspace or one provider reference (never global counts).
import crypto from 'node:crypto';
import { expect } from 'vitest';
import { TEST_ADMIN, TEST_DEMO_ADMIN, type TestApp } from '../helpers/app.js';
import { login, type Session } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';
import { fakeSubscription, signStripe, stripeEvent, type FakeStripe } from '../helpers/fake-stripe.js';

/** The field names of a plan. */
export const PLAN_FIELDS = [
  'id',
  'name',
  'slug',
  'code',
  'description',
  'edition',
  'priceCents',
  'currency',
  'interval',
  'status',
  'badgeText',
  'isPopular',
  'isDefault',
  'sortOrder',
  'features',
  'limits',
  'providerAPriceId',
  'providerBVariantId',
  'pricingModel',
  'includedSeats',
  'trialDays',
  'meteredOverage',
  'providerASeatPriceId',
  'providerAMeterEventName',
  'providerBSeatVariantId',
  'createdAt',
  'updatedAt',
].sort();

/** Limits of the default plans. */
export const LITE_LIMITS = { apiKeys: 0, aiMonthlyGenerations: 20, members: 3 };
export const PRO_LIMITS = { apiKeys: 5, aiMonthlyGenerations: 500, members: 10 };
export const ENTERPRISE_LIMITS = { apiKeys: 50, aiMonthlyGenerations: 5000, members: 100 };

export const DEMO_ADMIN_MESSAGE = 'Demo admin is read-only.';

export const adminLogin = (app: TestApp) => login(app.api, TEST_ADMIN.email, TEST_ADMIN.password);
export const demoAdminLogin = (app: TestApp) => login(app.api, TEST_DEMO_ADMIN.email, TEST_DEMO_ADMIN.password);

export const randomHex = (bytes = 5) => crypto.randomBytes(bytes).toString('hex');
/** A slug nobody else uses. */
export const uniqueSlug = (label = 't') => `${label}-${randomHex()}`;

export interface PlanBody {
  name?: string;
  slug?: string;
  [field: string]: unknown;
}

/** POST /admin/billing/plans as the admin; expects 201 and answers the plan. */
export async function createPlan(app: TestApp, admin: Session, body: PlanBody = {}) {
  const slug = body.slug ?? uniqueSlug();
  const res = await app.api('POST', '/admin/billing/plans', {
    token: admin.accessToken,
    body: { name: `Plan ${slug}`, slug, priceCents: 1234, edition: 'CUSTOM', sortOrder: 9_000, ...body },
  });
  expect(res.status, res.text).toBe(201);
  return res.body as Record<string, any> & { id: string; slug: string; status: string };
}

/** The public catalog's slugs. */
export async function catalogSlugs(app: TestApp): Promise<string[]> {
  const res = await app.api('GET', '/billing/plans');
  expect(res.status, res.text).toBe(200);
  return (res.body.items as Array<{ slug: string }>).map((p) => p.slug);
}

/**
 * Waits, if need be, until the current second is young (at most 600 ms in), so a request sent now is checked
 * within the same second. A wait for an event of the clock (the next second), at most 0.4 s.
 */
export async function atStartOfSecond() {
  await waitFor(() => Date.now() % 1000 <= 600, { timeout: 2_000, interval: 5, message: 'a young second' });
}

export const nowSeconds = () => Math.floor(Date.now() / 1000);

export async function subscriptionsOf(app: TestApp, workspaceId: string) {
  return app.deps.db
    .selectFrom('subscriptions')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('created_at')
    .execute();
}

export async function liveSubscriptionsOf(app: TestApp, workspaceId: string) {
  return app.deps.db
    .selectFrom('subscriptions')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('status', 'in', ['ACTIVE', 'TRIALING', 'PAST_DUE'])
    .execute();
}

export async function paymentsOf(app: TestApp, workspaceId: string) {
  return app.deps.db
    .selectFrom('payments')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('created_at')
    .execute();
}

export async function domainEventTypes(app: TestApp, workspaceId: string): Promise<string[]> {
  const rows = await app.deps.db
    .selectFrom('domain_events')
    .select('type')
    .where('workspace_id', '=', workspaceId)
    .orderBy('created_at')
    .execute();
  return rows.map((r) => r.type);
}

export async function billingEventsWithId(app: TestApp, provider: string, eventId: string) {
  return app.deps.db
    .selectFrom('billing_events')
    .selectAll()
    .where('provider', '=', provider)
    .where('event_id', '=', eventId)
    .execute();
}

export async function workspaceRow(app: TestApp, workspaceId: string) {
  return app.deps.db
    .selectFrom('workspaces')
    .select(['edition', 'plan_id', 'limits', 'processor_a_customer_id'])
    .where('id', '=', workspaceId)
    .executeTakeFirstOrThrow();
}

export async function planBySlug(app: TestApp, slug: string) {
  return app.deps.db.selectFrom('plans').selectAll().where('slug', '=', slug).executeTakeFirstOrThrow();
}

/** GET /billing/current of a workspace, expecting 200. */
export async function currentOf(app: TestApp, token: string, workspaceId: string) {
  const res = await app.api('GET', `/billing/current?workspaceId=${workspaceId}`, { token });
  expect(res.status, res.text).toBe(200);
  return res.body as Record<string, any>;
}

/** GET /billing/history of a workspace, expecting 200. */
export async function historyOf(app: TestApp, token: string, workspaceId: string, query = '') {
  const res = await app.api('GET', `/billing/history?workspaceId=${workspaceId}${query}`, { token });
  expect(res.status, res.text).toBe(200);
  return res.body as {
    items: Array<Record<string, any>>;
    page: number;
    limit: number;
    total: number;
    totalPages: number;
  };
}

/**
 * Subscribes the workspace of `owner` to `plan` at the fake Stripe, as a checkout would: the subscription
 * made there, then announced to the API by its signed `customer.subscription.created`. Answers the customer.
 */
export async function subscribeAtFakeStripe(
  app: TestApp,
  stripe: FakeStripe,
  webhookSecret: string,
  owner: Session,
  plan: { id: string },
): Promise<string> {
  const customer = `cus_${randomHex(6)}`;
  const subscription = fakeSubscription(`sub_${randomHex(8)}`, {
    customer,
    metadata: { workspaceId: owner.workspaceId, planId: plan.id },
  });
  stripe.subscriptions.set(subscription.id as string, subscription);
  const payload = stripeEvent('customer.subscription.created', subscription);
  const res = await app.api('POST', '/billing/webhooks/processor-a', {
    raw: payload,
    headers: { 'content-type': 'application/json', 'stripe-signature': signStripe(payload, webhookSecret) },
  });
  expect(res.status, res.text).toBe(200);
  return customer;
}
