import crypto from 'node:crypto';
import net from 'node:net';
import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_JWT_ACCESS_SECRET, TEST_JWT_REFRESH_SECRET, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, registerAndLogin, type Session } from '../helpers/http.js';
import { clockAhead } from '../helpers/clock.js';
import { latestMailToken } from '../helpers/mail.js';

let app: TestApp;
let alice: Session;
let bob: Session;
beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
  alice = await registerAndLogin(app.api, { prefix: 'alice', name: 'Alice' });
  bob = await registerAndLogin(app.api, { prefix: 'bob', name: 'Bob' });
});
afterAll(() => app.close());

const nowSec = () => Math.floor(Date.now() / 1000);
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const decodePart = (part: string) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));

/** The claims a genuine access token of `sub` carries (in alice's session, whose id every token names). */
const claims = (sub: string, extra: Record<string, unknown> = {}) => ({
  sub,
  sid: decodePart(alice.accessToken.split('.')[1]).sid,
  typ: 'access',
  iss: app.config.JWT_ISSUER,
  aud: app.config.JWT_AUDIENCE,
  iat: nowSec(),
  exp: nowSec() + 900,
  ...extra,
});

const sign = (payload: object, secret: string = TEST_JWT_ACCESS_SECRET, algorithm: jwt.Algorithm = 'HS256') =>
  jwt.sign(payload, secret, { algorithm });

const me = (token: string) => app.api('GET', '/auth/me', { token });

/** Sends raw bytes and returns the raw HTTP answer (for a request fetch refuses to make). */
function rawRequest(url: string, payload: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    let data = '';
    const socket = net.connect(Number(port), hostname, () => socket.write(payload, () => undefined));
    socket.setTimeout(10_000, () => socket.destroy(new Error('timed out')));
    socket.on('data', (c) => (data += c.toString()));
    socket.on('end', () => resolve(data));
    socket.on('close', () => resolve(data));
    // The server may close while the 1 MB is still being written: keep what it answered.
    socket.on('error', (err) => (data ? resolve(data) : reject(err)));
  });
}

describe('GET /auth/me', () => {
  it('answers 200 with the signed-in user and the workspace context', async () => {
    const res = await me(alice.accessToken);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      user: {
        id: alice.userId,
        email: alice.email,
        name: 'Alice',
        status: 'ACTIVE',
        platformRole: 'USER',
        emailVerified: false,
      },
      activeWorkspace: { id: alice.workspaceId, status: 'ACTIVE', role: 'OWNER' },
      hasActiveWorkspace: true,
    });
    expect(res.body.accessToken).toBeUndefined();
    expect(res.text).not.toMatch(/hash/i);
  });

  it.each([
    ['no Authorization header', () => undefined],
    ['"Bearer" and nothing', () => 'Bearer'],
    ['"Bearer" and spaces', () => 'Bearer    '],
    ['a Basic credential', () => `Basic ${Buffer.from('user@tests.local:Strong-pass-123').toString('base64')}`],
    ['a genuine token without the Bearer scheme', () => alice.accessToken],
    ['two tokens', () => 'Bearer abc.def.ghi jkl.mno.pqr'],
  ])('refuses %s with 401 UNAUTHORIZED', async (_what, header) => {
    const authorization = header();
    const res = await app.api('GET', '/auth/me', { headers: authorization === undefined ? {} : { authorization } });
    expectError(res, 401, 'UNAUTHORIZED');
  });

  it('refuses a genuine access token sent with the Basic scheme with 401 UNAUTHORIZED', async () => {
    expectError(
      await app.api('GET', '/auth/me', { headers: { authorization: `Basic ${alice.accessToken}` } }),
      401,
      'UNAUTHORIZED',
    );
  });
});

