import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, TEST_DEMO_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { HIDDEN_LINK } from '../../routers/email/service.js';
import {
  STRONG_PASSWORD,
  expectError,
  login,
  registerAndLogin,
  uniqueEmail,
  type Session,
  PAGE_KEYS,
} from '../helpers/http.js';

let app: TestApp;
let admin: Session;
let demoAdmin: Session;
let user: Session;
/** An address with a verification mail and then a reset mail. */
let mailed: string;

beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
  admin = await login(app.api, TEST_ADMIN.email, TEST_ADMIN.password);
  demoAdmin = await login(app.api, TEST_DEMO_ADMIN.email, TEST_DEMO_ADMIN.password);
  user = await registerAndLogin(app.api, { prefix: 'plain' });
  mailed = uniqueEmail('mailed');
  expect(
    (await app.api('POST', '/auth/register', { body: { email: mailed, password: STRONG_PASSWORD, name: 'Mia' } }))
      .status,
  ).toBe(201);
  expect((await app.api('POST', '/auth/forgot-password', { body: { email: mailed } })).status).toBe(200);
});
afterAll(() => app.close());

/** `token: null` sends no Authorization header. */
const logs = (query: string, token: string | null = admin.accessToken) =>
  app.api('GET', `/admin/email-logs${query}`, token === null ? {} : { token });

describe('GET /admin/email-logs', () => {
  it('answers the platform admin a page: { items, page, limit, total, totalPages }', async () => {
    const res = await logs('');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(PAGE_KEYS);
    expect(res.body.page).toBe(1);
    expect(res.body.limit).toBe(20);
    expect(res.body.total).toBeGreaterThanOrEqual(3);
    expect(res.body.totalPages).toBe(Math.ceil(res.body.total / res.body.limit));
    expect(res.body.items.length).toBeGreaterThan(0);
    expect(res.body.items.length).toBeLessThanOrEqual(20);
  });

  it('gives each item exactly id, to, subject, template, text, link, createdAt', async () => {
    const res = await logs(`?to=${encodeURIComponent(mailed)}`);
    expect(res.status).toBe(200);
    for (const item of res.body.items) {
      expect(Object.keys(item).sort()).toEqual(['createdAt', 'id', 'link', 'subject', 'template', 'text', 'to']);
      expect(item.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(Date.parse(item.createdAt)).not.toBeNaN();
    }
  });

  it('lists newest first', async () => {
    const res = await logs('?limit=100');
    expect(res.status).toBe(200);
    const times = res.body.items.map((i: { createdAt: string }) => Date.parse(i.createdAt));
    expect(times).toEqual([...times].sort((a, b) => b - a));

    const mine = await logs(`?to=${encodeURIComponent(mailed)}`);
    expect(mine.body.items.map((i: { template: string }) => i.template)).toEqual([
      'password-reset',
      'email-verification',
    ]);
  });

  it('filters by ?to=, whatever the letter case of the address', async () => {
    const res = await logs(`?to=${encodeURIComponent(mailed)}`);
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(2);
    expect(res.body.items).toHaveLength(2);
    expect(res.body.items.every((i: { to: string }) => i.to === mailed)).toBe(true);
    expect(res.body.items[0].link).toMatch(/^http:\/\/app\.tests\.local\/reset-password\?token=/);

    const upper = await logs(`?to=${encodeURIComponent(mailed.toUpperCase())}`);
    expect(upper.status).toBe(200);
    expect(upper.body.items.map((i: { id: string }) => i.id)).toEqual(res.body.items.map((i: { id: string }) => i.id));

    const none = await logs(`?to=${encodeURIComponent(uniqueEmail('nobody'))}`);
    expect(none.status).toBe(200);
    expect(none.body).toMatchObject({ items: [], total: 0, totalPages: 0 });
  });

  it('pages with ?page= and ?limit=', async () => {
    const first = await logs(`?to=${encodeURIComponent(mailed)}&limit=1&page=1`);
    const second = await logs(`?to=${encodeURIComponent(mailed)}&limit=1&page=2`);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(first.body).toMatchObject({ page: 1, limit: 1, total: 2, totalPages: 2 });
    expect(second.body).toMatchObject({ page: 2, limit: 1, total: 2, totalPages: 2 });
    expect(first.body.items[0].template).toBe('password-reset');
    expect(second.body.items[0].template).toBe('email-verification');
  });

  it.each([
    ['?limit=101', 'limit'],
    ['?limit=0', 'limit'],
    ['?limit=abc', 'limit'],
    ['?page=0', 'page'],
    ['?page=-1', 'page'],
    ['?to=not-an-email', 'to'],
  ])('refuses %s with 400 BAD_REQUEST naming the parameter', async (query, field) => {
    const err = expectError(await logs(query), 400, 'BAD_REQUEST');
    expect(err.issues?.map((i) => i.path)).toContain(field);
  });

  it('answers the read-only demo admin 200', async () => {
    const res = await logs(`?to=${encodeURIComponent(mailed)}`, demoAdmin.accessToken);
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(2);
  });

  it('shows the read-only demo admin the mails without their links: a reset link would let it take over the account', async () => {
    const asAdmin = await logs(`?to=${encodeURIComponent(mailed)}`);
    const asDemoAdmin = await logs(`?to=${encodeURIComponent(mailed)}`, demoAdmin.accessToken);
    const byId = new Map<string, { text: string; link: string | null }>(
      asDemoAdmin.body.items.map((m: { id: string }) => [m.id, m]),
    );
    const reset = asAdmin.body.items.find((m: { template: string }) => m.template === 'password-reset');
    const token = new URL(reset.link).searchParams.get('token')!;
    expect(token.length).toBeGreaterThan(20);
    for (const mail of asAdmin.body.items as Array<{ id: string; text: string; link: string }>) {
      const seen = byId.get(mail.id)!;
      expect(mail.link).toBeTruthy();
      expect(seen.link).toBeNull();
      expect(seen.text).not.toContain(mail.link);
      expect(seen.text).toContain(HIDDEN_LINK);
    }
    expect(JSON.stringify(asDemoAdmin.body)).not.toContain(token);
    // The token still works for its recipient: nothing was spent by reading.
    expect(
      (await app.api('POST', '/auth/reset-password', { body: { token, newPassword: `${STRONG_PASSWORD}-2` } })).status,
    ).toBe(200);
  });

  it('refuses a normal user with 403 FORBIDDEN', async () => {
    expectError(await logs('', user.accessToken), 403, 'FORBIDDEN');
  });

  it('refuses an anonymous caller with 401 UNAUTHORIZED', async () => {
    expectError(await logs('', null), 401, 'UNAUTHORIZED');
  });
});
