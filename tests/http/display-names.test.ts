// Display names (users, workspaces and their branding, webhooks, API keys, plans) refuse the characters that
// are invisible or reorder text: bidi controls, zero-width characters, C0 and C1 controls. Every route
// that takes such a name, create and update alike, is sent each of them: 400 BAD_REQUEST saying why, and
// nothing stored changes. A name in accents, CJK and emoji is accepted and stored as sent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { STRONG_PASSWORD, expectError, registerAndLogin, uniqueEmail } from '../helpers/http.js';
import type { ApiResponse, Session } from '../helpers/http.js';
import { adminSession, createKey, createWebhook, hex, ownerOn } from '../developer/helpers.js';
import { createPlan } from '../billing/helpers.js';

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const BAD_CODE_POINTS = [
  ...range(0x202a, 0x202e), // bidi embeddings and overrides
  ...range(0x2066, 0x2069), // bidi isolates
  0x200b,
  0x200c,
  0x200d,
  0x2060,
  0xfeff, // zero-width
  ...range(0x0000, 0x001f), // C0 controls
  ...range(0x007f, 0x009f), // DEL and C1 controls
];
const label = (cp: number) => `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
const GOOD_NAME = 'Zoë Ångström – 山田太郎 🚀';

let app: TestApp;
let owner: Session;
let admin: Session;
let target: Session;
let ids: { webhook: string; apiKey: string; plan: string; planSlug: string; registerEmail: string };

beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
  [owner, admin, target] = await Promise.all([
    ownerOn(app, 'pro', 'names'),
    adminSession(app),
    registerAndLogin(app.api, { prefix: 'names-t' }),
  ]);
  const [webhook, apiKey, plan] = await Promise.all([
    createWebhook(app, owner, { url: 'https://example.com/hook', name: 'Hook' }),
    createKey(app, owner, { name: 'Key' }),
    createPlan(app, admin, { name: 'Plan' }),
  ]);
  const registerEmail = uniqueEmail('names-reg');
  ids = { webhook: webhook.id, apiKey: apiKey.id, plan: plan.id, planSlug: `names-${hex()}`, registerEmail };
});
afterAll(() => app?.close());

interface NameRoute {
  /** The field that carries the name. */
  field: string;
  send(name: string): Promise<ApiResponse>;
  /** The names the route would change, as stored. */
  stored(): Promise<Array<string | null>>;
}

const db = () => app.deps.db;
/** The values of one column of the rows a query selects. */
const column =
  <K extends string>(key: K) =>
  (rows: Array<Record<K, string | null>>) =>
    rows.map((r) => r[key]);
const workspaceNamesOf = (userId: string) =>
  db()
    .selectFrom('workspaces as w')
    .innerJoin('workspace_members as m', 'm.workspace_id', 'w.id')
    .select('w.name')
    .where('m.user_id', '=', userId)
    .orderBy('w.name')
    .execute()
    .then(column('name'));

const routes: Record<string, () => NameRoute> = {
  'POST /auth/register': () => ({
    field: 'name',
    send: (name) =>
      app.api('POST', '/auth/register', { body: { email: ids.registerEmail, password: STRONG_PASSWORD, name } }),
    stored: () =>
      db().selectFrom('users').select('name').where('email', '=', ids.registerEmail).execute().then(column('name')),
  }),
  'PATCH /admin/users/{userId}': () => ({
    field: 'name',
    send: (name) => app.api('PATCH', `/admin/users/${target.userId}`, { token: admin.accessToken, body: { name } }),
    stored: () =>
      db().selectFrom('users').select('name').where('id', '=', target.userId).execute().then(column('name')),
  }),
  'POST /workspaces': () => ({
    field: 'name',
    send: (name) => app.api('POST', '/workspaces', { token: owner.accessToken, body: { name } }),
    stored: () => workspaceNamesOf(owner.userId),
  }),
  'PATCH /workspaces/{workspaceId}': () => ({
    field: 'name',
    send: (name) => app.api('PATCH', `/workspaces/${owner.workspaceId}`, { token: owner.accessToken, body: { name } }),
    stored: () => workspaceNamesOf(owner.userId),
  }),
  'PATCH /workspaces/{workspaceId}/branding': () => ({
    field: 'displayName',
    send: (displayName) =>
      app.api('PATCH', `/workspaces/${owner.workspaceId}/branding`, {
        token: owner.accessToken,
        body: { displayName },
      }),
    stored: () =>
      db()
        .selectFrom('workspaces')
        .select('branding_display_name')
        .where('id', '=', owner.workspaceId)
        .execute()
        .then(column('branding_display_name')),
  }),
  'POST /admin/workspaces': () => ({
    field: 'name',
    send: (name) =>
      app.api('POST', '/admin/workspaces', { token: admin.accessToken, body: { name, ownerUserId: target.userId } }),
    stored: () => workspaceNamesOf(target.userId),
  }),
  'PATCH /admin/workspaces/{workspaceId}': () => ({
    field: 'name',
    send: (name) =>
      app.api('PATCH', `/admin/workspaces/${target.workspaceId}`, { token: admin.accessToken, body: { name } }),
    stored: () => workspaceNamesOf(target.userId),
  }),
  'POST /workspaces/{workspaceId}/webhooks': () => ({
    field: 'name',
    send: (name) =>
      app.api('POST', `/workspaces/${owner.workspaceId}/webhooks`, {
        token: owner.accessToken,
        body: { name, url: 'https://example.com/hook', events: ['webhook.test'] },
      }),
    stored: () => webhookNames(),
  }),
  'PATCH /workspaces/{workspaceId}/webhooks/{webhookId}': () => ({
    field: 'name',
    send: (name) =>
      app.api('PATCH', `/workspaces/${owner.workspaceId}/webhooks/${ids.webhook}`, {
        token: owner.accessToken,
        body: { name },
      }),
    stored: () => webhookNames(),
  }),
  'POST /workspaces/{workspaceId}/api-keys': () => ({
    field: 'name',
    send: (name) =>
      app.api('POST', `/workspaces/${owner.workspaceId}/api-keys`, {
        token: owner.accessToken,
        body: { name, scopes: ['read'] },
      }),
    stored: () => apiKeyNames(),
  }),
  'PATCH /workspaces/{workspaceId}/api-keys/{apiKeyId}': () => ({
    field: 'name',
    send: (name) =>
      app.api('PATCH', `/workspaces/${owner.workspaceId}/api-keys/${ids.apiKey}`, {
        token: owner.accessToken,
        body: { name },
      }),
    stored: () => apiKeyNames(),
  }),
  'POST /admin/billing/plans': () => ({
    field: 'name',
    send: (name) =>
      app.api('POST', '/admin/billing/plans', {
        token: admin.accessToken,
        body: { name, slug: ids.planSlug, priceCents: 100 },
      }),
    stored: () =>
      db().selectFrom('plans').select('name').where('slug', '=', ids.planSlug).execute().then(column('name')),
  }),
  'PATCH /admin/billing/plans/{planId}': () => ({
    field: 'name',
    send: (name) => app.api('PATCH', `/admin/billing/plans/${ids.plan}`, { token: admin.accessToken, body: { name } }),
    stored: () => db().selectFrom('plans').select('name').where('id', '=', ids.plan).execute().then(column('name')),
  }),
};

const webhookNames = () =>
  db()
    .selectFrom('webhooks')
    .select('name')
    .where('workspace_id', '=', owner.workspaceId)
    .orderBy('name')
    .execute()
    .then(column('name'));
const apiKeyNames = () =>
  db()
    .selectFrom('api_keys')
    .select('name')
    .where('workspace_id', '=', owner.workspaceId)
    .orderBy('name')
    .execute()
    .then(column('name'));

function expectRefused(res: ApiResponse, field: string, cp: number) {
  const err = expectError(res, 400, 'BAD_REQUEST');
  // A NUL is refused for the whole body before validation (Postgres cannot store it), with its own reason.
  if (cp === 0) return expect(err.message).toMatch(/NUL/);
  const issue = err.issues?.find((i) => i.path === field);
  expect(issue?.message, `${label(cp)}: ${res.text}`).toMatch(/may not contain invisible or control characters/);
}

describe.each(Object.keys(routes))('%s', (route) => {
  const r = () => routes[route]();

  it(`refuses each of the ${BAD_CODE_POINTS.length} bidi, zero-width and control characters (400)`, async () => {
    const { field, send, stored } = r();
    const before = await stored();
    for (const cp of BAD_CODE_POINTS) {
      const res = await send(`Ac${String.fromCodePoint(cp)}me ${hex(2)}`);
      expectRefused(res, field, cp);
    }
    expect(await stored()).toEqual(before);
  });

  it('accepts a name with accents, CJK and emoji, stored as sent', async () => {
    const { send, stored } = r();
    const res = await send(GOOD_NAME);
    expect(res.status, res.text).toBeLessThan(300);
    expect(await stored()).toContain(GOOD_NAME);
  });
});

describe('where in the name the character is', () => {
  it('refuses it leading or trailing too, where trimming would have hidden some (a newline, a BOM)', async () => {
    const { field, send, stored } = routes['PATCH /workspaces/{workspaceId}']();
    const before = await stored();
    for (const cp of BAD_CODE_POINTS) {
      const c = String.fromCodePoint(cp);
      expectRefused(await send(`${c}Acme`), field, cp);
      expectRefused(await send(`Acme${c}`), field, cp);
    }
    expect(await stored()).toEqual(before);
  });

  it('still trims ordinary spaces around a name', async () => {
    const { send, stored } = routes['PATCH /workspaces/{workspaceId}/webhooks/{webhookId}']();
    const name = `Spaced ${hex()}`;
    expect((await send(`  ${name}  `)).status).toBe(200);
    expect(await stored()).toContain(name);
  });
});
