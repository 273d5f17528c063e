import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, TEST_DEMO_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { clockPast } from '../helpers/clock.js';
import {
  STRONG_PASSWORD,
  expectError,
  login,
  registerAndLogin,
  uniqueEmail,
  type ApiResponse,
  type Session,
  PAGE_KEYS,
} from '../helpers/http.js';
import { latestMailToken } from '../helpers/mail.js';
import {
  createWorkspace,
  invite,
  inviteAndJoin,
  registerAs,
  requestIdFor,
  upgradeWorkspace,
} from '../workspaces/helpers.js';

let app: TestApp;
/** REFRESH_TOKEN_REUSE_GRACE_SECONDS=0: the second use of a rotated refresh token is reuse. */
let strict: TestApp;
let admin: Session;
let demo: Session;

/** Every password and token this file sends, checked against the stored audit rows at the end. */
const sentSecrets = new Set<string>([STRONG_PASSWORD, TEST_ADMIN.password, TEST_DEMO_ADMIN.password]);
const keep = (s: Session) => {
  sentSecrets.add(s.accessToken);
  sentSecrets.add(s.refreshToken);
  return s;
};

beforeAll(async () => {
  [app, strict] = await Promise.all([
    startTestApp({ RATE_LIMIT_ENABLED: 'false' }),
    startTestApp({ RATE_LIMIT_ENABLED: 'false', REFRESH_TOKEN_REUSE_GRACE_SECONDS: '0' }),
  ]);
  admin = keep(await login(app.api, TEST_ADMIN.email, TEST_ADMIN.password));
  demo = keep(await login(app.api, TEST_DEMO_ADMIN.email, TEST_DEMO_ADMIN.password));
});
afterAll(async () => {
  await Promise.all([app?.close(), strict?.close()]);
});

interface Entry {
  id: string;
  action: string;
  actor: { id: string | null; email: string | null } | null;
  targetType: string | null;
  targetId: string | null;
  workspaceId: string | null;
  requestId: string | null;
  ip: string | null;
  metadata: Record<string, unknown>;
  createdAt: string;
}

const tag = () => crypto.randomBytes(4).toString('hex');
const user = async (prefix: string) => keep(await registerAndLogin(app.api, { prefix }));

/** Sends a request with a fresh X-Request-Id; answers the response, that id and the time just before. */
async function traced(
  method: string,
  path: string,
  opts: { token?: string; body?: unknown } = {},
  target: TestApp = app,
) {
  const rid = requestIdFor('audit');
  const before = Date.now();
  const res = await target.api(method, path, { ...opts, headers: { 'x-request-id': rid } });
  expect(res.headers.get('x-request-id')).toBe(rid);
  return { res, rid, before };
}

/** The entry of `action` caused by request `rid`, read through GET /admin/audit-logs (exactly one). */
async function entryOf(action: string, rid: string, before: number): Promise<Entry> {
  const from = new Date(before - 1000).toISOString();
  const res = await app.api(
    'GET',
    `/admin/audit-logs?action=${encodeURIComponent(action)}&from=${encodeURIComponent(from)}&limit=100`,
    { token: admin.accessToken },
  );
  expect(res.status, res.text).toBe(200);
  const matches = (res.body.items as Entry[]).filter((e) => e.requestId === rid);
  expect(matches, `one ${action} entry for request ${rid}`).toHaveLength(1);
  return matches[0];
}

const LOOPBACK = /^(::ffff:)?127\.0\.0\.1$|^::1$/;

/** The common part of every entry: request id, ip, createdAt within the request, no secret-ish metadata key. */
function expectWellFormed(entry: Entry, rid: string, before: number) {
  expect(Object.keys(entry).sort()).toEqual([
    'action',
    'actor',
    'createdAt',
    'id',
    'ip',
    'metadata',
    'requestId',
    'targetId',
    'targetType',
    'workspaceId',
  ]);
  expect(entry.requestId).toBe(rid);
  expect(entry.ip).toMatch(LOOPBACK);
  const at = Date.parse(entry.createdAt);
  expect(at).toBeGreaterThanOrEqual(before - 1000);
  expect(at).toBeLessThanOrEqual(Date.now() + 1000);
  for (const key of Object.keys(entry.metadata)) expect(key).not.toMatch(/pass|token|secret|key|hash/i);
}

