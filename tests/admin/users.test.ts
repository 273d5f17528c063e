import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, TEST_DEMO_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import {
  STRONG_PASSWORD,
  expectError,
  login,
  registerAndLogin,
  uniqueEmail,
  type Session,
  PAGE_KEYS,
} from '../helpers/http.js';
import { registerAs, requestIdFor } from '../workspaces/helpers.js';

let app: TestApp;
let admin: Session;
let demo: Session;
let plain: Session;

beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
  admin = await login(app.api, TEST_ADMIN.email, TEST_ADMIN.password);
  demo = await login(app.api, TEST_DEMO_ADMIN.email, TEST_DEMO_ADMIN.password);
  plain = await registerAndLogin(app.api, { prefix: 'plain' });
});
afterAll(() => app?.close());

const asAdmin = (method: string, path: string, body?: unknown) =>
  app.api(method, path, { token: admin.accessToken, ...(body !== undefined ? { body } : {}) });
const userRow = (id: string) =>
  app.deps.db
    .selectFrom('users')
    .select(['name', 'status', 'platform_role', 'updated_at'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
const idsOf = (items: Array<{ id: string }>) => items.map((i) => i.id);
const tag = () => crypto.randomBytes(4).toString('hex');

/** Registers a user with a chosen name; answers their session. */
async function userNamed(name: string, prefix = 'named') {
  return registerAs(app, uniqueEmail(prefix), name);
}

describe('GET /admin/users', () => {
  it('answers a page { items, page, limit, total, totalPages } with page 1 and limit 20 by default', async () => {
    const res = await asAdmin('GET', '/admin/users');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(PAGE_KEYS);
    expect(res.body).toMatchObject({ page: 1, limit: 20 });
    expect(res.body.total).toBeGreaterThanOrEqual(3);
    expect(res.body.totalPages).toBe(Math.ceil(res.body.total / 20));
    expect(res.body.items.length).toBeLessThanOrEqual(20);
    expect(res.text).not.toMatch(/password_?hash|passwordHash|\$2[aby]\$/i);
  });

  it('gives each user id, email, name, status, platformRole, emailVerified, lastLoginAt, createdAt, updatedAt', async () => {
    const res = await asAdmin('GET', `/admin/users?search=${encodeURIComponent(plain.email)}`);
    expect(res.body.items).toHaveLength(1);
    expect(res.body.items[0]).toMatchObject({
      id: plain.userId,
      email: plain.email,
      status: 'ACTIVE',
      platformRole: 'USER',
      emailVerified: false,
    });
    expect(Object.keys(res.body.items[0]).sort()).toEqual(
      [
        'createdAt',
        'email',
        'emailVerified',
        'emailVerifiedAt',
        'id',
        'lastLoginAt',
        'mfaEnabled',
        'name',
        'platformRole',
        'status',
        'updatedAt',
      ].sort(),
    );
  });

  it('pages with ?page= and ?limit= over a search', async () => {
    const t = tag();
    const made = [await userNamed(`Pager ${t}`), await userNamed(`Pager ${t}`), await userNamed(`Pager ${t}`)];
    const first = await asAdmin('GET', `/admin/users?search=Pager%20${t}&limit=2&page=1`);
    const second = await asAdmin('GET', `/admin/users?search=Pager%20${t}&limit=2&page=2`);
    expect(first.body).toMatchObject({ page: 1, limit: 2, total: 3, totalPages: 2 });
    expect(second.body).toMatchObject({ page: 2, limit: 2, total: 3, totalPages: 2 });
    expect(first.body.items).toHaveLength(2);
    expect(second.body.items).toHaveLength(1);
    expect([...idsOf(first.body.items), ...idsOf(second.body.items)].sort()).toEqual(made.map((m) => m.userId).sort());
  });

  it.each([['?limit=101'], ['?limit=0'], ['?page=0'], ['?page=abc'], ['?status=GONE'], ['?platformRole=ROOT']])(
    'refuses %s with 400 BAD_REQUEST',
    async (query) => {
      expectError(await asAdmin('GET', `/admin/users${query}`), 400, 'BAD_REQUEST');
    },
  );

  it('finds a user by part of the e-mail address, in any letter case', async () => {
    const t = tag();
    const u = await registerAs(app, `findme-${t}@tests.local`);
    for (const part of [`findme-${t}`, `ME-${t.toUpperCase()}@TESTS`]) {
      const res = await asAdmin('GET', `/admin/users?search=${encodeURIComponent(part)}`);
      expect(res.status).toBe(200);
      expect(idsOf(res.body.items)).toEqual([u.userId]);
    }
  });

  it('finds a user by part of the name', async () => {
    const t = tag();
    const u = await userNamed(`Quintessa Marlowe${t}`);
    const res = await asAdmin('GET', `/admin/users?search=${encodeURIComponent(`sa marlowe${t}`)}`);
    expect(idsOf(res.body.items)).toEqual([u.userId]);
  });

  it('matches % and _ in the search literally, not as wildcards', async () => {
    const t = tag();
    const literal = await userNamed(`Deal${t} 50%_off`);
    const lookalike = await userNamed(`Deal${t} 50abcoff`);
    const pct = await asAdmin('GET', `/admin/users?search=${encodeURIComponent(`Deal${t} 50%_off`)}`);
    expect(idsOf(pct.body.items)).toEqual([literal.userId]);
    const underscore = await asAdmin('GET', `/admin/users?search=${encodeURIComponent(`Deal${t} 50_`)}`);
    expect(idsOf(underscore.body.items)).toEqual([]);
    const percentOnly = await asAdmin('GET', `/admin/users?search=${encodeURIComponent(`Deal${t} 50%`)}`);
    expect(idsOf(percentOnly.body.items)).toEqual([literal.userId]);
    expect(idsOf(percentOnly.body.items)).not.toContain(lookalike.userId);
  });

  it('filters by ?status=SUSPENDED', async () => {
    const t = tag();
    const suspended = await userNamed(`Statusy ${t}`);
    const active = await userNamed(`Statusy ${t}`);
    expect((await asAdmin('POST', `/admin/users/${suspended.userId}/suspend`)).status).toBe(200);
    const res = await asAdmin('GET', `/admin/users?status=SUSPENDED&search=Statusy%20${t}`);
    expect(idsOf(res.body.items)).toEqual([suspended.userId]);
    const all = await asAdmin('GET', '/admin/users?status=SUSPENDED&limit=100');
    for (const item of all.body.items) expect(item.status).toBe('SUSPENDED');
    const activeOnes = await asAdmin('GET', `/admin/users?status=ACTIVE&search=Statusy%20${t}`);
    expect(idsOf(activeOnes.body.items)).toEqual([active.userId]);
  });
});

describe('GET /admin/users/{userId}', () => {
  it('answers the user with their memberships, and no secret', async () => {
    const res = await asAdmin('GET', `/admin/users/${plain.userId}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: plain.userId, email: plain.email, status: 'ACTIVE', platformRole: 'USER' });
    expect(res.body.memberships).toEqual([
      expect.objectContaining({ id: plain.workspaceId, role: 'OWNER', status: 'ACTIVE' }),
    ]);
    expect(res.text).not.toMatch(/password_?hash|passwordHash|\$2[aby]\$/i);
  });

  it('answers an unknown id with 404 NOT_FOUND', async () => {
    expectError(await asAdmin('GET', `/admin/users/${crypto.randomUUID()}`), 404, 'NOT_FOUND');
  });

  it('answers a malformed id with 400 BAD_REQUEST', async () => {
    expectError(await asAdmin('GET', '/admin/users/not-a-uuid'), 400, 'BAD_REQUEST');
  });
});

describe('PATCH /admin/users/{userId}', () => {
  it('changes the name', async () => {
    const u = await userNamed('Old Name');
    const res = await asAdmin('PATCH', `/admin/users/${u.userId}`, { name: 'New Name' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: u.userId, name: 'New Name' });
    expect((await userRow(u.userId)).name).toBe('New Name');
  });

  it('changes the platform role, which takes effect on the next request of the user (admin routes open, then close again)', async () => {
    const u = await registerAndLogin(app.api, { prefix: 'promoted' });
    expectError(await app.api('GET', '/admin/users', { token: u.accessToken }), 403, 'FORBIDDEN');
    const up = await asAdmin('PATCH', `/admin/users/${u.userId}`, { platformRole: 'ADMIN' });
    expect(up.status).toBe(200);
    expect(up.body.platformRole).toBe('ADMIN');
    expect((await app.api('GET', '/admin/users', { token: u.accessToken })).status).toBe(200);

    const down = await asAdmin('PATCH', `/admin/users/${u.userId}`, { platformRole: 'USER' });
    expect(down.body.platformRole).toBe('USER');
    expectError(await app.api('GET', '/admin/users', { token: u.accessToken }), 403, 'FORBIDDEN');
  });

  it('makes a DEMO_ADMIN who may read but is refused writes with DEMO_READ_ONLY', async () => {
    const u = await registerAndLogin(app.api, { prefix: 'to-demo' });
    expect((await asAdmin('PATCH', `/admin/users/${u.userId}`, { platformRole: 'DEMO_ADMIN' })).status).toBe(200);
    expect((await app.api('GET', '/admin/users', { token: u.accessToken })).status).toBe(200);
    const write = await app.api('PATCH', `/admin/users/${plain.userId}`, {
      token: u.accessToken,
      body: { name: 'Nope' },
    });
    expect(expectError(write, 403, 'DEMO_READ_ONLY').message).toBe('Demo admin is read-only.');
  });

  it('refuses an admin who changes their own platform role with 409 CONFLICT', async () => {
    const res = await asAdmin('PATCH', `/admin/users/${admin.userId}`, { platformRole: 'USER' });
    expectError(res, 409, 'CONFLICT');
    expect((await userRow(admin.userId)).platform_role).toBe('ADMIN');
  });

  it.each([
    ['an empty body', {}],
    ['an empty name', { name: '' }],
    ['an unknown platform role', { platformRole: 'ROOT' }],
  ])('refuses %s with 400 BAD_REQUEST', async (_label, body) => {
    const u = await userNamed('Unchanged');
    expectError(await asAdmin('PATCH', `/admin/users/${u.userId}`, body), 400, 'BAD_REQUEST');
    expect(await userRow(u.userId)).toMatchObject({ name: 'Unchanged', platform_role: 'USER' });
  });

  it('answers an unknown user with 404 NOT_FOUND', async () => {
    expectError(await asAdmin('PATCH', `/admin/users/${crypto.randomUUID()}`, { name: 'Ghost' }), 404, 'NOT_FOUND');
  });
});

describe('POST /admin/users/{userId}/suspend and /activate', () => {
  it('suspends: status SUSPENDED, and every token of the user is refused on its very next request', async () => {
    const u = await registerAndLogin(app.api, { prefix: 'susp' });
    const other = await login(app.api, u.email, u.password);
    expect((await app.api('GET', '/auth/me', { token: u.accessToken })).status).toBe(200);

    const res = await asAdmin('POST', `/admin/users/${u.userId}/suspend`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: u.userId, status: 'SUSPENDED' });

    expectError(await app.api('GET', '/auth/me', { token: u.accessToken }), 403, 'USER_SUSPENDED');
    expectError(await app.api('GET', '/auth/me', { token: other.accessToken }), 403, 'USER_SUSPENDED');
    expectError(await app.api('GET', `/workspaces/${u.workspaceId}`, { token: u.accessToken }), 403, 'USER_SUSPENDED');
    expectError(
      await app.api('POST', '/auth/login', { body: { email: u.email, password: STRONG_PASSWORD } }),
      403,
      'USER_SUSPENDED',
    );
    expectError(
      await app.api('POST', '/auth/refresh', { body: { refreshToken: u.refreshToken } }),
      403,
      'USER_SUSPENDED',
    );
  });

  it('refuses to suspend a SUSPENDED user with 409 INVALID_STATE naming SUSPENDED', async () => {
    const u = await registerAndLogin(app.api, { prefix: 'susp2' });
    expect((await asAdmin('POST', `/admin/users/${u.userId}/suspend`)).status).toBe(200);
    const err = expectError(await asAdmin('POST', `/admin/users/${u.userId}/suspend`), 409, 'INVALID_STATE');
    expect(err.message).toContain('SUSPENDED');
  });

  it('activates: status ACTIVE, and the tokens held before the suspension work again', async () => {
    const u = await registerAndLogin(app.api, { prefix: 'act' });
    expect((await asAdmin('POST', `/admin/users/${u.userId}/suspend`)).status).toBe(200);
    expectError(await app.api('GET', '/auth/me', { token: u.accessToken }), 403, 'USER_SUSPENDED');

    const res = await asAdmin('POST', `/admin/users/${u.userId}/activate`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: u.userId, status: 'ACTIVE' });
    expect((await app.api('GET', '/auth/me', { token: u.accessToken })).status).toBe(200);
    const refreshed = await app.api('POST', '/auth/refresh', { body: { refreshToken: u.refreshToken } });
    expect(refreshed.status).toBe(200);
    expect((await app.api('POST', '/auth/login', { body: { email: u.email, password: STRONG_PASSWORD } })).status).toBe(
      200,
    );
  });

  it('refuses to activate an ACTIVE user with 409 INVALID_STATE naming ACTIVE', async () => {
    const u = await registerAndLogin(app.api, { prefix: 'act2' });
    const err = expectError(await asAdmin('POST', `/admin/users/${u.userId}/activate`), 409, 'INVALID_STATE');
    expect(err.message).toContain('ACTIVE');
  });

  it('refuses an admin who suspends themselves with 409 CONFLICT, and they stay ACTIVE', async () => {
    expectError(await asAdmin('POST', `/admin/users/${admin.userId}/suspend`), 409, 'CONFLICT');
    expect((await userRow(admin.userId)).status).toBe('ACTIVE');
    expect((await app.api('GET', '/auth/me', { token: admin.accessToken })).status).toBe(200);
  });

  it('answers an unknown user with 404 NOT_FOUND and a malformed id with 400', async () => {
    expectError(await asAdmin('POST', `/admin/users/${crypto.randomUUID()}/suspend`), 404, 'NOT_FOUND');
    expectError(await asAdmin('POST', `/admin/users/${crypto.randomUUID()}/activate`), 404, 'NOT_FOUND');
    expectError(await asAdmin('POST', '/admin/users/xyz/suspend'), 400, 'BAD_REQUEST');
  });

  it('can suspend another platform admin, whose admin token then stops working', async () => {
    const other = await registerAndLogin(app.api, { prefix: 'admin2' });
    expect((await asAdmin('PATCH', `/admin/users/${other.userId}`, { platformRole: 'ADMIN' })).status).toBe(200);
    expect((await asAdmin('POST', `/admin/users/${other.userId}/suspend`)).status).toBe(200);
    expectError(await app.api('GET', '/admin/users', { token: other.accessToken }), 403, 'USER_SUSPENDED');
  });
});

// ---------------------------------------------------------------- who may call

interface AdminRoute {
  method: string;
  path: () => string;
  body?: unknown;
  write: boolean;
}

let target: Session;
beforeAll(async () => {
  target = await registerAndLogin(app.api, { prefix: 'target' });
});

const ROUTES: Array<[string, AdminRoute]> = [
  ['GET /admin/users', { method: 'GET', path: () => '/admin/users', write: false }],
  ['GET /admin/users/{userId}', { method: 'GET', path: () => `/admin/users/${target.userId}`, write: false }],
  [
    'PATCH /admin/users/{userId}',
    {
      method: 'PATCH',
      path: () => `/admin/users/${target.userId}`,
      body: { name: 'Changed', platformRole: 'ADMIN' },
      write: true,
    },
  ],
  [
    'POST /admin/users/{userId}/suspend',
    { method: 'POST', path: () => `/admin/users/${target.userId}/suspend`, write: true },
  ],
  [
    'POST /admin/users/{userId}/activate',
    { method: 'POST', path: () => `/admin/users/${target.userId}/activate`, write: true },
  ],
];

describe('admin user routes: who may call', () => {
  it.each(ROUTES)('%s refuses a normal user with 403 FORBIDDEN', async (_label, r) => {
    expectError(
      await app.api(r.method, r.path(), { token: plain.accessToken, ...(r.body ? { body: r.body } : {}) }),
      403,
      'FORBIDDEN',
    );
  });

  it.each(ROUTES)('%s refuses an anonymous caller with 401 UNAUTHORIZED', async (_label, r) => {
    expectError(await app.api(r.method, r.path(), r.body ? { body: r.body } : {}), 401, 'UNAUTHORIZED');
  });

  it.each(ROUTES.filter(([, r]) => !r.write))('%s answers the demo admin 200', async (_label, r) => {
    const res = await app.api(r.method, r.path(), { token: demo.accessToken });
    expect(res.status).toBe(200);
    expect(res.text).not.toMatch(/password_?hash|passwordHash|\$2[aby]\$/i);
  });

  it.each(ROUTES.filter(([, r]) => r.write))(
    '%s refuses the demo admin with 403 DEMO_READ_ONLY "Demo admin is read-only." and changes nothing (no audit row)',
    async (label, r) => {
      // Give activate something to do: a SUSPENDED target.
      const suspendFirst = label.endsWith('/activate');
      if (suspendFirst) expect((await asAdmin('POST', `/admin/users/${target.userId}/suspend`)).status).toBe(200);
      const before = await userRow(target.userId);
      const rid = requestIdFor('demo-write');
      const res = await app.api(r.method, r.path(), {
        token: demo.accessToken,
        headers: { 'x-request-id': rid },
        ...(r.body ? { body: r.body } : {}),
      });
      expect(expectError(res, 403, 'DEMO_READ_ONLY').message).toBe('Demo admin is read-only.');
      expect(await userRow(target.userId)).toEqual(before);
      expect(await app.deps.db.selectFrom('audit_logs').select('id').where('request_id', '=', rid).execute()).toEqual(
        [],
      );
      if (suspendFirst) expect((await asAdmin('POST', `/admin/users/${target.userId}/activate`)).status).toBe(200);
    },
  );

  it('lets the demo admin search users like an admin', async () => {
    const res = await app.api('GET', `/admin/users?search=${encodeURIComponent(target.email)}`, {
      token: demo.accessToken,
    });
    expect(res.status).toBe(200);
    expect(idsOf(res.body.items)).toEqual([target.userId]);
  });
});
