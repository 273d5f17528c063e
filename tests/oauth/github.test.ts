// Sign-in with GitHub against a fake of GitHub's OAuth endpoints and user API (tests/helpers/fake-github.ts):
// the flow (state, PKCE, the browser binding), accounts found, linked or created, the one-time code and
// every refusal, each with nothing created.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { clockAhead } from '../helpers/clock.js';
import { githubAccount, startFakeGitHub, type FakeGitHub } from '../helpers/fake-github.js';
import { STRONG_PASSWORD, expectError, registerAndLogin, uniqueEmail } from '../helpers/http.js';
import { mailsTo } from '../helpers/mail.js';
import {
  exchange,
  landingOf,
  openCallback,
  sessionThrough,
  signInWith,
  startUrl,
  untilCallback,
} from '../helpers/oauth.js';
import { ledger } from '../helpers/secret-ledger.js';
import { enableMfa } from '../helpers/mfa.js';

let github: FakeGitHub;
let app: TestApp;

const githubEnv = (fake: FakeGitHub, extra: Record<string, string> = {}) => ({
  GITHUB_CLIENT_ID: fake.clientId,
  GITHUB_CLIENT_SECRET: fake.clientSecret,
  GITHUB_BASE_URL: fake.url,
  GITHUB_API_URL: fake.url,
  ...extra,
});

beforeAll(async () => {
  github = await startFakeGitHub();
  ledger.sent(github.clientSecret, 'GITHUB_CLIENT_SECRET');
  app = await startTestApp(githubEnv(github));
});
afterAll(async () => {
  await app?.close();
  await github?.close();
});

const db = () => app.deps.db;
const usersWithEmail = (email: string) => db().selectFrom('users').select('id').where('email', '=', email).execute();
const identitiesOf = (subject: number) =>
  db()
    .selectFrom('user_identities')
    .selectAll()
    .where('provider', '=', 'github')
    .where('subject', '=', String(subject))
    .execute();
const auditOf = (action: string, targetId?: string) =>
  db()
    .selectFrom('audit_logs')
    .selectAll()
    .where('action', '=', action)
    .$if(targetId !== undefined, (q) => q.where('target_id', '=', targetId!))
    .execute();

describe('GET /auth/providers', () => {
  it('lists the enabled providers only: here GitHub', async () => {
    const res = await app.api('GET', '/auth/providers');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [{ id: 'github', name: 'GitHub' }] });
  });

  it('lists none when no provider has its settings', async () => {
    const bare = await startTestApp();
    try {
      expect((await bare.api('GET', '/auth/providers')).body).toEqual({ items: [] });
      expectError(await bare.api('GET', '/auth/oauth/github/start'), 404, 'OAUTH_PROVIDER_NOT_ENABLED');
    } finally {
      await bare.close();
    }
  });
});

