import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { STRONG_PASSWORD, registerAndLogin, uniqueEmail, type ApiResponse, type Session } from '../helpers/http.js';

let app: TestApp;
let s: Session;
beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
  s = await registerAndLogin(app.api, { prefix: 'trpc', name: 'Tia' });
});
afterAll(() => app.close());

const STACK = /\bat .+:\d+:\d+|node_modules|\.ts:\d+|"stack"/;

/** Asserts the tRPC error envelope carrying our code, status and request id, and returns its data. */
function expectTrpcError(res: ApiResponse, status: number, code: string) {
  const ctx = `${res.status} ${res.text.slice(0, 300)}`;
  expect(res.status, ctx).toBe(status);
  expect(res.body?.error, ctx).toBeTruthy();
  const { error } = res.body;
  expect(typeof error.message).toBe('string');
  expect(error.message.length).toBeGreaterThan(0);
  expect(error.data.code, ctx).toBe(code);
  expect(error.data.httpStatus).toBe(status);
  expect(error.data.requestId).toBe(res.headers.get('x-request-id'));
  expect(error.data.stack).toBeUndefined();
  expect(res.text).not.toMatch(STACK);
  return error.data as {
    code: string;
    requestId: string;
    path?: string;
    issues?: Array<{ path: string; message: string; code: string }>;
  };
}

describe('/trpc: auth.login', () => {
  it('answers POST /trpc/auth.login with { result: { data: tokens, user, workspace context } }', async () => {
    const res = await app.api('POST', '/trpc/auth.login', { body: { email: s.email, password: s.password } });
    expect(res.status).toBe(200);
    expect(res.body.result.data).toMatchObject({
      accessToken: expect.any(String),
      refreshToken: expect.any(String),
      tokenType: 'Bearer',
      expiresIn: 900,
      user: { id: s.userId, email: s.email, status: 'ACTIVE' },
      activeWorkspace: { id: s.workspaceId },
      hasActiveWorkspace: true,
    });
    expect(res.text).not.toContain(s.password);
  });

  it('answers a failed login HTTP 401 with error.data.code INVALID_CREDENTIALS and requestId equal to X-Request-Id', async () => {
    const res = await app.api('POST', '/trpc/auth.login', {
      body: { email: s.email, password: 'Wrong-pass-999' },
      headers: { 'x-request-id': 'trpc-login-failure-1' },
    });
    const data = expectTrpcError(res, 401, 'INVALID_CREDENTIALS');
    expect(data.requestId).toBe('trpc-login-failure-1');
    expect(data.path).toBe('auth.login');
  });

  it('answers a login of a suspended user HTTP 403 with error.data.code USER_SUSPENDED', async () => {
    const t = await registerAndLogin(app.api, { prefix: 'trpc-susp' });
    await app.deps.db.updateTable('users').set({ status: 'SUSPENDED' }).where('id', '=', t.userId).execute();
    const res = await app.api('POST', '/trpc/auth.login', { body: { email: t.email, password: t.password } });
    expectTrpcError(res, 403, 'USER_SUSPENDED');
  });

  it('answers invalid login input HTTP 400 BAD_REQUEST with an issues array', async () => {
    const res = await app.api('POST', '/trpc/auth.login', { body: { email: 'not-an-email', password: 42 } });
    const data = expectTrpcError(res, 400, 'BAD_REQUEST');
    expect(Array.isArray(data.issues)).toBe(true);
    expect(data.issues!.map((i) => i.path).sort()).toEqual(['email', 'password']);
    expect(res.text).not.toContain('not-an-email');
  });
});

describe('/trpc: auth.me', () => {
  it('answers GET /trpc/auth.me with a bearer token', async () => {
    const res = await app.api('GET', '/trpc/auth.me', { token: s.accessToken });
    expect(res.status).toBe(200);
    expect(res.body.result.data).toMatchObject({
      user: { id: s.userId, email: s.email, name: 'Tia' },
      hasActiveWorkspace: true,
    });
  });

  it('answers GET /trpc/auth.me without a token HTTP 401 UNAUTHORIZED', async () => {
    expectTrpcError(await app.api('GET', '/trpc/auth.me'), 401, 'UNAUTHORIZED');
  });

  it('answers GET /trpc/auth.me with a forged token HTTP 401 UNAUTHORIZED', async () => {
    const [h, p] = s.accessToken.split('.');
    expectTrpcError(
      await app.api('GET', '/trpc/auth.me', { token: `${h}.${p}.forged-signature-value` }),
      401,
      'UNAUTHORIZED',
    );
  });
});

