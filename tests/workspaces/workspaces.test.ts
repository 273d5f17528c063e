import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, login, registerAndLogin, uniqueEmail } from '../helpers/http.js';
import { mailsTo } from '../helpers/mail.js';
import { INVITATION_TEMPLATE, createWorkspace, invite, inviteAndJoin, registerAs, roleIn } from './helpers.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
});
afterAll(() => app?.close());

const DAY_MS = 86_400_000;
const accept = (token: string, invitationToken: unknown) =>
  app.api('POST', '/invitations/accept', { token, body: { token: invitationToken } });
const members = async (token: string, workspaceId: string) => {
  const res = await app.api('GET', `/workspaces/${workspaceId}/members`, { token });
  expect(res.status, res.text).toBe(200);
  return res.body.items as Array<{
    userId: string;
    email: string;
    name: string;
    role: string;
    status: string;
    joinedAt: string;
  }>;
};
const membershipRows = (workspaceId: string, userId: string) =>
  app.deps.db
    .selectFrom('workspace_members')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('user_id', '=', userId)
    .execute();
const adminToken = async () => (await login(app.api, TEST_ADMIN.email, TEST_ADMIN.password)).accessToken;
const transferOwner = (token: string, workspaceId: string, newOwnerUserId: string) =>
  app.api('POST', `/admin/workspaces/${workspaceId}/transfer-owner`, { token, body: { newOwnerUserId } });
const wsName = (label: string) => `${label} ${crypto.randomBytes(3).toString('hex')}`;

/** An owner with a fresh team workspace. */
async function team(label = 'team') {
  const owner = await registerAndLogin(app.api, { prefix: `${label}-owner` });
  const name = wsName(label);
  return { owner, name, id: await createWorkspace(app, owner.accessToken, name) };
}

describe('GET /workspaces', () => {
  it('answers { items } with the personal workspace and the caller role OWNER', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'list' });
    const res = await app.api('GET', '/workspaces', { token: s.accessToken });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['items']);
    expect(res.body.items).toHaveLength(1);
    const [ws] = res.body.items;
    expect(Object.keys(ws).sort()).toEqual([
      'createdAt',
      'edition',
      'id',
      'isPersonal',
      'memberCount',
      'name',
      'requireMfa',
      'requireSso',
      'role',
      'status',
      'updatedAt',
    ]);
    expect(ws).toMatchObject({ id: s.workspaceId, role: 'OWNER', status: 'ACTIVE', isPersonal: true, memberCount: 1 });
  });

  it('shows a workspace joined through an invitation with the invited role', async () => {
    const t = await team('listjoin');
    const viewer = await inviteAndJoin(app, t.owner.accessToken, t.id, 'VIEWER');
    const res = await app.api('GET', '/workspaces', { token: viewer.accessToken });
    expect(res.status).toBe(200);
    expect(res.body.items).toEqual(
      expect.arrayContaining([expect.objectContaining({ id: t.id, name: t.name, role: 'VIEWER', memberCount: 2 })]),
    );
  });

  it('refuses an anonymous caller with 401 UNAUTHORIZED', async () => {
    expectError(await app.api('GET', '/workspaces'), 401, 'UNAUTHORIZED');
  });
});

describe('POST /workspaces', () => {
  it('answers 201 with the new workspace, the caller as OWNER, and it appears in their list', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'create' });
    const name = wsName('Acme');
    const res = await app.api('POST', '/workspaces', { token: s.accessToken, body: { name: `  ${name}  ` } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name, role: 'OWNER', status: 'ACTIVE', isPersonal: false, memberCount: 1 });
    expect(res.body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(await roleIn(app, res.body.id, s.userId)).toBe('OWNER');

    const list = await app.api('GET', '/workspaces', { token: s.accessToken });
    expect(list.body.items.map((w: { id: string; role: string }) => [w.id, w.role])).toContainEqual([
      res.body.id,
      'OWNER',
    ]);
  });

  it.each([
    ['no name', {}],
    ['an empty name', { name: '' }],
    ['a blank name', { name: '   ' }],
    ['a name over 100 characters', { name: 'x'.repeat(101) }],
    ['a name that is not a string', { name: 42 }],
  ])('refuses %s with 400 BAD_REQUEST and issues naming "name"', async (_label, body) => {
    const s = await registerAndLogin(app.api, { prefix: 'create-bad' });
    const err = expectError(await app.api('POST', '/workspaces', { token: s.accessToken, body }), 400, 'BAD_REQUEST');
    expect(err.issues?.map((i) => i.path)).toContain('name');
    const list = await app.api('GET', '/workspaces', { token: s.accessToken });
    expect(list.body.items).toHaveLength(1);
  });
});