describe('GET /auth/oauth/github/start', () => {
  it('redirects to GitHub with state, PKCE S256 and the callback, kept server-side; binds the browser', async () => {
    const res = await fetch(startUrl(app, 'github', '/settings'), { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const to = new URL(res.headers.get('location')!);
    expect(`${to.origin}${to.pathname}`).toBe(`${github.url}/login/oauth/authorize`);
    const q = to.searchParams;
    expect(q.get('client_id')).toBe(github.clientId);
    expect(q.get('redirect_uri')).toBe(`${app.url}/auth/oauth/github/callback`);
    expect(q.get('scope')).toBe('read:user user:email');
    expect(q.get('code_challenge_method')).toBe('S256');
    expect(q.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get('state')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.has('nonce')).toBe(false);
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('oauth_binding='));
    const attributes = cookie!.split('; ');
    expect(attributes[0]).toMatch(/^oauth_binding=[A-Za-z0-9_-]{43}$/);
    expect(attributes).toEqual(
      expect.arrayContaining(['Max-Age=600', 'Path=/auth/oauth/', 'HttpOnly', 'SameSite=Lax']),
    );
    // Plain http here (API_URL unset, the request's base): a cookie marked Secure would never come back.
    expect(attributes).not.toContain('Secure');

    // Only digests of the state and the binding are stored; the verifier and where to land are kept for the callback.
    const state = q.get('state')!;
    const row = await db()
      .selectFrom('oauth_states')
      .selectAll()
      .where('state_hash', '=', crypto.createHash('sha256').update(state).digest('hex'))
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      provider: 'github',
      purpose: 'SIGN_IN',
      user_id: null,
      redirect_to: '/settings',
      used_at: null,
    });
    expect(JSON.stringify(row)).not.toContain(state);
    const challenge = crypto.createHash('sha256').update(row.code_verifier).digest('base64url');
    expect(challenge).toBe(q.get('code_challenge'));
    expect(row.expires_at.getTime() - row.created_at.getTime()).toBeGreaterThan(9.9 * 60_000);
    expect(row.expires_at.getTime() - row.created_at.getTime()).toBeLessThanOrEqual(10 * 60_000 + 1000);
  });

  it('keeps redirectTo only when it is a path of the web app; anything else lands on /dashboard', async () => {
    const cases: Array<[string | undefined, string]> = [
      [undefined, '/dashboard'],
      ['/settings/security?tab=2#top', '/settings/security?tab=2#top'],
      ['https://evil.example/x', '/dashboard'],
      ['//evil.example/x', '/dashboard'],
      ['/\\evil.example', '/dashboard'],
      ['javascript:alert(1)', '/dashboard'],
      ['settings', '/dashboard'],
      ['/ok\nLocation: x', '/dashboard'],
      [`/${'a'.repeat(3000)}`, '/dashboard'],
      // Forms that URL normalisation (dot segments, percent-encoding) turns into `//evil.test`.
      ['/.//evil.test', '/dashboard'],
      ['/..//evil.test', '/dashboard'],
      ['/a/..//evil.test', '/dashboard'],
      ['/%2e//evil.test', '/dashboard'],
      ['/%2e%2e//evil.test', '/dashboard'],
      ['/%2E%2E//evil.test', '/dashboard'],
      ['/a/..%5C/evil.test', '/dashboard'],
      ['/%2F%2Fevil.test', '/dashboard'],
      ['/%5C%5Cevil.test', '/dashboard'],
      ['/%252e%252e//evil.test', '/dashboard'],
      // Paths of the app stay, normalised.
      ['/%2e/settings', '/settings'],
      ['/a/../settings?next=%2F%2Fx', '/settings?next=%2F%2Fx'],
      ['/files/a%2Fb', '/files/a%2Fb'],
    ];
    for (const [redirectTo, expected] of cases) {
      const account = githubAccount(github, uniqueEmail('gh-redirect'));
      github.signInAs(account.login);
      const landing = await signInWith(app, 'github', new Browser(), redirectTo);
      expect(landing.redirectTo, String(redirectTo)).toBe(expected);
      expect(landing.code).toBeDefined();
    }
  });

  it('answers 404 OAUTH_PROVIDER_NOT_ENABLED for a provider without settings or unknown', async () => {
    for (const name of ['google', 'oidc', 'gitlab']) {
      expectError(await app.api('GET', `/auth/oauth/${name}/start`), 404, 'OAUTH_PROVIDER_NOT_ENABLED');
      expectError(
        await app.api('GET', `/auth/oauth/${name}/callback?state=x&code=y`),
        404,
        'OAUTH_PROVIDER_NOT_ENABLED',
      );
    }
  });
});

