// Sign-in with an OpenID Connect provider (`oidc`) and with Google (`google`), each against a real provider
// on loopback (oidc-provider, tests/helpers/oidc-provider.ts): discovery, the code flow with PKCE and a
// nonce, and the ID token's checks. The `oidc` provider gives the e-mail only at userinfo; the `google` one
// in the ID token, as Google does. Every refusal lands in the web app with an error and creates nothing.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { expectError, uniqueEmail } from '../helpers/http.js';
import {
  authorizationUrl,
  exchange,
  followToCallback,
  landingOf,
  openCallback,
  sessionThrough,
  signInWith,
} from '../helpers/oauth.js';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.js';
import { ledger } from '../helpers/secret-ledger.js';
import { codeAt, enableMfa } from '../helpers/mfa.js';

let oidc: TestOidcProvider;
let google: TestOidcProvider;
let app: TestApp;

beforeAll(async () => {
  [oidc, google] = await Promise.all([
    startOidcProvider({ claimsInIdToken: false }),
    startOidcProvider({ claimsInIdToken: true }),
  ]);
  ledger.sent(oidc.clientSecret, 'OIDC_CLIENT_SECRET');
  ledger.sent(google.clientSecret, 'GOOGLE_CLIENT_SECRET');
  app = await startTestApp({
    OIDC_ISSUER_URL: oidc.issuer,
    OIDC_CLIENT_ID: oidc.clientId,
    OIDC_CLIENT_SECRET: oidc.clientSecret,
    OIDC_DISPLAY_NAME: 'Acme SSO',
    GOOGLE_ISSUER_URL: google.issuer,
    GOOGLE_CLIENT_ID: google.clientId,
    GOOGLE_CLIENT_SECRET: google.clientSecret,
  });
  // The providers learn the callback URLs once the app listens; discovery happens at the first sign-in.
  oidc.serve([`${app.url}/auth/oauth/oidc/callback`]);
  google.serve([`${app.url}/auth/oauth/google/callback`]);
});
afterAll(async () => {
  await app?.close();
  await Promise.all([oidc?.close(), google?.close()]);
});

const db = () => app.deps.db;
const usersWithEmail = (email: string) => db().selectFrom('users').select('id').where('email', '=', email).execute();
const identitiesOf = (provider: 'oidc' | 'google', subject: string) =>
  db()
    .selectFrom('user_identities')
    .selectAll()
    .where('provider', '=', provider)
    .where('subject', '=', subject)
    .execute();

/** The last 'callback refused' log line of `provider`, parsed. */
function lastRefusal(provider: string) {
  const line = app.logs.findLast(
    (l) => l.includes('identity provider callback refused') && l.includes(`"provider":"${provider}"`),
  );
  return line && (JSON.parse(line) as Record<string, unknown>);
}

/** A person at `provider`, who signs in at its next authorization. */
function person(provider: TestOidcProvider, opts: { verified?: boolean; name?: string } = {}) {
  const account = {
    sub: `sub-${crypto.randomBytes(6).toString('hex')}`,
    email: uniqueEmail('oidc'),
    email_verified: opts.verified ?? true,
    name: opts.name ?? 'Ada Lovelace',
  };
  provider.accounts.set(account.sub, account);
  provider.signInAs(account.sub);
  return account;
}

describe('GET /auth/providers', () => {
  it('lists Google and the OpenID Connect provider under its display name', async () => {
    expect((await app.api('GET', '/auth/providers')).body).toEqual({
      items: [
        { id: 'google', name: 'Google' },
        { id: 'oidc', name: 'Acme SSO' },
      ],
    });
  });
});