describe('GET and PATCH /workspaces/{workspaceId}', () => {
  it('answers one workspace with the caller role', async () => {
    const t = await team('get');
    const res = await app.api('GET', `/workspaces/${t.id}`, { token: t.owner.accessToken });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: t.id, name: t.name, role: 'OWNER', memberCount: 1 });
  });

  it('renames the workspace: the answer, a later GET and the stored row carry the new name', async () => {
    const t = await team('rename');
    const before = await app.api('GET', `/workspaces/${t.id}`, { token: t.owner.accessToken });
    const name = wsName('Renamed');
    const res = await app.api('PATCH', `/workspaces/${t.id}`, { token: t.owner.accessToken, body: { name } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: t.id, name });
    expect(Date.parse(res.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(before.body.updatedAt));
    expect((await app.api('GET', `/workspaces/${t.id}`, { token: t.owner.accessToken })).body.name).toBe(name);
  });

  it('refuses an empty new name with 400 BAD_REQUEST and keeps the old one', async () => {
    const t = await team('rename-bad');
    expectError(
      await app.api('PATCH', `/workspaces/${t.id}`, { token: t.owner.accessToken, body: { name: '' } }),
      400,
      'BAD_REQUEST',
    );
    expect((await app.api('GET', `/workspaces/${t.id}`, { token: t.owner.accessToken })).body.name).toBe(t.name);
  });

  it.each([
    ['GET', '/workspaces/not-a-uuid'],
    ['PATCH', '/workspaces/not-a-uuid'],
    ['GET', '/workspaces/not-a-uuid/members'],
    ['POST', '/workspaces/not-a-uuid/invitations'],
    ['GET', '/workspaces/12345/audit-logs'],
  ])('answers a malformed workspaceId in the path (%s %s) with 400 BAD_REQUEST', async (method, path) => {
    const s = await registerAndLogin(app.api, { prefix: 'malformed' });
    const body = method === 'GET' ? undefined : { name: 'x', email: uniqueEmail('m'), role: 'MEMBER' };
    expectError(await app.api(method, path, { token: s.accessToken, body }), 400, 'BAD_REQUEST');
  });

  it('answers a malformed userId in the member path with 400 BAD_REQUEST', async () => {
    const t = await team('malformed-user');
    expectError(
      await app.api('PATCH', `/workspaces/${t.id}/members/nope`, {
        token: t.owner.accessToken,
        body: { role: 'VIEWER' },
      }),
      400,
      'BAD_REQUEST',
    );
    expectError(
      await app.api('DELETE', `/workspaces/${t.id}/members/nope`, { token: t.owner.accessToken }),
      400,
      'BAD_REQUEST',
    );
  });

  it('takes the workspaceId from the path: a workspaceId in the query string does not redirect a read', async () => {
    const t = await team('path-wins');
    const other = await registerAndLogin(app.api, { prefix: 'path-wins-other' });
    // `other` owns their personal workspace but is not a member of t.
    const res = await app.api('GET', `/workspaces/${t.id}?workspaceId=${other.workspaceId}`, {
      token: other.accessToken,
    });
    expectError(res, 404, 'NOT_FOUND');
    expect(res.text).not.toContain(t.name);
  });

  it('takes the workspaceId from the path: a workspaceId in the body does not redirect a write', async () => {
    const t = await team('path-wins-body');
    const other = await registerAndLogin(app.api, { prefix: 'path-wins-body-other' });
    const res = await app.api('PATCH', `/workspaces/${t.id}`, {
      token: other.accessToken,
      body: { workspaceId: other.workspaceId, name: 'Hijacked' },
    });
    expectError(res, 404, 'NOT_FOUND');
    const names = await app.deps.db
      .selectFrom('workspaces')
      .select('name')
      .where('id', 'in', [t.id, other.workspaceId])
      .execute();
    expect(names.map((n) => n.name)).not.toContain('Hijacked');
  });

  it('on /trpc, takes the workspaceId from the procedure input: a VIEWER is refused PERMISSION_DENIED, the OWNER renames', async () => {
    const t = await team('trpc');
    const viewer = await inviteAndJoin(app, t.owner.accessToken, t.id, 'VIEWER');
    const refused = await app.api('POST', '/trpc/workspaces.update', {
      token: viewer.accessToken,
      body: { workspaceId: t.id, name: 'By viewer' },
    });
    expect(refused.status).toBe(403);
    expect(refused.body.error.data.code).toBe('PERMISSION_DENIED');
    const name = wsName('Via trpc');
    const ok = await app.api('POST', '/trpc/workspaces.update', {
      token: t.owner.accessToken,
      body: { workspaceId: t.id, name },
    });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.result.data.name).toBe(name);
  });
});

