// Sessions: every sign-in is one, listed with its times, device and address; ending one (or all the
// others, or changing the password) stops its access tokens at their very next request, on every
// instance, and its refresh token. A sign-in from a device the account has not used is told by mail.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { clockPast } from '../helpers/clock.js';
import { STRONG_PASSWORD, expectError, registerAndLogin, type Session } from '../helpers/http.js';
import { mailsTo } from '../helpers/mail.js';

let app: TestApp;
/** A second instance on the same database: what one instance ends, the other refuses at once. */
let other: TestApp;
beforeAll(async () => {
  [app, other] = await Promise.all([
    startTestApp({ RATE_LIMIT_ENABLED: 'false' }),
    startTestApp({ RATE_LIMIT_ENABLED: 'false' }),
  ]);
});
afterAll(async () => {
  await Promise.all([app?.close(), other?.close()]);
});

const UA_LAPTOP = 'Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0';
const UA_PHONE = 'Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) Safari/604.1';

/** Signs `s` in again with `userAgent`: a new session. */
async function signInFrom(s: Pick<Session, 'email' | 'password'>, userAgent: string) {
  const res = await app.api('POST', '/auth/login', {
    body: { email: s.email, password: s.password },
    headers: { 'user-agent': userAgent },
  });
  expect(res.status, res.text).toBe(200);
  return res.body as { accessToken: string; refreshToken: string };
}

const sessionsOf = (token: string) => app.api('GET', '/auth/sessions', { token });
const me = (target: TestApp, token: string) => target.api('GET', '/auth/me', { token });
const refresh = (refreshToken: string) => app.api('POST', '/auth/refresh', { body: { refreshToken } });
const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8'));

describe('GET /auth/sessions', () => {
  it('lists every sign-in with its times, device and address; current marks the caller', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'sess-list' });
    const laptop = await signInFrom(s, UA_LAPTOP);
    const phone = await signInFrom(s, UA_PHONE);

    const res = await sessionsOf(laptop.accessToken);
    expect(res.status, res.text).toBe(200);
    expect(res.body.items).toHaveLength(3);
    for (const item of res.body.items) {
      expect(Object.keys(item).sort()).toEqual(['createdAt', 'current', 'id', 'ipAddress', 'lastUsedAt', 'userAgent']);
      expect(Date.parse(item.createdAt)).toBeLessThanOrEqual(Date.parse(item.lastUsedAt));
      expect(item.ipAddress).toMatch(/127\.0\.0\.1/);
    }
    const current = res.body.items.filter((i: { current: boolean }) => i.current);
    expect(current).toHaveLength(1);
    expect(current[0]).toMatchObject({ userAgent: UA_LAPTOP, id: claimsOf(laptop.accessToken).sid });
    expect(res.body.items.map((i: { userAgent: string }) => i.userAgent)).toContain(UA_PHONE);
    expect(res.text).not.toContain(phone.refreshToken);

    // From the phone, the phone's session is the current one.
    const fromPhone = await sessionsOf(phone.accessToken);
    expect(fromPhone.body.items.find((i: { current: boolean }) => i.current).userAgent).toBe(UA_PHONE);
  });

  it('moves lastUsedAt on a refresh, in the same session (access tokens carry its id as sid)', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'sess-refresh' });
    const sid = claimsOf(s.accessToken).sid;
    const before = (await sessionsOf(s.accessToken)).body.items[0];
    expect(before.id).toBe(sid);
    await clockPast(Date.parse(before.lastUsedAt));
    const rotated = await refresh(s.refreshToken);
    expect(rotated.status).toBe(200);
    expect(claimsOf(rotated.body.accessToken).sid).toBe(sid);
    const after = (await sessionsOf(rotated.body.accessToken)).body.items;
    expect(after).toHaveLength(1);
    expect(Date.parse(after[0].lastUsedAt)).toBeGreaterThan(Date.parse(before.lastUsedAt));
  });

  it('does not list another user sessions, and needs a token', async () => {
    const a = await registerAndLogin(app.api, { prefix: 'sess-a' });
    const b = await registerAndLogin(app.api, { prefix: 'sess-b' });
    const ids = (await sessionsOf(a.accessToken)).body.items.map((i: { id: string }) => i.id);
    expect(ids).not.toContain(claimsOf(b.accessToken).sid);
    expectError(await app.api('GET', '/auth/sessions'), 401, 'UNAUTHORIZED');
  });
});

