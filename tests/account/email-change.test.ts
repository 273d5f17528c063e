// POST /auth/change-email and POST /auth/confirm-email-change: re-authentication (the password; for an
// account without one, a sign-in within the last 10 minutes), a single-use link valid 1 hour mailed to the
// new address and a notice to the old one, EMAIL_TAKEN at request and at confirmation, demo accounts refused.
// Accounts without a password are made the way users make them: signing in through GitHub (the fake of
// tests/helpers/fake-github.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DEMO_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { githubAccount, startFakeGitHub, type FakeGitHub } from '../helpers/fake-github.js';
import { STRONG_PASSWORD, expectError, login, registerAndLogin, uniqueEmail, type Session } from '../helpers/http.js';
import { latestMailToken, mailsTo } from '../helpers/mail.js';
import { sessionThrough } from '../helpers/oauth.js';
import { ledger } from '../helpers/secret-ledger.js';
import { registerAs } from '../workspaces/helpers.js';
import { ageSessions, auditOn, changeEmail, confirmEmailChange, hex, me, userRow } from './helpers.js';

const CONFIRM = 'email-change-confirmation';
const NOTICE = 'email-change-notice';
const DEMO_EMAIL = `demo-account-${hex()}@tests.local`;

let github: FakeGitHub;
let app: TestApp;

beforeAll(async () => {
  github = await startFakeGitHub();
  ledger.sent(github.clientSecret, 'GITHUB_CLIENT_SECRET');
  app = await startTestApp({
    GITHUB_CLIENT_ID: github.clientId,
    GITHUB_CLIENT_SECRET: github.clientSecret,
    GITHUB_BASE_URL: github.url,
    GITHUB_API_URL: github.url,
    AI_DEMO_RESTRICTED_EMAILS: DEMO_EMAIL,
  });
});
afterAll(async () => {
  await app?.close();
  await github?.close();
});

const db = () => app.deps.db;
const templatesTo = async (to: string) => (await mailsTo(app, to)).map((m) => m.template);
const changesOf = (userId: string) =>
  db().selectFrom('email_changes').selectAll().where('user_id', '=', userId).orderBy('created_at').execute();
const tokenFor = (to: string) => {
  const token = latestMailToken(app, to, CONFIRM);
  return token.then((t) => (ledger.sent(t, 'an e-mail change token'), t));
};

/** A password account that has asked to move to a fresh address: the mailed token. */
async function requested(prefix: string) {
  const s = await registerAndLogin(app.api, { prefix });
  const newEmail = uniqueEmail(`${prefix}-new`);
  const res = await changeEmail(app, s, { newEmail, password: s.password });
  expect(res.status, res.text).toBe(200);
  return { s, newEmail, token: await tokenFor(newEmail) };
}

/** A new account without a password, signed in through GitHub: its session is fresh. */
async function githubUser(prefix: string): Promise<Session & { githubLogin: string }> {
  const email = uniqueEmail(prefix);
  const gh = githubAccount(github, email);
  github.signInAs(gh.login);
  const session = await sessionThrough(app, 'github');
  expect(session.user.email).toBe(email);
  expect((await userRow(app, session.user.id)).password_hash).toBeNull();
  return {
    email,
    password: '',
    userId: session.user.id,
    workspaceId: '',
    accessToken: session.accessToken,
    refreshToken: session.refreshToken,
    githubLogin: gh.login,
  };
}

