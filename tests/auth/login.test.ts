import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { STRONG_PASSWORD, expectError, registerAndLogin, uniqueEmail } from '../helpers/http.js';

// The rate limiter is not what this file is about: many sign-ins come from one address here.
const NO_RATE_LIMIT = { RATE_LIMIT_ENABLED: 'false' };

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp(NO_RATE_LIMIT);
});
afterAll(() => app.close());

async function register(email = uniqueEmail('login'), password = STRONG_PASSWORD, name = 'Login User') {
  const res = await app.api('POST', '/auth/register', { body: { email, password, name } });
  expect(res.status).toBe(201);
  return { email, password, userId: res.body.user.id as string, workspaceId: res.body.workspace.id as string };
}

const signIn = (email: string, password: string) => app.api('POST', '/auth/login', { body: { email, password } });

describe('POST /auth/login: success', () => {
  it('answers 200 with a token pair (Bearer, 900 s), the ACTIVE user and its active workspace', async () => {
    const u = await register();
    const res = await signIn(u.email, u.password);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      accessToken: expect.any(String),
      refreshToken: expect.any(String),
      tokenType: 'Bearer',
      expiresIn: 900,
      user: {
        id: u.userId,
        email: u.email,
        name: 'Login User',
        status: 'ACTIVE',
        platformRole: 'USER',
        emailVerified: false,
      },
      activeWorkspace: { id: u.workspaceId, status: 'ACTIVE', edition: 'LITE', role: 'OWNER' },
      hasActiveWorkspace: true,
    });
    expect(res.body.workspaceUnavailableReason).toBeUndefined();
    expect(res.body.accessToken).not.toBe(res.body.refreshToken);
    expect(res.text).not.toContain(u.password);
    expect(res.text).not.toMatch(/hash/i);
  });

  it('accepts the address in any letter case', async () => {
    const u = await register();
    const res = await signIn(u.email.toUpperCase(), u.password);
    expect(res.status).toBe(200);
    expect(res.body.user.id).toBe(u.userId);
  });

  it('issues a new, distinct session on every sign-in', async () => {
    const u = await register();
    const [a, b] = [await signIn(u.email, u.password), await signIn(u.email, u.password)];
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(a.body.accessToken).not.toBe(b.body.accessToken);
    expect(a.body.refreshToken).not.toBe(b.body.refreshToken);
  });
});

describe('POST /auth/login: wrong credentials', () => {
  it('refuses a wrong password and an unknown e-mail alike with 401 INVALID_CREDENTIALS and the same message', async () => {
    const u = await register();
    const wrong = expectError(await signIn(u.email, 'Wrong-pass-999'), 401, 'INVALID_CREDENTIALS');
    const unknown = expectError(await signIn(uniqueEmail('nobody'), 'Wrong-pass-999'), 401, 'INVALID_CREDENTIALS');
    expect(unknown.message).toBe(wrong.message);
    expect(Object.keys(unknown).sort()).toEqual(Object.keys(wrong).sort());
  });

  it.each([
    ['73 ASCII bytes', `Aa1-${'x'.repeat(69)}`],
    ['1,000 characters', `Aa1${'y'.repeat(997)}`],
    ['30 emoji (120 UTF-8 bytes)', '\u{1F600}'.repeat(30)],
  ])('refuses a password of %s with 401 INVALID_CREDENTIALS (no account can have one)', async (_what, password) => {
    const u = await register();
    expectError(await signIn(u.email, password), 401, 'INVALID_CREDENTIALS');
  });

  it('refuses the right password followed by extra bytes past 72 with 401 INVALID_CREDENTIALS (no truncation)', async () => {
    const pw72 = `Bb2-${'z'.repeat(68)}`;
    const u = await register(uniqueEmail('pw72'), pw72);
    expectError(await signIn(u.email, `${pw72}EXTRA`), 401, 'INVALID_CREDENTIALS');
    expect((await signIn(u.email, pw72)).status).toBe(200);
  });
});

