import crypto from 'node:crypto';
import bcrypt from 'bcrypt';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, login, registerAndLogin, uniqueEmail, type Session } from '../helpers/http.js';
import { latestMailToken, mailsTo } from '../helpers/mail.js';
import { waitFor } from '../helpers/wait.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
});
afterAll(() => app.close());

const NEW_PASSWORD = 'Fresh-pass-789';

const forgot = (email: unknown) => app.api('POST', '/auth/forgot-password', { body: { email } });
const reset = (token: unknown, newPassword: unknown = NEW_PASSWORD) =>
  app.api('POST', '/auth/reset-password', { body: { token, newPassword } });
const signIn = (email: string, password: string) => app.api('POST', '/auth/login', { body: { email, password } });
const resetMails = async (email: string) => (await mailsTo(app, email)).filter((m) => m.template === 'password-reset');

/** A signed-in user with a mailed reset token. */
async function userWithResetToken(prefix = 'reset'): Promise<{ s: Session; token: string }> {
  const s = await registerAndLogin(app.api, { prefix });
  expect((await forgot(s.email)).status).toBe(200);
  return { s, token: await latestMailToken(app, s.email, 'password-reset') };
}

describe('POST /auth/forgot-password', () => {
  it('answers 200 with the same body (only a message) for a known and an unknown address, and mails only the known one', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'known' });
    const unknownEmail = uniqueEmail('unknown');
    const known = await forgot(s.email);
    const unknown = await forgot(unknownEmail);
    expect(known.status).toBe(200);
    expect(unknown.status).toBe(200);
    expect(Object.keys(known.body)).toEqual(['message']);
    expect(typeof known.body.message).toBe('string');
    expect(unknown.body).toEqual(known.body);
    expect(unknown.text).toBe(known.text);

    const mails = await resetMails(s.email);
    expect(mails).toHaveLength(1);
    expect(mails[0].link).toMatch(/^http:\/\/app\.tests\.local\/reset-password\?token=[A-Za-z0-9_%-]+$/);
    expect(mails[0].text).toContain(mails[0].link!);
    expect(await mailsTo(app, unknownEmail)).toHaveLength(0);
  });

  it('finds the account whatever the letter case of the address', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'case' });
    expect((await forgot(s.email.toUpperCase())).status).toBe(200);
    expect(await resetMails(s.email)).toHaveLength(1);
  });

  it('sends no reset mail to a suspended user, answering the same 200 body', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'susp' });
    await app.deps.db.updateTable('users').set({ status: 'SUSPENDED' }).where('id', '=', s.userId).execute();
    const res = await forgot(s.email);
    const control = await forgot(uniqueEmail('nobody'));
    expect(res.status).toBe(200);
    expect(res.body).toEqual(control.body);
    expect(await resetMails(s.email)).toHaveLength(0);
  });

  it.each([
    ['a malformed address', 'not-an-email'],
    ['a numeric address', 12345],
    ['a missing address', undefined],
  ])('refuses %s with 400 BAD_REQUEST', async (_what, email) => {
    const err = expectError(
      await app.api('POST', '/auth/forgot-password', { body: email === undefined ? {} : { email } }),
      400,
      'BAD_REQUEST',
    );
    expect(err.issues?.map((i) => i.path)).toContain('email');
  });

  it('stores only the SHA-256 digest of the reset token', async () => {
    const { s, token } = await userWithResetToken('digest');
    const rows = await app.deps.db
      .selectFrom('user_tokens')
      .selectAll()
      .where('user_id', '=', s.userId)
      .where('kind', '=', 'PASSWORD_RESET')
      .execute();
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(token);
    expect(rows[0].token_hash).toBe(crypto.createHash('sha256').update(token).digest('hex'));
    const byRaw = await app.deps.db.selectFrom('user_tokens').select('id').where('token_hash', '=', token).execute();
    expect(byRaw).toHaveLength(0);
  });
});

