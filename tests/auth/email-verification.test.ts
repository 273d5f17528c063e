import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { STRONG_PASSWORD, expectError, registerAndLogin, uniqueEmail, type Session } from '../helpers/http.js';
import { latestMailToken, mailsTo } from '../helpers/mail.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
});
afterAll(() => app.close());

const verify = (token: unknown) => app.api('POST', '/auth/verify-email', { body: { token } });
const resend = (email: string) => app.api('POST', '/auth/resend-verification', { body: { email } });
const me = (s: Session) => app.api('GET', '/auth/me', { token: s.accessToken });
const verificationMails = async (email: string) =>
  (await mailsTo(app, email)).filter((m) => m.template === 'email-verification');

async function registered(prefix = 'verify') {
  const s = await registerAndLogin(app.api, { prefix });
  return { s, token: await latestMailToken(app, s.email, 'email-verification') };
}

describe('verification mail at registration', () => {
  it('mails a verification link to the new address', async () => {
    const email = uniqueEmail('mail');
    expect(
      (await app.api('POST', '/auth/register', { body: { email, password: STRONG_PASSWORD, name: 'Vera' } })).status,
    ).toBe(201);
    const mails = await verificationMails(email);
    expect(mails).toHaveLength(1);
    expect(mails[0].subject).toBeTruthy();
    expect(mails[0].link).toMatch(/^http:\/\/app\.tests\.local\/verify-email\?token=[A-Za-z0-9_%-]+$/);
  });

  it('stores only the SHA-256 digest of the verification token', async () => {
    const { s, token } = await registered('digest');
    const rows = await app.deps.db.selectFrom('user_tokens').selectAll().where('user_id', '=', s.userId).execute();
    expect(rows).toHaveLength(1);
    expect(rows[0].kind).toBe('EMAIL_VERIFICATION');
    expect(JSON.stringify(rows)).not.toContain(token);
    expect(rows[0].token_hash).toBe(crypto.createHash('sha256').update(token).digest('hex'));
  });
});

describe('POST /auth/verify-email', () => {
  it('answers 200 and GET /auth/me then shows emailVerified true', async () => {
    const { s, token } = await registered();
    expect((await me(s)).body.user).toMatchObject({ emailVerified: false, emailVerifiedAt: null });
    const res = await verify(token);
    expect(res.status).toBe(200);
    expect(typeof res.body.message).toBe('string');
    const after = await me(s);
    expect(after.body.user.emailVerified).toBe(true);
    expect(Date.parse(after.body.user.emailVerifiedAt)).not.toBeNaN();
  });

  it('is single use: the second use answers 400 INVALID_TOKEN', async () => {
    const { token } = await registered('once');
    expect((await verify(token)).status).toBe(200);
    expectError(await verify(token), 400, 'INVALID_TOKEN');
  });

  it('refuses an unknown token with 400 INVALID_TOKEN', async () => {
    expectError(await verify(crypto.randomBytes(32).toString('base64url')), 400, 'INVALID_TOKEN');
    expectError(await verify(''), 400, 'INVALID_TOKEN');
  });

  it('refuses an expired token with 400 INVALID_TOKEN and leaves the address unverified', async () => {
    const { s, token } = await registered('expired');
    await app.deps.db
      .updateTable('user_tokens')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('user_id', '=', s.userId)
      .where('kind', '=', 'EMAIL_VERIFICATION')
      .execute();
    expectError(await verify(token), 400, 'INVALID_TOKEN');
    expect((await me(s)).body.user.emailVerified).toBe(false);
  });

  it('refuses a password reset token with 400 INVALID_TOKEN (kinds do not mix), without using it up', async () => {
    const { s } = await registered('kinds');
    expect((await app.api('POST', '/auth/forgot-password', { body: { email: s.email } })).status).toBe(200);
    const resetToken = await latestMailToken(app, s.email, 'password-reset');
    expectError(await verify(resetToken), 400, 'INVALID_TOKEN');
    expect((await me(s)).body.user.emailVerified).toBe(false);
    const reset = await app.api('POST', '/auth/reset-password', {
      body: { token: resetToken, newPassword: 'Kinds-pass-123' },
    });
    expect(reset.status).toBe(200);
  });

  it('refuses a verification token on reset-password with 400 INVALID_TOKEN, and it still verifies afterwards', async () => {
    const { s, token } = await registered('kinds2');
    expectError(
      await app.api('POST', '/auth/reset-password', { body: { token, newPassword: 'Kinds-pass-123' } }),
      400,
      'INVALID_TOKEN',
    );
    expect((await app.api('POST', '/auth/login', { body: { email: s.email, password: s.password } })).status).toBe(200);
    expect((await verify(token)).status).toBe(200);
  });

  it.each([
    ['a numeric token', { token: 12345678 }],
    ['a missing token', {}],
    ['an object token', { token: { $ne: null } }],
  ])('refuses %s with 400 BAD_REQUEST', async (_what, body) => {
    const err = expectError(await app.api('POST', '/auth/verify-email', { body }), 400, 'BAD_REQUEST');
    expect(err.issues?.map((i) => i.path)).toContain('token');
  });
});

describe('POST /auth/resend-verification', () => {
  it('answers 200 with the same body for a known and an unknown address', async () => {
    const { s } = await registered('resend');
    const known = await resend(s.email);
    const unknown = await resend(uniqueEmail('nobody'));
    expect(known.status).toBe(200);
    expect(unknown.status).toBe(200);
    expect(Object.keys(known.body)).toEqual(['message']);
    expect(unknown.body).toEqual(known.body);
  });

  it('writes a new verification mail for an unverified account, and the re-sent token verifies', async () => {
    const { s, token: first } = await registered('again');
    expect(await verificationMails(s.email)).toHaveLength(1);
    expect((await resend(s.email)).status).toBe(200);
    const mails = await verificationMails(s.email);
    expect(mails).toHaveLength(2);
    const second = await latestMailToken(app, s.email, 'email-verification');
    expect(second).not.toBe(first);
    expect((await verify(second)).status).toBe(200);
    expect((await me(s)).body.user.emailVerified).toBe(true);
  });

  it('writes no mail for an already verified account, answering the same body', async () => {
    const { s, token } = await registered('done');
    expect((await verify(token)).status).toBe(200);
    const before = (await verificationMails(s.email)).length;
    const res = await resend(s.email);
    const control = await resend(uniqueEmail('nobody'));
    expect(res.status).toBe(200);
    expect(res.body).toEqual(control.body);
    expect(await verificationMails(s.email)).toHaveLength(before);
  });

  it('writes no mail for an unknown address', async () => {
    const email = uniqueEmail('ghost');
    expect((await resend(email)).status).toBe(200);
    expect(await mailsTo(app, email)).toHaveLength(0);
  });
});
