// Every list that grows with use, read by page and by cursor (docs/api.md, "Pagination"): a walk by
// cursor meets every row once and in order while rows keep arriving; cursors the service did not issue,
// cursor with page, and pages deeper than 10,000 rows are 400s; totals are exact without filters (kept by
// list_counters) and capped at 10,000 with them; and Postgres reads each list through an index.
import crypto from 'node:crypto';
import { Kysely, PostgresDialect, sql, type CompiledQuery, type RawBuilder } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../db/schema.js';
import { TEST_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, login, registerAndLogin, type Session } from '../helpers/http.js';
import { actorOf } from '../../server/platform/actor.js';
import * as ai from '../../routers/ai/history.js';
import * as analytics from '../../routers/analytics/service.js';
import * as audit from '../../routers/audit/service.js';
import * as billing from '../../routers/billing/service.js';
import * as email from '../../routers/email/service.js';
import * as support from '../../routers/support/service.js';
import * as users from '../../routers/users/service.js';
import * as webhooks from '../../routers/webhooks/service.js';
import * as workspaces from '../../routers/workspaces/admin.js';

let app: TestApp;
let admin: Session;

beforeAll(async () => {
  app = await startTestApp();
  admin = await login(app.api, TEST_ADMIN.email, TEST_ADMIN.password);
});
afterAll(() => app?.close());

