// Sign-in through a workspace's SAML connection against an identity provider on loopback: the start by
// e-mail, the HTTP-POST answer at the ACS, the one-time code exchanged for a session marked as SSO, accounts
// and membership made just in time, known accounts that must link first, and the link itself.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanUpExpiredTokens } from '../../jobs/processors/maintenance.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { expectError, registerAndLogin, STRONG_PASSWORD } from '../helpers/http.js';
import { exchange } from '../helpers/oauth.js';
import { makeKeyPair, signElement, startSamlIdp, type TestSamlIdp } from '../helpers/saml-idp.js';
import { inviteAndJoin, roleIn, upgradeWorkspace } from '../workspaces/helpers.js';
import { samlConnection, ssoWorkspace, type SsoWorkspace } from './fixtures.js';
import { idpForm, postToAcs, signInWithSso, startSso } from './flow.js';

let app: TestApp;
let idp: TestSamlIdp;
let ws: SsoWorkspace;
let connectionId: string;

beforeAll(async () => {
  [app, idp] = await Promise.all([startTestApp(), startSamlIdp()]);
  ws = await ssoWorkspace(app, 'saml');
  await upgradeWorkspace(app, ws.owner.accessToken, ws.id);
  connectionId = (await samlConnection(app, ws, idp)).id;
});
afterAll(async () => {
  await app?.close();
  await idp?.close();
});

let n = 0;
const person = () => `person${++n}-${Date.now()}@${ws.domain}`;
const userOf = (email: string) =>
  app.deps.db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();
const auditActions = (userId: string) =>
  app.deps.db
    .selectFrom('audit_logs')
    .select('action')
    .where('target_id', '=', userId)
    .execute()
    .then((rows) => rows.map((r) => r.action));