describe('a first sign-in with GitHub', () => {
  it('creates the account (verified address), its workspace and identity; the code gives a session', async () => {
    const email = uniqueEmail('gh-new');
    const account = githubAccount(github, email, { name: 'Grace Hopper' });
    github.signInAs(account.login);
    const landing = await signInWith(app, 'github');
    expect(landing.error).toBeUndefined();
    expect(landing.code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(landing.redirectTo).toBe('/dashboard');
    // Only the one-time code and the path travel in the URL: no token.
    expect([...landing.url.searchParams.keys()].sort()).toEqual(['code', 'redirectTo']);

    const res = await exchange(app, landing.code);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      accessToken: expect.any(String),
      refreshToken: expect.any(String),
      tokenType: 'Bearer',
      user: { email, name: 'Grace Hopper', status: 'ACTIVE', emailVerified: true },
      activeWorkspace: { name: "Grace Hopper's workspace", role: 'OWNER', edition: 'LITE' },
      hasActiveWorkspace: true,
    });
    const me = await app.api('GET', '/auth/me', { token: res.body.accessToken });
    expect(me.status).toBe(200);
    expect(me.body.user.id).toBe(res.body.user.id);

    const [identity] = await identitiesOf(account.id);
    expect(identity).toMatchObject({ user_id: res.body.user.id, email, email_verified: true });
    const user = await db()
      .selectFrom('users')
      .select('password_hash')
      .where('id', '=', res.body.user.id)
      .executeTakeFirstOrThrow();
    expect(user.password_hash).toBeNull();
    // A verified address needs no verification mail.
    expect(await mailsTo(app, email)).toEqual([]);
    expect(await auditOf('auth.oauth_account_created', res.body.user.id)).toHaveLength(1);
    expect((await auditOf('auth.oauth_login', res.body.user.id))[0]).toMatchObject({
      actor_user_id: res.body.user.id,
      metadata: { provider: 'github' },
    });
  });

  it('with an address GitHub has not verified: the account is unverified and gets the verification mail', async () => {
    const email = uniqueEmail('gh-unverified');
    const account = githubAccount(github, email, { verified: false });
    github.signInAs(account.login);
    const session = await sessionThrough(app, 'github');
    const me = await app.api('GET', '/auth/me', { token: session.accessToken });
    expect(me.body.user.emailVerified).toBe(false);
    expect((await mailsTo(app, email)).map((m) => m.template)).toEqual(['email-verification']);
  });

  it('signs in to the same account next time, even after the address changed at GitHub', async () => {
    const account = githubAccount(github, uniqueEmail('gh-again'));
    github.signInAs(account.login);
    const first = await sessionThrough(app, 'github');
    account.emails = [{ email: uniqueEmail('gh-changed'), primary: true, verified: true }];
    const second = await sessionThrough(app, 'github');
    expect(second.user.id).toBe(first.user.id);
    expect(second.refreshToken).not.toBe(first.refreshToken);
    expect(await identitiesOf(account.id)).toHaveLength(1);
  });

  it('refuses an account without any address: error=OAUTH_EMAIL_REQUIRED, nothing created', async () => {
    const account = githubAccount(github, uniqueEmail('gh-none'));
    account.emails = [];
    github.signInAs(account.login);
    const landing = await signInWith(app, 'github');
    expect(landing).toMatchObject({ error: 'OAUTH_EMAIL_REQUIRED', code: undefined });
    expect(await identitiesOf(account.id)).toEqual([]);
  });
});