const hex = (n = 4) => crypto.randomBytes(n).toString('hex');
const AT = sql<string>`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
/** Seeded rows are older than anything the tests write through the API, three by three at the same microsecond. */
const SEEDED_AT = sql`'2026-01-01T00:00:00.123456Z'::timestamptz - (g / 3) * interval '1.000001 second'`;

interface Seeded {
  id: string;
  at: string;
}

/** What a case needs: where the list is, who reads it, how to add rows to it and how to count them. */
interface ListCase {
  name: string;
  /** The list's path with its scope and filters, ending in `?` or `&`. */
  path: string;
  token: string;
  /** Adds n rows; `at` is the created_at expression over g (1..n), or null for now(). */
  seed(n: number, at: RawBuilder<unknown> | null): Promise<Seeded[]>;
  /** How many rows the list holds now (its scope and filters, straight from the table). */
  count(): Promise<number>;
}

const run = async (query: RawBuilder<unknown>) => (await query.execute(app.deps.db)).rows as Seeded[];
const countOf = async (query: RawBuilder<unknown>) =>
  Number(((await query.execute(app.deps.db)).rows[0] as { n: string }).n);
const series = (n: number, at: RawBuilder<unknown> | null) => ({
  from: sql`from generate_series(1, ${n}::int) g`,
  at: at ?? sql`now()`,
});

async function workspaceCases(): Promise<ListCase[]> {
  const owner = () => registerAndLogin(app.api, { prefix: 'lists' });
  const generations = async (name: string, path: (ws: string) => string): Promise<ListCase> => {
    const s = await owner();
    return {
      name,
      path: path(s.workspaceId),
      token: s.accessToken,
      seed: (n, at) => {
        const { from, at: created } = series(n, at);
        return run(sql`insert into ai_generations (workspace_id, provider, model, prompt, output, status, created_at)
          select ${s.workspaceId}::uuid, 'MOCK', 'seed', 'prompt ' || g, 'output', 'SUCCEEDED', ${created} ${from}
          returning id, ${AT} as at`);
      },
      count: () =>
        countOf(sql`select count(*) as n from ai_generations where workspace_id = ${s.workspaceId} and not is_sample`),
    };
  };
  const auditCase = async (name: string, path: (ws: string) => string, token?: string): Promise<ListCase> => {
    const s = await owner();
    return {
      name,
      path: path(s.workspaceId),
      token: token ?? s.accessToken,
      seed: (n, at) => {
        const { from, at: created } = series(n, at);
        return run(sql`insert into audit_logs (action, workspace_id, created_at)
          select 'seed.entry', ${s.workspaceId}::uuid, ${created} ${from} returning id, ${AT} as at`);
      },
      count: () => countOf(sql`select count(*) as n from audit_logs where workspace_id = ${s.workspaceId}`),
    };
  };
  const payments = async (name: string, path: (ws: string) => string): Promise<ListCase> => {
    const s = await owner();
    return {
      name,
      path: path(s.workspaceId),
      token: s.accessToken,
      seed: (n, at) => {
        const { from, at: created } = series(n, at);
        return run(sql`insert into payments (workspace_id, provider, amount_cents, currency, status, description, created_at)
          select ${s.workspaceId}::uuid, 'MOCK', 100 * g, 'USD', 'SUCCEEDED', 'seed', ${created} ${from}
          returning id, ${AT} as at`);
      },
      count: () => countOf(sql`select count(*) as n from payments where workspace_id = ${s.workspaceId}`),
    };
  };
  const deliveries = async (): Promise<ListCase> => {
    const s = await owner();
    const webhookId = await seedWebhook(s.workspaceId);
    return {
      name: 'GET /workspaces/{workspaceId}/webhook-deliveries',
      path: `/workspaces/${s.workspaceId}/webhook-deliveries?`,
      token: s.accessToken,
      seed: (n, at) => seedDeliveries(s.workspaceId, webhookId, n, at),
      count: () => countOf(sql`select count(*) as n from webhook_deliveries where workspace_id = ${s.workspaceId}`),
    };
  };
  return Promise.all([
    generations('GET /ai/history', (ws) => `/ai/history?workspaceId=${ws}&`),
    generations('GET /workspaces/{workspaceId}/ai/generations', (ws) => `/workspaces/${ws}/ai/generations?`),
    auditCase('GET /workspaces/{workspaceId}/audit-logs', (ws) => `/workspaces/${ws}/audit-logs?`),
    auditCase('GET /admin/audit-logs?workspaceId=', (ws) => `/admin/audit-logs?workspaceId=${ws}&`, admin.accessToken),
    payments('GET /billing/history', (ws) => `/billing/history?workspaceId=${ws}&`),
    payments('GET /workspaces/{workspaceId}/billing/payments', (ws) => `/workspaces/${ws}/billing/payments?`),
    deliveries(),
  ]);
}

async function seedWebhook(workspaceId: string) {
  const row = await app.deps.db
    .insertInto('webhooks')
    .values({
      workspace_id: workspaceId,
      name: 'lists',
      url: 'https://hooks.example.invalid/lists',
      events: JSON.stringify(['*']),
      secret_encrypted: 'not-a-secret',
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

/** Deliveries already finished (success), so no delivery sweep of any test app picks them up. */
function seedDeliveries(workspaceId: string, webhookId: string, n: number, at: RawBuilder<unknown> | null) {
  const { from, at: created } = series(n, at);
  return run(sql`insert into webhook_deliveries (webhook_id, workspace_id, event, payload, status, created_at)
    select ${webhookId}::uuid, ${workspaceId}::uuid, 'seed.event', '{}'::jsonb, 'success', ${created} ${from}
    returning id, ${AT} as at`);
}

function platformCases(): ListCase[] {
  const tag = `lists${hex()}`;
  const to = `${tag}@tests.local`;
  const simple = (name: string, path: string, table: string, columns: string, values: RawBuilder<unknown>) => ({
    name,
    path,
    token: admin.accessToken,
    seed: (n: number, at: RawBuilder<unknown> | null) => {
      const { from, at: created } = series(n, at);
      return run(sql`insert into ${sql.table(table)} (${sql.raw(columns)}, created_at)
        select ${values}, ${created} ${from} returning id, ${AT} as at`);
    },
    count: () => countOf(sql`select count(*) as n from ${sql.table(table)}`),
  });
  return [
    {
      ...simple(
        'GET /admin/users?search=',
        `/admin/users?search=${tag}&`,
        'users',
        'email, name',
        sql`${tag} || '-' || md5(random()::text) || '@tests.local', ${tag}`,
      ),
      count: () => countOf(sql`select count(*) as n from users where name = ${tag}`),
    },
    {
      ...simple(
        'GET /admin/workspaces?search=',
        `/admin/workspaces?search=${tag}&`,
        'workspaces',
        'name',
        sql`${tag} || ' ' || g`,
      ),
      count: () => countOf(sql`select count(*) as n from workspaces where name like ${tag + '%'}`),
    },
    simple(
      'GET /admin/contact-messages',
      '/admin/contact-messages?',
      'contact_messages',
      'name, email, message',
      sql`'Lists', ${to}, 'message ' || g`,
    ),
    simple(
      'GET /admin/support-tickets',
      '/admin/support-tickets?',
      'support_tickets',
      'subject, message',
      sql`${tag}, 'message ' || g`,
    ),
    {
      ...simple(
        'GET /admin/email-logs?to=',
        `/admin/email-logs?to=${encodeURIComponent(to)}&`,
        'email_logs',
        '"to", subject, template, text',
        sql`${to}, 'subject ' || g, 'seed', 'text'`,
      ),
      count: () => countOf(sql`select count(*) as n from email_logs where "to" = ${to}`),
    },
    {
      ...simple(
        'GET /admin/analytics/events?name=',
        `/admin/analytics/events?name=${tag}&`,
        'analytics_events',
        'name, properties',
        sql`${tag}, jsonb_build_object('g', g)`,
      ),
      count: () => countOf(sql`select count(*) as n from analytics_events where name = ${tag}`),
    },
  ];
}

let cases: ListCase[] = [];
beforeAll(async () => {
  cases = [...(await workspaceCases()), ...platformCases()];
});

/** Newest first: created_at, then id, both descending (the lists' order). */
const newestFirst = (rows: Seeded[]) =>
  [...rows].sort((a, b) => (a.at === b.at ? b.id.localeCompare(a.id) : b.at.localeCompare(a.at))).map((r) => r.id);

const get = (c: ListCase, query: string) => app.api('GET', `${c.path}${query}`, { token: c.token });

/** Every case, by name, for it.each: the cases are built in beforeAll (they need the app). */
const NAMES = [
  'GET /ai/history',
  'GET /workspaces/{workspaceId}/ai/generations',
  'GET /workspaces/{workspaceId}/audit-logs',
  'GET /admin/audit-logs?workspaceId=',
  'GET /billing/history',
  'GET /workspaces/{workspaceId}/billing/payments',
  'GET /workspaces/{workspaceId}/webhook-deliveries',
  'GET /admin/users?search=',
  'GET /admin/workspaces?search=',
  'GET /admin/contact-messages',
  'GET /admin/support-tickets',
  'GET /admin/email-logs?to=',
  'GET /admin/analytics/events?name=',
];
const caseNamed = (name: string) => {
  const c = cases.find((x) => x.name === name);
  if (!c) throw new Error(`no case ${name}`);
  return c;
};

describe.each(NAMES)('%s', (name) => {
  let seeded: Seeded[] = [];
  beforeAll(async () => {
    seeded = await caseNamed(name).seed(40, SEEDED_AT);
  });

  it('walked by cursor, answers every row once, newest first, while rows keep arriving', async () => {
    const c = caseNamed(name);
    const seen: string[] = [];
    let res = await get(c, 'limit=7');
    expect(res.status).toBe(200);
    for (let pages = 0; ; pages++) {
      expect(pages).toBeLessThan(200);
      seen.push(...res.body.items.map((i: { id: string }) => i.id));
      // Only the API's own fields: none of the columns a page is read with (list_at, batch_branch, ...).
      for (const item of res.body.items) expect(Object.keys(item).filter((k) => k.includes('_'))).toEqual([]);
      if (res.body.nextCursor === null) break;
      // Rows written during the walk (now, so before the cursor) never shift it.
      await c.seed(2, null);
      res = await get(c, `limit=7&cursor=${encodeURIComponent(res.body.nextCursor)}`);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['items', 'limit', 'nextCursor']);
    }
    expect(new Set(seen).size).toBe(seen.length);
    const ids = new Set(seeded.map((r) => r.id));
    expect(seen.filter((id) => ids.has(id))).toEqual(newestFirst(seeded));
  });

  it('answers in page mode the nextCursor that continues after that page, and the same pages as page=', async () => {
    const c = caseNamed(name);
    const first = await get(c, 'limit=5');
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ page: 1, limit: 5, totalCapped: false });
    expect(typeof first.body.nextCursor).toBe('string');
    const byCursor = await get(c, `limit=5&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    const byPage = await get(c, 'limit=5&page=2');
    expect(byPage.status).toBe(200);
    expect(byCursor.body.items.map((i: { id: string }) => i.id)).toEqual(
      byPage.body.items.map((i: { id: string }) => i.id),
    );
  });

  it('answers the exact total, and a null nextCursor on the last page', async () => {
    const c = caseNamed(name);
    const before = await c.count();
    const res = await get(c, 'limit=100');
    const after = await c.count();
    expect(res.status).toBe(200);
    expect(res.body.total).toBeGreaterThanOrEqual(before);
    expect(res.body.total).toBeLessThanOrEqual(after);
    expect(res.body.totalPages).toBe(Math.ceil(res.body.total / 100));
    const last = await get(c, `limit=100&page=${res.body.totalPages}`);
    expect(last.body.nextCursor).toBeNull();
  });

  it('refuses a cursor it did not issue: tampered, garbage, or issued by another list', async () => {
    const c = caseNamed(name);
    const cursor: string = (await get(c, 'limit=3')).body.nextCursor;
    const [payload, mac] = cursor.split('.');
    const position = JSON.parse(Buffer.from(payload, 'base64url').toString()) as [string, string];
    const moved = Buffer.from(JSON.stringify(['2030-01-01T00:00:00.000000Z', position[1]])).toString('base64url');
    const other = name === 'GET /admin/contact-messages' ? 'GET /admin/support-tickets' : 'GET /admin/contact-messages';
    const foreign: string = (await get(caseNamed(other), 'limit=1')).body.nextCursor;
    for (const bad of [
      `${moved}.${mac}`,
      `${payload}.${mac.slice(0, -2)}AA`,
      payload,
      'garbage',
      `${payload}.${mac}.x`,
      foreign,
    ]) {
      const res = await get(c, `cursor=${encodeURIComponent(bad)}`);
      const body = expectError(res, 400, 'BAD_REQUEST');
      expect(body.message).toMatch(/cursor/);
    }
    expectError(await get(c, `cursor=${'a'.repeat(257)}`), 400, 'BAD_REQUEST');
  });

  it('refuses cursor and page together', async () => {
    const c = caseNamed(name);
    const cursor: string = (await get(c, 'limit=3')).body.nextCursor;
    const body = expectError(await get(c, `page=1&cursor=${encodeURIComponent(cursor)}`), 400, 'BAD_REQUEST');
    expect(body.message).toMatch(/page or cursor/);
  });

  it('refuses a page deeper than 10,000 rows, naming cursor, and answers one that reaches exactly 10,000', async () => {
    const c = caseNamed(name);
    for (const query of ['page=101&limit=100', 'page=10001&limit=1', 'page=20000']) {
      const body = expectError(await get(c, query), 400, 'BAD_REQUEST');
      expect(body.message).toMatch(/10,000.*cursor/);
    }
    const deepest = await get(c, 'page=500&limit=20');
    expect(deepest.status).toBe(200);
    expect(deepest.body.items).toEqual([]);
    expect(deepest.body.nextCursor).toBeNull();
  });
});