describe('SAML sign-in', () => {
  it('signs a new person in: account and membership just in time, a session marked as SSO', async () => {
    const email = person();
    idp.signInAs(email);
    const landing = await signInWithSso(app, email);
    expect(landing.error).toBeUndefined();
    expect(landing.redirectTo).toBe('/projects');
    const res = await exchange(app, landing.code);
    expect(res.status, res.text).toBe(200);
    expect(res.body.user).toMatchObject({ email, emailVerified: true });
    const user = (await userOf(email))!;
    expect(user.password_hash).toBeNull();
    expect(await roleIn(app, ws.id, user.id)).toBe('MEMBER');
    // No personal workspace: the connection's workspace is its only one.
    const memberships = await app.deps.db
      .selectFrom('workspace_members')
      .select('workspace_id')
      .where('user_id', '=', user.id)
      .execute();
    expect(memberships).toEqual([{ workspace_id: ws.id }]);
    // Marked as the workspace's: its directory sync's removal suspends it (tests/scim).
    expect(user.provisioned_by_workspace_id).toBe(ws.id);
    const session = await app.deps.db
      .selectFrom('sessions')
      .select(['method', 'sso_connection_id'])
      .where('user_id', '=', user.id)
      .executeTakeFirstOrThrow();
    expect(session).toEqual({ method: 'sso', sso_connection_id: connectionId });
    const me = await app.api('GET', '/auth/me', { token: res.body.accessToken });
    expect(me.status).toBe(200);
    expect(await auditActions(user.id)).toEqual(expect.arrayContaining(['sso.account_created', 'sso.sign_in']));
    // The code is single use.
    expectError(await exchange(app, landing.code), 400, 'INVALID_TOKEN');
  });

  it('signs the same person in again to the same account', async () => {
    const email = person();
    idp.signInAs(email);
    const first = await exchange(app, (await signInWithSso(app, email)).code);
    const second = await exchange(app, (await signInWithSso(app, email)).code);
    expect(second.body.user.id).toBe(first.body.user.id);
  });

  it("gives a new person the connection's defaultRole", async () => {
    const other = await ssoWorkspace(app, 'saml-role');
    const { id } = await samlConnection(app, other, idp);
    const patched = await app.api('PATCH', `/workspaces/${other.id}/sso/connections/${id}`, {
      token: other.owner.accessToken,
      body: { defaultRole: 'VIEWER' },
    });
    expect(patched.status).toBe(200);
    const email = `viewer-${Date.now()}@${other.domain}`;
    idp.signInAs(email);
    const res = await exchange(app, (await signInWithSso(app, email)).code);
    expect(await roleIn(app, other.id, res.body.user.id)).toBe('VIEWER');
  });

  it('signs in a member of the workspace who had a password, without asking for a second factor', async () => {
    const email = person();
    const member = await inviteAndJoin(app, ws.owner.accessToken, ws.id, 'ADMIN', 'unused');
    // The member's address moved onto the verified domain.
    await app.deps.db.updateTable('users').set({ email }).where('id', '=', member.userId).execute();
    await app.deps.db.updateTable('users').set({ mfa_enabled: true }).where('id', '=', member.userId).execute();
    idp.signInAs(email);
    const res = await exchange(app, (await signInWithSso(app, email)).code);
    expect(res.status, res.text).toBe(200);
    expect(res.body.accessToken).toEqual(expect.any(String));
    expect(res.body.user.id).toBe(member.userId);
    expect(await roleIn(app, ws.id, member.userId)).toBe('ADMIN');
  });

  it('answers 404 SSO_NOT_CONFIGURED for an address no workspace verified, or of an INACTIVE connection', async () => {
    expectError(
      await app.api('GET', '/auth/sso/start?email=someone@unclaimed-domain.example'),
      404,
      'SSO_NOT_CONFIGURED',
    );
    expectError(await app.api('GET', '/auth/sso/start?email=not-an-address'), 404, 'SSO_NOT_CONFIGURED');
    const other = await ssoWorkspace(app, 'saml-off');
    const { id } = await samlConnection(app, other, idp);
    await app.api('PATCH', `/workspaces/${other.id}/sso/connections/${id}`, {
      token: other.owner.accessToken,
      body: { status: 'INACTIVE' },
    });
    expectError(await app.api('GET', `/auth/sso/start?email=a@${other.domain}`), 404, 'SSO_NOT_CONFIGURED');
  });

  it('accepts an answer signed by the second certificate during a roll-over', async () => {
    const other = await ssoWorkspace(app, 'saml-roll');
    const { id } = await samlConnection(app, other, idp);
    const next = makeKeyPair('rolled');
    await app.api('PATCH', `/workspaces/${other.id}/sso/connections/${id}`, {
      token: other.owner.accessToken,
      body: { nextIdpCertificate: next.certificate },
    });
    const email = `rolled-${Date.now()}@${other.domain}`;
    const browser = new Browser();
    const { idpUrl, request } = await startSso(app, email, browser);
    const { acsUrl } = await idpForm(idpUrl);
    // What the IdP answers, re-signed with its next key.
    const xml = Buffer.from(idp.answer(request, email), 'base64').toString('utf8');
    const unsigned = xml.replace(/<ds:Signature[\s\S]*<\/ds:Signature>/, '');
    const assertionId = /<saml:Assertion[^>]* ID="([^"]+)"/.exec(unsigned)![1];
    const resigned = signElement(unsigned, assertionId, next);
    const landing = await postToAcs(acsUrl, Buffer.from(resigned).toString('base64'), browser);
    expect(landing.error).toBeUndefined();
    expect((await exchange(app, landing.code)).status).toBe(200);
  });
});