describe('POST /auth/login: validation', () => {
  it.each([
    ['an empty body', {}, ['email', 'password']],
    ['a missing email', { password: STRONG_PASSWORD }, ['email']],
    ['a missing password', { email: 'someone@tests.local' }, ['password']],
    ['a numeric email', { email: 42, password: STRONG_PASSWORD }, ['email']],
    ['a malformed email', { email: 'not-an-email', password: STRONG_PASSWORD }, ['email']],
    ['a numeric password', { email: 'someone@tests.local', password: 12345678 }, ['password']],
    ['a password that is an object', { email: 'someone@tests.local', password: { $ne: '' } }, ['password']],
    ['an array password', { email: 'someone@tests.local', password: ['a', 'b'] }, ['password']],
    ['an empty password', { email: 'someone@tests.local', password: '' }, ['password']],
    ['a null email', { email: null, password: STRONG_PASSWORD }, ['email']],
  ])('refuses %s with 400 BAD_REQUEST naming the field', async (_what, body, fields) => {
    const err = expectError(await app.api('POST', '/auth/login', { body }), 400, 'BAD_REQUEST');
    const paths = err.issues?.map((i) => i.path) ?? [];
    for (const field of fields) expect(paths).toContain(field);
  });
});

describe('POST /auth/login: suspended users', () => {
  it('answers 403 USER_SUSPENDED with the right password and issues no session', async () => {
    const u = await register();
    await app.deps.db.updateTable('users').set({ status: 'SUSPENDED' }).where('id', '=', u.userId).execute();
    const res = await signIn(u.email, u.password);
    expectError(res, 403, 'USER_SUSPENDED');
    expect(res.body.accessToken).toBeUndefined();
    expect(res.body.refreshToken).toBeUndefined();
    const sessions = await app.deps.db
      .selectFrom('refresh_tokens')
      .select('id')
      .where('user_id', '=', u.userId)
      .execute();
    expect(sessions).toHaveLength(0);
  });

  it('answers 401 INVALID_CREDENTIALS to a wrong password, so suspension is revealed only to the owner', async () => {
    const u = await register();
    await app.deps.db.updateTable('users').set({ status: 'SUSPENDED' }).where('id', '=', u.userId).execute();
    expectError(await signIn(u.email, 'Wrong-pass-999'), 401, 'INVALID_CREDENTIALS');
  });

  it('signs the user in again once the status is back to ACTIVE', async () => {
    const u = await register();
    await app.deps.db.updateTable('users').set({ status: 'SUSPENDED' }).where('id', '=', u.userId).execute();
    expectError(await signIn(u.email, u.password), 403, 'USER_SUSPENDED');
    await app.deps.db.updateTable('users').set({ status: 'ACTIVE' }).where('id', '=', u.userId).execute();
    expect((await signIn(u.email, u.password)).status).toBe(200);
  });
});