describe('GET /openapi.json', () => {
  const PATHS = [
    '/ai/history',
    '/workspaces/{workspaceId}/ai/generations',
    '/workspaces/{workspaceId}/audit-logs',
    '/admin/audit-logs',
    '/billing/history',
    '/workspaces/{workspaceId}/billing/payments',
    '/workspaces/{workspaceId}/webhook-deliveries',
    '/admin/users',
    '/admin/workspaces',
    '/admin/contact-messages',
    '/admin/support-tickets',
    '/admin/email-logs',
    '/admin/analytics/events',
  ];
  it.each(PATHS)('documents cursor (at most 256 characters), nextCursor and totalCapped on GET %s', async (path) => {
    const doc = (await app.api('GET', '/openapi.json')).body;
    const op = doc.paths[path].get;
    const params = op.parameters as Array<{ name: string; in: string; schema: { maxLength?: number } }>;
    const cursor = params.find((p) => p.name === 'cursor' && p.in === 'query');
    expect(cursor?.schema.maxLength).toBe(256);
    expect(params.find((p) => p.name === 'page')).toBeDefined();
    const schema = op.responses['200'].content['application/json'].schema;
    const resolved = schema.$ref ? doc.components.schemas[schema.$ref.split('/').pop()] : schema;
    expect(Object.keys(resolved.properties)).toEqual(
      expect.arrayContaining(['items', 'limit', 'nextCursor', 'totalCapped']),
    );
    expect(resolved.required).toEqual(expect.arrayContaining(['items', 'limit', 'nextCursor']));
  });
});