describe('GET /workspaces/{workspaceId}/members', () => {
  it('lists each member with exactly userId, email, name, role, status and joinedAt', async () => {
    const t = await team('members');
    const admin = await inviteAndJoin(app, t.owner.accessToken, t.id, 'ADMIN');
    const items = await members(t.owner.accessToken, t.id);
    expect(items).toHaveLength(2);
    for (const m of items) {
      expect(Object.keys(m).sort()).toEqual(['email', 'joinedAt', 'name', 'role', 'status', 'userId']);
      expect(m.status).toBe('ACTIVE');
      expect(Date.parse(m.joinedAt)).not.toBeNaN();
    }
    expect(items).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ userId: t.owner.userId, email: t.owner.email, name: 'Test User', role: 'OWNER' }),
        expect.objectContaining({ userId: admin.userId, email: admin.email, name: 'ADMIN person', role: 'ADMIN' }),
      ]),
    );
    expect(JSON.stringify(items)).not.toMatch(/password_?hash|passwordHash|\$2[aby]\$/i);
  });
});

describe('POST /workspaces/{workspaceId}/invitations', () => {
  it('answers 201 with exactly id, workspaceId, email, role, expiresAt (7 days ahead) and createdAt', async () => {
    const t = await team('inv');
    const email = uniqueEmail('invitee');
    const before = Date.now();
    const res = await app.api('POST', `/workspaces/${t.id}/invitations`, {
      token: t.owner.accessToken,
      body: { email, role: 'MEMBER' },
    });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(['createdAt', 'email', 'expiresAt', 'id', 'role', 'workspaceId']);
    expect(res.body).toMatchObject({ workspaceId: t.id, email, role: 'MEMBER' });
    const expires = Date.parse(res.body.expiresAt);
    expect(Math.abs(expires - (before + 7 * DAY_MS))).toBeLessThan(60_000);
    expect(Math.abs(expires - Date.parse(res.body.createdAt) - 7 * DAY_MS)).toBeLessThan(5_000);
  });

  it('stores the address in lower case', async () => {
    const t = await team('inv-case');
    const email = uniqueEmail('MixedCase');
    const res = await app.api('POST', `/workspaces/${t.id}/invitations`, {
      token: t.owner.accessToken,
      body: { email: email.toUpperCase(), role: 'VIEWER' },
    });
    expect(res.status).toBe(201);
    expect(res.body.email).toBe(email.toLowerCase());
  });

  it('mails the address a workspace-invitation with a link to /invitations/accept?token=...', async () => {
    const t = await team('inv-mail');
    const email = uniqueEmail('mailed');
    expect(
      (
        await app.api('POST', `/workspaces/${t.id}/invitations`, {
          token: t.owner.accessToken,
          body: { email, role: 'MEMBER' },
        })
      ).status,
    ).toBe(201);
    const mails = (await mailsTo(app, email)).filter((m) => m.template === INVITATION_TEMPLATE);
    expect(mails).toHaveLength(1);
    expect(mails[0].link).toMatch(/^http:\/\/app\.tests\.local\/invitations\/accept\?token=[^&]{20,}$/);
    expect(mails[0].text).toContain(t.name);
  });

  it('stores only the SHA-256 digest of the token: the raw token is in no column of the invitation row', async () => {
    const t = await team('inv-hash');
    const email = uniqueEmail('hashed');
    const { invitation, token } = await invite(app, t.owner.accessToken, t.id, email, 'MEMBER');
    const row = await app.deps.db
      .selectFrom('workspace_invitations')
      .selectAll()
      .where('id', '=', invitation.id)
      .executeTakeFirstOrThrow();
    expect(row.token_hash).toBe(crypto.createHash('sha256').update(token).digest('hex'));
    expect(JSON.stringify(row)).not.toContain(token);
  });

  it('refuses an invalid e-mail or role with 400 BAD_REQUEST', async () => {
    const t = await team('inv-bad');
    const bad = [
      { email: 'not-an-address', role: 'MEMBER' },
      { email: uniqueEmail('r'), role: 'SUPERUSER' },
      { email: uniqueEmail('r') },
    ];
    for (const body of bad) {
      expectError(
        await app.api('POST', `/workspaces/${t.id}/invitations`, { token: t.owner.accessToken, body }),
        400,
        'BAD_REQUEST',
      );
    }
  });

  it('refuses to invite an existing member with 409 CONFLICT and sends no mail', async () => {
    const t = await team('inv-dup');
    const member = await inviteAndJoin(app, t.owner.accessToken, t.id, 'MEMBER');
    const mailsBefore = (await mailsTo(app, member.email)).length;
    expectError(
      await app.api('POST', `/workspaces/${t.id}/invitations`, {
        token: t.owner.accessToken,
        body: { email: member.email, role: 'ADMIN' },
      }),
      409,
      'CONFLICT',
    );
    expect((await mailsTo(app, member.email)).length).toBe(mailsBefore);
    expect(await roleIn(app, t.id, member.userId)).toBe('MEMBER');
  });

  it('refuses to invite the owner themselves with 409 CONFLICT', async () => {
    const t = await team('inv-self');
    expectError(
      await app.api('POST', `/workspaces/${t.id}/invitations`, {
        token: t.owner.accessToken,
        body: { email: t.owner.email, role: 'MEMBER' },
      }),
      409,
      'CONFLICT',
    );
  });

  it('refuses an ADMIN who invites an OWNER with 403 PERMISSION_DENIED (no invitation, no mail), and lets an OWNER invite one', async () => {
    const t = await team('inv-owner');
    const admin = await inviteAndJoin(app, t.owner.accessToken, t.id, 'ADMIN');
    const email = uniqueEmail('would-be-owner');
    expectError(
      await app.api('POST', `/workspaces/${t.id}/invitations`, {
        token: admin.accessToken,
        body: { email, role: 'OWNER' },
      }),
      403,
      'PERMISSION_DENIED',
    );
    expect(await mailsTo(app, email)).toHaveLength(0);
    expect(
      await app.deps.db.selectFrom('workspace_invitations').select('id').where('email', '=', email).execute(),
    ).toHaveLength(0);

    const coOwner = await inviteAndJoin(app, t.owner.accessToken, t.id, 'OWNER');
    expect(await roleIn(app, t.id, coOwner.userId)).toBe('OWNER');
  });

  it('lets an ADMIN invite a MEMBER', async () => {
    const t = await team('inv-by-admin');
    const admin = await inviteAndJoin(app, t.owner.accessToken, t.id, 'ADMIN');
    const member = await inviteAndJoin(app, admin.accessToken, t.id, 'MEMBER');
    expect(await roleIn(app, t.id, member.userId)).toBe('MEMBER');
  });

  it('replaces an open invitation when the same address is invited again: the old token is refused, the new one works with the new role', async () => {
    const t = await team('inv-replace');
    const email = uniqueEmail('twice');
    const invitee = await registerAs(app, email);
    const first = await invite(app, t.owner.accessToken, t.id, email, 'VIEWER');
    const second = await invite(app, t.owner.accessToken, t.id, email, 'ADMIN');
    expect(second.token).not.toBe(first.token);
    expectError(await accept(invitee.accessToken, first.token), 400, 'INVALID_TOKEN');
    expect(await roleIn(app, t.id, invitee.userId)).toBeUndefined();
    const ok = await accept(invitee.accessToken, second.token);
    expect(ok.status).toBe(200);
    expect(await roleIn(app, t.id, invitee.userId)).toBe('ADMIN');
  });
});

