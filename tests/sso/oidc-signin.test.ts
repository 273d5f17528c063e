// Sign-in through a workspace's OpenID Connect connection against a real provider on loopback
// (oidc-provider): discovery, code + PKCE + nonce, the ID token checked, the account made just in time and
// the session marked as SSO; an unverified address, a refusal at the provider and another browser's
// callback sign nobody in.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { exchange, landingOf } from '../helpers/oauth.js';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.js';
import { ledger } from '../helpers/secret-ledger.js';
import { roleIn } from '../workspaces/helpers.js';
import { ssoWorkspace, type SsoWorkspace } from './fixtures.js';

let app: TestApp;
let provider: TestOidcProvider;
let ws: SsoWorkspace;
let connectionId: string;

beforeAll(async () => {
  [app, provider] = await Promise.all([startTestApp(), startOidcProvider({ claimsInIdToken: true })]);
  ledger.sent(provider.clientSecret, 'an SSO client secret');
  ws = await ssoWorkspace(app, 'oidc');
  const res = await app.api('POST', `/workspaces/${ws.id}/sso/connections`, {
    token: ws.owner.accessToken,
    body: {
      type: 'OIDC',
      name: 'Corp OIDC',
      issuer: provider.issuer,
      clientId: provider.clientId,
      clientSecret: provider.clientSecret,
    },
  });
  expect(res.status, res.text).toBe(201);
  connectionId = res.body.id;
  provider.serve([res.body.sp.redirectUri]);
});
afterAll(async () => {
  await app?.close();
  await provider?.close();
});

function person(verified = true) {
  const account = {
    sub: `sub-${crypto.randomBytes(6).toString('hex')}`,
    email: `o-${crypto.randomBytes(4).toString('hex')}@${ws.domain}`,
    email_verified: verified,
    name: 'Grace Hopper',
  };
  provider.accounts.set(account.sub, account);
  provider.signInAs(account.sub);
  return account;
}

const startUrl = (email: string) => `${app.url}/auth/sso/start?email=${encodeURIComponent(email)}&redirectTo=/home`;
const isCallback = (url: URL) => url.pathname === `/auth/sso/oidc/${connectionId}/callback`;

describe('OIDC sign-in', () => {
  it('signs a new person in through the provider: account, membership and a session marked as SSO', async () => {
    const { email } = person();
    const stop = await new Browser().open(startUrl(email));
    const landing = landingOf(stop.location);
    expect(landing.error).toBeUndefined();
    expect(landing.redirectTo).toBe('/home');
    const res = await exchange(app, landing.code);
    expect(res.status, res.text).toBe(200);
    expect(res.body.user.email).toBe(email);
    expect(await roleIn(app, ws.id, res.body.user.id)).toBe('MEMBER');
    const session = await app.deps.db
      .selectFrom('sessions')
      .select(['method', 'sso_connection_id'])
      .where('user_id', '=', res.body.user.id)
      .executeTakeFirstOrThrow();
    expect(session).toEqual({ method: 'sso', sso_connection_id: connectionId });
  });

  it('refuses an address the provider did not verify (SSO_ASSERTION_INVALID), creating nothing', async () => {
    const { email } = person(false);
    const landing = landingOf((await new Browser().open(startUrl(email))).location);
    expect(landing.error).toBe('SSO_ASSERTION_INVALID');
    expect(
      await app.deps.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst(),
    ).toBeUndefined();
  });

  it('refuses a callback completed in another browser', async () => {
    const { email } = person();
    const browser = new Browser();
    const callback = (await browser.open(startUrl(email), { until: isCallback })).location!;
    expect(isCallback(callback)).toBe(true);
    const elsewhere = await new Browser().open(callback);
    expect(landingOf(elsewhere.location).error).toBe('OAUTH_STATE_INVALID');
    expect(
      await app.deps.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst(),
    ).toBeUndefined();
  });

  it('refuses a sign-in denied at the provider', async () => {
    const { email } = person();
    provider.signInAs('deny');
    const landing = landingOf((await new Browser().open(startUrl(email))).location);
    expect(landing.error).toBe('SSO_ASSERTION_INVALID');
  });
});
