// Workspace billing with BILLING_PROVIDER=MOCK: checkout (by planCode, planId or the legacy edition key),
// the current plan, payment history, cancellation, their permissions and validation, the four legacy
// workspace billing routes, demo accounts, the plan's member limit, and safe delete of a paying workspace.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, registerAndLogin, uniqueEmail, type Session, PAGE_KEYS } from '../helpers/http.js';
import { createWorkspace, inviteAndJoin, registerAs } from '../workspaces/helpers.js';
import {
  ENTERPRISE_LIMITS,
  LITE_LIMITS,
  PRO_LIMITS,
  adminLogin,
  currentOf,
  domainEventTypes,
  historyOf,
  liveSubscriptionsOf,
  paymentsOf,
  planBySlug,
  subscriptionsOf,
  workspaceRow,
} from './helpers.js';

const DEMO_EMAIL = uniqueEmail('billing-demo');

let app: TestApp;
let admin: Session;

beforeAll(async () => {
  app = await startTestApp({
    RATE_LIMIT_ENABLED: 'false',
    BILLING_PROVIDER: 'MOCK',
    AI_DEMO_RESTRICTED_EMAILS: DEMO_EMAIL,
  });
  admin = await adminLogin(app);
});
afterAll(() => app?.close());

const checkout = (token: string, body: Record<string, unknown>) =>
  app.api('POST', '/billing/checkout', { token, body });
const cancel = (token: string, body: Record<string, unknown> = {}) =>
  app.api('POST', '/billing/cancel', { token, body });
const owner = (prefix = 'billing-owner') => registerAndLogin(app.api, { prefix });

/** Adds one calendar month in UTC, as a monthly period does. */
const oneMonthAfter = (d: Date) => {
  const end = new Date(d);
  end.setUTCMonth(end.getUTCMonth() + 1);
  return end;
};

// ======================================================================== checkout