describe('POST /auth/change-email, then POST /auth/confirm-email-change', () => {
  it('mails a 1-hour link to the new address and a notice to the old; the link moves the account, verified', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'move' });
    const newEmail = uniqueEmail('move-new');
    const started = Date.now();
    const res = await changeEmail(app, s, { newEmail: newEmail.toUpperCase(), password: s.password });
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.body)).toEqual(['message']);
    expect(res.body.message).toEqual(expect.any(String));

    // The confirmation to the new address (the address as given, lower-cased); the notice to the old one.
    expect(await templatesTo(newEmail)).toEqual([CONFIRM]);
    expect(await templatesTo(s.email)).toContain(NOTICE);
    const [notice] = (await mailsTo(app, s.email)).filter((m) => m.template === NOTICE);
    expect(notice.text).not.toContain('token=');
    const token = await tokenFor(newEmail);
    const [change] = await changesOf(s.userId);
    expect(change).toMatchObject({ new_email: newEmail, used_at: null });
    expect(change.token_hash).not.toBe(token);
    const ttl = change.expires_at.getTime() - started;
    expect(ttl).toBeGreaterThan(59 * 60_000);
    expect(ttl).toBeLessThanOrEqual(61 * 60_000);

    // Nothing changes until the link is used.
    expect((await me(app, s.accessToken)).body.user.email).toBe(s.email);
    await login(app.api, s.email, s.password);

    const confirmed = await confirmEmailChange(app, token);
    expect(confirmed.status, confirmed.text).toBe(200);
    expect(confirmed.body).toMatchObject({ id: s.userId, email: newEmail, emailVerified: true });
    expect(confirmed.body.emailVerifiedAt).toEqual(expect.any(String));
    expect((await me(app, s.accessToken)).body.user).toMatchObject({ email: newEmail, emailVerified: true });

    // From now on the new address signs in, the old one does not.
    expect((await login(app.api, newEmail, s.password)).userId).toBe(s.userId);
    expectError(
      await app.api('POST', '/auth/login', { body: { email: s.email, password: s.password } }),
      401,
      'INVALID_CREDENTIALS',
    );

    // The link works once.
    expectError(await confirmEmailChange(app, token), 400, 'INVALID_TOKEN');
    expect(await auditOn(app, s.userId, 'auth.email_change_requested')).toHaveLength(1);
    const changed = await auditOn(app, s.userId, 'auth.email_changed');
    expect(changed).toHaveLength(1);
    // The earlier address is kept for support (and scrubbed with the rest when the account is deleted).
    expect(changed[0].metadata).toEqual({ previousEmail: s.email });
  });

  it('a wrong password: 401 INVALID_CREDENTIALS, no mail to either address, nothing pending', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'wrong-pw' });
    const newEmail = uniqueEmail('wrong-pw-new');
    const before = await templatesTo(s.email);
    expectError(await changeEmail(app, s, { newEmail, password: 'Not-the-password-1' }), 401, 'INVALID_CREDENTIALS');
    expect(await templatesTo(newEmail)).toEqual([]);
    expect(await templatesTo(s.email)).toEqual(before);
    expect(await changesOf(s.userId)).toEqual([]);
  });

  it('no password on an account that has one: 403 REAUTHENTICATION_REQUIRED, no mail', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'no-pw' });
    const newEmail = uniqueEmail('no-pw-new');
    expectError(await changeEmail(app, s, { newEmail }), 403, 'REAUTHENTICATION_REQUIRED');
    expect(await templatesTo(newEmail)).toEqual([]);
    expect(await templatesTo(s.email)).not.toContain(NOTICE);
    expect(await changesOf(s.userId)).toEqual([]);
  });

  it('an address already registered (any case): 409 EMAIL_TAKEN at the request, no mail to it', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'taken' });
    const other = await registerAndLogin(app.api, { prefix: 'taken-other' });
    const before = await templatesTo(other.email);
    for (const newEmail of [other.email, other.email.toUpperCase()])
      expectError(await changeEmail(app, s, { newEmail, password: s.password }), 409, 'EMAIL_TAKEN');
    expect(await templatesTo(other.email)).toEqual(before);
    expect(await templatesTo(s.email)).not.toContain(NOTICE);
    expect(await changesOf(s.userId)).toEqual([]);
  });

  it('refuses its own address (400) and no bearer (401), with nothing sent', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'same' });
    expectError(await changeEmail(app, s, { newEmail: s.email, password: s.password }), 400, 'BAD_REQUEST');
    const newEmail = uniqueEmail('anon-new');
    expectError(
      await app.api('POST', '/auth/change-email', { body: { newEmail, password: s.password } }),
      401,
      'UNAUTHORIZED',
    );
    expect(await templatesTo(newEmail)).toEqual([]);
    expect(await changesOf(s.userId)).toEqual([]);
  });

  it('the address registered between the request and the link: 409 EMAIL_TAKEN, the account keeps its own', async () => {
    const { s, newEmail, token } = await requested('race');
    const squatter = await registerAs(app, newEmail, 'Someone Else');
    expectError(await confirmEmailChange(app, token), 409, 'EMAIL_TAKEN');
    const row = await userRow(app, s.userId);
    expect(row.email).toBe(s.email);
    expect((await me(app, s.accessToken)).body.user.email).toBe(s.email);
    await login(app.api, s.email, s.password);
    expect((await userRow(app, squatter.userId)).email).toBe(newEmail);
    expect(await auditOn(app, s.userId, 'auth.email_changed')).toEqual([]);
  });

  it('an expired link (expires_at in the past): 400 INVALID_TOKEN, the address unchanged', async () => {
    const { s, token } = await requested('expired');
    await db()
      .updateTable('email_changes')
      .set({ expires_at: new Date(Date.now() - 1_000) })
      .where('user_id', '=', s.userId)
      .execute();
    expectError(await confirmEmailChange(app, token), 400, 'INVALID_TOKEN');
    expect((await userRow(app, s.userId)).email).toBe(s.email);
  });

  it('a second request makes the first link unknown; the second one works', async () => {
    const { s, newEmail: first, token: firstToken } = await requested('twice');
    const second = uniqueEmail('twice-second');
    const res = await changeEmail(app, s, { newEmail: second, password: s.password });
    expect(res.status, res.text).toBe(200);
    const secondToken = await tokenFor(second);
    expectError(await confirmEmailChange(app, firstToken), 400, 'INVALID_TOKEN');
    expect((await userRow(app, s.userId)).email).toBe(s.email);
    const ok = await confirmEmailChange(app, secondToken);
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.email).toBe(second);
    expect((await userRow(app, s.userId)).email).not.toBe(first);
  });

  it('a token never issued, or malformed: 400', async () => {
    expectError(await confirmEmailChange(app, `forged-${hex(16)}`), 400, 'INVALID_TOKEN');
    expectError(await app.api('POST', '/auth/confirm-email-change', { body: {} }), 400, 'BAD_REQUEST');
  });

  it('the same link opened twice at once: one 200, one 400 INVALID_TOKEN', async () => {
    const { s, newEmail, token } = await requested('double');
    const answers = await Promise.all([confirmEmailChange(app, token), confirmEmailChange(app, token)]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 400]);
    expectError(
      answers.find((a) => a.status === 400)!,
      400,
      'INVALID_TOKEN',
    );
    expect((await userRow(app, s.userId)).email).toBe(newEmail);
    expect(await auditOn(app, s.userId, 'auth.email_changed')).toHaveLength(1);
  });
});

