// The identities of an account: linking one from the settings (the exchange then needs the account's own
// access token), listing them, and unlinking them, never the last way to sign in. GitHub is the fake of
// tests/helpers/fake-github.ts, the OpenID Connect provider a real one (tests/helpers/oidc-provider.ts).
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { githubAccount, startFakeGitHub, type FakeGitHub } from '../helpers/fake-github.js';
import { expectError, registerAndLogin, uniqueEmail, type Session } from '../helpers/http.js';
import { exchange, landingOf, sessionThrough } from '../helpers/oauth.js';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.js';
import { ledger } from '../helpers/secret-ledger.js';
import { cleanUpExpiredTokens } from '../../jobs/processors/maintenance.js';

let github: FakeGitHub;
let oidc: TestOidcProvider;
let app: TestApp;

beforeAll(async () => {
  [github, oidc] = await Promise.all([startFakeGitHub(), startOidcProvider({ claimsInIdToken: true })]);
  ledger.sent(github.clientSecret, 'GITHUB_CLIENT_SECRET');
  ledger.sent(oidc.clientSecret, 'OIDC_CLIENT_SECRET');
  app = await startTestApp({
    GITHUB_CLIENT_ID: github.clientId,
    GITHUB_CLIENT_SECRET: github.clientSecret,
    GITHUB_BASE_URL: github.url,
    GITHUB_API_URL: github.url,
    OIDC_ISSUER_URL: oidc.issuer,
    OIDC_CLIENT_ID: oidc.clientId,
    OIDC_CLIENT_SECRET: oidc.clientSecret,
  });
  oidc.serve([`${app.url}/auth/oauth/oidc/callback`]);
});
afterAll(async () => {
  await app?.close();
  await Promise.all([github?.close(), oidc?.close()]);
});

const db = () => app.deps.db;

/** POST .../link/start as `session`, then the browser through GitHub: where the web app lands. */
async function linkGitHub(session: Session, login: string, redirectTo?: string) {
  const start = await app.api('POST', '/auth/identities/github/link/start', {
    token: session.accessToken,
    body: redirectTo === undefined ? {} : { redirectTo },
  });
  expect(start.status, start.text).toBe(200);
  github.signInAs(login);
  return landingOf((await new Browser().open(start.body.url)).location);
}

const identities = (session: { accessToken: string }) =>
  app.api('GET', '/auth/identities', { token: session.accessToken });