describe('POST /billing/checkout (MOCK)', () => {
  it('completes at once by planCode and answers the new current plan: Pro, ACTIVE, period end a month ahead', async () => {
    const s = await owner();
    const before = Date.now();
    const res = await checkout(s.accessToken, { workspaceId: s.workspaceId, planCode: 'pro' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.provider).toBe('MOCK');
    expect(res.body.checkoutUrl).toBeUndefined();
    const current = res.body.current;
    expect(current).toMatchObject({
      workspaceId: s.workspaceId,
      edition: 'PRO',
      plan: { slug: 'pro', code: 'pro', edition: 'PRO', priceCents: 2900 },
      limits: PRO_LIMITS,
      status: 'ACTIVE',
      subscription: { provider: 'MOCK', status: 'ACTIVE', cancelAtPeriodEnd: false, canceledAt: null },
    });
    const start = new Date(current.subscription.currentPeriodStart).getTime();
    expect(start).toBeGreaterThanOrEqual(before - 1000);
    expect(start).toBeLessThanOrEqual(Date.now() + 1000);
    expect(current.currentPeriodEnd).toBe(current.subscription.currentPeriodEnd);
    expect(new Date(current.currentPeriodEnd).getTime()).toBe(oneMonthAfter(new Date(start)).getTime());

    // The answer is what GET /billing/current says from now on.
    expect(await currentOf(app, s.accessToken, s.workspaceId)).toEqual(current);
  });

  it('writes one live subscription, a SUCCEEDED payment of 2900 USD and the domain events, in the workspace', async () => {
    const s = await owner();
    expect((await checkout(s.accessToken, { workspaceId: s.workspaceId, planCode: 'pro' })).status).toBe(200);
    const pro = await planBySlug(app, 'pro');

    const live = await liveSubscriptionsOf(app, s.workspaceId);
    expect(live).toHaveLength(1);
    expect(live[0]).toMatchObject({ plan_id: pro.id, provider: 'MOCK', status: 'ACTIVE' });
    const payments = await paymentsOf(app, s.workspaceId);
    expect(payments).toHaveLength(1);
    expect(payments[0]).toMatchObject({
      status: 'SUCCEEDED',
      amount_cents: 2900,
      currency: 'USD',
      provider: 'MOCK',
      plan_id: pro.id,
    });
    const ws = await workspaceRow(app, s.workspaceId);
    expect(ws).toMatchObject({ edition: 'PRO', plan_id: pro.id, limits: PRO_LIMITS });
    const events = await domainEventTypes(app, s.workspaceId);
    expect(events).toEqual(expect.arrayContaining(['subscription.created', 'payment.succeeded', 'billing.updated']));
    expect(events.filter((t) => t === 'billing.updated')).toHaveLength(1);
  });

  it('links the MOCK payment to the subscription it paid for, as processor payments are', async () => {
    const s = await owner();
    expect((await checkout(s.accessToken, { workspaceId: s.workspaceId, planCode: 'pro' })).status).toBe(200);
    const [live] = await liveSubscriptionsOf(app, s.workspaceId);
    const [payment] = await paymentsOf(app, s.workspaceId);
    expect(payment.subscription_id).toBe(live.id);
  });

  it.each([
    ['planId', async () => ({ planId: (await planBySlug(app, 'pro')).id })],
    ['the legacy edition key "pro"', async () => ({ edition: 'pro' })],
    ['the legacy edition key "PRO"', async () => ({ edition: 'PRO' })],
    ['planCode in capitals "PRO"', async () => ({ planCode: 'PRO' })],
  ])('accepts the plan named by %s', async (_label, choose) => {
    const s = await owner();
    const res = await checkout(s.accessToken, { workspaceId: s.workspaceId, ...(await choose()) });
    expect(res.status, res.text).toBe(200);
    expect(res.body.current).toMatchObject({
      edition: 'PRO',
      plan: { slug: 'pro' },
      limits: PRO_LIMITS,
      status: 'ACTIVE',
    });
  });

  it('switching Pro to Enterprise leaves exactly one live subscription; the old one is CANCELED', async () => {
    const s = await owner();
    expect((await checkout(s.accessToken, { workspaceId: s.workspaceId, planCode: 'pro' })).status).toBe(200);
    const res = await checkout(s.accessToken, { workspaceId: s.workspaceId, planCode: 'enterprise' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.current).toMatchObject({
      edition: 'ENTERPRISE',
      plan: { slug: 'enterprise' },
      limits: ENTERPRISE_LIMITS,
      status: 'ACTIVE',
    });

    const [pro, enterprise] = [await planBySlug(app, 'pro'), await planBySlug(app, 'enterprise')];
    const subs = await subscriptionsOf(app, s.workspaceId);
    expect(subs).toHaveLength(2);
    expect(subs.find((x) => x.plan_id === pro.id)).toMatchObject({ status: 'CANCELED' });
    expect(subs.find((x) => x.plan_id === pro.id)!.canceled_at).toBeInstanceOf(Date);
    expect(subs.find((x) => x.plan_id === enterprise.id)).toMatchObject({ status: 'ACTIVE' });
    expect(await liveSubscriptionsOf(app, s.workspaceId)).toHaveLength(1);
    expect((await paymentsOf(app, s.workspaceId)).map((p) => p.amount_cents)).toEqual([2900, 9900]);
  });

  it('concurrent checkouts of one workspace (a double click) leave exactly one live subscription', async () => {
    const s = await owner();
    const answers = await Promise.all(
      ['pro', 'enterprise', 'pro', 'enterprise', 'pro'].map((planCode) =>
        checkout(s.accessToken, { workspaceId: s.workspaceId, planCode }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    const live = await liveSubscriptionsOf(app, s.workspaceId);
    expect(live).toHaveLength(1);
    const ws = await workspaceRow(app, s.workspaceId);
    expect(ws.plan_id).toBe(live[0].plan_id);
  });

  it('buys the free Lite plan without a payment', async () => {
    const s = await owner();
    const res = await checkout(s.accessToken, { workspaceId: s.workspaceId, planCode: 'lite' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.current).toMatchObject({ edition: 'LITE', status: 'ACTIVE' });
    expect(await paymentsOf(app, s.workspaceId)).toEqual([]);
  });

  it("acts on the caller's active workspace when no workspaceId is given", async () => {
    const s = await owner();
    // A second workspace the caller owns: the personal one stays the active one.
    const other = await createWorkspace(app, s.accessToken, `Other ${crypto.randomBytes(3).toString('hex')}`);
    const res = await checkout(s.accessToken, { planCode: 'pro' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.current.workspaceId).toBe(s.workspaceId);
    expect((await workspaceRow(app, s.workspaceId)).edition).toBe('PRO');
    expect((await workspaceRow(app, other)).edition).toBe('LITE');

    const current = await app.api('GET', '/billing/current', { token: s.accessToken });
    expect(current.status, current.text).toBe(200);
    expect(current.body).toMatchObject({ workspaceId: s.workspaceId, edition: 'PRO' });
    const history = await app.api('GET', '/billing/history', { token: s.accessToken });
    expect(history.status, history.text).toBe(200);
    expect(history.body.items).toHaveLength(1);
    expect(history.body.items[0]).toMatchObject({ amountCents: 2900 });
  });
});

// ======================================================================== history

describe('GET /billing/history', () => {
  it('is paginated, newest first, with page, limit, total and totalPages', async () => {
    const s = await owner();
    for (const planCode of ['pro', 'enterprise', 'pro']) {
      expect((await checkout(s.accessToken, { workspaceId: s.workspaceId, planCode })).status).toBe(200);
    }
    const stored = (await paymentsOf(app, s.workspaceId)).map((p) => p.id).reverse();
    expect(stored).toHaveLength(3);

    const all = await historyOf(app, s.accessToken, s.workspaceId);
    expect(all).toMatchObject({ page: 1, limit: 20, total: 3, totalPages: 1 });
    expect(all.items.map((p) => p.id)).toEqual(stored);
    expect(all.items.map((p) => p.amountCents)).toEqual([2900, 9900, 2900]);
    const times = all.items.map((p) => new Date(p.createdAt).getTime());
    expect(times).toEqual([...times].sort((a, b) => b - a));

    const first = await historyOf(app, s.accessToken, s.workspaceId, '&limit=2&page=1');
    expect(first).toMatchObject({ page: 1, limit: 2, total: 3, totalPages: 2 });
    expect(first.items.map((p) => p.id)).toEqual(stored.slice(0, 2));
    const second = await historyOf(app, s.accessToken, s.workspaceId, '&limit=2&page=2');
    expect(second).toMatchObject({ page: 2, limit: 2, total: 3, totalPages: 2 });
    expect(second.items.map((p) => p.id)).toEqual(stored.slice(2));
    const beyond = await historyOf(app, s.accessToken, s.workspaceId, '&limit=2&page=3');
    expect(beyond.items).toEqual([]);
  });

  it('shows entries without receiptUrl and invoiceUrl keys when the provider (MOCK) gave none', async () => {
    const s = await owner();
    await checkout(s.accessToken, { workspaceId: s.workspaceId, planCode: 'pro' });
    const [entry] = (await historyOf(app, s.accessToken, s.workspaceId)).items;
    expect(entry).toMatchObject({
      provider: 'MOCK',
      status: 'SUCCEEDED',
      amountCents: 2900,
      currency: 'USD',
      planId: (await planBySlug(app, 'pro')).id,
    });
    expect(entry).not.toHaveProperty('receiptUrl');
    expect(entry).not.toHaveProperty('invoiceUrl');
  });

  it.each([['limit=0'], ['limit=101'], ['page=0'], ['page=abc']])('refuses %s with 400 BAD_REQUEST', async (query) => {
    const s = await owner();
    expectError(
      await app.api('GET', `/billing/history?workspaceId=${s.workspaceId}&${query}`, { token: s.accessToken }),
      400,
      'BAD_REQUEST',
    );
  });
});

// ======================================================================== cancel

describe('POST /billing/cancel (MOCK)', () => {
  it('ends the subscription at once: FREE on the default plan (Lite) with its limits; a second cancel is 409', async () => {
    const s = await owner();
    await checkout(s.accessToken, { workspaceId: s.workspaceId, planCode: 'pro' });
    const res = await cancel(s.accessToken, { workspaceId: s.workspaceId });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      workspaceId: s.workspaceId,
      edition: 'LITE',
      plan: { slug: 'lite', isDefault: true },
      limits: LITE_LIMITS,
      status: 'FREE',
      currentPeriodEnd: null,
      subscription: { status: 'CANCELED' },
    });
    expect(res.body.subscription.canceledAt).toEqual(expect.any(String));
    expect(await currentOf(app, s.accessToken, s.workspaceId)).toEqual(res.body);
    expect(await liveSubscriptionsOf(app, s.workspaceId)).toEqual([]);
    expect(await domainEventTypes(app, s.workspaceId)).toContain('subscription.canceled');
    // Payment history stays.
    expect((await historyOf(app, s.accessToken, s.workspaceId)).total).toBe(1);

    expectError(await cancel(s.accessToken, { workspaceId: s.workspaceId }), 409, 'CONFLICT');
  });

  it('answers 409 CONFLICT for a workspace that never subscribed', async () => {
    const s = await owner();
    expectError(await cancel(s.accessToken, { workspaceId: s.workspaceId }), 409, 'CONFLICT');
  });

  it('uses the active workspace when no workspaceId is given', async () => {
    const s = await owner();
    await checkout(s.accessToken, { planCode: 'enterprise' });
    const res = await cancel(s.accessToken);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ workspaceId: s.workspaceId, edition: 'LITE', status: 'FREE' });
  });
});

// ======================================================================== permissions and validation

describe('who may see and change billing', () => {
  let ownerSession: Session;
  let teamId: string;
  let member: Session;
  let outsider: Session;

  beforeAll(async () => {
    ownerSession = await owner('billing-team-owner');
    teamId = await createWorkspace(
      app,
      ownerSession.accessToken,
      `Billing team ${crypto.randomBytes(3).toString('hex')}`,
    );
    expect((await checkout(ownerSession.accessToken, { workspaceId: teamId, planCode: 'pro' })).status).toBe(200);
    member = await inviteAndJoin(app, ownerSession.accessToken, teamId, 'MEMBER', 'billing-member');
    outsider = await owner('billing-outsider');
  });

  it('a MEMBER may read the current plan and the history', async () => {
    expect((await currentOf(app, member.accessToken, teamId)).edition).toBe('PRO');
    expect((await historyOf(app, member.accessToken, teamId)).total).toBe(1);
  });

  it('a MEMBER may not check out or cancel (403 PERMISSION_DENIED), and nothing changes', async () => {
    expectError(
      await checkout(member.accessToken, { workspaceId: teamId, planCode: 'enterprise' }),
      403,
      'PERMISSION_DENIED',
    );
    expectError(await cancel(member.accessToken, { workspaceId: teamId }), 403, 'PERMISSION_DENIED');
    expect((await workspaceRow(app, teamId)).edition).toBe('PRO');
    expect(await liveSubscriptionsOf(app, teamId)).toHaveLength(1);
  });

  it('an outsider gets 404 NOT_FOUND on every billing route of the workspace', async () => {
    const t = outsider.accessToken;
    expectError(await app.api('GET', `/billing/current?workspaceId=${teamId}`, { token: t }), 404, 'NOT_FOUND');
    expectError(await app.api('GET', `/billing/history?workspaceId=${teamId}`, { token: t }), 404, 'NOT_FOUND');
    expectError(await checkout(t, { workspaceId: teamId, planCode: 'enterprise' }), 404, 'NOT_FOUND');
    expectError(await cancel(t, { workspaceId: teamId }), 404, 'NOT_FOUND');
    expect((await workspaceRow(app, teamId)).edition).toBe('PRO');
  });

  it('an anonymous caller gets 401 UNAUTHORIZED', async () => {
    expectError(await app.api('GET', `/billing/current?workspaceId=${teamId}`), 401, 'UNAUTHORIZED');
    expectError(await app.api('GET', `/billing/history?workspaceId=${teamId}`), 401, 'UNAUTHORIZED');
    expectError(
      await app.api('POST', '/billing/checkout', { body: { workspaceId: teamId, planCode: 'pro' } }),
      401,
      'UNAUTHORIZED',
    );
    expectError(await app.api('POST', '/billing/cancel', { body: { workspaceId: teamId } }), 401, 'UNAUTHORIZED');
  });

  it('the provider status is public', async () => {
    const res = await app.api('GET', '/billing/provider-status');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      provider: 'MOCK',
      configured: true,
      mode: 'mock',
      message: expect.any(String),
      customerPortalEnabled: false,
    });
  });
});

describe('checkout validation', () => {
  it('refuses a checkout that names no plan with 400 BAD_REQUEST', async () => {
    const s = await owner();
    const err = expectError(await checkout(s.accessToken, { workspaceId: s.workspaceId }), 400, 'BAD_REQUEST');
    expect(err.message).toMatch(/planCode/);
    expect(await subscriptionsOf(app, s.workspaceId)).toEqual([]);
  });

  it.each([
    ['an unknown planCode', { planCode: `nope-${crypto.randomBytes(3).toString('hex')}` }],
    ['an unknown planId', { planId: crypto.randomUUID() }],
    ['an unknown edition key', { edition: 'platinum' }],
  ])('refuses %s with 404 PLAN_NOT_FOUND', async (_label, plan) => {
    const s = await owner();
    expectError(await checkout(s.accessToken, { workspaceId: s.workspaceId, ...plan }), 404, 'PLAN_NOT_FOUND');
    expect(await subscriptionsOf(app, s.workspaceId)).toEqual([]);
  });

  it('refuses a malformed workspaceId or planId with 400 BAD_REQUEST', async () => {
    const s = await owner();
    expectError(await checkout(s.accessToken, { workspaceId: 'not-a-uuid', planCode: 'pro' }), 400, 'BAD_REQUEST');
    expectError(
      await checkout(s.accessToken, { workspaceId: s.workspaceId, planId: 'not-a-uuid' }),
      400,
      'BAD_REQUEST',
    );
    expectError(
      await app.api('GET', '/billing/current?workspaceId=not-a-uuid', { token: s.accessToken }),
      400,
      'BAD_REQUEST',
    );
  });
});

// ======================================================================== legacy routes

describe('legacy workspace billing routes', () => {
  it('answer the same data as the /billing routes', async () => {
    const s = await owner('legacy');
    const base = `/workspaces/${s.workspaceId}/billing`;

    const bought = await app.api('POST', `${base}/mock-checkout`, { token: s.accessToken, body: { planCode: 'pro' } });
    expect(bought.status, bought.text).toBe(200);
    expect(bought.body).toMatchObject({
      provider: 'MOCK',
      current: { workspaceId: s.workspaceId, edition: 'PRO', status: 'ACTIVE' },
    });

    const legacyCurrent = await app.api('GET', base, { token: s.accessToken });
    expect(legacyCurrent.status, legacyCurrent.text).toBe(200);
    expect(legacyCurrent.body).toEqual(await currentOf(app, s.accessToken, s.workspaceId));
    expect(legacyCurrent.body).toEqual(bought.body.current);

    const legacyPayments = await app.api('GET', `${base}/payments`, { token: s.accessToken });
    expect(legacyPayments.status, legacyPayments.text).toBe(200);
    expect(Object.keys(legacyPayments.body).sort()).toEqual(PAGE_KEYS);
    expect(legacyPayments.body).toEqual(await historyOf(app, s.accessToken, s.workspaceId));
    expect(legacyPayments.body.items).toHaveLength(1);
    const paged = await app.api('GET', `${base}/payments?limit=1&page=2`, { token: s.accessToken });
    expect(paged.status, paged.text).toBe(200);
    expect(paged.body).toMatchObject({ items: [], page: 2, limit: 1, total: 1 });

    const canceled = await app.api('POST', `${base}/cancel`, { token: s.accessToken });
    expect(canceled.status, canceled.text).toBe(200);
    expect(canceled.body).toMatchObject({ edition: 'LITE', status: 'FREE' });
    expect(canceled.body).toEqual(await currentOf(app, s.accessToken, s.workspaceId));
    expectError(await app.api('POST', `${base}/cancel`, { token: s.accessToken }), 409, 'CONFLICT');
  });

  it('accept the legacy edition key on mock-checkout', async () => {
    const s = await owner('legacy-edition');
    const res = await app.api('POST', `/workspaces/${s.workspaceId}/billing/mock-checkout`, {
      token: s.accessToken,
      body: { edition: 'ENTERPRISE' },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.current).toMatchObject({ edition: 'ENTERPRISE', limits: ENTERPRISE_LIMITS });
  });

  it('apply the same permissions: MEMBER reads, may not buy; outsider 404; anonymous 401', async () => {
    const o = await owner('legacy-perm');
    const ws = await createWorkspace(app, o.accessToken, `Legacy ${crypto.randomBytes(3).toString('hex')}`);
    const member = await inviteAndJoin(app, o.accessToken, ws, 'MEMBER', 'legacy-member');
    const outsider = await owner('legacy-outsider');
    const base = `/workspaces/${ws}/billing`;
    expect((await app.api('GET', base, { token: member.accessToken })).status).toBe(200);
    expect((await app.api('GET', `${base}/payments`, { token: member.accessToken })).status).toBe(200);
    expectError(
      await app.api('POST', `${base}/mock-checkout`, { token: member.accessToken, body: { planCode: 'pro' } }),
      403,
      'PERMISSION_DENIED',
    );
    expectError(await app.api('POST', `${base}/cancel`, { token: member.accessToken }), 403, 'PERMISSION_DENIED');
    expectError(await app.api('GET', base, { token: outsider.accessToken }), 404, 'NOT_FOUND');
    expectError(await app.api('GET', base), 401, 'UNAUTHORIZED');
  });
});

// ======================================================================== demo accounts

describe('demo accounts', () => {
  it('may use the MOCK checkout', async () => {
    const demo = await registerAs(app, DEMO_EMAIL, 'Demo person');
    const res = await checkout(demo.accessToken, { workspaceId: demo.workspaceId, planCode: 'pro' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.current).toMatchObject({ edition: 'PRO', status: 'ACTIVE' });
  });
});

// ======================================================================== member limit

describe('limits.members of the plan', () => {
  const inviteBody = (role = 'MEMBER') => ({ email: uniqueEmail('limit-invitee'), role });

  it('on Lite (3 members) the owner can invite 2 people; the third invitation is 403 MEMBER_LIMIT_REACHED; Pro allows it', async () => {
    const o = await owner('limit-owner');
    const ws = await createWorkspace(app, o.accessToken, `Limited ${crypto.randomBytes(3).toString('hex')}`);
    expect((await currentOf(app, o.accessToken, ws)).limits).toMatchObject({ members: 3 });
    const inviteOne = () =>
      app.api('POST', `/workspaces/${ws}/invitations`, { token: o.accessToken, body: inviteBody() });

    expect((await inviteOne()).status).toBe(201);
    expect((await inviteOne()).status).toBe(201);
    // Owner + two open invitations = 3.
    const refused = expectError(await inviteOne(), 403, 'MEMBER_LIMIT_REACHED');
    expect(refused.message).toMatch(/3/);
    expect(refused.message).toMatch(/upgrade/i);
    const open = await app.deps.db
      .selectFrom('workspace_invitations')
      .select('id')
      .where('workspace_id', '=', ws)
      .execute();
    expect(open).toHaveLength(2);

    expect((await checkout(o.accessToken, { workspaceId: ws, planCode: 'pro' })).status).toBe(200);
    expect((await inviteOne()).status).toBe(201);
  });

  it('counts members who joined as well as open invitations', async () => {
    const o = await owner('limit-owner2');
    const ws = await createWorkspace(app, o.accessToken, `Limited ${crypto.randomBytes(3).toString('hex')}`);
    await inviteAndJoin(app, o.accessToken, ws, 'MEMBER', 'limit-joined');
    expect(
      (await app.api('POST', `/workspaces/${ws}/invitations`, { token: o.accessToken, body: inviteBody() })).status,
    ).toBe(201);
    expectError(
      await app.api('POST', `/workspaces/${ws}/invitations`, { token: o.accessToken, body: inviteBody() }),
      403,
      'MEMBER_LIMIT_REACHED',
    );
  });
});

// ======================================================================== safe delete

describe('safe delete of a workspace with a live paid subscription', () => {
  it('is refused with 409 SUBSCRIPTION_ACTIVE until the subscription is cancelled', async () => {
    const o = await owner('delete-owner');
    const ws = await createWorkspace(app, o.accessToken, `Paying ${crypto.randomBytes(3).toString('hex')}`);
    expect((await checkout(o.accessToken, { workspaceId: ws, planCode: 'pro' })).status).toBe(200);

    expectError(
      await app.api('DELETE', `/admin/workspaces/${ws}`, { token: admin.accessToken }),
      409,
      'SUBSCRIPTION_ACTIVE',
    );
    const still = await app.deps.db
      .selectFrom('workspaces')
      .select('deleted_at')
      .where('id', '=', ws)
      .executeTakeFirstOrThrow();
    expect(still.deleted_at).toBeNull();

    expect((await cancel(o.accessToken, { workspaceId: ws })).status).toBe(200);
    const deleted = await app.api('DELETE', `/admin/workspaces/${ws}`, { token: admin.accessToken });
    expect(deleted.status, deleted.text).toBe(200);
    const gone = await app.deps.db
      .selectFrom('workspaces')
      .select('deleted_at')
      .where('id', '=', ws)
      .executeTakeFirstOrThrow();
    expect(gone.deleted_at).toBeInstanceOf(Date);
  });

  it('is allowed with a live subscription of a free plan', async () => {
    const o = await owner('delete-free');
    const ws = await createWorkspace(app, o.accessToken, `Free ${crypto.randomBytes(3).toString('hex')}`);
    expect((await checkout(o.accessToken, { workspaceId: ws, planCode: 'lite' })).status).toBe(200);
    const deleted = await app.api('DELETE', `/admin/workspaces/${ws}`, { token: admin.accessToken });
    expect(deleted.status, deleted.text).toBe(200);
  });
});