describe('an existing account with the same address', () => {
  it('is linked and signed in to when GitHub and the account have both verified the address', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'gh-link' });
    await db().updateTable('users').set({ email_verified_at: new Date() }).where('id', '=', owner.userId).execute();
    const account = githubAccount(github, owner.email.toUpperCase());
    github.signInAs(account.login);
    const session = await sessionThrough(app, 'github');
    expect(session.user.id).toBe(owner.userId);
    expect((await identitiesOf(account.id))[0]).toMatchObject({ user_id: owner.userId });
    expect((await auditOf('auth.identity_linked', owner.userId))[0].metadata).toMatchObject({
      provider: 'github',
      via: 'verified_email',
    });
    // The password still works.
    expect(
      (await app.api('POST', '/auth/login', { body: { email: owner.email, password: STRONG_PASSWORD } })).status,
    ).toBe(200);
  });

  it('is not linked when GitHub has not verified the address: ACCOUNT_LINK_REQUIRED, nothing created', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'gh-unverified-match' });
    await db().updateTable('users').set({ email_verified_at: new Date() }).where('id', '=', owner.userId).execute();
    const account = githubAccount(github, owner.email, { verified: false });
    github.signInAs(account.login);
    const landing = await signInWith(app, 'github');
    expect(landing).toMatchObject({ error: 'ACCOUNT_LINK_REQUIRED', code: undefined });
    expect(await identitiesOf(account.id)).toEqual([]);
    expect(await usersWithEmail(owner.email)).toHaveLength(1);
    const [refusal] = await auditOf('auth.oauth_login_failed').then((rows) =>
      rows.filter((r) => (r.metadata as { reason?: string }).reason === 'ACCOUNT_LINK_REQUIRED'),
    );
    expect(refusal).toMatchObject({ actor_user_id: null, metadata: { provider: 'github' } });
  });

  it('is not linked when the account never verified its address, even though GitHub did', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'gh-account-unverified' });
    const account = githubAccount(github, owner.email);
    github.signInAs(account.login);
    expect((await signInWith(app, 'github')).error).toBe('ACCOUNT_LINK_REQUIRED');
    expect(await identitiesOf(account.id)).toEqual([]);
  });

  it('is refused when suspended: error=USER_SUSPENDED, no code, nothing linked', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'gh-suspended' });
    await db()
      .updateTable('users')
      .set({ email_verified_at: new Date(), status: 'SUSPENDED' })
      .where('id', '=', owner.userId)
      .execute();
    const account = githubAccount(github, owner.email);
    github.signInAs(account.login);
    expect(await signInWith(app, 'github')).toMatchObject({ error: 'USER_SUSPENDED', code: undefined });
    expect(await identitiesOf(account.id)).toEqual([]);
  });
});

describe('refused callbacks', () => {
  it('a state that was never issued: 400 OAUTH_STATE_INVALID, and the real one still works', async () => {
    const email = uniqueEmail('gh-bad-state');
    const account = githubAccount(github, email);
    github.signInAs(account.login);
    const browser = new Browser();
    const callback = await untilCallback(app, 'github', browser);
    const forged = new URL(callback);
    forged.searchParams.set('state', crypto.randomBytes(32).toString('base64url'));
    const refused = await openCallback(browser, forged);
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.body)).toMatchObject({ code: 'OAUTH_STATE_INVALID', requestId: expect.any(String) });
    expect(await usersWithEmail(email)).toEqual([]);

    const missing = new URL(callback);
    missing.searchParams.delete('state');
    expect((await openCallback(browser, missing)).status).toBe(400);

    expect(landingOf((await openCallback(browser, callback)).location).code).toBeDefined();
  });

  it('a replayed callback (its state used): 400 OAUTH_STATE_INVALID, no second code', async () => {
    const account = githubAccount(github, uniqueEmail('gh-replay'));
    github.signInAs(account.login);
    const browser = new Browser();
    const callback = await untilCallback(app, 'github', browser);
    expect(landingOf((await openCallback(browser, callback)).location).code).toBeDefined();
    const replay = await openCallback(browser, callback);
    expect(replay.status).toBe(400);
    expect(JSON.parse(replay.body).code).toBe('OAUTH_STATE_INVALID');
  });

  it('a callback opened in another browser (login CSRF): 400 OAUTH_STATE_INVALID; the flow stays usable', async () => {
    const email = uniqueEmail('gh-csrf');
    const account = githubAccount(github, email);
    github.signInAs(account.login);
    const attacker = new Browser();
    const callback = await untilCallback(app, 'github', attacker);
    const victim = new Browser();
    const refused = await openCallback(victim, callback);
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.body).code).toBe('OAUTH_STATE_INVALID');
    expect(await usersWithEmail(email)).toEqual([]);
    expect(landingOf((await openCallback(attacker, callback)).location).code).toBeDefined();
  });

  it('the user refuses at GitHub: error=OAUTH_ACCESS_DENIED, nothing created, the refusal audited', async () => {
    github.signInAs('deny');
    const landing = await signInWith(app, 'github');
    expect(landing).toMatchObject({ error: 'OAUTH_ACCESS_DENIED', code: undefined });
    expect([...landing.url.searchParams.keys()]).toEqual(['error']);
    const refusals = (await auditOf('auth.oauth_login_failed')).filter(
      (r) => (r.metadata as { reason?: string }).reason === 'OAUTH_ACCESS_DENIED',
    );
    expect(refusals.length).toBeGreaterThan(0);
  });

  it('a code GitHub does not know (forged, or redeemed): error=OAUTH_SIGN_IN_FAILED, nothing created', async () => {
    const email = uniqueEmail('gh-bad-code');
    const account = githubAccount(github, email);
    github.signInAs(account.login);
    const browser = new Browser();
    const callback = new URL(await untilCallback(app, 'github', browser));
    callback.searchParams.set('code', 'not-a-code-github-issued');
    const landing = landingOf((await openCallback(browser, callback)).location);
    expect(landing).toMatchObject({ error: 'OAUTH_SIGN_IN_FAILED', code: undefined });
    expect(await usersWithEmail(email)).toEqual([]);
  });
});