/** Checks the entry of `action` caused by `call`: actor, target, workspace and the common part. */
async function expectAudited(
  call: { res: ApiResponse; rid: string; before: number },
  action: string,
  want: {
    actor: Entry['actor'];
    targetType: string | null;
    targetId: string | null;
    workspaceId: string | null;
    metadata?: Record<string, unknown>;
  },
) {
  expect(call.res.status, call.res.text.slice(0, 300)).toBeLessThan(500);
  const entry = await entryOf(action, call.rid, call.before);
  expectWellFormed(entry, call.rid, call.before);
  expect(entry).toMatchObject({
    action,
    targetType: want.targetType,
    targetId: want.targetId,
    workspaceId: want.workspaceId,
  });
  if (want.metadata) expect(entry.metadata).toMatchObject(want.metadata);
  expect(entry.actor, 'actor').toEqual(want.actor);
  return entry;
}

const actorOf = (s: Session) => ({ id: s.userId, email: s.email });
const adminActor = () => ({ id: admin.userId, email: TEST_ADMIN.email });
const rowsWithRequestId = (rid: string) =>
  app.deps.db.selectFrom('audit_logs').select(['action']).where('request_id', '=', rid).execute();

/** A team workspace of a fresh owner. */
async function team(label: string) {
  const owner = await user(`${label}-owner`);
  const id = await createWorkspace(app, owner.accessToken, `${label} ${tag()}`);
  return { owner, id };
}

// ---------------------------------------------------------------- one entry per audited action

describe('audit entries of workspace and member changes', () => {
  it('workspace.created: actor the creator, target and workspace the new one, metadata the name', async () => {
    const owner = await user('aud-create');
    const name = `Audited ${tag()}`;
    const call = await traced('POST', '/workspaces', { token: owner.accessToken, body: { name } });
    expect(call.res.status).toBe(201);
    const id = call.res.body.id;
    await expectAudited(call, 'workspace.created', {
      actor: actorOf(owner),
      targetType: 'workspace',
      targetId: id,
      workspaceId: id,
      metadata: { name },
    });
  });

  it('workspace.created by the platform admin: actor the admin, metadata the owner id', async () => {
    const owner = await user('aud-admin-create');
    const call = await traced('POST', '/admin/workspaces', {
      token: admin.accessToken,
      body: { name: `Adm ${tag()}`, ownerUserId: owner.userId },
    });
    expect(call.res.status).toBe(201);
    const id = call.res.body.id;
    await expectAudited(call, 'workspace.created', {
      actor: adminActor(),
      targetType: 'workspace',
      targetId: id,
      workspaceId: id,
      metadata: { ownerUserId: owner.userId },
    });
  });

  it('workspace.updated: a rename by the owner', async () => {
    const t = await team('aud-rename');
    const name = `Renamed ${tag()}`;
    const call = await traced('PATCH', `/workspaces/${t.id}`, { token: t.owner.accessToken, body: { name } });
    expect(call.res.status).toBe(200);
    await expectAudited(call, 'workspace.updated', {
      actor: actorOf(t.owner),
      targetType: 'workspace',
      targetId: t.id,
      workspaceId: t.id,
      metadata: { name },
    });
  });

  it('member.invited: target the invitation, metadata e-mail and role, never the token', async () => {
    const t = await team('aud-invite');
    const email = uniqueEmail('aud-invitee');
    const call = await traced('POST', `/workspaces/${t.id}/invitations`, {
      token: t.owner.accessToken,
      body: { email, role: 'ADMIN' },
    });
    expect(call.res.status).toBe(201);
    const token = await latestMailToken(app, email, 'workspace-invitation');
    sentSecrets.add(token);
    const entry = await expectAudited(call, 'member.invited', {
      actor: actorOf(t.owner),
      targetType: 'invitation',
      targetId: call.res.body.id,
      workspaceId: t.id,
      metadata: { email, role: 'ADMIN' },
    });
    expect(JSON.stringify(entry)).not.toContain(token);
    expect(JSON.stringify(entry)).not.toContain(crypto.createHash('sha256').update(token).digest('hex'));
  });

  it('member.joined: actor the new member, target their user id, metadata role and invitation id', async () => {
    const t = await team('aud-join');
    const email = uniqueEmail('aud-joiner');
    const joiner = keep(await registerAs(app, email));
    const { invitation, token } = await invite(app, t.owner.accessToken, t.id, email, 'VIEWER');
    sentSecrets.add(token);
    const call = await traced('POST', '/invitations/accept', { token: joiner.accessToken, body: { token } });
    expect(call.res.status).toBe(200);
    await expectAudited(call, 'member.joined', {
      actor: actorOf(joiner),
      targetType: 'member',
      targetId: joiner.userId,
      workspaceId: t.id,
      metadata: { role: 'VIEWER', invitationId: invitation.id },
    });
  });

  it('member.role_changed: metadata from and to', async () => {
    const t = await team('aud-role');
    const m = keep(await inviteAndJoin(app, t.owner.accessToken, t.id, 'MEMBER'));
    const call = await traced('PATCH', `/workspaces/${t.id}/members/${m.userId}`, {
      token: t.owner.accessToken,
      body: { role: 'ADMIN' },
    });
    expect(call.res.status).toBe(200);
    await expectAudited(call, 'member.role_changed', {
      actor: actorOf(t.owner),
      targetType: 'member',
      targetId: m.userId,
      workspaceId: t.id,
      metadata: { from: 'MEMBER', to: 'ADMIN' },
    });
  });

  it('member.removed: metadata the role the member had', async () => {
    const t = await team('aud-remove');
    const m = keep(await inviteAndJoin(app, t.owner.accessToken, t.id, 'VIEWER'));
    const call = await traced('DELETE', `/workspaces/${t.id}/members/${m.userId}`, { token: t.owner.accessToken });
    expect(call.res.status).toBe(200);
    await expectAudited(call, 'member.removed', {
      actor: actorOf(t.owner),
      targetType: 'member',
      targetId: m.userId,
      workspaceId: t.id,
      metadata: { role: 'VIEWER' },
    });
  });
});

