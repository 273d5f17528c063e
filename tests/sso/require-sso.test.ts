// The `requireSso` policy: only owners turn it on, and only with an ACTIVE connection and a VERIFIED domain;
// then members on the verified domains are refused (403 SSO_REQUIRED) unless their session came through
// the workspace's connection, members of other addresses are not concerned, and owners keep a break-glass
// sign-in with a password, audited once per session.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, type Session } from '../helpers/http.js';
import { exchange } from '../helpers/oauth.js';
import { startSamlIdp, type TestSamlIdp } from '../helpers/saml-idp.js';
import { invite, inviteAndJoin, registerAs, upgradeWorkspace } from '../workspaces/helpers.js';
import { samlConnection, ssoWorkspace, type SsoWorkspace } from './fixtures.js';
import { signInWithSso } from './flow.js';

let app: TestApp;
let idp: TestSamlIdp;
let ws: SsoWorkspace;

beforeAll(async () => {
  [app, idp] = await Promise.all([startTestApp(), startSamlIdp()]);
  ws = await ssoWorkspace(app, 'req');
  await upgradeWorkspace(app, ws.owner.accessToken, ws.id);
});
afterAll(async () => {
  await app?.close();
  await idp?.close();
});

const requireSso = (token: string, value: boolean, w = ws) =>
  app.api('PATCH', `/workspaces/${w.id}`, { token, body: { requireSso: value } });

/** A member with a password whose address is on the workspace's verified domain. */
async function memberOnDomain(): Promise<Session> {
  const email = `pw-${Date.now()}@${ws.domain}`;
  const session = await registerAs(app, email);
  const { token } = await invite(app, ws.owner.accessToken, ws.id, email, 'MEMBER');
  const accepted = await app.api('POST', '/invitations/accept', { token: session.accessToken, body: { token } });
  expect(accepted.status, accepted.text).toBe(200);
  return session;
}

describe('turning requireSso on', () => {
  it('is refused with 409 INVALID_STATE without an ACTIVE connection, and for an ADMIN with 403', async () => {
    expectError(await requireSso(ws.owner.accessToken, true), 409, 'INVALID_STATE');
    const admin = await inviteAndJoin(app, ws.owner.accessToken, ws.id, 'ADMIN', 'req-admin');
    expectError(await requireSso(admin.accessToken, true), 403, 'PERMISSION_DENIED');
  });

  it('is taken from an owner once a connection and a verified domain exist', async () => {
    await samlConnection(app, ws, idp);
    const res = await requireSso(ws.owner.accessToken, true);
    expect(res.status, res.text).toBe(200);
    expect(res.body.requireSso).toBe(true);
  });
});

describe('with requireSso on', () => {
  it('refuses a member on the verified domain who signed in with a password (403 SSO_REQUIRED)', async () => {
    const member = await memberOnDomain();
    expectError(await app.api('GET', `/workspaces/${ws.id}`, { token: member.accessToken }), 403, 'SSO_REQUIRED');
    expectError(
      await app.api('GET', `/workspaces/${ws.id}/members`, { token: member.accessToken }),
      403,
      'SSO_REQUIRED',
    );
    // The same person through the workspace's connection gets in.
    idp.signInAs(member.email);
    const sso = await exchange(app, (await signInWithSso(app, member.email)).code);
    expect(sso.status, sso.text).toBe(200);
    const res = await app.api('GET', `/workspaces/${ws.id}`, { token: sso.body.accessToken });
    expect(res.status, res.text).toBe(200);
  });

  it('lets members of other addresses (guests, contractors) in with a password', async () => {
    const guest = await inviteAndJoin(app, ws.owner.accessToken, ws.id, 'VIEWER', 'req-guest');
    expect((await app.api('GET', `/workspaces/${ws.id}`, { token: guest.accessToken })).status).toBe(200);
  });

  it("keeps the owner's break-glass access with a password, audited once per session", async () => {
    await app.deps.db
      .updateTable('users')
      .set({ email: `owner-${Date.now()}@${ws.domain}` })
      .where('id', '=', ws.owner.userId)
      .execute();
    for (let i = 0; i < 2; i++)
      expect((await app.api('GET', `/workspaces/${ws.id}`, { token: ws.owner.accessToken })).status).toBe(200);
    const entries = await app.deps.db
      .selectFrom('audit_logs')
      .select(['action', 'actor_user_id'])
      .where('workspace_id', '=', ws.id)
      .where('action', '=', 'sso.break_glass')
      .execute();
    expect(entries).toEqual([{ action: 'sso.break_glass', actor_user_id: ws.owner.userId }]);
  });

  it('turned off by the owner, lets password sessions in again', async () => {
    const member = await memberOnDomain();
    expect((await requireSso(ws.owner.accessToken, false)).status).toBe(200);
    expect((await app.api('GET', `/workspaces/${ws.id}`, { token: member.accessToken })).status).toBe(200);
  });
});