describe('POST /auth/oauth/exchange', () => {
  it('takes a code once: the replay is 400 INVALID_TOKEN', async () => {
    const account = githubAccount(github, uniqueEmail('gh-exchange-replay'));
    github.signInAs(account.login);
    const landing = await signInWith(app, 'github');
    expect((await exchange(app, landing.code)).status).toBe(200);
    expectError(await exchange(app, landing.code), 400, 'INVALID_TOKEN');
  });

  it('refuses a code it never issued, and a malformed body', async () => {
    expectError(await exchange(app, crypto.randomBytes(32).toString('base64url')), 400, 'INVALID_TOKEN');
    expectError(await app.api('POST', '/auth/oauth/exchange', { body: {} }), 400, 'BAD_REQUEST');
    expectError(await app.api('POST', '/auth/oauth/exchange', { body: { code: 'x'.repeat(513) } }), 400, 'BAD_REQUEST');
  });

  it('refuses a code past OAUTH_EXCHANGE_CODE_TTL (1 s here): 400 INVALID_TOKEN, no session', async () => {
    const quick = await startTestApp(githubEnv(github, { OAUTH_EXCHANGE_CODE_TTL: '1' }));
    try {
      const account = githubAccount(github, uniqueEmail('gh-late'));
      github.signInAs(account.login);
      const landing = await signInWith(quick, 'github');
      // 1.2 s later by the app's clock (this process's Date, moved ahead): past the code's 1 s.
      expectError(await clockAhead(1_200, () => exchange(quick, landing.code)), 400, 'INVALID_TOKEN');
      const [identity] = await identitiesOf(account.id);
      const sessions = await db()
        .selectFrom('refresh_tokens')
        .select('id')
        .where('user_id', '=', identity.user_id)
        .execute();
      expect(sessions).toEqual([]);
    } finally {
      await quick.close();
    }
  });

  it('refuses a suspended account with 403 USER_SUSPENDED, even with a code issued before the suspension', async () => {
    const account = githubAccount(github, uniqueEmail('gh-late-suspension'));
    github.signInAs(account.login);
    const landing = await signInWith(app, 'github');
    const [identity] = await identitiesOf(account.id);
    await db().updateTable('users').set({ status: 'SUSPENDED' }).where('id', '=', identity.user_id).execute();
    expectError(await exchange(app, landing.code), 403, 'USER_SUSPENDED');
    github.signInAs(account.login);
    expect((await signInWith(app, 'github')).error).toBe('USER_SUSPENDED');
  });
});