describe('POST /invitations/accept', () => {
  it('adds the signed-in invitee with the invited role and answers the workspace (200)', async () => {
    const t = await team('acc');
    const email = uniqueEmail('acc');
    const invitee = await registerAs(app, email);
    const { token } = await invite(app, t.owner.accessToken, t.id, email, 'ADMIN');
    const res = await accept(invitee.accessToken, token);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      workspace: { id: t.id, name: t.name, status: 'ACTIVE', edition: expect.any(String), role: 'ADMIN' },
    });
    expect(await members(t.owner.accessToken, t.id)).toEqual(
      expect.arrayContaining([expect.objectContaining({ userId: invitee.userId, email, role: 'ADMIN' })]),
    );
    // The new member can use the workspace at once, with the invited role's rights.
    expect((await app.api('GET', `/workspaces/${t.id}/audit-logs`, { token: invitee.accessToken })).status).toBe(200);
  });

  it('is single use: a second acceptance answers 400 INVALID_TOKEN', async () => {
    const t = await team('acc-once');
    const email = uniqueEmail('once');
    const invitee = await registerAs(app, email);
    const { token } = await invite(app, t.owner.accessToken, t.id, email, 'MEMBER');
    expect((await accept(invitee.accessToken, token)).status).toBe(200);
    expectError(await accept(invitee.accessToken, token), 400, 'INVALID_TOKEN');
    expect(await membershipRows(t.id, invitee.userId)).toHaveLength(1);
  });

  it('answers an unknown token with 400 INVALID_TOKEN', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'acc-unknown' });
    expectError(await accept(s.accessToken, crypto.randomBytes(32).toString('base64url')), 400, 'INVALID_TOKEN');
  });

  it('answers a missing or non-string token with 400', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'acc-missing' });
    expect((await app.api('POST', '/invitations/accept', { token: s.accessToken, body: {} })).status).toBe(400);
    expect((await accept(s.accessToken, 12345)).status).toBe(400);
  });

  it('answers an expired invitation with 400 INVALID_TOKEN and adds nobody', async () => {
    const t = await team('acc-expired');
    const email = uniqueEmail('expired');
    const invitee = await registerAs(app, email);
    const { invitation, token } = await invite(app, t.owner.accessToken, t.id, email, 'MEMBER');
    await app.deps.db
      .updateTable('workspace_invitations')
      .set({ expires_at: new Date(Date.now() - 60_000) })
      .where('id', '=', invitation.id)
      .execute();
    expectError(await accept(invitee.accessToken, token), 400, 'INVALID_TOKEN');
    expect(await roleIn(app, t.id, invitee.userId)).toBeUndefined();
  });

  it('refuses a user other than the invited address with 403 FORBIDDEN and leaves the invitation usable by the right user', async () => {
    const t = await team('acc-other');
    const email = uniqueEmail('rightful');
    const rightful = await registerAs(app, email);
    const intruder = await registerAndLogin(app.api, { prefix: 'intruder' });
    const { token } = await invite(app, t.owner.accessToken, t.id, email, 'MEMBER');
    const refused = await accept(intruder.accessToken, token);
    expectError(refused, 403, 'FORBIDDEN');
    expect(refused.text).not.toContain(t.name);
    expect(await roleIn(app, t.id, intruder.userId)).toBeUndefined();

    expect((await accept(rightful.accessToken, token)).status).toBe(200);
    expect(await roleIn(app, t.id, rightful.userId)).toBe('MEMBER');
  });

  it('refuses an anonymous caller with 401 UNAUTHORIZED and keeps the invitation usable', async () => {
    const t = await team('acc-anon');
    const email = uniqueEmail('anon-acc');
    const invitee = await registerAs(app, email);
    const { token } = await invite(app, t.owner.accessToken, t.id, email, 'MEMBER');
    expectError(await app.api('POST', '/invitations/accept', { body: { token } }), 401, 'UNAUTHORIZED');
    expect((await accept(invitee.accessToken, token)).status).toBe(200);
  });

  it('adds the member once when two acceptances of one invitation run in parallel: one 200, one 400 INVALID_TOKEN', async () => {
    const t = await team('acc-race');
    const email = uniqueEmail('race');
    const invitee = await registerAs(app, email);
    const { token } = await invite(app, t.owner.accessToken, t.id, email, 'MEMBER');
    const results = await Promise.all([accept(invitee.accessToken, token), accept(invitee.accessToken, token)]);
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 400]);
    expectError(
      results.find((r) => r.status === 400)!,
      400,
      'INVALID_TOKEN',
    );
    expect(await membershipRows(t.id, invitee.userId)).toHaveLength(1);
    const joined = await app.deps.db
      .selectFrom('audit_logs')
      .select('id')
      .where('action', '=', 'member.joined')
      .where('workspace_id', '=', t.id)
      .execute();
    expect(joined).toHaveLength(1);
  });

  it('answers 200 with the existing role when the invitee has become a member meanwhile, even in a full workspace', async () => {
    const t = await team('acc-member');
    const email = uniqueEmail('already');
    const invitee = await registerAs(app, email);
    const { token } = await invite(app, t.owner.accessToken, t.id, email, 'VIEWER');
    await inviteAndJoin(app, t.owner.accessToken, t.id, 'MEMBER');
    // The transfer makes the invitee a member (OWNER): three members, the Lite plan's limit.
    expect((await transferOwner(await adminToken(), t.id, invitee.userId)).status).toBe(200);
    const res = await accept(invitee.accessToken, token);
    expect(res.status, res.text).toBe(200);
    expect(res.body.workspace.role).toBe('OWNER');
    expect(await membershipRows(t.id, invitee.userId)).toHaveLength(1);
    expect(await roleIn(app, t.id, invitee.userId)).toBe('OWNER');
  });

  it('answers without a 5xx when the address is invited again while the invitee accepts (12 trials)', async () => {
    for (let i = 0; i < 12; i++) {
      const t = await team('acc-reinvite');
      const email = uniqueEmail('reinvite');
      const invitee = await registerAs(app, email);
      const { token } = await invite(app, t.owner.accessToken, t.id, email, 'VIEWER');
      const [accepted, invited] = await Promise.all([
        accept(invitee.accessToken, token),
        app.api('POST', `/workspaces/${t.id}/invitations`, {
          token: t.owner.accessToken,
          body: { email, role: 'MEMBER' },
        }),
      ]);
      // Either order is fine: joined, then "already a member"; or replaced, then the old link is refused.
      expect([accepted.status, invited.status], `${accepted.text} ${invited.text}`).toEqual(
        accepted.status === 200 ? [200, 409] : [400, 201],
      );
    }
  });
});

