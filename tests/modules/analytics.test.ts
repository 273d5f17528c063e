// Product analytics (docs/decisions.md, "Analytics"): POST /analytics/events accepts an event from anyone
// (202), named by ^[a-z][a-z0-9_.:-]{0,63}$, with at most 20 scalar properties in 2 KiB, and an optional
// workspace that counts only for a signed-in member of it; anything else is a 400 that stores nothing.
// GET /admin/analytics/summary counts by event and by day, with top events and unique users. The
// database is shared by parallel test files: every assertion is about event names this file made up.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, TEST_DEMO_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, login, registerAndLogin, type Session } from '../helpers/http.js';

let app: TestApp;
let member: Session;
let stranger: Session;
let admin: Session;
let demoAdmin: Session;

/** A prefix no other test file uses: every event name of this file starts with it. */
const RUN = `modtest.${crypto.randomBytes(4).toString('hex')}`;
let seq = 0;
const eventName = (label: string) => `${RUN}.${label}.${++seq}`;

async function track(body: unknown, token?: string) {
  return app.api('POST', '/analytics/events', { body, ...(token ? { token } : {}) });
}

async function rowsNamed(name: string) {
  return app.deps.db.selectFrom('analytics_events').selectAll().where('name', '=', name).execute();
}

async function expectAccepted(body: { name: string; [k: string]: unknown }, token?: string) {
  const res = await track(body, token);
  expect(res.status, res.text).toBe(202);
  expect(res.body).toEqual({ accepted: true });
}

async function expectRefused(body: Record<string, unknown>, field: string) {
  const res = await track(body);
  const err = expectError(res, 400, 'BAD_REQUEST');
  expect(err.issues?.map((i) => i.path.split('.')[0])).toContain(field);
  if (typeof body.name === 'string') expect(await rowsNamed(body.name)).toEqual([]);
}

beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
  [member, stranger, admin, demoAdmin] = await Promise.all([
    registerAndLogin(app.api, { prefix: 'analytics-member' }),
    registerAndLogin(app.api, { prefix: 'analytics-stranger' }),
    login(app.api, TEST_ADMIN.email, TEST_ADMIN.password),
    login(app.api, TEST_DEMO_ADMIN.email, TEST_DEMO_ADMIN.password),
  ]);
});
afterAll(() => app?.close());

describe('POST /analytics/events: accepted events', () => {
  it('accepts an anonymous event with properties (202) and stores it as sent, with no user or workspace', async () => {
    const name = eventName('anon');
    const properties = { path: '/pricing', plan: 'pro', seconds: 12.5, returning: false, ref: null };
    await expectAccepted({ name, properties });
    const rows = await rowsNamed(name);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ user_id: null, workspace_id: null, properties });
  });

  it('stores {} when there are no properties', async () => {
    const name = eventName('bare');
    await expectAccepted({ name });
    expect((await rowsNamed(name)).map((r) => r.properties)).toEqual([{}]);
  });

  it('attributes a signed-in caller, and keeps the workspace they are a member of', async () => {
    const name = eventName('member');
    await expectAccepted({ name, workspaceId: member.workspaceId, properties: { step: 1 } }, member.accessToken);
    const rows = await rowsNamed(name);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ user_id: member.userId, workspace_id: member.workspaceId });
  });

  it('drops a workspace the signed-in caller is not a member of (the event is still accepted)', async () => {
    const name = eventName('foreign-ws');
    await expectAccepted({ name, workspaceId: member.workspaceId }, stranger.accessToken);
    const rows = await rowsNamed(name);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ user_id: stranger.userId, workspace_id: null });
  });

  it('drops the workspace of an anonymous event', async () => {
    const name = eventName('anon-ws');
    await expectAccepted({ name, workspaceId: member.workspaceId });
    expect((await rowsNamed(name))[0]).toMatchObject({ user_id: null, workspace_id: null });
  });

  it('treats an invalid access token as anonymous rather than refusing the event', async () => {
    const name = eventName('bad-token');
    await expectAccepted({ name, workspaceId: member.workspaceId }, 'not-a-valid-token');
    expect((await rowsNamed(name))[0]).toMatchObject({ user_id: null, workspace_id: null });
  });

  it.each([['a'], ['x_y-z'], ['page:view'], ['checkout.started']])('accepts the name form %s', async (form) => {
    // The run prefix keeps the name ours; the form under test is its tail.
    const name = `${RUN}.${form}`;
    await expectAccepted({ name });
    expect((await rowsNamed(name)).length).toBeGreaterThanOrEqual(1);
  });

  it('accepts a one-letter name', async () => {
    // 'x' is not ours alone: count our addition.
    const before = (await rowsNamed('x')).length;
    await expectAccepted({ name: 'x' });
    expect((await rowsNamed('x')).length).toBeGreaterThanOrEqual(before + 1);
  });

  it('accepts a name of exactly 64 characters', async () => {
    const at64 = `${RUN}.`.padEnd(64, 'q');
    expect(at64).toHaveLength(64);
    await expectAccepted({ name: at64 });
    expect(await rowsNamed(at64)).toHaveLength(1);
  });

  it('accepts exactly 20 properties', async () => {
    const name = eventName('twenty');
    const properties = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, i]));
    await expectAccepted({ name, properties });
    expect((await rowsNamed(name))[0].properties).toEqual(properties);
  });
});