describe('accounts without a password', () => {
  it('cannot sign in with a password (401 INVALID_CREDENTIALS), and get one through forgot-password', async () => {
    const email = uniqueEmail('gh-nopass');
    const account = githubAccount(github, email);
    github.signInAs(account.login);
    await sessionThrough(app, 'github');
    expectError(
      await app.api('POST', '/auth/login', { body: { email, password: STRONG_PASSWORD } }),
      401,
      'INVALID_CREDENTIALS',
    );
    const failed = (await auditOf('auth.login_failed')).find((r) => (r.metadata as { email?: string }).email === email);
    expect(failed?.metadata).toMatchObject({ reason: 'no_password' });

    expect((await app.api('POST', '/auth/forgot-password', { body: { email } })).status).toBe(200);
    const mail = (await mailsTo(app, email)).find((m) => m.template === 'password-reset');
    const token = new URL(mail!.link!).searchParams.get('token')!;
    const reset = await app.api('POST', '/auth/reset-password', { body: { token, newPassword: STRONG_PASSWORD } });
    expect(reset.status).toBe(200);
    expect((await app.api('POST', '/auth/login', { body: { email, password: STRONG_PASSWORD } })).status).toBe(200);
  });
});

describe('the OpenAPI document', () => {
  it('documents start and callback as public redirects of the auth tier, with descriptions', async () => {
    const doc = (await app.api('GET', '/openapi.json')).body;
    for (const path of ['/auth/oauth/{provider}/start', '/auth/oauth/{provider}/callback']) {
      const op = doc.paths[path].get;
      expect(op['x-rate-limit-tier'], path).toBe('auth');
      expect(op.security, path).toEqual([]);
      expect(op.description, path).toMatch(/302/);
      expect(op.responses['302'].headers.Location, path).toBeDefined();
    }
    for (const [path, method] of [
      ['/auth/providers', 'get'],
      ['/auth/oauth/exchange', 'post'],
      ['/auth/identities', 'get'],
      ['/auth/identities/{provider}/link/start', 'post'],
      ['/auth/identities/{identityId}', 'delete'],
    ]) {
      const op = doc.paths[path][method];
      expect(op.summary, path).toBeTruthy();
      expect(op.description, path).toBeTruthy();
      expect(op.tags, path).toEqual(['Auth']);
    }
  });
});

describe('rate limits', () => {
  it('counts start, callback and exchange in the auth tier (RATE_LIMIT_AUTH_MAX_REQUESTS)', async () => {
    const limited = await startTestApp(
      githubEnv(github, { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_AUTH_MAX_REQUESTS: '2' }),
    );
    try {
      const routes: Array<[string, string, object | undefined]> = [
        ['GET', '/auth/oauth/github/start', undefined],
        ['GET', '/auth/oauth/github/callback?state=unknown&code=x', undefined],
        ['POST', '/auth/oauth/exchange', { code: 'unknown' }],
      ];
      for (const [i, [method, path, body]] of routes.entries()) {
        // A client address of its own per route (TRUST_PROXY=true: the right-most X-Forwarded-For entry).
        const headers = { 'x-forwarded-for': `203.0.113.${10 + i}` };
        for (let n = 0; n < 2; n++)
          expect((await limited.api(method, path, { headers, body })).status, `${method} ${path}`).not.toBe(429);
        expectError(await limited.api(method, path, { headers, body }), 429, 'RATE_LIMITED');
      }
    } finally {
      await limited.close();
    }
  });
});

describe('an account with two-factor sign-in on', () => {
  it('signing in through GitHub gets the second step; a backup code then gives the session', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'gh-mfa' });
    await db().updateTable('users').set({ email_verified_at: new Date() }).where('id', '=', owner.userId).execute();
    const { backupCodes } = await enableMfa(app.api, owner.accessToken);
    github.signInAs(githubAccount(github, owner.email).login);
    const landing = await signInWith(app, 'github');
    expect(landing.error).toBeUndefined();

    const res = await exchange(app, landing.code);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ mfaRequired: true, mfaToken: expect.any(String), methods: ['totp', 'backup_code'] });
    const verified = await app.api('POST', '/auth/mfa/verify', {
      body: { mfaToken: res.body.mfaToken, backupCode: backupCodes[0] },
    });
    expect(verified.status, verified.text).toBe(200);
    expect(verified.body.user.id).toBe(owner.userId);
  });
});