describe('totals', () => {
  let owner: Session;
  let webhookId: string;
  beforeAll(async () => {
    owner = await registerAndLogin(app.api, { prefix: 'lists-total' });
    webhookId = await seedWebhook(owner.workspaceId);
    // More than 10,000 rows in one set-based insert.
    await seedDeliveries(owner.workspaceId, webhookId, 10_050, SEEDED_AT);
  });
  const deliveries = (query: string) =>
    app.api('GET', `/workspaces/${owner.workspaceId}/webhook-deliveries?${query}`, { token: owner.accessToken });

  it('are exact past 10,000 without filters, and capped at 10,000 with totalCapped: true with one', async () => {
    const all = await deliveries('limit=100');
    expect(all.body).toMatchObject({ total: 10_050, totalPages: 101, totalCapped: false });
    const filtered = await deliveries(`limit=100&status=success&webhookId=${webhookId}`);
    expect(filtered.body).toMatchObject({ total: 10_000, totalPages: 100, totalCapped: true });
    const none = await deliveries('status=failed');
    expect(none.body).toMatchObject({ items: [], total: 0, totalPages: 0, totalCapped: false, nextCursor: null });
  });

  it('follow deletes, cascades and concurrent writers exactly', async () => {
    await sql`delete from webhook_deliveries where id in (
      select id from webhook_deliveries where workspace_id = ${owner.workspaceId} limit 50)`.execute(app.deps.db);
    expect((await deliveries('limit=1')).body.total).toBe(10_000);
    // Twenty writers at once, each in its own transaction.
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        app.deps.db.transaction().execute((trx) =>
          sql`insert into webhook_deliveries (webhook_id, workspace_id, event, payload, status)
            select ${webhookId}::uuid, ${owner.workspaceId}::uuid, 'race', '{}'::jsonb, 'success'
            from generate_series(1, ${i + 1}::int)`.execute(trx),
        ),
      ),
    );
    expect((await deliveries('limit=1')).body.total).toBe(10_000 + 210);
    // The webhook goes, and its deliveries with it (a cascade).
    await app.deps.db.deleteFrom('webhooks').where('id', '=', webhookId).execute();
    expect((await deliveries('limit=1')).body).toMatchObject({ total: 0, items: [], nextCursor: null });
  });
});