describe('audit entries of platform administration', () => {
  it('user.suspended and user.activated: actor the admin, target the user, no workspace', async () => {
    const u = await user('aud-susp');
    const suspend = await traced('POST', `/admin/users/${u.userId}/suspend`, { token: admin.accessToken });
    expect(suspend.res.status).toBe(200);
    await expectAudited(suspend, 'user.suspended', {
      actor: adminActor(),
      targetType: 'user',
      targetId: u.userId,
      workspaceId: null,
      metadata: { from: 'ACTIVE', to: 'SUSPENDED' },
    });
    const activate = await traced('POST', `/admin/users/${u.userId}/activate`, { token: admin.accessToken });
    expect(activate.res.status).toBe(200);
    await expectAudited(activate, 'user.activated', {
      actor: adminActor(),
      targetType: 'user',
      targetId: u.userId,
      workspaceId: null,
      metadata: { from: 'SUSPENDED', to: 'ACTIVE' },
    });
  });

  it('user.updated: metadata the new name and the platform role change', async () => {
    const u = await user('aud-upd');
    const call = await traced('PATCH', `/admin/users/${u.userId}`, {
      token: admin.accessToken,
      body: { name: 'Audited Name', platformRole: 'DEMO_ADMIN' },
    });
    expect(call.res.status).toBe(200);
    await expectAudited(call, 'user.updated', {
      actor: adminActor(),
      targetType: 'user',
      targetId: u.userId,
      workspaceId: null,
      metadata: { name: 'Audited Name', platformRoleFrom: 'USER', platformRoleTo: 'DEMO_ADMIN' },
    });
  });

  it.each([
    ['suspend', 'workspace.suspended', [], { from: 'ACTIVE', to: 'SUSPENDED' }],
    ['activate', 'workspace.activated', ['suspend'], { from: 'SUSPENDED', to: 'ACTIVE' }],
    ['archive', 'workspace.archived', [], { from: 'ACTIVE', to: 'ARCHIVED' }],
    ['restore', 'workspace.restored', ['archive'], { from: 'ARCHIVED', to: 'ACTIVE' }],
  ] as const)(
    'POST /admin/workspaces/{id}/%s writes %s with metadata from and to',
    async (move, action, setup, metadata) => {
      const t = await team(`aud-${move}`);
      for (const step of setup)
        expect((await app.api('POST', `/admin/workspaces/${t.id}/${step}`, { token: admin.accessToken })).status).toBe(
          200,
        );
      const call = await traced('POST', `/admin/workspaces/${t.id}/${move}`, { token: admin.accessToken });
      expect(call.res.status).toBe(200);
      await expectAudited(call, action, {
        actor: adminActor(),
        targetType: 'workspace',
        targetId: t.id,
        workspaceId: t.id,
        metadata,
      });
    },
  );

  it('workspace.deleted', async () => {
    const t = await team('aud-delete');
    const call = await traced('DELETE', `/admin/workspaces/${t.id}`, { token: admin.accessToken });
    expect(call.res.status).toBe(200);
    await expectAudited(call, 'workspace.deleted', {
      actor: adminActor(),
      targetType: 'workspace',
      targetId: t.id,
      workspaceId: t.id,
    });
  });

  it('workspace.owner_transferred: metadata the new owner and the previous owners', async () => {
    const t = await team('aud-transfer');
    const next = await user('aud-next-owner');
    const call = await traced('POST', `/admin/workspaces/${t.id}/transfer-owner`, {
      token: admin.accessToken,
      body: { newOwnerUserId: next.userId },
    });
    expect(call.res.status).toBe(200);
    await expectAudited(call, 'workspace.owner_transferred', {
      actor: adminActor(),
      targetType: 'workspace',
      targetId: t.id,
      workspaceId: t.id,
      metadata: { newOwnerUserId: next.userId, previousOwnerUserIds: [t.owner.userId] },
    });
  });
});