describe('/trpc: validation and other procedures', () => {
  it('answers a weak password at auth.register HTTP 400 WEAK_PASSWORD with an issues array', async () => {
    const res = await app.api('POST', '/trpc/auth.register', {
      body: { email: uniqueEmail('weak'), password: 'allletters', name: 'W' },
    });
    const data = expectTrpcError(res, 400, 'WEAK_PASSWORD');
    expect(Array.isArray(data.issues)).toBe(true);
    expect(data.issues!.map((i) => i.path)).toContain('password');
    expect(res.text).not.toContain('allletters');
  });

  it('answers other invalid fields at auth.register HTTP 400 BAD_REQUEST with an issues array', async () => {
    const res = await app.api('POST', '/trpc/auth.register', {
      body: { email: 5, password: STRONG_PASSWORD, name: '' },
    });
    const data = expectTrpcError(res, 400, 'BAD_REQUEST');
    expect(data.issues!.map((i) => i.path)).toEqual(expect.arrayContaining(['email', 'name']));
  });

  it('registers through /trpc, answering the created account and its workspace', async () => {
    const email = uniqueEmail('trpc-reg');
    const res = await app.api('POST', '/trpc/auth.register', {
      body: { email, password: STRONG_PASSWORD, name: 'Reg' },
    });
    expect([200, 201]).toContain(res.status);
    expect(res.body.result.data.user).toMatchObject({ email, status: 'ACTIVE' });
    expect(res.body.result.data.workspace).toMatchObject({ role: 'OWNER' });
  });

  it('rotates a refresh token through /trpc auth.refresh, and refuses an unknown one HTTP 401 UNAUTHORIZED', async () => {
    const t = await registerAndLogin(app.api, { prefix: 'trpc-ref' });
    const res = await app.api('POST', '/trpc/auth.refresh', { body: { refreshToken: t.refreshToken } });
    expect(res.status).toBe(200);
    expect(res.body.result.data.refreshToken).not.toBe(t.refreshToken);
    const again = await app.api('POST', '/trpc/auth.refresh', { body: { refreshToken: 'not-a-known-refresh-token' } });
    expectTrpcError(again, 401, 'UNAUTHORIZED');
  });

  it('answers a bad reset token HTTP 400 INVALID_TOKEN', async () => {
    const res = await app.api('POST', '/trpc/auth.resetPassword', {
      body: { token: 'no-such-reset-token', newPassword: STRONG_PASSWORD },
    });
    expectTrpcError(res, 400, 'INVALID_TOKEN');
  });

  it('never puts a stack trace in error bodies of malformed calls', async () => {
    for (const res of [
      await app.api('POST', '/trpc/auth.login', { raw: '{"email":', headers: { 'content-type': 'application/json' } }),
      await app.api('POST', '/trpc/auth.noSuchProcedure', { body: {} }),
      await app.api('GET', '/trpc/auth.login'),
      await app.api('POST', '/trpc/auth.login', { body: { email: { deep: [1, { x: null }] }, password: [] } }),
    ]) {
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(res.body?.error?.data?.stack).toBeUndefined();
      expect(res.text).not.toMatch(STACK);
    }
  });
});

describe('/trpc: request log lines', () => {
  it('never log the input of a call sent as a GET: a password or refresh token in ?input= stays out of the log', async () => {
    const t = await registerAndLogin(app.api, { prefix: 'trpc-log' });
    const calls = [
      `/trpc/auth.login?input=${encodeURIComponent(JSON.stringify({ email: t.email, password: t.password }))}`,
      `/trpc/auth.refresh?input=${encodeURIComponent(JSON.stringify({ refreshToken: t.refreshToken }))}`,
      // A batch, as @trpc/client sends one.
      `/trpc/auth.me,auth.refresh?batch=1&input=${encodeURIComponent(JSON.stringify({ 1: { refreshToken: t.refreshToken } }))}`,
    ];
    for (const call of calls) {
      const res = await app.api('GET', call);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
    }
    const lines = app.logs.filter((line) => line.includes('/trpc/auth.'));
    expect(lines.length).toBeGreaterThanOrEqual(calls.length);
    for (const secret of [t.password, encodeURIComponent(t.password), t.refreshToken]) {
      expect(app.logs.filter((line) => line.includes(secret))).toEqual([]);
    }
    // The path and the other parameters stay: the line still says which call it was.
    expect(lines.some((line) => line.includes('/trpc/auth.me,auth.refresh?batch=1&input=[REDACTED]'))).toBe(true);
  });
});
