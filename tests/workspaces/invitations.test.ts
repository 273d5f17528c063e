// The pending invitations of a workspace as its managers see them: listed with who sent each, revoked (the
// link then answers as an unknown token) and sent again with a new link (the old one stops working), end
// to end over HTTP, with the mails read back from the MOCK provider's log.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, registerAndLogin, uniqueEmail, type Session } from '../helpers/http.js';
import { latestMailToken, mailsTo } from '../helpers/mail.js';
import { INVITATION_TEMPLATE, createWorkspace, invite, inviteAndJoin, registerAs, roleIn } from './helpers.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
});
afterAll(() => app?.close());

const DAY_MS = 86_400_000;
const INVITATION_KEYS = ['createdAt', 'email', 'expiresAt', 'id', 'invitedBy', 'role', 'workspaceId'];

interface Team {
  id: string;
  name: string;
  owner: Session;
}

/**
 * An owner (named, so invitedBy can be checked) with a fresh team workspace, allowed 20 members: the
 * fixtures below hold more members and open invitations than Lite's 3.
 */
async function team(label: string): Promise<Team> {
  const owner = await registerAndLogin(app.api, { prefix: `${label}-owner`, name: `Owner ${label}` });
  const name = `${label} ${crypto.randomBytes(3).toString('hex')}`;
  const id = await createWorkspace(app, owner.accessToken, name);
  await app.deps.db
    .updateTable('workspaces')
    .set({ limits: JSON.stringify({ members: 20 }) })
    .where('id', '=', id)
    .execute();
  return { id, name, owner };
}

const list = (token: string, workspaceId: string) =>
  app.api('GET', `/workspaces/${workspaceId}/invitations`, { token });
const revoke = (token: string, workspaceId: string, invitationId: string) =>
  app.api('DELETE', `/workspaces/${workspaceId}/invitations/${invitationId}`, { token });
const resend = (token: string, workspaceId: string, invitationId: string) =>
  app.api('POST', `/workspaces/${workspaceId}/invitations/${invitationId}/resend`, { token });
const accept = (token: string, invitationToken: string) =>
  app.api('POST', '/invitations/accept', { token, body: { token: invitationToken } });