describe('an account without a password (signed in through GitHub)', () => {
  it('needs a sign-in within 10 minutes: 403 REAUTHENTICATION_REQUIRED with an older one, 200 with a fresh one', async () => {
    const u = await githubUser('gh-move');
    const newEmail = uniqueEmail('gh-move-new');
    await ageSessions(app, u.userId, 11);
    expectError(await changeEmail(app, u, { newEmail }), 403, 'REAUTHENTICATION_REQUIRED');
    expect(await templatesTo(newEmail)).toEqual([]);

    // Signing in again through GitHub gives a fresh session: the change goes through.
    github.signInAs(u.githubLogin);
    const fresh = await sessionThrough(app, 'github');
    expect(fresh.user.id).toBe(u.userId);
    const res = await changeEmail(app, fresh, { newEmail });
    expect(res.status, res.text).toBe(200);
    expect(await templatesTo(u.email)).toContain(NOTICE);
    const ok = await confirmEmailChange(app, await tokenFor(newEmail));
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toMatchObject({ id: u.userId, email: newEmail, emailVerified: true });
  });
});

describe('demo accounts', () => {
  it('an address of AI_DEMO_RESTRICTED_EMAILS may not change: 403 DEMO_READ_ONLY, no mail', async () => {
    const demo = await registerAs(app, DEMO_EMAIL, 'Demo Person');
    const newEmail = uniqueEmail('demo-new');
    expectError(await changeEmail(app, demo, { newEmail, password: STRONG_PASSWORD }), 403, 'DEMO_READ_ONLY');
    expect(await templatesTo(newEmail)).toEqual([]);
    expect(await changesOf(demo.userId)).toEqual([]);
    expect((await userRow(app, demo.userId)).email).toBe(DEMO_EMAIL);
  });

  it('nor the demo admin: 403 DEMO_READ_ONLY', async () => {
    const demoAdmin = await login(app.api, TEST_DEMO_ADMIN.email, TEST_DEMO_ADMIN.password);
    const newEmail = uniqueEmail('demo-admin-new');
    expectError(
      await changeEmail(app, demoAdmin, { newEmail, password: TEST_DEMO_ADMIN.password }),
      403,
      'DEMO_READ_ONLY',
    );
    expect(await templatesTo(newEmail)).toEqual([]);
  });
});