describe('the access token', () => {
  it('is an HS256 JWT with sub, iat, exp, iss, aud and typ "access", valid 900 s', () => {
    const [header, payload, signature] = alice.accessToken.split('.');
    expect(signature).toBeTruthy();
    expect(decodePart(header)).toMatchObject({ alg: 'HS256' });
    const p = decodePart(payload);
    expect(p).toMatchObject({
      sub: alice.userId,
      typ: 'access',
      iss: app.config.JWT_ISSUER,
      aud: app.config.JWT_AUDIENCE,
    });
    expect(typeof p.iat).toBe('number');
    expect(p.exp - p.iat).toBe(900);
    expect(Math.abs(p.iat - nowSec())).toBeLessThan(60);
    // Signed with JWT_ACCESS_SECRET.
    expect(() => jwt.verify(alice.accessToken, TEST_JWT_ACCESS_SECRET, { algorithms: ['HS256'] })).not.toThrow();
    expect(() => jwt.verify(alice.accessToken, TEST_JWT_REFRESH_SECRET, { algorithms: ['HS256'] })).toThrow();
  });

  it('accepts a token minted the same way with the right secret (control for the forgeries below)', async () => {
    const res = await me(sign(claims(alice.userId)));
    expect(res.status).toBe(200);
    expect(res.body.user.id).toBe(alice.userId);
  });
});

describe('forged and invalid access tokens', () => {
  const forgeries: Array<[string, () => string]> = [
    [
      'a tampered payload (sub swapped to another user)',
      () => {
        const [h, p, s] = alice.accessToken.split('.');
        return `${h}.${b64({ ...decodePart(p), sub: bob.userId })}.${s}`;
      },
    ],
    [
      'a tampered payload (exp pushed out)',
      () => {
        const [h, p, s] = alice.accessToken.split('.');
        const payload = decodePart(p);
        return `${h}.${b64({ ...payload, exp: payload.exp + 86_400 })}.${s}`;
      },
    ],
    ['the signature stripped', () => alice.accessToken.split('.').slice(0, 2).join('.') + '.'],
    ['alg "none" without a signature', () => `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims(alice.userId))}.`],
    ['alg "None" without a signature', () => `${b64({ alg: 'None', typ: 'JWT' })}.${b64(claims(alice.userId))}.`],
    ['alg "NONE" without a signature', () => `${b64({ alg: 'NONE', typ: 'JWT' })}.${b64(claims(alice.userId))}.`],
    [
      'alg "none" keeping a genuine signature',
      () => `${b64({ alg: 'none', typ: 'JWT' })}.${alice.accessToken.split('.')[1]}.${alice.accessToken.split('.')[2]}`,
    ],
    ['HS512 signed with the access secret', () => sign(claims(alice.userId), TEST_JWT_ACCESS_SECRET, 'HS512')],
    ['HS384 signed with the access secret', () => sign(claims(alice.userId), TEST_JWT_ACCESS_SECRET, 'HS384')],
    ['HS256 signed with another secret', () => sign(claims(alice.userId), 'some-other-secret-0123456789abcdef0123456')],
    ['HS256 signed with the refresh secret', () => sign(claims(alice.userId), TEST_JWT_REFRESH_SECRET)],
    [
      'an expired token, correctly signed',
      () => sign(claims(alice.userId, { iat: nowSec() - 3600, exp: nowSec() - 60 })),
    ],
    ['a token not valid before a future time', () => sign(claims(alice.userId, { nbf: nowSec() + 600 }))],
    ['a wrong iss', () => sign(claims(alice.userId, { iss: 'someone-else' }))],
    ['no iss', () => sign(claims(alice.userId, { iss: undefined }))],
    ['a wrong aud', () => sign(claims(alice.userId, { aud: 'another-audience' }))],
    ['no aud', () => sign(claims(alice.userId, { aud: undefined }))],
    ['typ "refresh"', () => sign(claims(alice.userId, { typ: 'refresh' }))],
    ['typ "ACCESS"', () => sign(claims(alice.userId, { typ: 'ACCESS' }))],
    ['no typ', () => sign(claims(alice.userId, { typ: undefined }))],
    ['a sub that is not a user id', () => sign(claims('admin'))],
    ['a sub of no existing user', () => sign(claims(crypto.randomUUID()))],
    ['no sub', () => sign(claims(alice.userId, { sub: undefined }))],
    ['no sid (a token of no session)', () => sign(claims(alice.userId, { sid: undefined }))],
    ['a sid of no session', () => sign(claims(alice.userId, { sid: crypto.randomUUID() }))],
    [
      "a sid of another user's session",
      () => sign(claims(alice.userId, { sid: decodePart(bob.accessToken.split('.')[1]).sid })),
    ],
    ['the refresh token', () => alice.refreshToken],
    ['a garbage string', () => 'garbage-token-value'],
    ['three garbage parts', () => 'aaaa.bbbb.cccc'],
    [
      'JSON-looking parts that are not JSON',
      () => `${Buffer.from('{not json').toString('base64url')}.${Buffer.from('{x').toString('base64url')}.sig`,
    ],
    ['only dots', () => '........'],
    [
      'a ~8 KB token',
      () => sign(claims(alice.userId, { pad: 'p'.repeat(6000) }), 'some-other-secret-0123456789abcdef0123456'),
    ],
    ['~8 KB of garbage', () => 'g'.repeat(8 * 1024)],
  ];

  it.each(forgeries)('refuses %s with 401 UNAUTHORIZED', async (_what, build) => {
    const token = build();
    expectError(await me(token), 401, 'UNAUTHORIZED');
  });

  it('answers a 1 MB Authorization header with 431 REQUEST_HEADER_FIELDS_TOO_LARGE in the JSON error shape, never a 5xx', async () => {
    const answer = await rawRequest(
      app.url,
      `GET /auth/me HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${'a'.repeat(1024 * 1024)}\r\nConnection: close\r\n\r\n`,
    );
    const split = answer.indexOf('\r\n\r\n');
    const head = answer.slice(0, split);
    const body = answer.slice(split + 4);
    expect(head).toMatch(/^HTTP\/1\.1 431 /);
    expect(head).toMatch(/content-type: application\/json/i);
    const parsed = JSON.parse(body);
    expect(parsed).toEqual({
      code: 'REQUEST_HEADER_FIELDS_TOO_LARGE',
      message: expect.any(String),
      requestId: expect.any(String),
    });
    expect(parsed.message.length).toBeGreaterThan(0);
    const headerId = /x-request-id: (\S+)/i.exec(head)?.[1];
    expect(headerId).toBe(parsed.requestId);
    // The server is still serving.
    expect((await me(alice.accessToken)).status).toBe(200);
  });
});