describe('audit entries of security events', () => {
  it('auth.login_failed for a wrong password: no actor, target the account, not the password tried', async () => {
    const u = await user('aud-wrongpw');
    const wrong = `Wrong-pass-${tag()}1`;
    sentSecrets.add(wrong);
    const call = await traced('POST', '/auth/login', { body: { email: u.email, password: wrong } });
    expectError(call.res, 401, 'INVALID_CREDENTIALS');
    const entry = await expectAudited(call, 'auth.login_failed', {
      actor: null,
      targetType: 'user',
      targetId: u.userId,
      workspaceId: null,
    });
    expect(JSON.stringify(entry)).not.toContain(wrong);
  });

  it('auth.login_failed for an unknown e-mail: no actor and no target', async () => {
    const email = uniqueEmail('aud-nobody');
    const call = await traced('POST', '/auth/login', { body: { email, password: `Guess-${tag()}9` } });
    expectError(call.res, 401, 'INVALID_CREDENTIALS');
    await expectAudited(call, 'auth.login_failed', {
      actor: null,
      targetType: 'user',
      targetId: null,
      workspaceId: null,
    });
  });

  it('auth.password_reset through forgot-password and the mailed token: target the user, no token or password in the entry', async () => {
    const u = await user('aud-reset');
    expect((await app.api('POST', '/auth/forgot-password', { body: { email: u.email } })).status).toBe(200);
    const token = await latestMailToken(app, u.email, 'password-reset');
    const newPassword = `Reset-pass-${tag()}7`;
    sentSecrets.add(token);
    sentSecrets.add(newPassword);
    const call = await traced('POST', '/auth/reset-password', { body: { token, newPassword } });
    expect(call.res.status).toBe(200);
    const entry = await expectAudited(call, 'auth.password_reset', {
      actor: expect.objectContaining({ id: u.userId }),
      targetType: 'user',
      targetId: u.userId,
      workspaceId: null,
    });
    expect(JSON.stringify(entry)).not.toContain(token);
    expect(JSON.stringify(entry)).not.toContain(newPassword);
  });

  it('auth.session_reuse_detected when a rotated refresh token comes back (grace 0): target the user', async () => {
    const s = keep(await registerAndLogin(strict.api, { prefix: 'aud-reuse' }));
    const first = await strict.api('POST', '/auth/refresh', { body: { refreshToken: s.refreshToken } });
    expect(first.status).toBe(200);
    sentSecrets.add(first.body.refreshToken);
    const call = await traced('POST', '/auth/refresh', { body: { refreshToken: s.refreshToken } }, strict);
    expectError(call.res, 401, 'UNAUTHORIZED');
    const entry = await expectAudited(call, 'auth.session_reuse_detected', {
      actor: null,
      targetType: 'user',
      targetId: s.userId,
      workspaceId: null,
    });
    expect(JSON.stringify(entry)).not.toContain(s.refreshToken);
  });
});

// ---------------------------------------------------------------- reading the log