describe.each([
  ['oidc', 'the e-mail at userinfo', () => oidc],
  ['google', 'the e-mail in the ID token', () => google],
] as const)('sign-in with %s (%s)', (providerId, _how, provider) => {
  it('sends the browser to the discovered authorization endpoint with state, PKCE S256 and a nonce', async () => {
    const to = await authorizationUrl(app, providerId, new Browser());
    expect(`${to.origin}${to.pathname}`).toBe(`${provider().issuer}/auth`);
    const q = to.searchParams;
    expect(q.get('client_id')).toBe(provider().clientId);
    expect(q.get('response_type')).toBe('code');
    expect(q.get('scope')).toBe('openid email profile');
    expect(q.get('redirect_uri')).toBe(`${app.url}/auth/oauth/${providerId}/callback`);
    expect(q.get('code_challenge_method')).toBe('S256');
    expect(q.get('state')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get('nonce')).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('creates the account from the verified ID token and its claims; the code gives a session', async () => {
    const who = person(provider());
    const session = await sessionThrough(app, providerId);
    expect(session.user).toMatchObject({ email: who.email, name: 'Ada Lovelace', emailVerified: true });
    expect((await identitiesOf(providerId, who.sub))[0]).toMatchObject({
      user_id: session.user.id,
      email: who.email,
      email_verified: true,
    });
    // The next sign-in of the same person is the same account.
    provider().signInAs(who.sub);
    expect((await sessionThrough(app, providerId)).user.id).toBe(session.user.id);
  });

  it("refuses an ID token whose nonce is not the flow's: error=OAUTH_SIGN_IN_FAILED, nothing created", async () => {
    const who = person(provider());
    const browser = new Browser();
    const tampered = await authorizationUrl(app, providerId, browser);
    tampered.searchParams.set('nonce', crypto.randomBytes(32).toString('base64url'));
    const callback = await followToCallback(browser, tampered);
    const landing = landingOf((await openCallback(browser, callback)).location);
    expect(landing).toMatchObject({ error: 'OAUTH_SIGN_IN_FAILED', code: undefined });
    expect(await usersWithEmail(who.email)).toEqual([]);
    expect(await identitiesOf(providerId, who.sub)).toEqual([]);
    const logged = app.logs.findLast(
      (l) => l.includes('identity provider callback refused') && l.includes(`"provider":"${providerId}"`),
    );
    expect(JSON.parse(logged!)).toMatchObject({
      provider: providerId,
      code: 'OAUTH_SIGN_IN_FAILED',
      reason: expect.stringContaining('unexpected ID Token "nonce" claim value'),
    });
    // Only what failed is logged, not the claims (the person's address).
    expect(logged).not.toContain(who.email);
  });

  it('refuses an ID token for another client (audience): error=OAUTH_SIGN_IN_FAILED, nothing created', async () => {
    const who = person(provider());
    provider().faults.audience = provider().otherClientId;
    try {
      expect(await signInWith(app, providerId)).toMatchObject({ error: 'OAUTH_SIGN_IN_FAILED', code: undefined });
    } finally {
      provider().faults.audience = undefined;
    }
    expect(await usersWithEmail(who.email)).toEqual([]);
    expect(lastRefusal(providerId)).toMatchObject({ reason: expect.stringContaining('"aud" (audience)') });
  });

  it('refuses an expired ID token: error=OAUTH_SIGN_IN_FAILED, nothing created', async () => {
    const who = person(provider());
    provider().faults.expiredIdToken = true;
    try {
      expect(await signInWith(app, providerId)).toMatchObject({ error: 'OAUTH_SIGN_IN_FAILED', code: undefined });
    } finally {
      provider().faults.expiredIdToken = false;
    }
    expect(await usersWithEmail(who.email)).toEqual([]);
    expect(lastRefusal(providerId)).toMatchObject({ reason: expect.stringContaining('"exp" (expiration time)') });
  });

  it('a refusal at the provider lands with error=OAUTH_ACCESS_DENIED', async () => {
    provider().signInAs('deny');
    expect(await signInWith(app, providerId)).toMatchObject({ error: 'OAUTH_ACCESS_DENIED', code: undefined });
  });

  it('an address the provider has not verified creates an unverified account', async () => {
    const who = person(provider(), { verified: false });
    const session = await sessionThrough(app, providerId);
    expect(session.user).toMatchObject({ email: who.email, emailVerified: false });
  });
});

describe('a provider that cannot be reached', () => {
  it('start answers 502 OAUTH_PROVIDER_ERROR (discovery failed) and stores nothing', async () => {
    const down = await startOidcProvider({ claimsInIdToken: true });
    await down.close();
    const isolated = await startTestApp({
      OIDC_ISSUER_URL: down.issuer,
      OIDC_CLIENT_ID: 'client',
      OIDC_CLIENT_SECRET: 'secret-of-a-provider-that-is-down',
    });
    try {
      expectError(await isolated.api('GET', '/auth/oauth/oidc/start'), 502, 'OAUTH_PROVIDER_ERROR');
      const stored = await isolated.deps.db
        .selectFrom('oauth_states')
        .select('id')
        .where('redirect_uri', 'like', `${isolated.url}/%`)
        .execute();
      expect(stored).toEqual([]);
    } finally {
      await isolated.close();
    }
  });
});

describe('the exchange', () => {
  it('answers the session result once', async () => {
    person(oidc);
    const landing = await signInWith(app, 'oidc');
    expect((await exchange(app, landing.code)).status).toBe(200);
    expectError(await exchange(app, landing.code), 400, 'INVALID_TOKEN');
  });
});

describe('an account with two-factor sign-in on', () => {
  it('gets the second step from the exchange, not a session; the mfaToken and a code then give the session', async () => {
    person(oidc);
    const first = await sessionThrough(app, 'oidc');
    const { secret, backupCodes } = await enableMfa(app.api, first.accessToken);

    const landing = await signInWith(app, 'oidc', new Browser());
    const res = await exchange(app, landing.code);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      mfaRequired: true,
      mfaToken: expect.stringMatching(/^mfa_/),
      methods: ['totp', 'backup_code'],
    });
    expect(res.text).not.toMatch(/accessToken|refreshToken/);

    expectError(
      await app.api('POST', '/auth/mfa/verify', { body: { mfaToken: res.body.mfaToken, backupCode: 'wrong-code' } }),
      400,
      'INVALID_MFA_CODE',
    );
    const verified = await app.api('POST', '/auth/mfa/verify', {
      body: { mfaToken: res.body.mfaToken, code: codeAt(secret, 1) },
    });
    expect(verified.status, verified.text).toBe(200);
    expect(verified.body.user).toMatchObject({ id: first.user.id, mfaEnabled: true });
    const me = await app.api('GET', '/auth/me', { token: verified.body.accessToken });
    expect(me.body.user.id).toBe(first.user.id);
    // The step token is spent.
    expectError(
      await app.api('POST', '/auth/mfa/verify', { body: { mfaToken: res.body.mfaToken, backupCode: backupCodes[0] } }),
      401,
      'UNAUTHORIZED',
    );
  });
});