describe('POST /auth/reset-password', () => {
  it('answers 200; the new password signs in and the old one is refused with 401 INVALID_CREDENTIALS', async () => {
    const { s, token } = await userWithResetToken();
    const res = await reset(token);
    expect(res.status).toBe(200);
    expect(typeof res.body.message).toBe('string');
    expect((await signIn(s.email, NEW_PASSWORD)).status).toBe(200);
    expectError(await signIn(s.email, s.password), 401, 'INVALID_CREDENTIALS');
  });

  it('revokes every refresh token of the user (401 UNAUTHORIZED)', async () => {
    const { s, token } = await userWithResetToken('sessions');
    const second = await login(app.api, s.email, s.password);
    expect((await reset(token)).status).toBe(200);
    expectError(
      await app.api('POST', '/auth/refresh', { body: { refreshToken: s.refreshToken } }),
      401,
      'UNAUTHORIZED',
    );
    expectError(
      await app.api('POST', '/auth/refresh', { body: { refreshToken: second.refreshToken } }),
      401,
      'UNAUTHORIZED',
    );
    const open = await app.deps.db
      .selectFrom('refresh_tokens')
      .select('id')
      .where('user_id', '=', s.userId)
      .where('revoked_at', 'is', null)
      .execute();
    expect(open).toHaveLength(0);
  });

  it('also revokes the token a refresh issues while the reset runs, whose access token predates tokens_valid_after (20 trials)', async () => {
    for (let i = 0; i < 20; i++) {
      const { s, token } = await userWithResetToken('reset-race');
      const [refreshed, done] = await Promise.all([
        app.api('POST', '/auth/refresh', { body: { refreshToken: s.refreshToken } }),
        reset(token),
      ]);
      expect(done.status).toBe(200);
      if (refreshed.status !== 200) {
        expectError(refreshed, 401, 'UNAUTHORIZED');
        continue;
      }
      expectError(
        await app.api('POST', '/auth/refresh', { body: { refreshToken: refreshed.body.refreshToken } }),
        401,
        'UNAUTHORIZED',
      );
      const { tokens_valid_after } = await app.deps.db
        .selectFrom('users')
        .select('tokens_valid_after')
        .where('id', '=', s.userId)
        .executeTakeFirstOrThrow();
      const { iat } = JSON.parse(Buffer.from(refreshed.body.accessToken.split('.')[1], 'base64url').toString());
      expect(iat * 1000).toBeLessThanOrEqual(tokens_valid_after!.getTime());
    }
  });

  it('leaves no session to a sign-in with the old password whose check outlasts the whole reset', async () => {
    const { s, token } = await userWithResetToken('reset-login');
    // The same password under a costly hash (about 1.4 s to check here): the reset, at the suite's cost 4,
    // runs and commits from start to end while the sign-in is still checking the old password.
    const costly = await bcrypt.hash(s.password, 14);
    await app.deps.db.updateTable('users').set({ password_hash: costly }).where('id', '=', s.userId).execute();
    // Watched (and passed on unchanged): the reset starts once the sign-in is checking the costly hash.
    const checks = vi.spyOn(app.deps.passwords, 'verify');
    const signin = signIn(s.email, s.password).then((res) => ({ res, at: Date.now() }));
    await waitFor(() => checks.mock.calls.some(([, hash]) => hash === costly), {
      message: 'the sign-in to check the old password',
    }).finally(() => checks.mockRestore());
    const done = await reset(token);
    const resetAt = Date.now();
    expect(done.status).toBe(200);
    const { res, at } = await signin;
    expect(at).toBeGreaterThan(resetAt);
    expectError(res, 401, 'INVALID_CREDENTIALS');
  });

  it('is single use: the second use of a token answers 400 INVALID_TOKEN and changes nothing', async () => {
    const { s, token } = await userWithResetToken('once');
    expect((await reset(token)).status).toBe(200);
    expectError(await reset(token, 'Another-pass-321'), 400, 'INVALID_TOKEN');
    expect((await signIn(s.email, NEW_PASSWORD)).status).toBe(200);
    expectError(await signIn(s.email, 'Another-pass-321'), 401, 'INVALID_CREDENTIALS');
  });

  it("uses up the user's other still-open reset tokens too", async () => {
    const { s, token: first } = await userWithResetToken('others');
    expect((await forgot(s.email)).status).toBe(200);
    const second = await latestMailToken(app, s.email, 'password-reset');
    expect(second).not.toBe(first);
    expect((await reset(second)).status).toBe(200);
    expectError(await reset(first, 'Another-pass-321'), 400, 'INVALID_TOKEN');
    expect((await signIn(s.email, NEW_PASSWORD)).status).toBe(200);
  });

  it.each([
    ['no number', 'onlyletters-here', /number/],
    ['no letter', '1234567890', /letter/],
    ['7 characters', 'abc123x', /at least 8/],
    ['73 bytes', `Aa1-${'x'.repeat(69)}`, /72 bytes/],
  ])(
    'refuses a new password with %s as 400 WEAK_PASSWORD; the token stays usable and the old password still works',
    async (_what, weak, why) => {
      const { s, token } = await userWithResetToken('weak');
      const err = expectError(await reset(token, weak), 400, 'WEAK_PASSWORD');
      expect(err.message).toMatch(why);
      expect((await signIn(s.email, s.password)).status).toBe(200);
      expect((await reset(token)).status).toBe(200);
      expect((await signIn(s.email, NEW_PASSWORD)).status).toBe(200);
    },
  );

  it('refuses an unknown token with 400 INVALID_TOKEN', async () => {
    expectError(await reset(crypto.randomBytes(32).toString('base64url')), 400, 'INVALID_TOKEN');
    expectError(await reset(''), 400, 'INVALID_TOKEN');
  });

  it.each([
    ['a numeric token', { token: 12345678, newPassword: NEW_PASSWORD }, 'token'],
    ['a null token', { token: null, newPassword: NEW_PASSWORD }, 'token'],
    ['an array token', { token: ['a'], newPassword: NEW_PASSWORD }, 'token'],
    ['a missing token', { newPassword: NEW_PASSWORD }, 'token'],
    ['a missing newPassword', { token: 'some-token-value' }, 'newPassword'],
  ])('refuses %s with 400 BAD_REQUEST naming the field', async (_what, body, field) => {
    const err = expectError(await app.api('POST', '/auth/reset-password', { body }), 400, 'BAD_REQUEST');
    expect(err.issues?.map((i) => i.path)).toContain(field);
  });

  it('refuses an expired token with 400 INVALID_TOKEN and keeps the old password', async () => {
    const { s, token } = await userWithResetToken('expired');
    await app.deps.db
      .updateTable('user_tokens')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('user_id', '=', s.userId)
      .where('kind', '=', 'PASSWORD_RESET')
      .execute();
    expectError(await reset(token), 400, 'INVALID_TOKEN');
    expect((await signIn(s.email, s.password)).status).toBe(200);
    expectError(await signIn(s.email, NEW_PASSWORD), 401, 'INVALID_CREDENTIALS');
  });

  it("answers exactly one of two parallel resets with one token 200 (the other 400 INVALID_TOKEN), and that one's password holds", async () => {
    const { s, token } = await userWithResetToken('race');
    const passwords = ['Race-pass-one-1', 'Race-pass-two-2'];
    const results = await Promise.all(passwords.map((p) => reset(token, p)));
    expect(results.map((r) => r.status).sort()).toEqual([200, 400]);
    const loserIndex = results.findIndex((r) => r.status === 400);
    expectError(results[loserIndex], 400, 'INVALID_TOKEN');
    const winner = passwords[1 - loserIndex];
    const loser = passwords[loserIndex];
    expect((await signIn(s.email, winner)).status).toBe(200);
    expectError(await signIn(s.email, loser), 401, 'INVALID_CREDENTIALS');
  });
});