describe('POST /auth/identities/{provider}/link/start, then the exchange', () => {
  it('keeps redirectTo only when, once normalised, it is a path of the web app', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'link-redirect' });
    const cases: Array<[string, string]> = [
      ['/settings/identities', '/settings/identities'],
      ['//evil.test', '/dashboard'],
      ['https://evil.test/', '/dashboard'],
      ['/.//evil.test', '/dashboard'],
      ['/..//evil.test', '/dashboard'],
      ['/a/..//evil.test', '/dashboard'],
      ['/%2e//evil.test', '/dashboard'],
      ['/%2e%2e//evil.test', '/dashboard'],
    ];
    for (const [redirectTo, expected] of cases) {
      const start = await app.api('POST', '/auth/identities/github/link/start', {
        token: owner.accessToken,
        body: { redirectTo },
      });
      expect(start.status, start.text).toBe(200);
      const state = new URL(start.body.url).searchParams.get('state')!;
      const row = await db()
        .selectFrom('oauth_states')
        .select('redirect_to')
        .where('state_hash', '=', crypto.createHash('sha256').update(state).digest('hex'))
        .executeTakeFirstOrThrow();
      expect(row.redirect_to, redirectTo).toBe(expected);
    }
  });

  it("links a GitHub account to the signed-in account once that account's token brings the code back", async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'link' });
    const gh = githubAccount(github, uniqueEmail('link-other-address'), { verified: false });

    const start = await app.api('POST', '/auth/identities/github/link/start', {
      token: owner.accessToken,
      body: { redirectTo: '/settings/identities' },
    });
    expect(start.status).toBe(200);
    const to = new URL(start.body.url);
    expect(`${to.origin}${to.pathname}`).toBe(`${github.url}/login/oauth/authorize`);
    expect(to.searchParams.get('code_challenge_method')).toBe('S256');

    github.signInAs(gh.login);
    // No browser binding here: the start was an API call. The code is bound to the account instead.
    const landing = landingOf((await new Browser().open(start.body.url)).location);
    expect(landing).toMatchObject({ error: undefined, redirectTo: '/settings/identities' });
    expect(
      await db().selectFrom('user_identities').select('id').where('subject', '=', String(gh.id)).execute(),
    ).toEqual([]);

    // Without a token, or with another account's, the code is refused and left for the right account.
    expectError(await exchange(app, landing.code), 400, 'INVALID_TOKEN');
    const stranger = await registerAndLogin(app.api, { prefix: 'link-stranger' });
    expectError(await exchange(app, landing.code, stranger.accessToken), 400, 'INVALID_TOKEN');
    // An expired or forged access token is 401, so the client refreshes and sends it again.
    expectError(await exchange(app, landing.code, 'not-a-token'), 401, 'UNAUTHORIZED');

    const linked = await exchange(app, landing.code, owner.accessToken);
    expect(linked.status).toBe(200);
    expect(linked.body.user.id).toBe(owner.userId);
    expectError(await exchange(app, landing.code, owner.accessToken), 400, 'INVALID_TOKEN');

    const list = await identities(owner);
    expect(list.status).toBe(200);
    expect(list.body).toEqual({
      items: [
        {
          id: expect.any(String),
          provider: 'github',
          providerName: 'GitHub',
          email: gh.emails[0].email,
          emailVerified: false,
          createdAt: expect.any(String),
          lastUsedAt: expect.any(String),
        },
      ],
    });
    const audit = await db()
      .selectFrom('audit_logs')
      .selectAll()
      .where('action', '=', 'auth.identity_linked')
      .where('target_id', '=', owner.userId)
      .execute();
    expect(audit.map((a) => a.metadata)).toEqual([
      { provider: 'github', identityId: list.body.items[0].id, via: 'settings' },
    ]);

    // From now on that GitHub account signs in to this account.
    github.signInAs(gh.login);
    expect((await sessionThrough(app, 'github')).user.id).toBe(owner.userId);
  });

  it('refuses a second identity of the same provider: 409 IDENTITY_ALREADY_LINKED', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'link-twice' });
    const landing = await linkGitHub(owner, githubAccount(github, uniqueEmail('link-first')).login);
    expect((await exchange(app, landing.code, owner.accessToken)).status).toBe(200);
    expectError(
      await app.api('POST', '/auth/identities/github/link/start', { token: owner.accessToken, body: {} }),
      409,
      'IDENTITY_ALREADY_LINKED',
    );
  });

  it('refuses a GitHub account of another account: error=IDENTITY_ALREADY_LINKED, nothing moves', async () => {
    const gh = githubAccount(github, uniqueEmail('link-taken'));
    github.signInAs(gh.login);
    const holder = await sessionThrough(app, 'github');
    const other = await registerAndLogin(app.api, { prefix: 'link-thief' });
    expect(await linkGitHub(other, gh.login)).toMatchObject({ error: 'IDENTITY_ALREADY_LINKED', code: undefined });
    const rows = await db()
      .selectFrom('user_identities')
      .select('user_id')
      .where('subject', '=', String(gh.id))
      .execute();
    expect(rows).toEqual([{ user_id: holder.user.id }]);
  });

  it('answers 404 OAUTH_PROVIDER_NOT_ENABLED for a provider without settings, 401 without a token', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'link-404' });
    for (const name of ['google', 'gitlab'])
      expectError(
        await app.api('POST', `/auth/identities/${name}/link/start`, { token: owner.accessToken, body: {} }),
        404,
        'OAUTH_PROVIDER_NOT_ENABLED',
      );
    expectError(await app.api('POST', '/auth/identities/github/link/start', { body: {} }), 401, 'UNAUTHORIZED');
    expectError(await app.api('GET', '/auth/identities'), 401, 'UNAUTHORIZED');
  });

  it('a link flow cannot be finished at the callback of another provider (a state is per provider)', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'link-mixup' });
    const start = await app.api('POST', '/auth/identities/github/link/start', { token: owner.accessToken, body: {} });
    const state = new URL(start.body.url).searchParams.get('state');
    const res = await new Browser().open(`${app.url}/auth/oauth/oidc/callback?code=x&state=${state}`);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body).code).toBe('OAUTH_STATE_INVALID');
  });
});