const invitationRow = (id: string) =>
  app.deps.db.selectFrom('workspace_invitations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const auditOf = (workspaceId: string, targetId: string) =>
  app.deps.db
    .selectFrom('audit_logs')
    .select(['action', 'actor_user_id', 'metadata'])
    .where('workspace_id', '=', workspaceId)
    .where('target_id', '=', targetId)
    .orderBy('created_at')
    .execute();
const invitationMails = async (email: string) =>
  (await mailsTo(app, email)).filter((m) => m.template === INVITATION_TEMPLATE);

describe('GET /workspaces/{workspaceId}/invitations', () => {
  it('lists only the pending invitations, newest first, each with who sent it', async () => {
    const t = await team('inv-list');
    const admin = await inviteAndJoin(app, t.owner.accessToken, t.id, 'ADMIN', 'inv-list-admin');

    const accepted = await inviteAndJoin(app, t.owner.accessToken, t.id, 'VIEWER', 'inv-list-accepted');
    const revoked = await invite(app, t.owner.accessToken, t.id, uniqueEmail('inv-list-revoked'), 'MEMBER');
    expect((await revoke(t.owner.accessToken, t.id, revoked.invitation.id)).status).toBe(200);
    const expired = await invite(app, t.owner.accessToken, t.id, uniqueEmail('inv-list-expired'), 'MEMBER');
    await app.deps.db
      .updateTable('workspace_invitations')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', expired.invitation.id)
      .execute();
    const byOwner = await invite(app, t.owner.accessToken, t.id, uniqueEmail('inv-list-a'), 'MEMBER');
    const byAdmin = await invite(app, admin.accessToken, t.id, uniqueEmail('inv-list-b'), 'VIEWER');

    const res = await list(t.owner.accessToken, t.id);
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.body)).toEqual(['items']);
    const items = res.body.items as Array<Record<string, any>>;
    expect(items.map((i) => i.id)).toEqual([byAdmin.invitation.id, byOwner.invitation.id]);
    for (const item of items) expect(Object.keys(item).sort()).toEqual(INVITATION_KEYS);
    expect(items[0]).toEqual({
      id: byAdmin.invitation.id,
      workspaceId: t.id,
      email: byAdmin.invitation.email,
      role: 'VIEWER',
      expiresAt: expect.any(String),
      createdAt: expect.any(String),
      invitedBy: { id: admin.userId, name: 'ADMIN person' },
    });
    expect(items[1]).toMatchObject({ role: 'MEMBER', invitedBy: { id: t.owner.userId, name: 'Owner inv-list' } });
    const expiresIn = new Date(items[1].expiresAt).getTime() - new Date(items[1].createdAt).getTime();
    expect(Math.abs(expiresIn - 7 * DAY_MS)).toBeLessThan(60_000);
    expect(items.map((i) => i.email)).not.toContain(accepted.email);

    // The same list for an ADMIN (members.manage).
    const asAdmin = await list(admin.accessToken, t.id);
    expect(asAdmin.status, asAdmin.text).toBe(200);
    expect(asAdmin.body).toEqual(res.body);
  });

  it('answers invitedBy null once the sender erased their account', async () => {
    const t = await team('inv-gone');
    const sender = await inviteAndJoin(app, t.owner.accessToken, t.id, 'ADMIN', 'inv-gone-admin');
    const sent = await invite(app, sender.accessToken, t.id, uniqueEmail('inv-gone-invitee'), 'VIEWER');
    await app.deps.db.updateTable('users').set({ deleted_at: new Date() }).where('id', '=', sender.userId).execute();
    const res = await list(t.owner.accessToken, t.id);
    expect(res.status, res.text).toBe(200);
    expect(res.body.items).toEqual([expect.objectContaining({ id: sent.invitation.id, invitedBy: null })]);
  });

  it('is refused to a MEMBER and a VIEWER (403 PERMISSION_DENIED) and hidden from an outsider (404)', async () => {
    const t = await team('inv-list-deny');
    const member = await inviteAndJoin(app, t.owner.accessToken, t.id, 'MEMBER', 'inv-deny-member');
    const viewer = await inviteAndJoin(app, t.owner.accessToken, t.id, 'VIEWER', 'inv-deny-viewer');
    const outsider = await registerAndLogin(app.api, { prefix: 'inv-deny-outsider' });
    expectError(await list(member.accessToken, t.id), 403, 'PERMISSION_DENIED');
    expectError(await list(viewer.accessToken, t.id), 403, 'PERMISSION_DENIED');
    expectError(await list(outsider.accessToken, t.id), 404, 'NOT_FOUND');
    expectError(await app.api('GET', `/workspaces/${t.id}/invitations`), 401, 'UNAUTHORIZED');
  });
});