describe('known accounts', () => {
  it('a known account of another workspace is refused until it links (ACCOUNT_LINK_REQUIRED), then links', async () => {
    const email = person();
    const reg = await app.api('POST', '/auth/register', { body: { email, password: STRONG_PASSWORD, name: 'Known' } });
    expect(reg.status).toBe(201);
    const account = (await userOf(email))!;
    idp.signInAs(email);
    const refused = await signInWithSso(app, email);
    expect(refused.error).toBe('ACCOUNT_LINK_REQUIRED');
    expect(refused.code).toBeUndefined();
    expect(await roleIn(app, ws.id, account.id)).toBeUndefined();

    // Signed in as usual, the account links the workspace's connection.
    const login = await app.api('POST', '/auth/login', { body: { email, password: STRONG_PASSWORD } });
    const token: string = login.body.accessToken;
    const start = await app.api('POST', '/auth/identities/sso/link/start', { token, body: { email } });
    expect(start.status, start.text).toBe(200);
    const { acsUrl, samlResponse } = await idpForm(new URL(start.body.url));
    const landing = await postToAcs(acsUrl, samlResponse);
    expect(landing.error).toBeUndefined();
    // Only the account that started the link can take the code.
    const stranger = await registerAndLogin(app.api, { prefix: 'stranger' });
    expectError(await exchange(app, landing.code, stranger.accessToken), 400, 'INVALID_TOKEN');
    const linked = await exchange(app, landing.code, token);
    expect(linked.status, linked.text).toBe(200);
    expect(await roleIn(app, ws.id, account.id)).toBe('MEMBER');
    // From then on, SSO signs it in.
    const again = await signInWithSso(app, email);
    expect(again.error).toBeUndefined();
    expect((await exchange(app, again.code)).body.user.id).toBe(account.id);
  });

  it("an account the workspace's directory sync created signs in without linking", async () => {
    const email = person();
    const account = await app.deps.db
      .insertInto('users')
      .values({ email, name: 'From the directory', email_verified_at: new Date(), provisioned_by_workspace_id: ws.id })
      .returning('id')
      .executeTakeFirstOrThrow();
    idp.signInAs(email);
    const landing = await signInWithSso(app, email);
    expect(landing.error).toBeUndefined();
    const res = await exchange(app, landing.code);
    expect(res.status, res.text).toBe(200);
    expect(res.body.user.id).toBe(account.id);
    expect(await roleIn(app, ws.id, account.id)).toBe('MEMBER');
  });

  it('POST /auth/identities/sso/link/start for an address without SSO answers 404 SSO_NOT_CONFIGURED', async () => {
    const someone = await registerAndLogin(app.api, { prefix: 'nolink' });
    const res = await app.api('POST', '/auth/identities/sso/link/start', {
      token: someone.accessToken,
      body: { email: 'x@unclaimed-domain.example' },
    });
    expectError(res, 404, 'SSO_NOT_CONFIGURED');
  });
});

describe('the daily clean-up', () => {
  it('removes expired SSO requests and assertion ids past their validity', async () => {
    const email = person();
    const { request } = await startSso(app, email);
    const old = new Date(Date.now() - 30 * 86_400_000);
    await app.deps.db.updateTable('sso_requests').set({ expires_at: old }).where('id', '=', request.id).execute();
    await app.deps.db
      .insertInto('sso_assertions')
      .values({ connection_id: connectionId, assertion_id: `_old-${Date.now()}`, expires_at: old })
      .execute();
    const removed = await cleanUpExpiredTokens(app.deps.db);
    expect(removed.ssoRequests).toBeGreaterThanOrEqual(1);
    expect(removed.ssoAssertions).toBeGreaterThanOrEqual(1);
    const left = await app.deps.db.selectFrom('sso_requests').select('id').where('id', '=', request.id).execute();
    expect(left).toEqual([]);
  });
});

describe('the browser-binding cookie', () => {
  it('is SameSite=None; Secure over https, so the identity provider’s cross-site POST carries it', async () => {
    const secureApp = await startTestApp({ API_URL: 'https://api.tests.local' });
    try {
      const other = await ssoWorkspace(secureApp, 'saml-https');
      await samlConnection(secureApp, other, idp);
      const res = await fetch(`${secureApp.url}/auth/sso/start?email=a@${other.domain}`, { redirect: 'manual' });
      expect(res.status).toBe(302);
      const cookie = res.headers.getSetCookie().find((c) => c.startsWith('sso_binding='))!;
      expect(cookie).toMatch(/; SameSite=None/i);
      expect(cookie).toMatch(/; Secure/i);
      expect(cookie).toMatch(/; HttpOnly/i);
      expect(cookie).toMatch(/; Path=\/auth\/sso\//i);
    } finally {
      await secureApp.close();
    }
  });
});