describe('PATCH and DELETE /workspaces/{workspaceId}/members/{userId}', () => {
  it("lets the OWNER change a member's role (200, the member with the new role)", async () => {
    const t = await team('role');
    const m = await inviteAndJoin(app, t.owner.accessToken, t.id, 'MEMBER');
    const res = await app.api('PATCH', `/workspaces/${t.id}/members/${m.userId}`, {
      token: t.owner.accessToken,
      body: { role: 'ADMIN' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ userId: m.userId, email: m.email, role: 'ADMIN' });
    expect(await roleIn(app, t.id, m.userId)).toBe('ADMIN');
  });

  it('lets an ADMIN move a MEMBER to VIEWER', async () => {
    const t = await team('role-admin');
    const admin = await inviteAndJoin(app, t.owner.accessToken, t.id, 'ADMIN');
    const m = await inviteAndJoin(app, t.owner.accessToken, t.id, 'MEMBER');
    const res = await app.api('PATCH', `/workspaces/${t.id}/members/${m.userId}`, {
      token: admin.accessToken,
      body: { role: 'VIEWER' },
    });
    expect(res.status).toBe(200);
    expect(await roleIn(app, t.id, m.userId)).toBe('VIEWER');
  });

  it('refuses an unknown role with 400 BAD_REQUEST', async () => {
    const t = await team('role-bad');
    const m = await inviteAndJoin(app, t.owner.accessToken, t.id, 'MEMBER');
    expectError(
      await app.api('PATCH', `/workspaces/${t.id}/members/${m.userId}`, {
        token: t.owner.accessToken,
        body: { role: 'GOD' },
      }),
      400,
      'BAD_REQUEST',
    );
    expect(await roleIn(app, t.id, m.userId)).toBe('MEMBER');
  });

  it('refuses to demote the last OWNER with 409 CONFLICT', async () => {
    const t = await team('last-owner');
    expectError(
      await app.api('PATCH', `/workspaces/${t.id}/members/${t.owner.userId}`, {
        token: t.owner.accessToken,
        body: { role: 'ADMIN' },
      }),
      409,
      'CONFLICT',
    );
    expect(await roleIn(app, t.id, t.owner.userId)).toBe('OWNER');
  });

  it('refuses to remove the last OWNER with 409 CONFLICT', async () => {
    const t = await team('last-owner-rm');
    expectError(
      await app.api('DELETE', `/workspaces/${t.id}/members/${t.owner.userId}`, { token: t.owner.accessToken }),
      409,
      'CONFLICT',
    );
    expect(await roleIn(app, t.id, t.owner.userId)).toBe('OWNER');
  });

  it('lets an OWNER demote or remove another OWNER while one OWNER remains', async () => {
    const t = await team('two-owners');
    const a = await inviteAndJoin(app, t.owner.accessToken, t.id, 'OWNER');
    const b = await inviteAndJoin(app, t.owner.accessToken, t.id, 'OWNER');
    expect(
      (
        await app.api('PATCH', `/workspaces/${t.id}/members/${a.userId}`, {
          token: t.owner.accessToken,
          body: { role: 'MEMBER' },
        })
      ).status,
    ).toBe(200);
    expect(
      (await app.api('DELETE', `/workspaces/${t.id}/members/${b.userId}`, { token: t.owner.accessToken })).status,
    ).toBe(200);
    expect(await roleIn(app, t.id, a.userId)).toBe('MEMBER');
    expect(await roleIn(app, t.id, b.userId)).toBeUndefined();
    // Now the original owner is the last one again.
    expectError(
      await app.api('PATCH', `/workspaces/${t.id}/members/${t.owner.userId}`, {
        token: t.owner.accessToken,
        body: { role: 'VIEWER' },
      }),
      409,
      'CONFLICT',
    );
  });

  it('keeps one OWNER when two owners demote each other at the same time', async () => {
    const t = await team('owner-race');
    const other = await inviteAndJoin(app, t.owner.accessToken, t.id, 'OWNER');
    const results = await Promise.all([
      app.api('PATCH', `/workspaces/${t.id}/members/${other.userId}`, {
        token: t.owner.accessToken,
        body: { role: 'ADMIN' },
      }),
      app.api('PATCH', `/workspaces/${t.id}/members/${t.owner.userId}`, {
        token: other.accessToken,
        body: { role: 'ADMIN' },
      }),
    ]);
    const owners = await app.deps.db
      .selectFrom('workspace_members')
      .select('user_id')
      .where('workspace_id', '=', t.id)
      .where('role', '=', 'OWNER')
      .execute();
    expect(owners).toHaveLength(1);
    expect(results.map((r) => r.status).filter((s) => s === 200)).toHaveLength(1);
  });

  it('answers role changes running alongside an admin transfer of ownership without a 5xx (30 trials)', async () => {
    const t = await team('transfer-race');
    const member = await inviteAndJoin(app, t.owner.accessToken, t.id, 'MEMBER');
    const admin = await adminToken();
    for (let i = 0; i < 30; i++) {
      const [changed, transferred] = await Promise.all([
        app.api('PATCH', `/workspaces/${t.id}/members/${member.userId}`, {
          token: t.owner.accessToken,
          body: { role: i % 2 ? 'MEMBER' : 'VIEWER' },
        }),
        transferOwner(admin, t.id, t.owner.userId),
      ]);
      expect([changed.status, transferred.status], `${changed.text} ${transferred.text}`).toEqual([200, 200]);
    }
  });

  it("refuses an ADMIN who changes an OWNER's role with 403 PERMISSION_DENIED", async () => {
    const t = await team('admin-vs-owner');
    const coOwner = await inviteAndJoin(app, t.owner.accessToken, t.id, 'OWNER');
    const admin = await inviteAndJoin(app, t.owner.accessToken, t.id, 'ADMIN');
    expectError(
      await app.api('PATCH', `/workspaces/${t.id}/members/${coOwner.userId}`, {
        token: admin.accessToken,
        body: { role: 'MEMBER' },
      }),
      403,
      'PERMISSION_DENIED',
    );
    expect(await roleIn(app, t.id, coOwner.userId)).toBe('OWNER');
  });

  it('refuses an ADMIN who makes someone (or themselves) OWNER with 403 PERMISSION_DENIED', async () => {
    const t = await team('admin-makes-owner');
    const admin = await inviteAndJoin(app, t.owner.accessToken, t.id, 'ADMIN');
    const m = await inviteAndJoin(app, t.owner.accessToken, t.id, 'MEMBER');
    expectError(
      await app.api('PATCH', `/workspaces/${t.id}/members/${m.userId}`, {
        token: admin.accessToken,
        body: { role: 'OWNER' },
      }),
      403,
      'PERMISSION_DENIED',
    );
    expectError(
      await app.api('PATCH', `/workspaces/${t.id}/members/${admin.userId}`, {
        token: admin.accessToken,
        body: { role: 'OWNER' },
      }),
      403,
      'PERMISSION_DENIED',
    );
    expect(await roleIn(app, t.id, m.userId)).toBe('MEMBER');
    expect(await roleIn(app, t.id, admin.userId)).toBe('ADMIN');
  });

  it('refuses an ADMIN who removes an OWNER with 403 PERMISSION_DENIED', async () => {
    const t = await team('admin-rm-owner');
    await inviteAndJoin(app, t.owner.accessToken, t.id, 'OWNER');
    const admin = await inviteAndJoin(app, t.owner.accessToken, t.id, 'ADMIN');
    expectError(
      await app.api('DELETE', `/workspaces/${t.id}/members/${t.owner.userId}`, { token: admin.accessToken }),
      403,
      'PERMISSION_DENIED',
    );
    expect(await roleIn(app, t.id, t.owner.userId)).toBe('OWNER');
  });

  it('answers 404 NOT_FOUND for a user who is not a member (unknown id, or a real user of another workspace)', async () => {
    const t = await team('unknown-member');
    const stranger = await registerAndLogin(app.api, { prefix: 'stranger' });
    for (const userId of [crypto.randomUUID(), stranger.userId]) {
      expectError(
        await app.api('PATCH', `/workspaces/${t.id}/members/${userId}`, {
          token: t.owner.accessToken,
          body: { role: 'VIEWER' },
        }),
        404,
        'NOT_FOUND',
      );
      expectError(
        await app.api('DELETE', `/workspaces/${t.id}/members/${userId}`, { token: t.owner.accessToken }),
        404,
        'NOT_FOUND',
      );
    }
    expect(await roleIn(app, stranger.workspaceId, stranger.userId)).toBe('OWNER');
  });

  it('removes a member (200): they lose access on their very next request (404) and the workspace leaves their list', async () => {
    const t = await team('remove');
    const m = await inviteAndJoin(app, t.owner.accessToken, t.id, 'MEMBER');
    expect((await app.api('GET', `/workspaces/${t.id}`, { token: m.accessToken })).status).toBe(200);
    const res = await app.api('DELETE', `/workspaces/${t.id}/members/${m.userId}`, { token: t.owner.accessToken });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ message: expect.any(String) });
    const after = await app.api('GET', `/workspaces/${t.id}`, { token: m.accessToken });
    expectError(after, 404, 'NOT_FOUND');
    expect(after.text).not.toContain(t.name);
    expectError(await app.api('GET', `/workspaces/${t.id}/members`, { token: m.accessToken }), 404, 'NOT_FOUND');
    const list = await app.api('GET', '/workspaces', { token: m.accessToken });
    expect(list.body.items.map((w: { id: string }) => w.id)).not.toContain(t.id);
    expect((await members(t.owner.accessToken, t.id)).map((x) => x.userId)).not.toContain(m.userId);
  });

  it('lets a removed member be invited again and rejoin', async () => {
    const t = await team('rejoin');
    const m = await inviteAndJoin(app, t.owner.accessToken, t.id, 'MEMBER');
    expect(
      (await app.api('DELETE', `/workspaces/${t.id}/members/${m.userId}`, { token: t.owner.accessToken })).status,
    ).toBe(200);
    const { token } = await invite(app, t.owner.accessToken, t.id, m.email, 'VIEWER');
    expect((await accept(m.accessToken, token)).status).toBe(200);
    expect(await roleIn(app, t.id, m.userId)).toBe('VIEWER');
  });
});