describe('DELETE /workspaces/{workspaceId}/invitations/{invitationId}', () => {
  it('revokes: 200 { message }, audited; the link then answers 400 INVALID_TOKEN and the list drops it', async () => {
    const t = await team('inv-revoke');
    const email = uniqueEmail('inv-revoke-invitee');
    const invitee = await registerAs(app, email);
    const sent = await invite(app, t.owner.accessToken, t.id, email, 'MEMBER');

    const res = await revoke(t.owner.accessToken, t.id, sent.invitation.id);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ message: expect.any(String) });
    expect((await invitationRow(sent.invitation.id)).revoked_at).toBeInstanceOf(Date);
    expect(await auditOf(t.id, sent.invitation.id)).toContainEqual({
      action: 'member.invitation_revoked',
      actor_user_id: t.owner.userId,
      metadata: { role: 'MEMBER' },
    });
    expect((await list(t.owner.accessToken, t.id)).body.items).toEqual([]);

    const used = expectError(await accept(invitee.accessToken, sent.token), 400, 'INVALID_TOKEN');
    // Worded as an unknown token's answer: nothing tells that it was revoked.
    const unknown = expectError(
      await accept(invitee.accessToken, crypto.randomBytes(32).toString('base64url')),
      400,
      'INVALID_TOKEN',
    );
    expect(used.message).toBe(unknown.message);
    expect(await roleIn(app, t.id, invitee.userId)).toBeUndefined();
  });

  it('answers 404 NOT_FOUND the second time, for an accepted invitation and for one of another workspace', async () => {
    const t = await team('inv-revoke-404');
    const other = await team('inv-revoke-other');
    const sent = await invite(app, t.owner.accessToken, t.id, uniqueEmail('inv-twice'), 'VIEWER');
    expect((await revoke(t.owner.accessToken, t.id, sent.invitation.id)).status).toBe(200);
    expectError(await revoke(t.owner.accessToken, t.id, sent.invitation.id), 404, 'NOT_FOUND');

    const email = uniqueEmail('inv-accepted');
    const joiner = await registerAs(app, email);
    const used = await invite(app, t.owner.accessToken, t.id, email, 'VIEWER');
    expect((await accept(joiner.accessToken, used.token)).status).toBe(200);
    expectError(await revoke(t.owner.accessToken, t.id, used.invitation.id), 404, 'NOT_FOUND');
    expect(await roleIn(app, t.id, joiner.userId)).toBe('VIEWER');

    // Another workspace's invitation, through a workspace the caller manages: not found, and left alone.
    const theirs = await invite(app, other.owner.accessToken, other.id, uniqueEmail('inv-theirs'), 'VIEWER');
    expectError(await revoke(t.owner.accessToken, t.id, theirs.invitation.id), 404, 'NOT_FOUND');
    expect((await invitationRow(theirs.invitation.id)).revoked_at).toBeNull();
    expectError(await revoke(t.owner.accessToken, t.id, crypto.randomUUID()), 404, 'NOT_FOUND');
  });

  it('is refused to a MEMBER (403 PERMISSION_DENIED): the invitation stays usable', async () => {
    const t = await team('inv-revoke-deny');
    const member = await inviteAndJoin(app, t.owner.accessToken, t.id, 'MEMBER', 'inv-revoke-member');
    const email = uniqueEmail('inv-revoke-kept');
    const invitee = await registerAs(app, email);
    const sent = await invite(app, t.owner.accessToken, t.id, email, 'VIEWER');
    expectError(await revoke(member.accessToken, t.id, sent.invitation.id), 403, 'PERMISSION_DENIED');
    expect((await accept(invitee.accessToken, sent.token)).status).toBe(200);
  });
});