describe('deep pages', () => {
  let owner: Session;
  let logged: Kysely<Database>;
  let pool: pg.Pool;
  const captured: CompiledQuery[] = [];
  beforeAll(async () => {
    owner = await registerAndLogin(app.api, { prefix: 'lists-anchor' });
    pool = new pg.Pool({ connectionString: app.config.DATABASE_URL, max: 2 });
    logged = new Kysely<Database>({
      dialect: new PostgresDialect({ pool }),
      log: (event) => void (event.level === 'query' && captured.push(event.query)),
    });
    await addGenerations(500, SEEDED_AT);
  });
  afterAll(() => logged?.destroy());

  function addGenerations(n: number, at: RawBuilder<unknown> | null) {
    const s = series(n, at);
    return sql`insert into ai_generations (workspace_id, provider, model, prompt, output, status, created_at)
      select ${owner.workspaceId}::uuid, 'MOCK', 'seed', 'p', 'o', 'SUCCEEDED', ${s.at} ${s.from}`.execute(app.deps.db);
  }
  /** Page `page` of 20, by the service, and as Postgres walks it. */
  const servicePage = async (page: number) =>
    (
      await ai.history(
        { db: logged, config: app.config },
        actorOf({ user: { id: owner.userId, email: owner.email } }),
        { workspaceId: owner.workspaceId, page, limit: 20 },
      )
    ).items.map((i) => i.id);
  const walkedPage = async (page: number) =>
    (
      await sql<{
        id: string;
      }>`select id from ai_generations where workspace_id = ${owner.workspaceId} and not is_sample
        order by created_at desc, id desc offset ${(page - 1) * 20} limit 20`.execute(app.deps.db)
    ).rows.map((r) => r.id);

  it('read again, start at their first row without walking the offset', async () => {
    expect(await servicePage(20)).toEqual(await walkedPage(20));
    captured.length = 0;
    expect(await servicePage(20)).toEqual(await walkedPage(20));
    const [statement] = captured.filter((q) => q.sql.includes('union all'));
    expect(statement, 'the second read starts at the anchor').toBeDefined();
    const { rows } = await pool.query<{ 'QUERY PLAN': string }>(
      `explain (analyze, costs off, timing off) ${statement.sql}`,
      [...statement.parameters],
    );
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    // The walk (the offset, on a second scan of the history index) is in the plan, and never runs.
    expect(plan).toMatch(/Scan Backward using ai_generations_history_idx on ai_generations \w+ \(never executed\)/);
  });

  it('follow every insert and delete of the list, page by page', async () => {
    const pages = [2, 7, 20];
    for (const page of pages) expect(await servicePage(page)).toEqual(await walkedPage(page));
    await addGenerations(3, null); // newest: every page shifts by three
    for (const page of pages)
      expect(await servicePage(page), `after inserts, page ${page}`).toEqual(await walkedPage(page));
    await sql`delete from ai_generations where id in (
      select id from ai_generations where workspace_id = ${owner.workspaceId} order by created_at desc offset 100 limit 7)`.execute(
      app.deps.db,
    ); // between pages 2 and 7
    for (const page of pages)
      expect(await servicePage(page), `after deletes, page ${page}`).toEqual(await walkedPage(page));
    await addGenerations(2, sql`'2000-01-01'::timestamptz + g * interval '1 second'`); // oldest: no page moves
    for (const page of pages)
      expect(await servicePage(page), `after old rows, page ${page}`).toEqual(await walkedPage(page));
  });
});

