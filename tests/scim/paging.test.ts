// Unfiltered /scim/v2/Users pages of a directory of a thousand members, as a directory pages through it:
// totalResults follows creates, deletes (through SCIM and the workspace's own route) and deactivations;
// every page, shallow or deep, is the members in (created_at, id) order, before and after the pages'
// marks are read and right after a change makes them stale; concurrent writes never put a member twice
// on one page.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { waitFor } from '../helpers/wait.js';
import { marksVersion, MEMBER_SCOPE, STRIDE } from '../../routers/scim/paging.js';
import { hex, scimWorkspace, type ScimWorkspace } from './helpers.js';

const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
const SEEDED = 1_000;

let app: TestApp;
let d: ScimWorkspace;

beforeAll(async () => {
  app = await startTestApp();
  d = await scimWorkspace(app);
  // Written straight to the database, as the bench seeds: triples share a created_at (the id breaks the
  // tie) and the triples are a microsecond apart (finer than a JavaScript Date).
  await sql`
    with u as (
      insert into users (email, name, email_verified_at, provisioned_by_workspace_id)
      select 'seed' || i || '@' || ${d.domain}, 'Seed ' || i, now(), ${d.workspaceId}::uuid
      from generate_series(1, ${SEEDED}::int) as i
      returning id)
    insert into workspace_members (workspace_id, user_id, role, scim_managed, created_at)
    select ${d.workspaceId}::uuid, u.id, 'MEMBER', true,
      timestamptz '2020-01-01T00:00:00Z' + (row_number() over () / 3) * interval '1 microsecond'
    from u`.execute(app.deps.db);
  // Room for the members the tests add on top (the plan's limit is a seat count, not this file's subject).
  await sql`update workspaces set limits = limits || '{"members": 100000}' where id = ${d.workspaceId}::uuid`.execute(
    app.deps.db,
  );
});
afterAll(() => app?.close());

/** The workspace's members as the database orders them: what the pages must show. */
async function expectedOrder(): Promise<string[]> {
  const rows = await app.deps.db
    .selectFrom('workspace_members')
    .select('id')
    .where('workspace_id', '=', d.workspaceId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((r) => r.id);
}

async function page(startIndex: number, count: number) {
  const res = await d.scim('GET', `/Users?startIndex=${startIndex}&count=${count}`);
  expect(res.status, res.text).toBe(200);
  const ids = (res.body.Resources as Array<{ id: string }>).map((r) => r.id);
  expect(res.body.itemsPerPage).toBe(ids.length);
  expect(new Set(ids).size, 'a member twice on one page').toBe(ids.length);
  return { total: res.body.totalResults as number, ids, resources: res.body.Resources as Array<Record<string, any>> };
}

/** Pages at the edges of the marks and past the end equal the database's order, and the total its size. */
async function expectPagesInOrder() {
  const all = await expectedOrder();
  for (const start of [1, 2, STRIDE, STRIDE + 1, STRIDE + 2, 2 * STRIDE + 77, all.length - 5, all.length + 1]) {
    const got = await page(start, 37);
    expect(got.total).toBe(all.length);
    expect(got.ids, `startIndex ${start}`).toEqual(all.slice(start - 1, start - 1 + 37));
  }
}

const version = async () => {
  const row = await app.deps.db
    .selectFrom('list_counters')
    .select(sql<string>`coalesce(sum(changes), 0)::text`.as('v'))
    .where('scope', '=', MEMBER_SCOPE)
    .where('scope_id', '=', d.workspaceId)
    .executeTakeFirstOrThrow();
  return row.v;
};

/** Waits until this process holds marks of the workspace's current version (deep reads ask for them). */
async function marksCurrent() {
  const wanted = await version();
  await waitFor(async () => (await page(STRIDE * 2, 1)) && marksVersion(app.deps.db, d.workspaceId) === wanted, {
    message: 'the marks of the current version',
  });
}

const newUser = (email: string) => ({ schemas: [USER_SCHEMA], userName: email, active: true });

describe('unfiltered pages of a large directory', () => {
  it('counts the owner and every seeded member, and answers count=0 with the total alone', async () => {
    const none = await page(1, 0);
    expect(none).toMatchObject({ total: SEEDED + 1, ids: [] });
  });

  it('gives every page in order, before and after the marks of the current version are read', async () => {
    await expectPagesInOrder();
    await marksCurrent();
    await expectPagesInOrder();
  });

  it('keeps totalResults and the order right after deletes, creates and deactivations', async () => {
    await marksCurrent();
    const before = await expectedOrder();

    // A member in the middle deleted through SCIM: the marks after it are stale, and are not used.
    const removed = before[STRIDE + 10];
    expect((await d.scim('DELETE', `/Users/${removed}`)).status).toBe(204);
    let got = await page(STRIDE + 1, 50);
    expect(got.total).toBe(before.length - 1);
    expect(got.ids).toEqual(before.filter((id) => id !== removed).slice(STRIDE, STRIDE + 50));
    await expectPagesInOrder();

    // Created through SCIM: the last of the order.
    const created = await d.scim('POST', '/Users', newUser(`late-${hex()}@${d.domain}`));
    expect(created.status, created.text).toBe(201);
    got = await page(before.length - 1, 10);
    expect(got.total).toBe(before.length);
    expect(got.ids.at(-1)).toBe(created.body.id);

    // Deactivated: still a User of the directory, shown inactive, still counted.
    const deactivated = await d.scim('PATCH', `/Users/${created.body.id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'replace', path: 'active', value: false }],
    });
    expect(deactivated.status, deactivated.text).toBe(200);
    got = await page(before.length - 1, 10);
    expect(got.total).toBe(before.length);
    expect(got.resources.at(-1)).toMatchObject({ id: created.body.id, active: false });

    // Removed by an owner on the workspace's own route: counted by the same triggers.
    await marksCurrent();
    const [{ user_id: userId }] = await app.deps.db
      .selectFrom('workspace_members')
      .select('user_id')
      .where('id', '=', before[3 * STRIDE])
      .execute();
    const res = await app.api('DELETE', `/workspaces/${d.workspaceId}/members/${userId}`, {
      token: d.owner.accessToken,
    });
    expect(res.status, res.text).toBe(200);
    got = await page(1, 0);
    expect(got.total).toBe(before.length - 1);
    await expectPagesInOrder();
  });

  it('never shows a member twice on a page while members come and go, and ends exact', async () => {
    await marksCurrent();
    const victims = (await expectedOrder()).slice(100, 700).filter((_, i) => i % 30 === 0);
    const writes = [
      ...victims.map(async (id) => expect((await d.scim('DELETE', `/Users/${id}`)).status).toBe(204)),
      ...Array.from({ length: victims.length }, async (_, i) => {
        const res = await d.scim('POST', '/Users', newUser(`churn${i}-${hex()}@${d.domain}`));
        expect(res.status, res.text).toBe(201);
      }),
    ];
    const reads = Array.from({ length: 12 }, (_, i) => page(1 + i * 83, 200));
    await Promise.all([...writes, ...reads]);

    // Settled: the pages walked end to end are the database's order, once each.
    const all = await expectedOrder();
    const walked: string[] = [];
    for (let start = 1; start <= all.length; start += 200) {
      const got = await page(start, 200);
      expect(got.total).toBe(all.length);
      walked.push(...got.ids);
    }
    expect(walked).toEqual(all);
  });
});