describe('access tokens and account state', () => {
  it("refuses a suspended user's still-valid access token with 403 USER_SUSPENDED on the very next request, and accepts it again after reactivation", async () => {
    const s = await registerAndLogin(app.api, { prefix: 'susp' });
    expect((await me(s.accessToken)).status).toBe(200);
    await app.deps.db.updateTable('users').set({ status: 'SUSPENDED' }).where('id', '=', s.userId).execute();
    expectError(await me(s.accessToken), 403, 'USER_SUSPENDED');
    await app.deps.db.updateTable('users').set({ status: 'ACTIVE' }).where('id', '=', s.userId).execute();
    const back = await me(s.accessToken);
    expect(back.status).toBe(200);
    expect(back.body.user.status).toBe('ACTIVE');
  });

  it('refuses an access token issued before a password reset with 401 UNAUTHORIZED; one issued after works', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'reset' });
    expect((await me(s.accessToken)).status).toBe(200);
    // The check has one-second granularity (iat is in whole seconds): the reset comes 1.1 s later, by the
    // app's clock (this process's Date, moved ahead).
    await clockAhead(1_100, async () => {
      expect((await app.api('POST', '/auth/forgot-password', { body: { email: s.email } })).status).toBe(200);
      const token = await latestMailToken(app, s.email, 'password-reset');
      const newPassword = 'Brand-new-pass-456';
      expect((await app.api('POST', '/auth/reset-password', { body: { token, newPassword } })).status).toBe(200);

      expectError(await me(s.accessToken), 401, 'UNAUTHORIZED');

      const fresh = await app.api('POST', '/auth/login', { body: { email: s.email, password: newPassword } });
      expect(fresh.status).toBe(200);
      expect((await me(fresh.body.accessToken)).status).toBe(200);
    });
  });

  it("does not affect other users' tokens when one user is suspended", async () => {
    const s = await registerAndLogin(app.api, { prefix: 'other' });
    const t = await registerAndLogin(app.api, { prefix: 'bystander' });
    await app.deps.db.updateTable('users').set({ status: 'SUSPENDED' }).where('id', '=', s.userId).execute();
    expectError(await me(s.accessToken), 403, 'USER_SUSPENDED');
    expect((await me(t.accessToken)).status).toBe(200);
  });
});