describe('POST /analytics/events: refused events store nothing', () => {
  it.each([
    ['upper-case letters', (n: string) => n.replace('modtest', 'ModTest')],
    ['a leading digit', (n: string) => `9${n}`],
    ['a leading underscore', (n: string) => `_${n}`],
    ['a space', (n: string) => `${n} now`],
    ['a slash', (n: string) => `${n}/x`],
    ['a non-ASCII letter', (n: string) => `${n}é`],
    ['65 characters', (n: string) => n.padEnd(65, 'q')],
  ])('a name with %s', async (_label, make) => {
    await expectRefused({ name: make(eventName('badname')) }, 'name');
  });

  it('an empty or missing name', async () => {
    await expectRefused({ name: '' }, 'name');
    await expectRefused({ properties: { a: 1 } }, 'name');
  });

  it('21 properties', async () => {
    const properties = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, i]));
    await expectRefused({ name: eventName('too-many'), properties }, 'properties');
  });

  it('properties over 2 KiB', async () => {
    const properties = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`text${i}`, 'x'.repeat(480)]));
    expect(Buffer.byteLength(JSON.stringify(properties))).toBeGreaterThan(2048);
    await expectRefused({ name: eventName('too-big'), properties }, 'properties');
  });

  it('a property value over 500 characters, or a property name over 64', async () => {
    await expectRefused({ name: eventName('long-value'), properties: { note: 'y'.repeat(501) } }, 'properties');
    await expectRefused({ name: eventName('long-key'), properties: { ['k'.repeat(65)]: 1 } }, 'properties');
  });

  it.each([
    ['an array', [1, 2, 3]],
    ['a string', 'plan=pro'],
    ['a number', 42],
    ['a nested object', { user: { id: 1 } }],
    ['an array value', { tags: ['a', 'b'] }],
  ])('properties that are %s', async (_label, properties) => {
    await expectRefused({ name: eventName('shape'), properties }, 'properties');
  });

  it('a workspaceId that is not a UUID', async () => {
    await expectRefused({ name: eventName('bad-ws'), workspaceId: 'my-workspace' }, 'workspaceId');
  });

  it('a body that is not JSON', async () => {
    const name = eventName('not-json');
    const res = await app.api('POST', '/analytics/events', {
      raw: `{"name":"${name}",`,
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(await rowsNamed(name)).toEqual([]);
  });
});

describe('GET /admin/analytics/summary', () => {
  interface Summary {
    since: string;
    totals: { events: number; uniqueUsers: number };
    topEvents: Array<{ name: string; count: number }>;
    byDay: Array<{ day: string; count: number }>;
  }
  const summary = async (token = admin.accessToken) => {
    const res = await app.api('GET', '/admin/analytics/summary', { token });
    expect(res.status, res.text).toBe(200);
    return res.body as Summary;
  };
  const today = () => new Date().toISOString().slice(0, 10);
  const todayCount = (s: Summary) => s.byDay.find((d) => d.day === today())?.count ?? 0;

  it('counts our events by name among the top events, and adds them to today, the totals and the unique users', async () => {
    const before = await summary();
    const often = `${RUN}.often`;
    // Two, not one: the top list holds 20 names and ties at 1 (this file alone makes many) are cut anywhere.
    const twice = `${RUN}.twice`;
    const [u1, u2] = await Promise.all([
      registerAndLogin(app.api, { prefix: 'analytics-u1' }),
      registerAndLogin(app.api, { prefix: 'analytics-u2' }),
    ]);
    await expectAccepted({ name: often }, u1.accessToken);
    await expectAccepted({ name: often }, u2.accessToken);
    await expectAccepted({ name: often }, u1.accessToken);
    await expectAccepted({ name: often });
    await expectAccepted({ name: twice }, u2.accessToken);
    await expectAccepted({ name: twice });
    const after = await summary();

    const countOf = (s: Summary, name: string) => s.topEvents.find((t) => t.name === name)?.count;
    expect(countOf(after, often)).toBe(4);
    expect(countOf(after, twice)).toBe(2);
    expect(after.topEvents.findIndex((t) => t.name === often)).toBeLessThan(
      after.topEvents.findIndex((t) => t.name === twice),
    );
    // Other files add events at the same time: ours are a lower bound of the growth.
    expect(after.totals.events - before.totals.events).toBeGreaterThanOrEqual(6);
    expect(after.totals.uniqueUsers - before.totals.uniqueUsers).toBeGreaterThanOrEqual(2);
    expect(todayCount(after) - todayCount(before)).toBeGreaterThanOrEqual(6);
  });

  it('does not count refused events', async () => {
    const name = `${RUN}.refused`;
    await expectRefused({ name, properties: 'nope' }, 'properties');
    const s = await summary();
    expect(s.topEvents.map((t) => t.name)).not.toContain(name);
  });

  it('orders top events by count, and days ascending within the last 30 days', async () => {
    const s = await summary();
    const counts = s.topEvents.map((t) => t.count);
    expect([...counts].sort((a, b) => b - a)).toEqual(counts);
    expect(s.topEvents.length).toBeLessThanOrEqual(20);
    const days = s.byDay.map((d) => d.day);
    for (const d of days) expect(d).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect([...days].sort()).toEqual(days);
    expect(new Set(days).size).toBe(days.length);
    const since = new Date(s.since).getTime();
    expect(Math.abs(Date.now() - 30 * 86_400_000 - since)).toBeLessThan(60_000);
    expect(days[0] >= s.since.slice(0, 10)).toBe(true);
    expect(days.at(-1)).toBe(today());
    for (const d of s.byDay) expect(d.count).toBeGreaterThan(0);
  });

  it('is readable by the demo admin', async () => {
    const s = await summary(demoAdmin.accessToken);
    expect(s.topEvents.find((t) => t.name === `${RUN}.often`)?.count).toBe(4);
  });

  it('refuses an ordinary user with 403 FORBIDDEN and an anonymous caller with 401', async () => {
    expectError(await app.api('GET', '/admin/analytics/summary', { token: member.accessToken }), 403, 'FORBIDDEN');
    expectError(await app.api('GET', '/admin/analytics/summary'), 401, 'UNAUTHORIZED');
  });
});