describe('workspace context of login and GET /auth/me', () => {
  it.each([
    ['SUSPENDED', 'WORKSPACE_SUSPENDED'],
    ['ARCHIVED', 'WORKSPACE_ARCHIVED'],
  ] as const)(
    'when the only workspace is %s: activeWorkspace null, hasActiveWorkspace false, reason %s (login and /auth/me)',
    async (status, reason) => {
      const u = await register();
      await app.deps.db.updateTable('workspaces').set({ status }).where('id', '=', u.workspaceId).execute();
      const res = await signIn(u.email, u.password);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        activeWorkspace: null,
        hasActiveWorkspace: false,
        workspaceUnavailableReason: reason,
      });
      expect(typeof res.body.accessToken).toBe('string');

      const me = await app.api('GET', '/auth/me', { token: res.body.accessToken });
      expect(me.status).toBe(200);
      expect(me.body).toMatchObject({
        user: { id: u.userId },
        activeWorkspace: null,
        hasActiveWorkspace: false,
        workspaceUnavailableReason: reason,
      });
    },
  );

  async function addMembership(userId: string, status: 'ACTIVE' | 'SUSPENDED' | 'ARCHIVED' = 'ACTIVE') {
    const ws = await app.deps.db
      .insertInto('workspaces')
      .values({ name: `Team ${Math.random().toString(36).slice(2, 8)}`, status, edition: 'PRO', is_personal: false })
      .returning('id')
      .executeTakeFirstOrThrow();
    // Joined after the personal workspace.
    await app.deps.db
      .insertInto('workspace_members')
      .values({ workspace_id: ws.id, user_id: userId, role: 'MEMBER', created_at: new Date(Date.now() + 60_000) })
      .execute();
    return ws.id;
  }

  it('with two memberships where the first is suspended, picks the ACTIVE one (login and /auth/me)', async () => {
    const u = await register();
    const second = await addMembership(u.userId);
    await app.deps.db.updateTable('workspaces').set({ status: 'SUSPENDED' }).where('id', '=', u.workspaceId).execute();

    const res = await signIn(u.email, u.password);
    expect(res.status).toBe(200);
    expect(res.body.activeWorkspace).toMatchObject({ id: second, status: 'ACTIVE', edition: 'PRO', role: 'MEMBER' });
    expect(res.body.hasActiveWorkspace).toBe(true);
    expect(res.body.workspaceUnavailableReason).toBeUndefined();

    const me = await app.api('GET', '/auth/me', { token: res.body.accessToken });
    expect(me.status).toBe(200);
    expect(me.body.activeWorkspace).toMatchObject({ id: second, status: 'ACTIVE', role: 'MEMBER' });
    expect(me.body.hasActiveWorkspace).toBe(true);
  });

  it('with two ACTIVE memberships, picks the first one joined', async () => {
    const u = await register();
    await addMembership(u.userId);
    const res = await signIn(u.email, u.password);
    expect(res.status).toBe(200);
    expect(res.body.activeWorkspace).toMatchObject({ id: u.workspaceId, role: 'OWNER' });
  });

  it('never offers a suspended second workspace while the first is archived', async () => {
    const u = await register();
    await addMembership(u.userId, 'SUSPENDED');
    await app.deps.db.updateTable('workspaces').set({ status: 'ARCHIVED' }).where('id', '=', u.workspaceId).execute();
    const res = await signIn(u.email, u.password);
    expect(res.status).toBe(200);
    expect(res.body.activeWorkspace).toBeNull();
    expect(res.body.hasActiveWorkspace).toBe(false);
    expect(['WORKSPACE_ARCHIVED', 'WORKSPACE_SUSPENDED']).toContain(res.body.workspaceUnavailableReason);
  });
});

describe('POST /auth/login: timing', () => {
  let slow: TestApp;
  beforeAll(async () => {
    slow = await startTestApp({ ...NO_RATE_LIMIT, BCRYPT_COST: '10' });
  });
  afterAll(() => slow?.close());

  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s[Math.floor(s.length / 2)];
  };

  it('takes comparable time for an unknown e-mail and a wrong password (both run bcrypt)', async () => {
    const s = await registerAndLogin(slow.api, { prefix: 'timing' });
    const time = async (email: string) => {
      const started = performance.now();
      const res = await slow.api('POST', '/auth/login', { body: { email, password: 'Wrong-pass-999' } });
      const ms = performance.now() - started;
      expectError(res, 401, 'INVALID_CREDENTIALS');
      return ms;
    };
    // Warm both paths once.
    await time(s.email);
    await time(uniqueEmail('ghost'));
    const known: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 5; i++) {
      known.push(await time(s.email));
      unknown.push(await time(uniqueEmail('ghost')));
    }
    expect(median(unknown)).toBeGreaterThanOrEqual(0.5 * median(known));
  });
});