describe('POST /workspaces/{workspaceId}/invitations/{invitationId}/resend', () => {
  it('mails a new link: the old token answers INVALID_TOKEN, the new one joins; audited', async () => {
    const t = await team('inv-resend');
    const email = uniqueEmail('inv-resend-invitee');
    const invitee = await registerAs(app, email);
    const sent = await invite(app, t.owner.accessToken, t.id, email, 'MEMBER');
    // As if sent days ago and close to expiry: the resend gives it another 7 days.
    await app.deps.db
      .updateTable('workspace_invitations')
      .set({ expires_at: new Date(Date.now() + 60_000) })
      .where('id', '=', sent.invitation.id)
      .execute();

    const res = await resend(t.owner.accessToken, t.id, sent.invitation.id);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      id: sent.invitation.id,
      workspaceId: t.id,
      email,
      role: 'MEMBER',
      expiresAt: expect.any(String),
      createdAt: expect.any(String),
    });
    expect(Math.abs(new Date(res.body.expiresAt).getTime() - (Date.now() + 7 * DAY_MS))).toBeLessThan(60_000);
    expect(await invitationMails(email)).toHaveLength(2);
    const fresh = await latestMailToken(app, email, INVITATION_TEMPLATE);
    expect(fresh).not.toBe(sent.token);
    expect(await auditOf(t.id, sent.invitation.id)).toContainEqual({
      action: 'member.invitation_resent',
      actor_user_id: t.owner.userId,
      metadata: { role: 'MEMBER' },
    });
    // Still one pending invitation, the same one.
    expect((await list(t.owner.accessToken, t.id)).body.items.map((i: { id: string }) => i.id)).toEqual([
      sent.invitation.id,
    ]);

    expectError(await accept(invitee.accessToken, sent.token), 400, 'INVALID_TOKEN');
    const joined = await accept(invitee.accessToken, fresh);
    expect(joined.status, joined.text).toBe(200);
    expect(joined.body.workspace).toMatchObject({ id: t.id, role: 'MEMBER' });
    expect(await roleIn(app, t.id, invitee.userId)).toBe('MEMBER');
    // Used: neither a resend nor the list sees it any more.
    expectError(await resend(t.owner.accessToken, t.id, sent.invitation.id), 404, 'NOT_FOUND');
    expect((await list(t.owner.accessToken, t.id)).body.items).toEqual([]);
  });

  it('renews an expired invitation, and refuses a revoked one (404)', async () => {
    const t = await team('inv-resend-exp');
    const email = uniqueEmail('inv-resend-expired');
    const invitee = await registerAs(app, email);
    const sent = await invite(app, t.owner.accessToken, t.id, email, 'VIEWER');
    await app.deps.db
      .updateTable('workspace_invitations')
      .set({ expires_at: new Date(Date.now() - DAY_MS) })
      .where('id', '=', sent.invitation.id)
      .execute();
    expectError(await accept(invitee.accessToken, sent.token), 400, 'INVALID_TOKEN');
    expect((await resend(t.owner.accessToken, t.id, sent.invitation.id)).status).toBe(200);
    expect((await accept(invitee.accessToken, await latestMailToken(app, email, INVITATION_TEMPLATE))).status).toBe(
      200,
    );

    const revoked = await invite(app, t.owner.accessToken, t.id, uniqueEmail('inv-resend-revoked'), 'VIEWER');
    expect((await revoke(t.owner.accessToken, t.id, revoked.invitation.id)).status).toBe(200);
    expectError(await resend(t.owner.accessToken, t.id, revoked.invitation.id), 404, 'NOT_FOUND');
    expect(await invitationMails(revoked.invitation.email)).toHaveLength(1);
  });

  it('an ADMIN resending an OWNER invitation gets 403 PERMISSION_DENIED: no mail, the old link still works', async () => {
    const t = await team('inv-resend-owner');
    const admin = await inviteAndJoin(app, t.owner.accessToken, t.id, 'ADMIN', 'inv-resend-admin');
    const email = uniqueEmail('inv-resend-co-owner');
    const invitee = await registerAs(app, email);
    const sent = await invite(app, t.owner.accessToken, t.id, email, 'OWNER');
    const before = await invitationRow(sent.invitation.id);

    expectError(await resend(admin.accessToken, t.id, sent.invitation.id), 403, 'PERMISSION_DENIED');
    const after = await invitationRow(sent.invitation.id);
    expect({ token: after.token_hash, expires: after.expires_at }).toEqual({
      token: before.token_hash,
      expires: before.expires_at,
    });
    expect(await invitationMails(email)).toHaveLength(1);
    expect((await auditOf(t.id, sent.invitation.id)).map((a) => a.action)).not.toContain('member.invitation_resent');

    // Its other invitations it may send again; the owner may send this one.
    const viewerInvite = await invite(app, t.owner.accessToken, t.id, uniqueEmail('inv-resend-viewer'), 'VIEWER');
    expect((await resend(admin.accessToken, t.id, viewerInvite.invitation.id)).status).toBe(200);
    const joined = await accept(invitee.accessToken, sent.token);
    expect(joined.status, joined.text).toBe(200);
    expect(await roleIn(app, t.id, invitee.userId)).toBe('OWNER');
  });

  it('is refused to a VIEWER (403 PERMISSION_DENIED) and hidden from an outsider (404)', async () => {
    const t = await team('inv-resend-deny');
    const viewer = await inviteAndJoin(app, t.owner.accessToken, t.id, 'VIEWER', 'inv-resend-viewer');
    const outsider = await registerAndLogin(app.api, { prefix: 'inv-resend-outsider' });
    const sent = await invite(app, t.owner.accessToken, t.id, uniqueEmail('inv-resend-x'), 'VIEWER');
    expectError(await resend(viewer.accessToken, t.id, sent.invitation.id), 403, 'PERMISSION_DENIED');
    expectError(await resend(outsider.accessToken, t.id, sent.invitation.id), 404, 'NOT_FOUND');
    expect(await invitationMails(sent.invitation.email)).toHaveLength(1);
  });
});
