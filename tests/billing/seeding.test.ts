// Seeding of the default plans, on a database of its own (the run's database is shared, and this file
// edits and deletes the seeded plans and moves the default): created once at first start, never
// overwritten by a restart; a new default plan unsets the old one (also when two admins set it at once);
// new workspaces start on the default, which therefore cannot be archived or deleted.
import crypto from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, registerAndLogin, type Session } from '../helpers/http.js';
import {
  ENTERPRISE_LIMITS,
  LITE_LIMITS,
  PRO_LIMITS,
  adminLogin,
  createPlan,
  currentOf,
  uniqueSlug,
} from './helpers.js';

const runDatabaseUrl = inject('databaseUrl');
const dbName = `billing_seed_${Date.now().toString(36)}_${crypto.randomBytes(3).toString('hex')}`;
const databaseUrl = (() => {
  const url = new URL(runDatabaseUrl);
  url.pathname = `/${dbName}`;
  return url.toString();
})();
/** The maintenance database of the same server, for create/drop. */
const maintenanceUrl = (() => {
  const url = new URL(runDatabaseUrl);
  url.pathname = '/postgres';
  return url.toString();
})();

async function onMaintenance(statement: string) {
  const client = new pg.Client({ connectionString: maintenanceUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

const start = () => startTestApp({ RATE_LIMIT_ENABLED: 'false', DATABASE_URL: databaseUrl });

let app: TestApp | undefined;

beforeAll(async () => {
  await onMaintenance(`create database "${dbName}"`);
});
afterAll(async () => {
  await app?.close();
  await onMaintenance(`drop database if exists "${dbName}" with (force)`);
});

const running = () => {
  if (!app) throw new Error('the app is not running');
  return app;
};

const plansWithSlug = (slug: string) =>
  running().deps.db.selectFrom('plans').selectAll().where('slug', '=', slug).execute();

async function restart() {
  await app?.close();
  app = undefined;
  app = await start();
}

describe('default plans on a fresh database', () => {
  let admin: Session;

  it('are created once at first start: Lite (default), Pro and Enterprise, PUBLISHED, with the documented prices and limits', async () => {
    app = await start();
    const rows = await running().deps.db.selectFrom('plans').selectAll().orderBy('sort_order').execute();
    expect(rows.map((r) => r.slug)).toEqual(['lite', 'pro', 'enterprise']);
    expect(rows.map((r) => [r.slug, r.edition, r.price_cents, r.currency, r.interval, r.status, r.is_default])).toEqual(
      [
        ['lite', 'LITE', 0, 'USD', 'MONTHLY', 'PUBLISHED', true],
        ['pro', 'PRO', 2900, 'USD', 'MONTHLY', 'PUBLISHED', false],
        ['enterprise', 'ENTERPRISE', 9900, 'USD', 'MONTHLY', 'PUBLISHED', false],
      ],
    );
    expect(rows.map((r) => r.limits)).toEqual([LITE_LIMITS, PRO_LIMITS, ENTERPRISE_LIMITS]);
  });

  it('are not created again by a second start', async () => {
    await restart();
    for (const slug of ['lite', 'pro', 'enterprise']) expect(await plansWithSlug(slug)).toHaveLength(1);
    expect(await running().deps.db.selectFrom('plans').select('id').execute()).toHaveLength(3);
  });

  it('keep an admin edit of Pro and the deletion of Enterprise across a restart', async () => {
    admin = await adminLogin(running());
    const pro = (await plansWithSlug('pro'))[0];
    const enterprise = (await plansWithSlug('enterprise'))[0];
    const edited = await running().api('PATCH', `/admin/billing/plans/${pro.id}`, {
      token: admin.accessToken,
      body: { priceCents: 3500, name: 'Pro (edited)', limits: { apiKeys: 6, aiMonthlyGenerations: 600, members: 12 } },
    });
    expect(edited.status, edited.text).toBe(200);
    const deleted = await running().api('DELETE', `/admin/billing/plans/${enterprise.id}`, {
      token: admin.accessToken,
    });
    expect(deleted.status, deleted.text).toBe(200);

    await restart();

    const [proAfter] = await plansWithSlug('pro');
    expect(proAfter).toMatchObject({
      id: pro.id,
      price_cents: 3500,
      name: 'Pro (edited)',
      limits: { apiKeys: 6, aiMonthlyGenerations: 600, members: 12 },
    });
    expect(await plansWithSlug('enterprise')).toEqual([]);
    const catalog = await running().api('GET', '/billing/plans');
    expect(catalog.status).toBe(200);
    const slugs = (catalog.body.items as Array<{ slug: string; priceCents: number }>).map((p) => p.slug);
    expect(slugs).toEqual(['lite', 'pro']);
    expect(catalog.body.items[1].priceCents).toBe(3500);
  });

  it('setting a new plan as default unsets the old one (at most one default)', async () => {
    admin = await adminLogin(running());
    const limits = { apiKeys: 1, aiMonthlyGenerations: 42, members: 5 };
    const starter = await createPlan(running(), admin, {
      slug: uniqueSlug('starter'),
      name: 'Starter',
      edition: 'CUSTOM',
      priceCents: 0,
      status: 'PUBLISHED',
      isDefault: true,
      sortOrder: 5,
      limits,
    });
    expect(starter.isDefault).toBe(true);
    const defaults = await running()
      .deps.db.selectFrom('plans')
      .select('slug')
      .where('is_default', '=', true)
      .execute();
    expect(defaults.map((d) => d.slug)).toEqual([starter.slug]);
    const lite = await running().api('GET', `/admin/billing/plans/${(await plansWithSlug('lite'))[0].id}`, {
      token: admin.accessToken,
    });
    expect(lite.body.isDefault).toBe(false);

    // Through PATCH as well: Lite becomes the default again, the new plan stops being it.
    const back = await running().api('PATCH', `/admin/billing/plans/${lite.body.id}`, {
      token: admin.accessToken,
      body: { isDefault: true },
    });
    expect(back.status, back.text).toBe(200);
    const after = await running().deps.db.selectFrom('plans').select('slug').where('is_default', '=', true).execute();
    expect(after.map((d) => d.slug)).toEqual(['lite']);
    // And again to the new plan, for the next test.
    expect(
      (
        await running().api('PATCH', `/admin/billing/plans/${starter.id}`, {
          token: admin.accessToken,
          body: { isDefault: true },
        })
      ).status,
    ).toBe(200);
  });

  it("a new registration's workspace starts on the default plan: its edition and limits", async () => {
    const [starter] = await running().deps.db.selectFrom('plans').selectAll().where('is_default', '=', true).execute();
    expect(starter.slug).toMatch(/^starter-/);
    const owner = await registerAndLogin(running().api, { prefix: 'seed-newcomer' });
    const current = await currentOf(running(), owner.accessToken, owner.workspaceId);
    expect(current).toMatchObject({
      workspaceId: owner.workspaceId,
      edition: 'CUSTOM',
      plan: { id: starter.id, slug: starter.slug },
      limits: { apiKeys: 1, aiMonthlyGenerations: 42, members: 5 },
      status: 'FREE',
      subscription: null,
    });
  });
});

describe('the default plan under concurrent and destructive admin changes', () => {
  let admin: Session;
  const defaults = () => running().deps.db.selectFrom('plans').select('id').where('is_default', '=', true).execute();
  const planRow = (id: string) =>
    running().deps.db.selectFrom('plans').selectAll().where('id', '=', id).executeTakeFirst();

  it('when admins set the default at once (PATCH and POST), then every request succeeds and exactly one default remains', async () => {
    admin = await adminLogin(running());
    for (let trial = 0; trial < 10; trial += 1) {
      const [a, b] = [
        await createPlan(running(), admin, { status: 'PUBLISHED' }),
        await createPlan(running(), admin, { status: 'PUBLISHED' }),
      ];
      const makeDefault = (id: string) =>
        running().api('PATCH', `/admin/billing/plans/${id}`, { token: admin.accessToken, body: { isDefault: true } });
      const createDefault = () =>
        running().api('POST', '/admin/billing/plans', {
          token: admin.accessToken,
          body: {
            name: 'Racing default',
            slug: uniqueSlug('racer'),
            priceCents: 0,
            edition: 'CUSTOM',
            status: 'PUBLISHED',
            isDefault: true,
          },
        });
      const results = await Promise.all([
        makeDefault(a.id),
        makeDefault(b.id),
        createDefault(),
        makeDefault(a.id),
        makeDefault(b.id),
        createDefault(),
      ]);
      expect(
        results.map((r) => r.status),
        results.map((r) => r.text).join('\n'),
      ).toEqual([200, 200, 201, 200, 200, 201]);
      const candidates = [a.id, b.id, results[2].body.id, results[5].body.id];
      const after = await defaults();
      expect(after).toHaveLength(1);
      expect(candidates).toContain(after[0].id);
    }
  });

  it('when the default plan is archived, then it is refused (409 INVALID_STATE) and nothing changes; once another plan is the default, it can be', async () => {
    const plan = await createPlan(running(), admin, { status: 'PUBLISHED', isDefault: true });
    const before = await planRow(plan.id);
    const err = expectError(
      await running().api('POST', `/admin/billing/plans/${plan.id}/archive`, { token: admin.accessToken }),
      409,
      'INVALID_STATE',
    );
    expect(err.message).toMatch(/default/i);
    expect(await planRow(plan.id)).toEqual(before);
    const audit = await running()
      .deps.db.selectFrom('audit_logs')
      .select('action')
      .where('target_id', '=', plan.id)
      .execute();
    expect(audit.map((r) => r.action)).toEqual(['plan.created']);

    // A new workspace still starts on it, PUBLISHED.
    const newcomer = await registerAndLogin(running().api, { prefix: 'seed-default-kept' });
    expect((await currentOf(running(), newcomer.accessToken, newcomer.workspaceId)).plan).toMatchObject({
      id: plan.id,
      status: 'PUBLISHED',
    });

    const next = await createPlan(running(), admin, { status: 'PUBLISHED', isDefault: true });
    const archived = await running().api('POST', `/admin/billing/plans/${plan.id}/archive`, {
      token: admin.accessToken,
    });
    expect(archived.status, archived.text).toBe(200);
    expect(archived.body).toMatchObject({ status: 'ARCHIVED', isDefault: false });
    expect((await defaults()).map((d) => d.id)).toEqual([next.id]);
  });

  it('when an ARCHIVED plan is made the default, then it is refused (409 INVALID_STATE) and the default stays where it was', async () => {
    const [current] = await defaults();
    const plan = await createPlan(running(), admin, { status: 'PUBLISHED' });
    expect(
      (await running().api('POST', `/admin/billing/plans/${plan.id}/archive`, { token: admin.accessToken })).status,
    ).toBe(200);
    const res = await running().api('PATCH', `/admin/billing/plans/${plan.id}`, {
      token: admin.accessToken,
      body: { isDefault: true },
    });
    expectError(res, 409, 'INVALID_STATE');
    expect(await planRow(plan.id)).toMatchObject({ status: 'ARCHIVED', is_default: false });
    expect(await defaults()).toEqual([current]);
  });

  it('when the default plan is deleted, then it is refused (409 INVALID_STATE) and the plan stays the default', async () => {
    const plan = await createPlan(running(), admin, { status: 'PUBLISHED', isDefault: true });
    expectError(
      await running().api('DELETE', `/admin/billing/plans/${plan.id}`, { token: admin.accessToken }),
      409,
      'INVALID_STATE',
    );
    expect(await planRow(plan.id)).toMatchObject({ is_default: true });
  });
});
