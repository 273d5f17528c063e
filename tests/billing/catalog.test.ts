// The plan catalog: the public GET /billing/plans, the nine admin plan routes (CRUD, archive and restore,
// secret-safe settings), their guards (anonymous, normal user, demo admin), the audit trail, and the
// in-memory copy of the catalog across instances (Redis pub/sub, else a short TTL).
// Shared database: the seeded lite/pro/enterprise rows are only read here; every plan this file changes
// is its own (unique slug).
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { TEST_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { clockPast } from '../helpers/clock.js';
import { waitFor } from '../helpers/wait.js';
import { expectError, registerAndLogin, type Session } from '../helpers/http.js';
import {
  DEMO_ADMIN_MESSAGE,
  ENTERPRISE_LIMITS,
  LITE_LIMITS,
  PLAN_FIELDS,
  PRO_LIMITS,
  adminLogin,
  catalogSlugs,
  createPlan,
  demoAdminLogin,
  uniqueSlug,
} from './helpers.js';

// Keys and secrets this app is configured with: GET /admin/billing/settings must show none of them.
const SECRETS = {
  PROCESSOR_A_SECRET_KEY: 'sk_test_catalogSettingsKey0123456789',
  PROCESSOR_A_WEBHOOK_SECRET: 'whsec_catalogSettingsSecret0123456789',
  PROCESSOR_B_API_KEY: 'lemon-catalog-settings-api-key-0123456789',
  PROCESSOR_B_WEBHOOK_SECRET: 'lemon-catalog-settings-webhook-secret-0123',
};
const SUCCESS_URL = 'https://app.tests.local/billing/catalog-success';
const CANCEL_URL = 'https://app.tests.local/billing/catalog-cancel';
const SUPPORT_EMAIL = 'catalog-billing@tests.local';

let app: TestApp;
let admin: Session;
let demoAdmin: Session;
let user: Session;

beforeAll(async () => {
  app = await startTestApp({
    RATE_LIMIT_ENABLED: 'false',
    BILLING_PROVIDER: 'MOCK',
    ...SECRETS,
    PROCESSOR_A_PRICE_PRO: 'price_catalog_pro',
    PROCESSOR_B_STORE_ID: '4242',
    PROCESSOR_B_VARIANT_ENTERPRISE: '777',
    BILLING_SUCCESS_URL: SUCCESS_URL,
    BILLING_CANCEL_URL: CANCEL_URL,
    BILLING_SUPPORT_EMAIL: SUPPORT_EMAIL,
  });
  [admin, demoAdmin, user] = await Promise.all([
    adminLogin(app),
    demoAdminLogin(app),
    registerAndLogin(app.api, { prefix: 'catalog-user' }),
  ]);
});
afterAll(() => app?.close());

type Plan = Record<string, any>;
const getPlanAsAdmin = (id: string) => app.api('GET', `/admin/billing/plans/${id}`, { token: admin.accessToken });
const planRow = (id: string) => app.deps.db.selectFrom('plans').selectAll().where('id', '=', id).executeTakeFirst();
const publicCatalog = async (): Promise<Plan[]> => {
  const res = await app.api('GET', '/billing/plans');
  expect(res.status, res.text).toBe(200);
  return res.body.items;
};

// ======================================================================== public catalog

describe('GET /billing/plans (public catalog)', () => {
  it('answers anonymous callers with { items } of PUBLISHED plans only, sorted by sortOrder', async () => {
    const res = await app.api('GET', '/billing/plans');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['items']);
    const items: Plan[] = res.body.items;
    expect(items.length).toBeGreaterThanOrEqual(3);
    for (const p of items) expect(p.status).toBe('PUBLISHED');
    const orders = items.map((p) => p.sortOrder);
    expect(orders).toEqual([...orders].sort((a, b) => a - b));
    const slugs = items.map((p) => p.slug);
    expect(slugs.indexOf('lite')).toBeLessThan(slugs.indexOf('pro'));
    expect(slugs.indexOf('pro')).toBeLessThan(slugs.indexOf('enterprise'));
  });

  it('shows every documented plan field, with code equal to slug', async () => {
    for (const p of await publicCatalog()) {
      expect(Object.keys(p).sort()).toEqual(PLAN_FIELDS);
      expect(p.code).toBe(p.slug);
      expect(p.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(Number.isInteger(p.priceCents) && p.priceCents >= 0).toBe(true);
      expect(Array.isArray(p.features)).toBe(true);
      expect(typeof p.limits).toBe('object');
      expect(new Date(p.createdAt).toISOString()).toBe(p.createdAt);
    }
  });

  it('offers the seeded Lite, Pro and Enterprise plans with the documented prices and limits; Lite is the default', async () => {
    const bySlug = new Map((await publicCatalog()).map((p) => [p.slug, p]));
    expect(bySlug.get('lite')).toMatchObject({
      code: 'lite',
      name: 'Lite',
      edition: 'LITE',
      priceCents: 0,
      currency: 'USD',
      interval: 'MONTHLY',
      status: 'PUBLISHED',
      isDefault: true,
      limits: LITE_LIMITS,
    });
    expect(bySlug.get('pro')).toMatchObject({
      code: 'pro',
      name: 'Pro',
      edition: 'PRO',
      priceCents: 2900,
      currency: 'USD',
      interval: 'MONTHLY',
      status: 'PUBLISHED',
      isDefault: false,
      limits: PRO_LIMITS,
    });
    expect(bySlug.get('enterprise')).toMatchObject({
      code: 'enterprise',
      name: 'Enterprise',
      edition: 'ENTERPRISE',
      priceCents: 9900,
      currency: 'USD',
      interval: 'MONTHLY',
      status: 'PUBLISHED',
      isDefault: false,
      limits: ENTERPRISE_LIMITS,
    });
    for (const slug of ['lite', 'pro', 'enterprise']) expect(bySlug.get(slug)!.features.length).toBeGreaterThan(0);
    expect([...bySlug.values()].filter((p) => p.isDefault).map((p) => p.slug)).toEqual(['lite']);
  });
});

// ======================================================================== admin CRUD

describe('admin plan CRUD', () => {
  it('creates a plan with every field (201), readable one by one and in the admin list', async () => {
    const slug = uniqueSlug('crud');
    const body = {
      name: 'Team Plus',
      slug,
      description: 'For teams.',
      edition: 'CUSTOM',
      priceCents: 4900,
      currency: 'eur',
      interval: 'YEARLY',
      status: 'DRAFT',
      badgeText: 'New',
      isPopular: true,
      isDefault: false,
      sortOrder: 9_100,
      features: ['One', 'Two'],
      limits: { members: 7, apiKeys: 2, aiMonthlyGenerations: 70 },
      providerAPriceId: 'price_team_plus',
      providerBVariantId: '9001',
      pricingModel: 'PER_SEAT',
      includedSeats: 3,
      trialDays: 14,
      meteredOverage: true,
      providerASeatPriceId: 'price_team_plus_seat',
      providerAMeterEventName: 'ai_generations',
      providerBSeatVariantId: '9002',
    };
    const res = await app.api('POST', '/admin/billing/plans', { token: admin.accessToken, body });
    expect(res.status, res.text).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(PLAN_FIELDS);
    expect(res.body).toEqual({
      ...body,
      currency: 'EUR',
      code: slug,
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });

    const one = await getPlanAsAdmin(res.body.id);
    expect(one.status).toBe(200);
    expect(one.body).toEqual(res.body);
    const list = await app.api('GET', '/admin/billing/plans', { token: admin.accessToken });
    expect(list.status).toBe(200);
    const listed = (list.body.items as Plan[]).find((p) => p.id === res.body.id);
    expect(listed).toEqual(res.body);
    // The admin list has drafts; the public one does not.
    expect(await catalogSlugs(app)).not.toContain(slug);
  });

  it('fills the optional fields with defaults: DRAFT, USD, MONTHLY, CUSTOM, not default', async () => {
    const slug = uniqueSlug('min');
    const res = await app.api('POST', '/admin/billing/plans', {
      token: admin.accessToken,
      body: { name: 'Minimal', slug, priceCents: 0 },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      slug,
      status: 'DRAFT',
      currency: 'USD',
      interval: 'MONTHLY',
      edition: 'CUSTOM',
      isDefault: false,
      isPopular: false,
      features: [],
      limits: {},
      providerAPriceId: null,
      providerBVariantId: null,
      pricingModel: 'FLAT',
      includedSeats: 1,
      trialDays: 0,
      meteredOverage: false,
      providerASeatPriceId: null,
      providerAMeterEventName: null,
      providerBSeatVariantId: null,
      description: '',
      badgeText: '',
    });
  });

  it('refuses a duplicate slug with 409 CONFLICT, on create and on rename', async () => {
    const first = await createPlan(app, admin);
    const dup = await app.api('POST', '/admin/billing/plans', {
      token: admin.accessToken,
      body: { name: 'Dup', slug: first.slug, priceCents: 1 },
    });
    expectError(dup, 409, 'CONFLICT');
    expectError(
      await app.api('POST', '/admin/billing/plans', {
        token: admin.accessToken,
        body: { name: 'Dup', slug: 'pro', priceCents: 1 },
      }),
      409,
      'CONFLICT',
    );
    const other = await createPlan(app, admin);
    expectError(
      await app.api('PATCH', `/admin/billing/plans/${other.id}`, {
        token: admin.accessToken,
        body: { slug: first.slug },
      }),
      409,
      'CONFLICT',
    );
    expect((await planRow(other.id))!.slug).toBe(other.slug);
    expect(await app.deps.db.selectFrom('plans').select('id').where('slug', '=', first.slug).execute()).toHaveLength(1);
  });

  it.each([
    ['a negative price', -1],
    ['a fractional price', 10.5],
    ['a price given as a string', '100'],
    ['a null price', null],
    ['a missing price', undefined],
  ])('refuses %s with 400 BAD_REQUEST naming priceCents, and stores nothing', async (_label, priceCents) => {
    const slug = uniqueSlug('price');
    const res = await app.api('POST', '/admin/billing/plans', {
      token: admin.accessToken,
      body: { name: 'Bad price', slug, priceCents },
    });
    const err = expectError(res, 400, 'BAD_REQUEST');
    expect(err.issues?.map((i) => i.path)).toContain('priceCents');
    expect(await app.deps.db.selectFrom('plans').select('id').where('slug', '=', slug).execute()).toEqual([]);
  });

  it('refuses a flag given as a string (isPopular: "false") with 400 BAD_REQUEST rather than reading it as true', async () => {
    const slug = uniqueSlug('flag');
    const res = await app.api('POST', '/admin/billing/plans', {
      token: admin.accessToken,
      body: { name: 'Flag', slug, priceCents: 1, isPopular: 'false' },
    });
    const err = expectError(res, 400, 'BAD_REQUEST');
    expect(err.issues?.map((i) => i.path)).toContain('isPopular');
    expect(await app.deps.db.selectFrom('plans').select('id').where('slug', '=', slug).execute()).toEqual([]);
  });

  it('refuses a negative or fractional price on update with 400 and keeps the old price', async () => {
    const plan = await createPlan(app, admin, { priceCents: 500 });
    for (const priceCents of [-5, 1.25]) {
      expectError(
        await app.api('PATCH', `/admin/billing/plans/${plan.id}`, { token: admin.accessToken, body: { priceCents } }),
        400,
        'BAD_REQUEST',
      );
    }
    expect((await planRow(plan.id))!.price_cents).toBe(500);
  });

  it.each([
    ['upper-case letters', 'Bad-Slug'],
    ['spaces', 'bad slug'],
    ['a leading dash', '-bad'],
    ['an empty slug', ''],
    ['64 characters', `a${'b'.repeat(63)}`],
    ['an underscore', 'bad_slug'],
  ])('refuses a slug with %s with 400 BAD_REQUEST naming slug', async (_label, slug) => {
    const res = await app.api('POST', '/admin/billing/plans', {
      token: admin.accessToken,
      body: { name: 'Bad slug', slug, priceCents: 1 },
    });
    const err = expectError(res, 400, 'BAD_REQUEST');
    expect(err.issues?.map((i) => i.path)).toContain('slug');
  });

  it('updates the given fields only and moves updatedAt', async () => {
    const plan = await createPlan(app, admin, { description: 'Before', badgeText: 'Old' });
    await clockPast(Date.parse(plan.updatedAt));
    const res = await app.api('PATCH', `/admin/billing/plans/${plan.id}`, {
      token: admin.accessToken,
      body: { name: 'Renamed', priceCents: 777, features: ['F1'], limits: { members: 4 } },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      id: plan.id,
      slug: plan.slug,
      name: 'Renamed',
      priceCents: 777,
      description: 'Before',
      badgeText: 'Old',
      features: ['F1'],
      limits: { members: 4 },
    });
    expect(new Date(res.body.updatedAt).getTime()).toBeGreaterThan(new Date(plan.updatedAt).getTime());
    expect((await getPlanAsAdmin(plan.id)).body).toEqual(res.body);
  });

  it('answers 404 PLAN_NOT_FOUND for an unknown plan on every plan route', async () => {
    const id = crypto.randomUUID();
    const token = admin.accessToken;
    expectError(await app.api('GET', `/admin/billing/plans/${id}`, { token }), 404, 'PLAN_NOT_FOUND');
    expectError(
      await app.api('PATCH', `/admin/billing/plans/${id}`, { token, body: { name: 'x' } }),
      404,
      'PLAN_NOT_FOUND',
    );
    expectError(await app.api('POST', `/admin/billing/plans/${id}/archive`, { token }), 404, 'PLAN_NOT_FOUND');
    expectError(await app.api('POST', `/admin/billing/plans/${id}/restore`, { token }), 404, 'PLAN_NOT_FOUND');
    expectError(await app.api('DELETE', `/admin/billing/plans/${id}`, { token }), 404, 'PLAN_NOT_FOUND');
  });

  it('refuses a malformed plan id with 400 BAD_REQUEST', async () => {
    expectError(
      await app.api('GET', '/admin/billing/plans/not-a-uuid', { token: admin.accessToken }),
      400,
      'BAD_REQUEST',
    );
  });
});

// ======================================================================== status: drafts, archive, restore

describe('plan status: DRAFT, PUBLISHED, ARCHIVED', () => {
  it('keeps a DRAFT plan out of the public catalog and out of checkout (404 PLAN_NOT_FOUND by planCode and planId)', async () => {
    const draft = await createPlan(app, admin, { status: 'DRAFT' });
    expect(await catalogSlugs(app)).not.toContain(draft.slug);
    const owner = await registerAndLogin(app.api, { prefix: 'draft-buyer' });
    for (const body of [{ planCode: draft.slug }, { planId: draft.id }]) {
      const res = await app.api('POST', '/billing/checkout', {
        token: owner.accessToken,
        body: { workspaceId: owner.workspaceId, ...body },
      });
      expectError(res, 404, 'PLAN_NOT_FOUND');
    }
    expect(
      await app.deps.db.selectFrom('subscriptions').select('id').where('plan_id', '=', draft.id).execute(),
    ).toEqual([]);
  });

  it('shows a plan in the public catalog once it is PUBLISHED', async () => {
    const draft = await createPlan(app, admin, { status: 'DRAFT' });
    await catalogSlugs(app); // the catalog is cached now
    const res = await app.api('PATCH', `/admin/billing/plans/${draft.id}`, {
      token: admin.accessToken,
      body: { status: 'PUBLISHED' },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.status).toBe('PUBLISHED');
    expect(await catalogSlugs(app)).toContain(draft.slug);
    await app.api('DELETE', `/admin/billing/plans/${draft.id}`, { token: admin.accessToken });
  });

  it('refuses to set ARCHIVED through PATCH (400): archiving has its own route', async () => {
    const plan = await createPlan(app, admin);
    expectError(
      await app.api('PATCH', `/admin/billing/plans/${plan.id}`, {
        token: admin.accessToken,
        body: { status: 'ARCHIVED' },
      }),
      400,
      'BAD_REQUEST',
    );
    expect((await planRow(plan.id))!.status).toBe('DRAFT');
  });

  it('archives a PUBLISHED plan (hidden, not purchasable) and restores it to PUBLISHED', async () => {
    const plan = await createPlan(app, admin, { status: 'PUBLISHED' });
    expect(await catalogSlugs(app)).toContain(plan.slug);

    const archived = await app.api('POST', `/admin/billing/plans/${plan.id}/archive`, { token: admin.accessToken });
    expect(archived.status, archived.text).toBe(200);
    expect(archived.body).toMatchObject({ id: plan.id, status: 'ARCHIVED' });
    expect(await catalogSlugs(app)).not.toContain(plan.slug);
    const buyer = await registerAndLogin(app.api, { prefix: 'archived-buyer' });
    expectError(
      await app.api('POST', '/billing/checkout', { token: buyer.accessToken, body: { planCode: plan.slug } }),
      404,
      'PLAN_NOT_FOUND',
    );
    // Still there for admins.
    expect((await getPlanAsAdmin(plan.id)).body.status).toBe('ARCHIVED');

    const restored = await app.api('POST', `/admin/billing/plans/${plan.id}/restore`, { token: admin.accessToken });
    expect(restored.status, restored.text).toBe(200);
    expect(restored.body).toMatchObject({ id: plan.id, status: 'PUBLISHED' });
    expect(await catalogSlugs(app)).toContain(plan.slug);
    await app.api('DELETE', `/admin/billing/plans/${plan.id}`, { token: admin.accessToken });
  });

  it('restores an archived DRAFT plan to DRAFT, not to PUBLISHED', async () => {
    const plan = await createPlan(app, admin, { status: 'DRAFT' });
    expect(
      (await app.api('POST', `/admin/billing/plans/${plan.id}/archive`, { token: admin.accessToken })).body.status,
    ).toBe('ARCHIVED');
    const restored = await app.api('POST', `/admin/billing/plans/${plan.id}/restore`, { token: admin.accessToken });
    expect(restored.status).toBe(200);
    expect(restored.body.status).toBe('DRAFT');
    expect(await catalogSlugs(app)).not.toContain(plan.slug);
  });

  it('refuses to archive an ARCHIVED plan and to restore a plan that is not archived (409 INVALID_STATE)', async () => {
    const plan = await createPlan(app, admin, { status: 'DRAFT' });
    expectError(
      await app.api('POST', `/admin/billing/plans/${plan.id}/restore`, { token: admin.accessToken }),
      409,
      'INVALID_STATE',
    );
    expect(
      (await app.api('POST', `/admin/billing/plans/${plan.id}/archive`, { token: admin.accessToken })).status,
    ).toBe(200);
    expectError(
      await app.api('POST', `/admin/billing/plans/${plan.id}/archive`, { token: admin.accessToken }),
      409,
      'INVALID_STATE',
    );
    expect((await planRow(plan.id))!.status).toBe('ARCHIVED');
    expect(
      (await app.api('POST', `/admin/billing/plans/${plan.id}/restore`, { token: admin.accessToken })).status,
    ).toBe(200);
    expectError(
      await app.api('POST', `/admin/billing/plans/${plan.id}/restore`, { token: admin.accessToken }),
      409,
      'INVALID_STATE',
    );
    expect((await planRow(plan.id))!.status).toBe('DRAFT');
  });

  it('refuses to change the status of an ARCHIVED plan through PATCH (409 INVALID_STATE)', async () => {
    const plan = await createPlan(app, admin, { status: 'DRAFT' });
    await app.api('POST', `/admin/billing/plans/${plan.id}/archive`, { token: admin.accessToken });
    expectError(
      await app.api('PATCH', `/admin/billing/plans/${plan.id}`, {
        token: admin.accessToken,
        body: { status: 'PUBLISHED' },
      }),
      409,
      'INVALID_STATE',
    );
    expect((await planRow(plan.id))!.status).toBe('ARCHIVED');
  });
});

// ======================================================================== delete

describe('DELETE /admin/billing/plans/:planId', () => {
  it('deletes a plan that no subscription references (200), after which it is gone', async () => {
    const plan = await createPlan(app, admin);
    const res = await app.api('DELETE', `/admin/billing/plans/${plan.id}`, { token: admin.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ message: expect.any(String) });
    expect(await planRow(plan.id)).toBeUndefined();
    expectError(await getPlanAsAdmin(plan.id), 404, 'PLAN_NOT_FOUND');
  });

  it('refuses to delete a plan with subscriptions (409 PLAN_HAS_SUBSCRIPTIONS), which can still be archived', async () => {
    const plan = await createPlan(app, admin, { status: 'PUBLISHED', priceCents: 1500 });
    const buyer = await registerAndLogin(app.api, { prefix: 'plan-buyer' });
    const bought = await app.api('POST', '/billing/checkout', {
      token: buyer.accessToken,
      body: { workspaceId: buyer.workspaceId, planCode: plan.slug },
    });
    expect(bought.status, bought.text).toBe(200);
    expect(bought.body.current.plan.id).toBe(plan.id);

    const err = expectError(
      await app.api('DELETE', `/admin/billing/plans/${plan.id}`, { token: admin.accessToken }),
      409,
      'PLAN_HAS_SUBSCRIPTIONS',
    );
    expect(err.message).toMatch(/archive/i);
    expect(await planRow(plan.id)).toBeDefined();

    const archived = await app.api('POST', `/admin/billing/plans/${plan.id}/archive`, { token: admin.accessToken });
    expect(archived.status, archived.text).toBe(200);
    expect(archived.body.status).toBe('ARCHIVED');
    // A cancelled subscription is still history that points at the plan.
    expect(
      (await app.api('POST', '/billing/cancel', { token: buyer.accessToken, body: { workspaceId: buyer.workspaceId } }))
        .status,
    ).toBe(200);
    expectError(
      await app.api('DELETE', `/admin/billing/plans/${plan.id}`, { token: admin.accessToken }),
      409,
      'PLAN_HAS_SUBSCRIPTIONS',
    );
    expect(await planRow(plan.id)).toBeDefined();
  });
});

// ======================================================================== settings

describe('admin billing settings', () => {
  it('GET answers configured flags and URLs, never a key or a secret', async () => {
    const res = await app.api('GET', '/admin/billing/settings', { token: admin.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      provider: 'MOCK',
      readOnly: true,
      successUrl: SUCCESS_URL,
      cancelUrl: CANCEL_URL,
      supportEmail: SUPPORT_EMAIL,
      customerPortalEnabled: false,
      mockWebhookEnabled: true,
      processorA: {
        active: false,
        configured: true,
        webhookConfigured: true,
        webhookPath: '/billing/webhooks/processor-a',
        pricesConfigured: { lite: false, pro: true, enterprise: false },
      },
      processorB: {
        active: false,
        configured: true,
        webhookConfigured: true,
        webhookPath: '/billing/webhooks/processor-b',
        pricesConfigured: { lite: false, pro: false, enterprise: true },
      },
    });
    for (const secret of [...Object.values(SECRETS), 'price_catalog_pro']) expect(res.text).not.toContain(secret);
    // Whatever the shape, a field that sounds like a key or a secret carries a boolean.
    const walk = (value: unknown, path: string) => {
      if (!value || typeof value !== 'object') return;
      for (const [k, v] of Object.entries(value)) {
        if (/key|secret|token|password/i.test(k)) expect(typeof v, `${path}.${k}`).toBe('boolean');
        walk(v, `${path}.${k}`);
      }
    };
    walk(res.body, 'settings');
  });

  it('PATCH answers 409 SETTINGS_READ_ONLY with a friendly message, and nothing changes', async () => {
    const res = await app.api('PATCH', '/admin/billing/settings', {
      token: admin.accessToken,
      body: { provider: 'PROCESSOR_A' },
    });
    const err = expectError(res, 409, 'SETTINGS_READ_ONLY');
    expect(err.message).toMatch(/environment/i);
    expect((await app.api('GET', '/admin/billing/settings', { token: admin.accessToken })).body.provider).toBe('MOCK');
  });
});

// ======================================================================== guards

describe('the admin plan routes are for platform admins; the demo admin only reads', () => {
  interface Route {
    label: string;
    write: boolean;
    call: (plan: Plan) => { method: string; path: string; body?: unknown };
  }
  const routes: Route[] = [
    { label: 'GET /admin/billing/plans', write: false, call: () => ({ method: 'GET', path: '/admin/billing/plans' }) },
    {
      label: 'GET /admin/billing/plans/:planId',
      write: false,
      call: (p) => ({ method: 'GET', path: `/admin/billing/plans/${p.id}` }),
    },
    {
      label: 'GET /admin/billing/settings',
      write: false,
      call: () => ({ method: 'GET', path: '/admin/billing/settings' }),
    },
    {
      label: 'POST /admin/billing/plans',
      write: true,
      call: (p) => ({
        method: 'POST',
        path: '/admin/billing/plans',
        body: { name: 'Guarded', slug: `${p.slug}-new`, priceCents: 1 },
      }),
    },
    {
      label: 'PATCH /admin/billing/plans/:planId',
      write: true,
      call: (p) => ({
        method: 'PATCH',
        path: `/admin/billing/plans/${p.id}`,
        body: { name: 'Hijacked', priceCents: 1 },
      }),
    },
    {
      label: 'POST /admin/billing/plans/:planId/archive',
      write: true,
      call: (p) => ({ method: 'POST', path: `/admin/billing/plans/${p.id}/archive` }),
    },
    {
      label: 'POST /admin/billing/plans/:planId/restore',
      write: true,
      call: (p) => ({ method: 'POST', path: `/admin/billing/plans/${p.id}/restore` }),
    },
    {
      label: 'DELETE /admin/billing/plans/:planId',
      write: true,
      call: (p) => ({ method: 'DELETE', path: `/admin/billing/plans/${p.id}` }),
    },
    {
      label: 'PATCH /admin/billing/settings',
      write: true,
      call: () => ({ method: 'PATCH', path: '/admin/billing/settings', body: { provider: 'PROCESSOR_B' } }),
    },
  ];

  /**
   * A plan of our own in the state that makes the route's write meaningful (restore needs ARCHIVED); a
   * DRAFT, so that the shared public catalog does not fill up with them.
   */
  async function subject(route: Route): Promise<Plan> {
    const plan = await createPlan(app, admin, { status: 'DRAFT' });
    if (route.label.endsWith('/restore')) {
      const res = await app.api('POST', `/admin/billing/plans/${plan.id}/archive`, { token: admin.accessToken });
      return res.body;
    }
    return plan;
  }

  const auditCount = async (planId: string) =>
    Number(
      (
        await app.deps.db
          .selectFrom('audit_logs')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('target_id', '=', planId)
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('covers all nine routes', () => {
    expect(routes).toHaveLength(9);
  });

  it.each(routes)('$label: 401 UNAUTHORIZED without a token', async (route) => {
    const plan = await subject(route);
    const { method, path, body } = route.call(plan);
    expectError(await app.api(method, path, { body }), 401, 'UNAUTHORIZED');
  });

  it.each(routes)('$label: 403 FORBIDDEN for a normal user', async (route) => {
    const plan = await subject(route);
    const before = await planRow(plan.id);
    const { method, path, body } = route.call(plan);
    expectError(await app.api(method, path, { token: user.accessToken, body }), 403, 'FORBIDDEN');
    expect(await planRow(plan.id)).toEqual(before);
  });

  it.each(routes.filter((r) => !r.write))('$label: the demo admin reads (200)', async (route) => {
    const plan = await subject(route);
    const { method, path } = route.call(plan);
    const res = await app.api(method, path, { token: demoAdmin.accessToken });
    expect(res.status, res.text).toBe(200);
  });

  it.each(routes.filter((r) => r.write))(
    '$label: the demo admin is refused with 403 DEMO_READ_ONLY "Demo admin is read-only." and nothing changes',
    async (route) => {
      const plan = await subject(route);
      const before = await planRow(plan.id);
      const auditBefore = await auditCount(plan.id);
      const { method, path, body } = route.call(plan);
      const err = expectError(
        await app.api(method, path, { token: demoAdmin.accessToken, body }),
        403,
        'DEMO_READ_ONLY',
      );
      expect(err.message).toBe(DEMO_ADMIN_MESSAGE);
      expect(await planRow(plan.id)).toEqual(before);
      expect(await auditCount(plan.id)).toBe(auditBefore);
      expect(
        await app.deps.db.selectFrom('plans').select('id').where('slug', '=', `${plan.slug}-new`).execute(),
      ).toEqual([]);
    },
  );
});

// ======================================================================== audit

describe('audit trail of plan changes', () => {
  it('records plan.created, plan.updated, plan.archived, plan.restored and plan.deleted with the admin as actor', async () => {
    const plan = await createPlan(app, admin, { status: 'PUBLISHED' });
    const token = admin.accessToken;
    expect(
      (await app.api('PATCH', `/admin/billing/plans/${plan.id}`, { token, body: { name: 'Audited' } })).status,
    ).toBe(200);
    expect((await app.api('POST', `/admin/billing/plans/${plan.id}/archive`, { token })).status).toBe(200);
    expect((await app.api('POST', `/admin/billing/plans/${plan.id}/restore`, { token })).status).toBe(200);
    expect((await app.api('DELETE', `/admin/billing/plans/${plan.id}`, { token })).status).toBe(200);

    const rows = await app.deps.db
      .selectFrom('audit_logs')
      .selectAll()
      .where('target_id', '=', plan.id)
      .orderBy('created_at')
      .execute();
    expect(rows.map((r) => r.action)).toEqual([
      'plan.created',
      'plan.updated',
      'plan.archived',
      'plan.restored',
      'plan.deleted',
    ]);
    for (const r of rows) {
      expect(r.actor_email).toBe(TEST_ADMIN.email);
      expect(r.target_type).toBe('plan');
    }
    expect(rows[2].metadata).toMatchObject({ from: 'PUBLISHED', to: 'ARCHIVED' });
    expect(rows[3].metadata).toMatchObject({ from: 'ARCHIVED', to: 'PUBLISHED' });

    // Also readable through the admin audit route.
    const listed = await app.api('GET', `/admin/audit-logs?action=plan.archived&limit=100`, { token });
    expect(listed.status, listed.text).toBe(200);
    expect((listed.body.items as Array<{ targetId: string }>).map((e) => e.targetId)).toContain(plan.id);
  });

  it('records nothing for a refused change', async () => {
    const plan = await createPlan(app, admin);
    await app.api('POST', `/admin/billing/plans/${plan.id}/restore`, { token: admin.accessToken }); // 409: not archived
    await app.api('PATCH', `/admin/billing/plans/${plan.id}`, { token: admin.accessToken, body: { priceCents: -1 } }); // 400
    const rows = await app.deps.db.selectFrom('audit_logs').select('action').where('target_id', '=', plan.id).execute();
    expect(rows.map((r) => r.action)).toEqual(['plan.created']);
  });
});

// ======================================================================== the in-memory catalog

describe('the public catalog is served from memory and refreshed on change', () => {
  it('serves its copy: a change written straight to the database is not seen until an admin change', async () => {
    const plan = await createPlan(app, admin, { status: 'PUBLISHED', name: 'Memory one' });
    const before = await publicCatalog();
    expect(before.find((p) => p.id === plan.id)?.name).toBe('Memory one');
    await app.deps.db.updateTable('plans').set({ name: 'Changed behind its back' }).where('id', '=', plan.id).execute();
    expect((await publicCatalog()).find((p) => p.id === plan.id)?.name).toBe('Memory one');
    // An admin change through the API clears the copy at once.
    expect(
      (
        await app.api('PATCH', `/admin/billing/plans/${plan.id}`, {
          token: admin.accessToken,
          body: { name: 'Memory two' },
        })
      ).status,
    ).toBe(200);
    expect((await publicCatalog()).find((p) => p.id === plan.id)?.name).toBe('Memory two');
    await app.api('DELETE', `/admin/billing/plans/${plan.id}`, { token: admin.accessToken });
  });

  it('reflects create, update, archive and delete on the same instance immediately', async () => {
    await publicCatalog(); // cached
    const plan = await createPlan(app, admin, { status: 'PUBLISHED', name: 'Instant' });
    expect((await publicCatalog()).find((p) => p.id === plan.id)?.name).toBe('Instant');
    await app.api('PATCH', `/admin/billing/plans/${plan.id}`, {
      token: admin.accessToken,
      body: { name: 'Instant 2', priceCents: 4321 },
    });
    expect((await publicCatalog()).find((p) => p.id === plan.id)).toMatchObject({
      name: 'Instant 2',
      priceCents: 4321,
    });
    await app.api('POST', `/admin/billing/plans/${plan.id}/archive`, { token: admin.accessToken });
    expect(await catalogSlugs(app)).not.toContain(plan.slug);
    await app.api('POST', `/admin/billing/plans/${plan.id}/restore`, { token: admin.accessToken });
    expect(await catalogSlugs(app)).toContain(plan.slug);
    await app.api('DELETE', `/admin/billing/plans/${plan.id}`, { token: admin.accessToken });
    expect(await catalogSlugs(app)).not.toContain(plan.slug);
  });

  describe('two instances sharing Redis', () => {
    let a: TestApp;
    let b: TestApp;
    let adminA: Session;
    beforeAll(async () => {
      const redis = { RATE_LIMIT_ENABLED: 'false', REDIS_URL: inject('redisUrl') };
      [a, b] = await Promise.all([startTestApp(redis), startTestApp(redis)]);
      adminA = await adminLogin(a);
    });
    afterAll(async () => {
      await Promise.all([a?.close(), b?.close()]);
    });

    it('a change on A is visible on B at once (pub/sub), well before the 60 s TTL', async () => {
      const plan = await createPlan(a, adminA, { status: 'PUBLISHED', name: 'Redis one' });
      // B has a copy with the plan in it.
      await waitFor(async () => (await catalogSlugs(b)).includes(plan.slug), {
        timeout: 2_000,
        message: 'B to list it',
      });
      expect(await catalogSlugs(b)).toContain(plan.slug);

      expect(
        (
          await a.api('PATCH', `/admin/billing/plans/${plan.id}`, {
            token: adminA.accessToken,
            body: { name: 'Redis two' },
          })
        ).status,
      ).toBe(200);
      await waitFor(
        async () => {
          const res = await b.api('GET', '/billing/plans');
          return (res.body.items as Plan[]).find((p) => p.id === plan.id)?.name === 'Redis two';
        },
        { timeout: 2_000, message: 'B to see the rename (within 2 s)' },
      );

      expect(
        (await a.api('POST', `/admin/billing/plans/${plan.id}/archive`, { token: adminA.accessToken })).status,
      ).toBe(200);
      await waitFor(async () => !(await catalogSlugs(b)).includes(plan.slug), {
        timeout: 2_000,
        message: 'B to stop listing the archived plan (within 2 s)',
      });
      await a.api('DELETE', `/admin/billing/plans/${plan.id}`, { token: adminA.accessToken });
    });
  });

  describe('two instances without Redis', () => {
    let b: TestApp;
    beforeAll(async () => {
      b = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
    });
    afterAll(() => b?.close());

    it('a change on A reaches B within the short TTL (about 5 s)', async () => {
      const plan = await createPlan(app, admin, { status: 'PUBLISHED', name: 'TTL one' });
      await waitFor(async () => (await catalogSlugs(b)).includes(plan.slug), {
        timeout: 7_000,
        message: 'B to list it',
      });
      const changedAt = Date.now();
      expect(
        (
          await app.api('PATCH', `/admin/billing/plans/${plan.id}`, {
            token: admin.accessToken,
            body: { name: 'TTL two' },
          })
        ).status,
      ).toBe(200);
      await waitFor(
        async () => {
          const res = await b.api('GET', '/billing/plans');
          return (res.body.items as Plan[]).find((p) => p.id === plan.id)?.name === 'TTL two';
        },
        { timeout: 7_000, interval: 200, message: 'B to see the rename (within 7 s)' },
      );
      expect(Date.now() - changedAt).toBeLessThan(7_500);
      await app.api('DELETE', `/admin/billing/plans/${plan.id}`, { token: admin.accessToken });
    }, 20_000);
  });
});