describe('GET /admin/audit-logs', () => {
  /** A user with two audited changes of one workspace: workspace.created then workspace.updated. */
  let actor: Session;
  let workspaceId: string;
  let createdAt: number;
  let updateAt: { before: number; after: number };
  beforeAll(async () => {
    actor = await user('aud-filter');
    createdAt = Date.now();
    workspaceId = await createWorkspace(app, actor.accessToken, `Filtered ${tag()}`);
    // Each boundary strictly after the entries before it and before those after it (ISO times have ms).
    await clockPast();
    const before = Date.now();
    expect(
      (
        await app.api('PATCH', `/workspaces/${workspaceId}`, {
          token: actor.accessToken,
          body: { name: `Filtered again ${tag()}` },
        })
      ).status,
    ).toBe(200);
    await clockPast();
    updateAt = { before, after: Date.now() };
  });

  const list = (query: string, token = admin.accessToken) => app.api('GET', `/admin/audit-logs${query}`, { token });
  const actions = (res: ApiResponse) => (res.body.items as Entry[]).map((e) => e.action);

  it('answers a page { items, page, limit, total, totalPages }, newest first', async () => {
    const res = await list('');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(PAGE_KEYS);
    expect(res.body).toMatchObject({ page: 1, limit: 20 });
    expect(res.body.totalPages).toBe(Math.ceil(res.body.total / 20));
    const times = (res.body.items as Entry[]).map((e) => Date.parse(e.createdAt));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it('filters by actorId', async () => {
    const res = await list(`?actorId=${actor.userId}`);
    expect(res.status).toBe(200);
    expect(res.body.items.length).toBeGreaterThanOrEqual(2);
    for (const e of res.body.items as Entry[]) expect(e.actor?.id).toBe(actor.userId);
    expect(actions(res)).toEqual(expect.arrayContaining(['workspace.created', 'workspace.updated']));
  });

  it('filters by action', async () => {
    const res = await list(`?action=workspace.updated&actorId=${actor.userId}`);
    expect(res.body.total).toBe(1);
    expect(res.body.items[0]).toMatchObject({ action: 'workspace.updated', workspaceId });
    const all = await list('?action=workspace.created&limit=50');
    for (const e of all.body.items as Entry[]) expect(e.action).toBe('workspace.created');
  });

  it('filters by workspaceId', async () => {
    const res = await list(`?workspaceId=${workspaceId}`);
    expect(res.body.total).toBe(2);
    for (const e of res.body.items as Entry[]) expect(e.workspaceId).toBe(workspaceId);
    expect(actions(res)).toEqual(['workspace.updated', 'workspace.created']);
  });

  it('filters by from (inclusive) and to (exclusive) ISO times', async () => {
    const iso = (ms: number) => encodeURIComponent(new Date(ms).toISOString());
    const within = await list(`?workspaceId=${workspaceId}&from=${iso(updateAt.before)}&to=${iso(updateAt.after)}`);
    expect(actions(within)).toEqual(['workspace.updated']);
    const beforeUpdate = await list(`?workspaceId=${workspaceId}&to=${iso(updateAt.before)}`);
    expect(actions(beforeUpdate)).toEqual(['workspace.created']);
    const afterUpdate = await list(`?workspaceId=${workspaceId}&from=${iso(updateAt.after)}`);
    expect(actions(afterUpdate)).toEqual([]);
    const sinceStart = await list(`?workspaceId=${workspaceId}&from=${iso(createdAt - 1000)}`);
    expect(sinceStart.body.total).toBe(2);
    // An offset other than Z is understood too.
    const offset = new Date(updateAt.before).toISOString().replace('Z', '+00:00');
    expect(actions(await list(`?workspaceId=${workspaceId}&from=${encodeURIComponent(offset)}`))).toEqual([
      'workspace.updated',
    ]);
  });

  it('pages with ?page= and ?limit=', async () => {
    const first = await list(`?workspaceId=${workspaceId}&limit=1&page=1`);
    const second = await list(`?workspaceId=${workspaceId}&limit=1&page=2`);
    const third = await list(`?workspaceId=${workspaceId}&limit=1&page=3`);
    expect(first.body).toMatchObject({ page: 1, limit: 1, total: 2, totalPages: 2 });
    expect(actions(first)).toEqual(['workspace.updated']);
    expect(actions(second)).toEqual(['workspace.created']);
    expect(third.body.items).toEqual([]);
  });

  it.each([
    ['?from=not-a-date'],
    ['?to=yesterday'],
    ['?actorId=abc'],
    ['?workspaceId=abc'],
    ['?limit=101'],
    ['?page=0'],
  ])('refuses %s with 400 BAD_REQUEST', async (q) => {
    expectError(await list(q), 400, 'BAD_REQUEST');
  });

  it('refuses a normal user with 403 FORBIDDEN and an anonymous caller with 401 UNAUTHORIZED', async () => {
    expectError(await list('', actor.accessToken), 403, 'FORBIDDEN');
    expectError(await app.api('GET', '/admin/audit-logs'), 401, 'UNAUTHORIZED');
  });

  it('answers the demo admin 200 with the same entries', async () => {
    const res = await list(`?workspaceId=${workspaceId}`, demo.accessToken);
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(2);
  });
});

describe('GET /workspaces/{workspaceId}/audit-logs', () => {
  let owner: Session;
  let wsAdmin: Session;
  let member: Session;
  let viewer: Session;
  let workspaceId: string;
  let otherWorkspaceId: string;
  beforeAll(async () => {
    const t = await team('aud-ws');
    owner = t.owner;
    workspaceId = t.id;
    // Three members besides the owner: more than Lite's 3 (this adds a billing.plan_changed entry).
    await upgradeWorkspace(app, owner.accessToken, workspaceId);
    wsAdmin = keep(await inviteAndJoin(app, owner.accessToken, workspaceId, 'ADMIN'));
    member = keep(await inviteAndJoin(app, owner.accessToken, workspaceId, 'MEMBER'));
    viewer = keep(await inviteAndJoin(app, owner.accessToken, workspaceId, 'VIEWER'));
    // Another workspace of the same owner, with entries of its own.
    otherWorkspaceId = await createWorkspace(app, owner.accessToken, `Other ${tag()}`);
    expect(
      (
        await app.api('PATCH', `/workspaces/${otherWorkspaceId}`, {
          token: owner.accessToken,
          body: { name: `Other renamed ${tag()}` },
        })
      ).status,
    ).toBe(200);
  });

  it.each(['OWNER', 'ADMIN'] as const)('answers the %s 200 with only that workspace’s entries', async (role) => {
    const token = role === 'OWNER' ? owner.accessToken : wsAdmin.accessToken;
    const res = await app.api('GET', `/workspaces/${workspaceId}/audit-logs?limit=100`, { token });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(PAGE_KEYS);
    const items = res.body.items as Entry[];
    for (const e of items) expect(e.workspaceId).toBe(workspaceId);
    // created + the upgrade + 3 invitations + 3 joins.
    expect(res.body.total).toBe(8);
    expect(items.filter((e) => e.action === 'billing.plan_changed')).toHaveLength(1);
    expect(items.filter((e) => e.action === 'member.invited')).toHaveLength(3);
    expect(items.filter((e) => e.action === 'member.joined')).toHaveLength(3);
    const other = await app.deps.db
      .selectFrom('audit_logs')
      .select('id')
      .where('workspace_id', '=', otherWorkspaceId)
      .execute();
    expect(other.length).toBe(2);
    const shown = new Set(items.map((e) => e.id));
    expect(other.filter((o) => shown.has(o.id))).toEqual([]);
  });

  it('ignores a workspaceId of another workspace in the query string', async () => {
    const res = await app.api('GET', `/workspaces/${workspaceId}/audit-logs?workspaceId=${otherWorkspaceId}`, {
      token: owner.accessToken,
    });
    expect(res.status).toBe(200);
    for (const e of res.body.items as Entry[]) expect(e.workspaceId).toBe(workspaceId);
  });

  it('applies the action filter and pagination', async () => {
    const res = await app.api('GET', `/workspaces/${workspaceId}/audit-logs?action=member.joined&limit=2`, {
      token: owner.accessToken,
    });
    expect(res.body).toMatchObject({ total: 3, totalPages: 2, limit: 2 });
    for (const e of res.body.items as Entry[]) expect(e.action).toBe('member.joined');
  });

  it.each(['MEMBER', 'VIEWER'] as const)('refuses a %s with 403 PERMISSION_DENIED', async (role) => {
    const token = role === 'MEMBER' ? member.accessToken : viewer.accessToken;
    expectError(await app.api('GET', `/workspaces/${workspaceId}/audit-logs`, { token }), 403, 'PERMISSION_DENIED');
  });

  it('answers a non-member 404 NOT_FOUND, even a platform admin (who reads through /admin/audit-logs)', async () => {
    const stranger = await user('aud-stranger');
    expectError(
      await app.api('GET', `/workspaces/${workspaceId}/audit-logs`, { token: stranger.accessToken }),
      404,
      'NOT_FOUND',
    );
    expectError(
      await app.api('GET', `/workspaces/${workspaceId}/audit-logs`, { token: admin.accessToken }),
      404,
      'NOT_FOUND',
    );
  });
});

// ---------------------------------------------------------------- refusals and secrets

describe('refused actions write no audit entry', () => {
  it('a demo admin write (403 DEMO_READ_ONLY)', async () => {
    const u = await user('aud-demo');
    const call = await traced('POST', `/admin/users/${u.userId}/suspend`, { token: demo.accessToken });
    expectError(call.res, 403, 'DEMO_READ_ONLY');
    expect(await rowsWithRequestId(call.rid)).toEqual([]);
  });

  it('a move the state table does not allow (409 INVALID_STATE)', async () => {
    const t = await team('aud-invalid');
    const call = await traced('POST', `/admin/workspaces/${t.id}/activate`, { token: admin.accessToken });
    expectError(call.res, 409, 'INVALID_STATE');
    expect(await rowsWithRequestId(call.rid)).toEqual([]);
    const u = await user('aud-invalid-user');
    const userCall = await traced('POST', `/admin/users/${u.userId}/activate`, { token: admin.accessToken });
    expectError(userCall.res, 409, 'INVALID_STATE');
    expect(await rowsWithRequestId(userCall.rid)).toEqual([]);
  });

  it('a member without the permission (403 PERMISSION_DENIED) and the last owner demoted (409 CONFLICT)', async () => {
    const t = await team('aud-denied');
    const m = keep(await inviteAndJoin(app, t.owner.accessToken, t.id, 'MEMBER'));
    const denied = await traced('POST', `/workspaces/${t.id}/invitations`, {
      token: m.accessToken,
      body: { email: uniqueEmail('x'), role: 'MEMBER' },
    });
    expectError(denied.res, 403, 'PERMISSION_DENIED');
    expect(await rowsWithRequestId(denied.rid)).toEqual([]);
    const conflict = await traced('PATCH', `/workspaces/${t.id}/members/${t.owner.userId}`, {
      token: t.owner.accessToken,
      body: { role: 'ADMIN' },
    });
    expectError(conflict.res, 409, 'CONFLICT');
    expect(await rowsWithRequestId(conflict.rid)).toEqual([]);
  });

  it('an invitation to an existing member (409 CONFLICT) and an invalid body (400)', async () => {
    const t = await team('aud-conflict');
    const dup = await traced('POST', `/workspaces/${t.id}/invitations`, {
      token: t.owner.accessToken,
      body: { email: t.owner.email, role: 'MEMBER' },
    });
    expectError(dup.res, 409, 'CONFLICT');
    expect(await rowsWithRequestId(dup.rid)).toEqual([]);
    const bad = await traced('PATCH', `/workspaces/${t.id}`, { token: t.owner.accessToken, body: { name: '' } });
    expectError(bad.res, 400, 'BAD_REQUEST');
    expect(await rowsWithRequestId(bad.rid)).toEqual([]);
  });
});

describe('GET /demo/status', () => {
  it('answers an anonymous caller 200 with the demo settings and no e-mail address', async () => {
    const res = await app.api('GET', '/demo/status');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ demoMode: true, demoAdmin: { configured: true, readOnly: true } });
    expect(res.text).not.toContain('@');
    expect(res.text).not.toContain(TEST_DEMO_ADMIN.email.split('@')[0]);
  });
});

describe('secrets', () => {
  // Runs last in this file: every password and token sent above is known by now.
  it('no stored audit row holds a password or token this file sent', async () => {
    expect(sentSecrets.size).toBeGreaterThan(20);
    const rows = await app.deps.db.selectFrom('audit_logs').selectAll().execute();
    expect(rows.length).toBeGreaterThan(0);
    const text = JSON.stringify(rows);
    const leaked = [...sentSecrets].filter((s) => text.includes(s));
    expect(leaked.map((s) => `${s.slice(0, 4)}… (${s.length} chars)`)).toEqual([]);
  });
});