describe('ending sessions', () => {
  it('DELETE /auth/sessions/{id} ends that session at once, on every instance, and its refresh token', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'sess-end' });
    const phone = await signInFrom(s, UA_PHONE);
    expect((await me(other, phone.accessToken)).status).toBe(200);

    const sid = claimsOf(phone.accessToken).sid;
    const res = await app.api('DELETE', `/auth/sessions/${sid}`, { token: s.accessToken });
    expect(res.status, res.text).toBe(200);
    expectError(await me(app, phone.accessToken), 401, 'UNAUTHORIZED');
    expectError(await me(other, phone.accessToken), 401, 'UNAUTHORIZED');
    expectError(await refresh(phone.refreshToken), 401, 'UNAUTHORIZED');
    expect((await me(app, s.accessToken)).status).toBe(200);
    const ids = (await sessionsOf(s.accessToken)).body.items.map((i: { id: string }) => i.id);
    expect(ids).toEqual([claimsOf(s.accessToken).sid]);

    // Gone: 404 again; another user's session or an unknown id: 404; not an id: 400.
    expectError(await app.api('DELETE', `/auth/sessions/${sid}`, { token: s.accessToken }), 404, 'NOT_FOUND');
    const stranger = await registerAndLogin(app.api, { prefix: 'sess-stranger' });
    const strangerSid = claimsOf(stranger.accessToken).sid;
    expectError(await app.api('DELETE', `/auth/sessions/${strangerSid}`, { token: s.accessToken }), 404, 'NOT_FOUND');
    expect((await me(app, stranger.accessToken)).status).toBe(200);
    expectError(
      await app.api('DELETE', `/auth/sessions/${crypto.randomUUID()}`, { token: s.accessToken }),
      404,
      'NOT_FOUND',
    );
    expectError(await app.api('DELETE', '/auth/sessions/not-a-uuid', { token: s.accessToken }), 400, 'BAD_REQUEST');
  });

  it('ending the current session signs this client out too', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'sess-self' });
    const sid = claimsOf(s.accessToken).sid;
    expect((await app.api('DELETE', `/auth/sessions/${sid}`, { token: s.accessToken })).status).toBe(200);
    expectError(await me(app, s.accessToken), 401, 'UNAUTHORIZED');
  });

  it('POST /auth/sessions/revoke-others ends all but the current one: { revoked }', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'sess-others' });
    const laptop = await signInFrom(s, UA_LAPTOP);
    const phone = await signInFrom(s, UA_PHONE);
    const res = await app.api('POST', '/auth/sessions/revoke-others', { token: laptop.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ revoked: 2 });
    expectError(await me(app, s.accessToken), 401, 'UNAUTHORIZED');
    expectError(await me(other, phone.accessToken), 401, 'UNAUTHORIZED');
    expectError(await refresh(phone.refreshToken), 401, 'UNAUTHORIZED');
    expect((await me(app, laptop.accessToken)).status).toBe(200);
    expect((await refresh(laptop.refreshToken)).status).toBe(200);
    const again = await app.api('POST', '/auth/sessions/revoke-others', { token: laptop.accessToken });
    expect(again.body).toEqual({ revoked: 0 });
  });

  it('logout ends the access token of its session too', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'sess-logout' });
    expect((await app.api('POST', '/auth/logout', { body: { refreshToken: s.refreshToken } })).status).toBe(200);
    expectError(await me(app, s.accessToken), 401, 'UNAUTHORIZED');
  });

  it('refuses an access token without a session id (sid)', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'sess-nosid' });
    const jwt = await import('jsonwebtoken');
    const { sid: _, jti: __, ...claims } = claimsOf(s.accessToken);
    const forged = jwt.default.sign(claims, app.config.JWT_ACCESS_SECRET, { algorithm: 'HS256' });
    expectError(await me(app, forged), 401, 'UNAUTHORIZED');
  });
});

describe('POST /auth/change-password', () => {
  it('sets the new password and ends the other sessions; this one stays signed in', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'sess-pw' });
    const phone = await signInFrom(s, UA_PHONE);
    const change = (body: Record<string, unknown>) =>
      app.api('POST', '/auth/change-password', { token: s.accessToken, body });

    expectError(
      await change({ currentPassword: 'Wrong-pass-999', newPassword: 'Brand-new-pass-1' }),
      401,
      'INVALID_CREDENTIALS',
    );
    expectError(await change({ currentPassword: STRONG_PASSWORD, newPassword: 'short' }), 400, 'WEAK_PASSWORD');
    expect((await me(app, phone.accessToken)).status).toBe(200);

    const res = await change({ currentPassword: STRONG_PASSWORD, newPassword: 'Brand-new-pass-1' });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ revoked: 1, message: expect.any(String) });
    expectError(await me(app, phone.accessToken), 401, 'UNAUTHORIZED');
    expectError(await me(other, phone.accessToken), 401, 'UNAUTHORIZED');
    expectError(await refresh(phone.refreshToken), 401, 'UNAUTHORIZED');
    expect((await me(app, s.accessToken)).status).toBe(200);
    expect((await refresh(s.refreshToken)).status).toBe(200);

    expectError(
      await app.api('POST', '/auth/login', { body: { email: s.email, password: STRONG_PASSWORD } }),
      401,
      'INVALID_CREDENTIALS',
    );
    const fresh = await app.api('POST', '/auth/login', { body: { email: s.email, password: 'Brand-new-pass-1' } });
    expect(fresh.status).toBe(200);
  });
});

describe('a sign-in from a new device', () => {
  it('mails the user when the user agent and address are new to the account, not otherwise', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'sess-device' });
    const newSignIns = async () => (await mailsTo(app, s.email)).filter((m) => m.template === 'new-sign-in');
    // The first sign-in ever (registerAndLogin) has nothing to compare with.
    expect(await newSignIns()).toHaveLength(0);
    await signInFrom(s, UA_LAPTOP);
    expect(await newSignIns()).toHaveLength(1);
    await signInFrom(s, UA_LAPTOP);
    expect(await newSignIns()).toHaveLength(1);
    await signInFrom(s, UA_PHONE);
    const mails = await newSignIns();
    expect(mails).toHaveLength(2);
    expect(mails[1].text).toContain(UA_PHONE);
  });
});

describe('GET /auth/me', () => {
  it('shows mfaEnabled', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'sess-me' });
    expect((await me(app, s.accessToken)).body.user.mfaEnabled).toBe(false);
  });
});
