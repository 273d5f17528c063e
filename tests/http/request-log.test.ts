import crypto from 'node:crypto';
import { isIP } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, login, registerAndLogin, type ApiResponse, type Session } from '../helpers/http.js';
import { ledger } from '../helpers/secret-ledger.js';
import { everyMonitoringAnswer } from '../monitoring/helpers.js';

let app: TestApp;
let user: Session;
beforeAll(async () => {
  app = await startTestApp();
  user = await registerAndLogin(app.api);
});
afterAll(() => app.close());

/** The request log line of an answer, found by its request id. */
function requestLine(res: ApiResponse): Record<string, unknown> {
  const id = res.headers.get('x-request-id');
  const line = app.logs
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((l) => l.requestId === id && 'status' in l && 'route' in l);
  if (!line) throw new Error(`no request line for ${id}`);
  return line;
}

describe('the request log line', () => {
  it("names an error answer's route template and error code, never the raw id in the route", async () => {
    const id = crypto.randomUUID();
    const res = await app.api('GET', `/workspaces/${id}`, { token: user.accessToken });
    expectError(res, 404, 'NOT_FOUND');
    expect(requestLine(res)).toMatchObject({
      method: 'GET',
      route: '/workspaces/{workspaceId}',
      status: 404,
      code: 'NOT_FOUND',
    });
  });

  it('names the domain code of a refusal, on REST and on /trpc alike', async () => {
    const rest = await app.api('POST', '/auth/login', { body: { email: user.email, password: 'Wrong-pass-123' } });
    expectError(rest, 401, 'INVALID_CREDENTIALS');
    expect(requestLine(rest)).toMatchObject({ route: '/auth/login', status: 401, code: 'INVALID_CREDENTIALS' });

    const trpc = await app.api('GET', '/trpc/auth.me');
    expect(trpc.status).toBe(401);
    expect(requestLine(trpc)).toMatchObject({ route: '/trpc/auth.me', status: 401, code: 'UNAUTHORIZED' });
  });

  it('has no code for a success, and labels a path that matches no route as unmatched', async () => {
    const ok = await app.api('GET', '/auth/me', { token: user.accessToken });
    expect(ok.status).toBe(200);
    const line = requestLine(ok);
    expect(line).toMatchObject({ route: '/auth/me', status: 200 });
    expect(line).not.toHaveProperty('code');

    const unknown = await app.api('GET', `/no-such-route/${crypto.randomUUID()}`);
    expectError(unknown, 404, 'NOT_FOUND');
    expect(requestLine(unknown)).toMatchObject({ route: '(unmatched)', status: 404, code: 'NOT_FOUND' });
  });
});

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const base62 = (n: number) => Array.from({ length: n }, () => BASE62[crypto.randomInt(BASE62.length)]).join('');
const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('the request id', () => {
  // Each fits the plain characters of a request id, and each is a secret (or shaped like one).
  const secrets: Record<string, string> = {
    apiKey: `wsk_${base62(40)}`,
    refreshToken: `rt_${crypto.randomBytes(32).toString('base64url')}`,
    webhookSecret: `whsec_${crypto.randomBytes(32).toString('base64url')}`,
    scimToken: `scim_${base62(40)}`,
    jwt: `${part({ alg: 'HS256', typ: 'JWT' })}.${part({ sub: crypto.randomUUID() })}.${crypto.randomBytes(32).toString('base64url')}`,
    resetToken: crypto.randomBytes(32).toString('base64url').replace(/^./, 'A') + 'a1',
  };
  const unsafe: Record<string, string> = {
    tooLong: `id-${'x'.repeat(126)}`,
    withSpace: 'plain id',
    withSlash: 'a/b',
    withQuote: 'a"b',
  };

  it('is a new one when the client sends a secret, a long or an odd value: never echoed, logged or recorded', async () => {
    const admin = await login(app.api, TEST_ADMIN.email, TEST_ADMIN.password);
    for (const [label, value] of Object.entries(secrets)) ledger.sent(value, `X-Request-Id canary ${label}`);
    for (const [label, value] of Object.entries({ ...secrets, ...unsafe })) {
      const res = await app.api('GET', '/auth/me', { token: user.accessToken, headers: { 'x-request-id': value } });
      expect(res.status, label).toBe(200);
      const id = res.headers.get('x-request-id');
      expect(id, label).toMatch(UUID);
      expect(requestLine(res).requestId, label).toBe(id);
    }
    const everywhere = [...app.logs, ...(await everyMonitoringAnswer(app, admin.accessToken))];
    for (const [label, value] of Object.entries(secrets)) {
      expect(everywhere.filter((t) => t.includes(value)).length, label).toBe(0);
    }
  });

  it('is the client value when short and plain: up to 128 characters of letters, digits and . _ : -', async () => {
    for (const value of ['web-1.2:3_4', crypto.randomUUID(), `id-${'x'.repeat(125)}`]) {
      const res = await app.api('GET', '/auth/me', { token: user.accessToken, headers: { 'x-request-id': value } });
      expect(res.headers.get('x-request-id')).toBe(value);
      expect(requestLine(res).requestId).toBe(value);
    }
  });
});

describe('the client address in the log', () => {
  it('is a parsed IP address, never the text of X-Forwarded-For (TRUST_PROXY one hop, no proxy here)', async () => {
    const key = `wsk_${base62(40)}`;
    ledger.sent(key, 'X-Forwarded-For canary');
    for (const xff of [key, 'not an address', '203.0.113.9 <script>']) {
      const res = await app.api('GET', '/auth/me', { token: user.accessToken, headers: { 'x-forwarded-for': xff } });
      expect(res.status).toBe(200);
      expect(isIP(String(requestLine(res).ip)), xff).not.toBe(0);
    }
    // A sign-in stores the address with the session: the connection's, not the header's.
    const res = await app.api('POST', '/auth/login', {
      body: { email: user.email, password: user.password },
      headers: { 'x-forwarded-for': key },
    });
    expect(res.status).toBe(200);
    const sessions = await app.deps.db
      .selectFrom('sessions')
      .select('ip_address')
      .where('user_id', '=', user.userId)
      .execute();
    for (const s of sessions) expect(isIP(s.ip_address ?? ''), String(s.ip_address)).not.toBe(0);
    expect(app.logs.filter((l) => l.includes(key))).toEqual([]);

    // A proxy's address stays what it is.
    const proxied = await app.api('GET', '/auth/me', {
      token: user.accessToken,
      headers: { 'x-forwarded-for': '203.0.113.7' },
    });
    expect(requestLine(proxied).ip).toBe('203.0.113.7');
  });
});