describe('query plans', () => {
  /** Every list query the services ran through this database, as sent. */
  const captured: CompiledQuery[] = [];
  let logged: Kysely<Database>;
  let pool: pg.Pool;
  let ws: Session;
  let hook: string;

  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: app.config.DATABASE_URL, max: 2 });
    logged = new Kysely<Database>({
      dialect: new PostgresDialect({ pool }),
      log: (event) => {
        if (event.level === 'query') captured.push(event.query);
      },
    });
    ws = await registerAndLogin(app.api, { prefix: 'lists-plan' });
    hook = await seedWebhook(ws.workspaceId);
    // Thousands of rows spread over many workspaces (this file's own) and the platform, then fresh statistics.
    const own = (
      await sql<{ id: string }>`insert into workspaces (name)
      select ${'plan-ws-' + hex()} || g from generate_series(1, 40) g returning id`.execute(app.deps.db)
    ).rows.map((r) => r.id);
    const spread = (table: string, columns: string, values: string) =>
      sql`insert into ${sql.table(table)} (workspace_id, ${sql.raw(columns)}, created_at)
        select w, ${sql.raw(values)}, now() - g * interval '1 minute'
        from unnest(${[ws.workspaceId, ...own]}::uuid[]) w, generate_series(1, 100) g`.execute(app.deps.db);
    await spread('ai_generations', 'provider, model, prompt, output, status', `'MOCK', 'seed', 'p', 'o', 'SUCCEEDED'`);
    await spread('audit_logs', 'action', `'seed.entry'`);
    await spread('payments', 'provider, amount_cents, currency, status', `'MOCK', 100, 'USD', 'SUCCEEDED'`);
    for (let i = 0; i < 20; i++) {
      const s = i === 0 ? ws : await registerAndLogin(app.api, { prefix: 'lists-plan' });
      const w = i === 0 ? hook : await seedWebhook(s.workspaceId);
      await seedDeliveries(s.workspaceId, w, 200, SEEDED_AT);
    }
    const t = `plan${hex()}`;
    await sql`insert into users (email, name) select ${t} || g || '@tests.local', ${t} from generate_series(1, 3000) g`.execute(
      app.deps.db,
    );
    await sql`insert into workspaces (name) select ${t} || g from generate_series(1, 3000) g`.execute(app.deps.db);
    await sql`insert into contact_messages (name, email, message) select 'n', 'e@tests.local', 'm' from generate_series(1, 3000)`.execute(
      app.deps.db,
    );
    await sql`insert into support_tickets (subject, message) select 's', 'm' from generate_series(1, 3000)`.execute(
      app.deps.db,
    );
    await sql`insert into email_logs ("to", subject, template, text)
      select 'plan' || (g % 50) || '@tests.local', 's', 't', 'x' from generate_series(1, 3000) g`.execute(app.deps.db);
    // One event a name: 20 names of 150 events each filled the admin summary's top 20 and pushed out the
    // events tests/modules/analytics.test.ts counts there, when both files share the database.
    await sql`insert into analytics_events (name) select 'plan.' || g from generate_series(1, 3000) g`.execute(
      app.deps.db,
    );
    await sql`analyze`.execute(app.deps.db);
  });
  afterAll(() => logged?.destroy());

  type Read = (request: { page?: number; limit: number; cursor?: string }) => Promise<{
    items: unknown[];
    nextCursor: string | null;
  }>;
  /** [label, the list's own table, a read of the list] for every list, on the logging database. */
  function listReads(): Array<[string, string, Read]> {
    const deps = { db: logged, config: app.config };
    const owner = { id: ws.userId, email: ws.email };
    const id = ws.workspaceId;
    return [
      ['ai history', 'ai_generations', (r) => ai.history(deps, actorOf({ user: owner }), { ...r, workspaceId: id })],
      ['workspace audit', 'audit_logs', (r) => audit.listAudit(deps, { ...r, workspaceId: id })],
      [
        'workspace audit by action',
        'audit_logs',
        (r) => audit.listAudit(deps, { ...r, workspaceId: id, action: 'seed.entry' }),
      ],
      ['admin audit', 'audit_logs', (r) => audit.listAudit(deps, r)],
      ['billing history', 'payments', (r) => billing.paymentHistory(deps, { ...r, workspaceId: id })],
      ['deliveries', 'webhook_deliveries', (r) => webhooks.listDeliveries(deps, { ...r, workspaceId: id })],
      [
        'deliveries by status',
        'webhook_deliveries',
        (r) => webhooks.listDeliveries(deps, { ...r, workspaceId: id, status: 'success' }),
      ],
      [
        'deliveries by webhook',
        'webhook_deliveries',
        (r) => webhooks.listDeliveries(deps, { ...r, workspaceId: id, webhookId: hook }),
      ],
      ['admin users', 'users', (r) => users.listUsers(deps, r)],
      ['admin workspaces', 'workspaces', (r) => workspaces.adminListWorkspaces(deps, r)],
      ['contact messages', 'contact_messages', (r) => support.listContactMessages(deps, r)],
      ['support tickets', 'support_tickets', (r) => support.listTickets(deps, r)],
      ['e-mail logs', 'email_logs', (r) => email.listEmailLogs(deps, { ...r, callerPlatformRole: 'ADMIN' })],
      [
        'e-mail logs to one address',
        'email_logs',
        (r) => email.listEmailLogs(deps, { ...r, callerPlatformRole: 'ADMIN', to: 'plan7@tests.local' }),
      ],
      ['analytics events', 'analytics_events', (r) => analytics.listEvents(deps, r)],
      ['analytics events of one name', 'analytics_events', (r) => analytics.listEvents(deps, { ...r, name: 'plan.7' })],
    ];
  }

  /** EXPLAINs every captured list query; answers the plans. */
  async function plansOf(label: string, table: string): Promise<string[]> {
    const plans: string[] = [];
    // The type probe of a batched shape (PREPARE, its catalog read, DEALLOCATE) is not a list query.
    const listQueries = captured.filter((q) => q.sql.startsWith('select') && !q.sql.includes('pg_prepared_statements'));
    for (const query of listQueries) {
      const { rows } = await pool.query<{ 'QUERY PLAN': string }>(`explain ${query.sql}`, [...query.parameters]);
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      plans.push(plan);
      expect(plan, `${label}:\n${query.sql}\n${plan}`).not.toMatch(new RegExp(`Seq Scan on ${table}\\b`));
    }
    return plans;
  }

  it('reads every list, on its first page, a deep page and by cursor, without a sequential scan', async () => {
    const reads = listReads();
    const plans: string[] = [];
    // The list's own table: the page, its count and, for AI history, its rows by id. (The owners of a page
    // of workspaces are then read by workspace id, a lookup the size of the page.)
    for (const [label, table, read] of reads) {
      captured.length = 0;
      const first = await read({ limit: 20 });
      await read({ page: 5, limit: 20 });
      if (first.nextCursor) await read({ limit: 20, cursor: first.nextCursor });
      expect(captured.length, label).toBeGreaterThan(0);
      plans.push(...(await plansOf(label, table)));
    }
    expect(plans.length).toBeGreaterThan(reads.length * 3);
  });

  it('answers pages asked together from one batched statement, each as if asked alone, without a sequential scan', async () => {
    for (const [label, table, read] of listReads()) {
      const first = await read({ limit: 20 });
      // Page 1, a deep page and a cursor's page (a list of one page, as one name's events, has no cursor).
      const shapes: Array<Parameters<Read>[0]> = [{ limit: 20 }, { page: 5, limit: 20 }];
      if (first.nextCursor) shapes.push({ limit: 20, cursor: first.nextCursor });
      const alone: Array<Awaited<ReturnType<Read>>> = [];
      for (const shape of shapes) alone.push(await read(shape));
      captured.length = 0;
      // Three of each shape at once (db/batched.ts, batchedSelect).
      const together = await Promise.all([0, 1, 2].flatMap(() => shapes.map((shape) => read(shape))));
      together.forEach((page, i) => expect(page, `${label} #${i}`).toEqual(alone[i % shapes.length]));
      const batched = captured.filter((q) => q.sql.includes('cross join lateral'));
      expect(batched.length, label).toBeGreaterThanOrEqual(shapes.length);
      await plansOf(label, table);
    }
  });
});