describe('DELETE /auth/identities/{identityId}', () => {
  it('unlinks an identity of an account that has a password', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'unlink' });
    const landing = await linkGitHub(owner, githubAccount(github, uniqueEmail('unlink-gh')).login);
    expect((await exchange(app, landing.code, owner.accessToken)).status).toBe(200);
    const [identity] = (await identities(owner)).body.items;
    const res = await app.api('DELETE', `/auth/identities/${identity.id}`, { token: owner.accessToken });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ message: expect.any(String) });
    expect((await identities(owner)).body).toEqual({ items: [] });
    const audit = await db()
      .selectFrom('audit_logs')
      .select('metadata')
      .where('action', '=', 'auth.identity_unlinked')
      .where('target_id', '=', owner.userId)
      .execute();
    expect(audit).toEqual([{ metadata: { provider: 'github', identityId: identity.id } }]);
  });

  it('refuses to unlink the last way to sign in (no password, no other one): 409 LAST_SIGN_IN_METHOD', async () => {
    const gh = githubAccount(github, uniqueEmail('unlink-last'));
    github.signInAs(gh.login);
    const session = await sessionThrough(app, 'github');
    const [only] = (await identities(session)).body.items;
    expectError(
      await app.api('DELETE', `/auth/identities/${only.id}`, { token: session.accessToken }),
      409,
      'LAST_SIGN_IN_METHOD',
    );

    // With a second identity linked, either may go, but not both.
    const sub = `sub-${crypto.randomBytes(6).toString('hex')}`;
    oidc.accounts.set(sub, { sub, email: uniqueEmail('unlink-sso'), email_verified: true, name: 'SSO' });
    oidc.signInAs(sub);
    const start = await app.api('POST', '/auth/identities/oidc/link/start', { token: session.accessToken, body: {} });
    const landing = landingOf((await new Browser().open(start.body.url)).location);
    expect((await exchange(app, landing.code, session.accessToken)).status).toBe(200);
    const both = (await identities(session)).body.items as Array<{ id: string; provider: string }>;
    expect(both.map((i) => i.provider).sort()).toEqual(['github', 'oidc']);
    expect((await app.api('DELETE', `/auth/identities/${only.id}`, { token: session.accessToken })).status).toBe(200);
    const [left] = (await identities(session)).body.items;
    expect(left.provider).toBe('oidc');
    expectError(
      await app.api('DELETE', `/auth/identities/${left.id}`, { token: session.accessToken }),
      409,
      'LAST_SIGN_IN_METHOD',
    );
  });

  it("answers 404 for another account's identity or an unknown id, 400 for an id that is not a uuid", async () => {
    const gh = githubAccount(github, uniqueEmail('unlink-other'));
    github.signInAs(gh.login);
    const holder = await sessionThrough(app, 'github');
    const [theirs] = (await identities(holder)).body.items;
    const other = await registerAndLogin(app.api, { prefix: 'unlink-stranger' });
    expectError(
      await app.api('DELETE', `/auth/identities/${theirs.id}`, { token: other.accessToken }),
      404,
      'NOT_FOUND',
    );
    expectError(
      await app.api('DELETE', `/auth/identities/${crypto.randomUUID()}`, { token: other.accessToken }),
      404,
      'NOT_FOUND',
    );
    expectError(
      await app.api('DELETE', '/auth/identities/not-an-id', { token: other.accessToken }),
      400,
      'BAD_REQUEST',
    );
    expect((await identities(holder)).body.items).toHaveLength(1);
  });
});

describe('the typed client path (/trpc)', () => {
  it('serves the providers at /trpc/oauth.providers too', async () => {
    const providers = await fetch(`${app.url}/trpc/oauth.providers`);
    expect(((await providers.json()) as { result: { data: unknown } }).result.data).toEqual({
      items: [
        { id: 'github', name: 'GitHub' },
        { id: 'oidc', name: 'Single sign-on' },
      ],
    });
  });
});

describe('the daily clean-up (maintenance queue)', () => {
  it('deletes flows and exchange codes a week past their expiry, and keeps newer ones', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'cleanup' });
    const old = new Date(Date.now() - 8 * 86_400_000);
    const state = (expires: Date) => ({
      state_hash: crypto.randomBytes(32).toString('hex'),
      provider: 'github' as const,
      purpose: 'SIGN_IN' as const,
      code_verifier: 'v'.repeat(43),
      redirect_uri: `${app.url}/auth/oauth/github/callback`,
      redirect_to: '/dashboard',
      expires_at: expires,
    });
    const code = (expires: Date) => ({
      code_hash: crypto.randomBytes(32).toString('hex'),
      kind: 'SIGN_IN' as const,
      user_id: owner.userId,
      provider: 'github' as const,
      subject: 'cleanup',
      expires_at: expires,
    });
    const states = await db()
      .insertInto('oauth_states')
      .values([state(old), state(new Date())])
      .returning('id')
      .execute();
    const codes = await db()
      .insertInto('oauth_exchange_codes')
      .values([code(old), code(new Date())])
      .returning('id')
      .execute();
    const removed = await cleanUpExpiredTokens(db());
    expect(removed.oauthStates).toBeGreaterThanOrEqual(1);
    expect(removed.oauthExchangeCodes).toBeGreaterThanOrEqual(1);
    const left = async (table: 'oauth_states' | 'oauth_exchange_codes', ids: Array<{ id: string }>) =>
      (
        await db()
          .selectFrom(table)
          .select('id')
          .where(
            'id',
            'in',
            ids.map((r) => r.id),
          )
          .execute()
      ).map((r) => r.id);
    expect(await left('oauth_states', states)).toEqual([states[1].id]);
    expect(await left('oauth_exchange_codes', codes)).toEqual([codes[1].id]);
  });
});
