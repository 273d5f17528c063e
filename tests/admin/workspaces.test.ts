import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, TEST_DEMO_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { STRONG_PASSWORD, expectError, login, registerAndLogin, type Session, PAGE_KEYS } from '../helpers/http.js';
import { invite, inviteAndJoin, registerAs, requestIdFor, roleIn } from '../workspaces/helpers.js';

let app: TestApp;
let admin: Session;
let demo: Session;
let plain: Session;

beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
  admin = await login(app.api, TEST_ADMIN.email, TEST_ADMIN.password);
  demo = await login(app.api, TEST_DEMO_ADMIN.email, TEST_DEMO_ADMIN.password);
  plain = await registerAndLogin(app.api, { prefix: 'plain' });
});
afterAll(() => app?.close());

const asAdmin = (method: string, path: string, body?: unknown) =>
  app.api(method, path, { token: admin.accessToken, ...(body !== undefined ? { body } : {}) });
const tag = () => crypto.randomBytes(4).toString('hex');
const idsOf = (items: Array<{ id: string }>) => items.map((i) => i.id);
const workspaceRow = (id: string) =>
  app.deps.db
    .selectFrom('workspaces')
    .select(['name', 'status', 'deleted_at', 'updated_at'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
const ownersOf = async (workspaceId: string) =>
  (
    await app.deps.db
      .selectFrom('workspace_members')
      .select('user_id')
      .where('workspace_id', '=', workspaceId)
      .where('role', '=', 'OWNER')
      .execute()
  ).map((r) => r.user_id);
const membersOf = (workspaceId: string) =>
  app.deps.db
    .selectFrom('workspace_members')
    .select(['user_id', 'role'])
    .where('workspace_id', '=', workspaceId)
    .orderBy('user_id')
    .execute();

/** A workspace created by the platform admin for a new owner. */
async function adminWorkspace(label = 'adm') {
  const owner = await registerAndLogin(app.api, { prefix: `${label}-owner` });
  const name = `${label} ${tag()}`;
  const res = await asAdmin('POST', '/admin/workspaces', { name, ownerUserId: owner.userId });
  if (res.status !== 201) throw new Error(`admin create failed: ${res.status} ${res.text}`);
  return { id: res.body.id as string, name, owner };
}

describe('GET /admin/workspaces', () => {
  it('answers a page { items, page, limit, total, totalPages }, each workspace with its owners', async () => {
    const w = await adminWorkspace('listed');
    const res = await asAdmin('GET', '/admin/workspaces');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(PAGE_KEYS);
    expect(res.body).toMatchObject({ page: 1, limit: 20 });
    expect(res.body.totalPages).toBe(Math.ceil(res.body.total / 20));
    const found = await asAdmin('GET', `/admin/workspaces?search=${encodeURIComponent(w.name)}`);
    expect(found.body.items).toEqual([
      expect.objectContaining({
        id: w.id,
        name: w.name,
        status: 'ACTIVE',
        memberCount: 1,
        owners: [{ id: w.owner.userId, email: w.owner.email, name: 'Test User' }],
      }),
    ]);
  });

  it('searches by part of the name, in any letter case, with % and _ matched literally', async () => {
    const t = tag();
    const a = await asAdmin('POST', '/admin/workspaces', { name: `Sale${t} 100%_off`, ownerUserId: plain.userId });
    const b = await asAdmin('POST', '/admin/workspaces', { name: `Sale${t} 100xyoff`, ownerUserId: plain.userId });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(
      idsOf((await asAdmin('GET', `/admin/workspaces?search=${encodeURIComponent(`SALE${t}`)}`)).body.items).sort(),
    ).toEqual([a.body.id, b.body.id].sort());
    expect(
      idsOf((await asAdmin('GET', `/admin/workspaces?search=${encodeURIComponent(`Sale${t} 100%_`)}`)).body.items),
    ).toEqual([a.body.id]);
    expect(
      idsOf((await asAdmin('GET', `/admin/workspaces?search=${encodeURIComponent(`Sale${t} 100_`)}`)).body.items),
    ).toEqual([]);
  });

  it('filters by ?status=', async () => {
    const t = tag();
    const active = await asAdmin('POST', '/admin/workspaces', { name: `Filter${t} a`, ownerUserId: plain.userId });
    const suspended = await asAdmin('POST', '/admin/workspaces', { name: `Filter${t} s`, ownerUserId: plain.userId });
    expect((await asAdmin('POST', `/admin/workspaces/${suspended.body.id}/suspend`)).status).toBe(200);
    expect(idsOf((await asAdmin('GET', `/admin/workspaces?status=SUSPENDED&search=Filter${t}`)).body.items)).toEqual([
      suspended.body.id,
    ]);
    expect(idsOf((await asAdmin('GET', `/admin/workspaces?status=ACTIVE&search=Filter${t}`)).body.items)).toEqual([
      active.body.id,
    ]);
    const all = await asAdmin('GET', '/admin/workspaces?status=SUSPENDED&limit=100');
    for (const item of all.body.items) expect(item.status).toBe('SUSPENDED');
  });

  it('pages with ?page= and ?limit=', async () => {
    const t = tag();
    const made: string[] = [];
    for (let i = 0; i < 3; i++)
      made.push(
        (await asAdmin('POST', '/admin/workspaces', { name: `Paged${t} ${i}`, ownerUserId: plain.userId })).body.id,
      );
    const first = await asAdmin('GET', `/admin/workspaces?search=Paged${t}&limit=2&page=1`);
    const second = await asAdmin('GET', `/admin/workspaces?search=Paged${t}&limit=2&page=2`);
    expect(first.body).toMatchObject({ page: 1, limit: 2, total: 3, totalPages: 2 });
    expect(second.body).toMatchObject({ page: 2, total: 3 });
    expect([...idsOf(first.body.items), ...idsOf(second.body.items)].sort()).toEqual(made.sort());
  });

  it.each([['?limit=101'], ['?page=0'], ['?status=DELETED']])('refuses %s with 400 BAD_REQUEST', async (q) => {
    expectError(await asAdmin('GET', `/admin/workspaces${q}`), 400, 'BAD_REQUEST');
  });
});

describe('POST /admin/workspaces', () => {
  it('answers 201 with the workspace; the named user is its only OWNER and sees it in GET /workspaces', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'made-for' });
    const name = `Made for ${tag()}`;
    const res = await asAdmin('POST', '/admin/workspaces', { name, ownerUserId: owner.userId });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      name,
      status: 'ACTIVE',
      isPersonal: false,
      memberCount: 1,
      owners: [{ id: owner.userId, email: owner.email }],
      members: [expect.objectContaining({ userId: owner.userId, role: 'OWNER' })],
    });
    expect(await ownersOf(res.body.id)).toEqual([owner.userId]);
    expect(await roleIn(app, res.body.id, admin.userId)).toBeUndefined();
    const mine = await app.api('GET', '/workspaces', { token: owner.accessToken });
    expect(mine.body.items).toEqual(
      expect.arrayContaining([expect.objectContaining({ id: res.body.id, role: 'OWNER' })]),
    );
  });

  it('answers an unknown owner with 404 NOT_FOUND and creates nothing', async () => {
    const name = `Orphan ${tag()}`;
    expectError(
      await asAdmin('POST', '/admin/workspaces', { name, ownerUserId: crypto.randomUUID() }),
      404,
      'NOT_FOUND',
    );
    expect(await app.deps.db.selectFrom('workspaces').select('id').where('name', '=', name).execute()).toEqual([]);
  });

  it.each([
    ['no name', { ownerUserId: '00000000-0000-4000-8000-000000000000' }],
    ['no owner', { name: 'No owner' }],
    ['a malformed owner id', { name: 'Bad owner', ownerUserId: 'abc' }],
  ])('refuses %s with 400 BAD_REQUEST', async (_label, body) => {
    expectError(await asAdmin('POST', '/admin/workspaces', body), 400, 'BAD_REQUEST');
  });
});

describe('GET and PATCH /admin/workspaces/{workspaceId}', () => {
  it('answers one workspace with its owners and members', async () => {
    const w = await adminWorkspace('detail');
    const member = await inviteAndJoin(app, w.owner.accessToken, w.id, 'MEMBER');
    const res = await asAdmin('GET', `/admin/workspaces/${w.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: w.id, name: w.name, memberCount: 2, owners: [{ id: w.owner.userId }] });
    expect(res.body.members.map((m: { userId: string; role: string }) => [m.userId, m.role]).sort()).toEqual(
      [
        [w.owner.userId, 'OWNER'],
        [member.userId, 'MEMBER'],
      ].sort(),
    );
  });

  it('answers an unknown workspace with 404 and a malformed id with 400', async () => {
    expectError(await asAdmin('GET', `/admin/workspaces/${crypto.randomUUID()}`), 404, 'NOT_FOUND');
    expectError(await asAdmin('GET', '/admin/workspaces/nope'), 400, 'BAD_REQUEST');
  });

  it('renames a workspace; its members see the new name', async () => {
    const w = await adminWorkspace('edit');
    const name = `Edited ${tag()}`;
    const res = await asAdmin('PATCH', `/admin/workspaces/${w.id}`, { name });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: w.id, name });
    expect((await app.api('GET', `/workspaces/${w.id}`, { token: w.owner.accessToken })).body.name).toBe(name);
  });

  it('refuses an empty name with 400 and an unknown workspace with 404', async () => {
    const w = await adminWorkspace('edit-bad');
    expectError(await asAdmin('PATCH', `/admin/workspaces/${w.id}`, { name: ' ' }), 400, 'BAD_REQUEST');
    expectError(
      await asAdmin('PATCH', `/admin/workspaces/${crypto.randomUUID()}`, { name: 'Ghost' }),
      404,
      'NOT_FOUND',
    );
    expect((await workspaceRow(w.id)).name).toBe(w.name);
  });
});

// ---------------------------------------------------------------- state moves

type State = 'ACTIVE' | 'SUSPENDED' | 'ARCHIVED';
type Move = 'suspend' | 'activate' | 'archive' | 'restore';

/** move x start state -> the state it leads to, or null for 409 INVALID_STATE. Written out from the documented state moves. */
const STATE_TABLE: Array<[Move, State, State | null]> = [
  ['suspend', 'ACTIVE', 'SUSPENDED'],
  ['suspend', 'SUSPENDED', null],
  ['suspend', 'ARCHIVED', null],
  ['activate', 'ACTIVE', null],
  ['activate', 'SUSPENDED', 'ACTIVE'],
  ['activate', 'ARCHIVED', null],
  ['archive', 'ACTIVE', 'ARCHIVED'],
  ['archive', 'SUSPENDED', 'ARCHIVED'],
  ['archive', 'ARCHIVED', null],
  ['restore', 'ACTIVE', null],
  ['restore', 'SUSPENDED', null],
  ['restore', 'ARCHIVED', 'ACTIVE'],
];

/** How to bring a new (ACTIVE) workspace to a start state. */
const REACH: Record<State, Move[]> = { ACTIVE: [], SUSPENDED: ['suspend'], ARCHIVED: ['archive'] };

describe('workspace state moves', () => {
  it.each(
    STATE_TABLE.map(
      ([move, from, to]) => [`${move} on ${from} → ${to ? `200 ${to}` : '409 INVALID_STATE'}`, move, from, to] as const,
    ),
  )('%s', async (_label, move, from, to) => {
    const w = await adminWorkspace(`move-${move}`);
    for (const step of REACH[from])
      expect((await asAdmin('POST', `/admin/workspaces/${w.id}/${step}`)).status).toBe(200);
    expect((await workspaceRow(w.id)).status).toBe(from);

    const res = await asAdmin('POST', `/admin/workspaces/${w.id}/${move}`);
    if (to) {
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({ id: w.id, status: to });
      expect((await workspaceRow(w.id)).status).toBe(to);
    } else {
      const err = expectError(res, 409, 'INVALID_STATE');
      expect(err.message).toContain(from);
      expect((await workspaceRow(w.id)).status).toBe(from);
    }
  });

  it('answers a move of an unknown workspace with 404 NOT_FOUND', async () => {
    for (const move of ['suspend', 'activate', 'archive', 'restore']) {
      expectError(await asAdmin('POST', `/admin/workspaces/${crypto.randomUUID()}/${move}`), 404, 'NOT_FOUND');
    }
  });

  it('refuses the members of a SUSPENDED workspace with 403 WORKSPACE_UNAVAILABLE, and lets them back in after activate', async () => {
    const w = await adminWorkspace('susp-members');
    const member = await inviteAndJoin(app, w.owner.accessToken, w.id, 'MEMBER');
    expect((await asAdmin('POST', `/admin/workspaces/${w.id}/suspend`)).status).toBe(200);
    for (const s of [w.owner, member]) {
      expectError(await app.api('GET', `/workspaces/${w.id}`, { token: s.accessToken }), 403, 'WORKSPACE_UNAVAILABLE');
      expectError(
        await app.api('GET', `/workspaces/${w.id}/members`, { token: s.accessToken }),
        403,
        'WORKSPACE_UNAVAILABLE',
      );
    }
    // The workspace is still listed for its members, with its state.
    const list = await app.api('GET', '/workspaces', { token: member.accessToken });
    expect(list.body.items).toEqual(
      expect.arrayContaining([expect.objectContaining({ id: w.id, status: 'SUSPENDED' })]),
    );

    expect((await asAdmin('POST', `/admin/workspaces/${w.id}/activate`)).status).toBe(200);
    expect((await app.api('GET', `/workspaces/${w.id}`, { token: member.accessToken })).status).toBe(200);
  });

  it('refuses an invitation to a SUSPENDED workspace from being accepted (403 WORKSPACE_UNAVAILABLE)', async () => {
    const w = await adminWorkspace('susp-invite');
    const email = `late-${tag()}@tests.local`;
    const invitee = await registerAs(app, email);
    const { token } = await invite(app, w.owner.accessToken, w.id, email, 'MEMBER');
    expect((await asAdmin('POST', `/admin/workspaces/${w.id}/suspend`)).status).toBe(200);
    expectError(
      await app.api('POST', '/invitations/accept', { token: invitee.accessToken, body: { token } }),
      403,
      'WORKSPACE_UNAVAILABLE',
    );
    expect(await roleIn(app, w.id, invitee.userId)).toBeUndefined();
  });

  it.each([
    ['suspend', 'WORKSPACE_SUSPENDED'],
    ['archive', 'WORKSPACE_ARCHIVED'],
  ] as const)(
    'after %s of the only workspace, login answers hasActiveWorkspace false and workspaceUnavailableReason %s',
    async (move, reason) => {
      const u = await registerAndLogin(app.api, { prefix: `only-${move}` });
      expect((await asAdmin('POST', `/admin/workspaces/${u.workspaceId}/${move}`)).status).toBe(200);
      const res = await app.api('POST', '/auth/login', { body: { email: u.email, password: STRONG_PASSWORD } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        hasActiveWorkspace: false,
        activeWorkspace: null,
        workspaceUnavailableReason: reason,
      });
      const me = await app.api('GET', '/auth/me', { token: res.body.accessToken });
      expect(me.body).toMatchObject({ hasActiveWorkspace: false, workspaceUnavailableReason: reason });
    },
  );
});

// ---------------------------------------------------------------- safe delete

describe('DELETE /admin/workspaces/{workspaceId}', () => {
  it('answers 200 and hides the workspace everywhere: owner list, admin list and detail, its routes; a second delete is 404', async () => {
    const w = await adminWorkspace('deleted');
    const member = await inviteAndJoin(app, w.owner.accessToken, w.id, 'ADMIN');
    const res = await asAdmin('DELETE', `/admin/workspaces/${w.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ message: expect.any(String) });

    for (const s of [w.owner, member]) {
      const mine = await app.api('GET', '/workspaces', { token: s.accessToken });
      expect(idsOf(mine.body.items)).not.toContain(w.id);
      expectError(await app.api('GET', `/workspaces/${w.id}`, { token: s.accessToken }), 404, 'NOT_FOUND');
      expectError(await app.api('GET', `/workspaces/${w.id}/members`, { token: s.accessToken }), 404, 'NOT_FOUND');
    }
    expectError(
      await app.api('PATCH', `/workspaces/${w.id}`, { token: w.owner.accessToken, body: { name: 'Back' } }),
      404,
      'NOT_FOUND',
    );
    expect(idsOf((await asAdmin('GET', `/admin/workspaces?search=${encodeURIComponent(w.name)}`)).body.items)).toEqual(
      [],
    );
    expectError(await asAdmin('GET', `/admin/workspaces/${w.id}`), 404, 'NOT_FOUND');
    expectError(await asAdmin('DELETE', `/admin/workspaces/${w.id}`), 404, 'NOT_FOUND');
    expectError(await asAdmin('POST', `/admin/workspaces/${w.id}/suspend`), 404, 'NOT_FOUND');
    expectError(
      await asAdmin('POST', `/admin/workspaces/${w.id}/transfer-owner`, { newOwnerUserId: member.userId }),
      404,
      'NOT_FOUND',
    );
    // A soft delete: the row stays, marked.
    expect((await workspaceRow(w.id)).deleted_at).not.toBeNull();
  });

  it('drops a deleted workspace from the sign-in context', async () => {
    const u = await registerAndLogin(app.api, { prefix: 'del-only' });
    expect((await asAdmin('DELETE', `/admin/workspaces/${u.workspaceId}`)).status).toBe(200);
    const res = await app.api('POST', '/auth/login', { body: { email: u.email, password: STRONG_PASSWORD } });
    expect(res.body).toMatchObject({
      hasActiveWorkspace: false,
      activeWorkspace: null,
      workspaceUnavailableReason: 'NO_WORKSPACE',
    });
  });

  it('answers an unknown workspace with 404 NOT_FOUND', async () => {
    expectError(await asAdmin('DELETE', `/admin/workspaces/${crypto.randomUUID()}`), 404, 'NOT_FOUND');
  });
});

// ---------------------------------------------------------------- transfer owner

describe('POST /admin/workspaces/{workspaceId}/transfer-owner', () => {
  it('makes a member the only OWNER and the previous owner ADMIN', async () => {
    const w = await adminWorkspace('transfer');
    const member = await inviteAndJoin(app, w.owner.accessToken, w.id, 'MEMBER');
    const res = await asAdmin('POST', `/admin/workspaces/${w.id}/transfer-owner`, { newOwnerUserId: member.userId });
    expect(res.status).toBe(200);
    expect(res.body.owners).toEqual([expect.objectContaining({ id: member.userId })]);
    expect(await ownersOf(w.id)).toEqual([member.userId]);
    expect(await roleIn(app, w.id, w.owner.userId)).toBe('ADMIN');
  });

  it('makes a user who was not a member the only OWNER; every previous owner becomes ADMIN', async () => {
    const w = await adminWorkspace('transfer-out');
    const coOwner = await inviteAndJoin(app, w.owner.accessToken, w.id, 'OWNER');
    const viewer = await inviteAndJoin(app, w.owner.accessToken, w.id, 'VIEWER');
    const newcomer = await registerAndLogin(app.api, { prefix: 'newcomer' });
    const res = await asAdmin('POST', `/admin/workspaces/${w.id}/transfer-owner`, { newOwnerUserId: newcomer.userId });
    expect(res.status).toBe(200);
    expect(await ownersOf(w.id)).toEqual([newcomer.userId]);
    expect(await roleIn(app, w.id, w.owner.userId)).toBe('ADMIN');
    expect(await roleIn(app, w.id, coOwner.userId)).toBe('ADMIN');
    expect(await roleIn(app, w.id, viewer.userId)).toBe('VIEWER');
    expect((await app.api('GET', `/workspaces/${w.id}`, { token: newcomer.accessToken })).body.role).toBe('OWNER');
  });

  it('answers an unknown workspace or an unknown user with 404 NOT_FOUND and changes nothing', async () => {
    const w = await adminWorkspace('transfer-404');
    expectError(
      await asAdmin('POST', `/admin/workspaces/${crypto.randomUUID()}/transfer-owner`, {
        newOwnerUserId: plain.userId,
      }),
      404,
      'NOT_FOUND',
    );
    expectError(
      await asAdmin('POST', `/admin/workspaces/${w.id}/transfer-owner`, { newOwnerUserId: crypto.randomUUID() }),
      404,
      'NOT_FOUND',
    );
    expect(await ownersOf(w.id)).toEqual([w.owner.userId]);
  });

  it('refuses a missing or malformed newOwnerUserId with 400 BAD_REQUEST', async () => {
    const w = await adminWorkspace('transfer-400');
    expectError(await asAdmin('POST', `/admin/workspaces/${w.id}/transfer-owner`, {}), 400, 'BAD_REQUEST');
    expectError(
      await asAdmin('POST', `/admin/workspaces/${w.id}/transfer-owner`, { newOwnerUserId: 'x' }),
      400,
      'BAD_REQUEST',
    );
  });

  it('leaves exactly one OWNER (one of the two) when two admins transfer to two different users at the same time', async () => {
    const second = await registerAndLogin(app.api, { prefix: 'second-admin' });
    expect((await asAdmin('PATCH', `/admin/users/${second.userId}`, { platformRole: 'ADMIN' })).status).toBe(200);
    for (let round = 0; round < 3; round++) {
      const w = await adminWorkspace(`race-${round}`);
      const a = await inviteAndJoin(app, w.owner.accessToken, w.id, 'MEMBER');
      const b = await registerAndLogin(app.api, { prefix: 'race-b' });
      const [ra, rb] = await Promise.all([
        app.api('POST', `/admin/workspaces/${w.id}/transfer-owner`, {
          token: admin.accessToken,
          body: { newOwnerUserId: a.userId },
        }),
        app.api('POST', `/admin/workspaces/${w.id}/transfer-owner`, {
          token: second.accessToken,
          body: { newOwnerUserId: b.userId },
        }),
      ]);
      expect([ra.status, rb.status]).toEqual([200, 200]);
      const owners = await ownersOf(w.id);
      expect(owners).toHaveLength(1);
      expect([a.userId, b.userId]).toContain(owners[0]);
      const loser = owners[0] === a.userId ? b.userId : a.userId;
      expect(await roleIn(app, w.id, loser)).toBe('ADMIN');
      expect(await roleIn(app, w.id, w.owner.userId)).toBe('ADMIN');
    }
  });
});

// ---------------------------------------------------------------- who may call

interface AdminRoute {
  method: string;
  path: (id: string) => string;
  body?: (ctx: { newOwner: string; owner: string }) => unknown;
  write: boolean;
}

const ROUTES: Array<[string, AdminRoute]> = [
  ['GET /admin/workspaces', { method: 'GET', path: () => '/admin/workspaces', write: false }],
  ['GET /admin/workspaces/{workspaceId}', { method: 'GET', path: (id) => `/admin/workspaces/${id}`, write: false }],
  [
    'POST /admin/workspaces',
    {
      method: 'POST',
      path: () => '/admin/workspaces',
      body: (c) => ({ name: 'Refused create', ownerUserId: c.owner }),
      write: true,
    },
  ],
  [
    'PATCH /admin/workspaces/{workspaceId}',
    { method: 'PATCH', path: (id) => `/admin/workspaces/${id}`, body: () => ({ name: 'Refused rename' }), write: true },
  ],
  [
    'POST /admin/workspaces/{workspaceId}/suspend',
    { method: 'POST', path: (id) => `/admin/workspaces/${id}/suspend`, write: true },
  ],
  [
    'POST /admin/workspaces/{workspaceId}/activate',
    { method: 'POST', path: (id) => `/admin/workspaces/${id}/activate`, write: true },
  ],
  [
    'POST /admin/workspaces/{workspaceId}/archive',
    { method: 'POST', path: (id) => `/admin/workspaces/${id}/archive`, write: true },
  ],
  [
    'POST /admin/workspaces/{workspaceId}/restore',
    { method: 'POST', path: (id) => `/admin/workspaces/${id}/restore`, write: true },
  ],
  [
    'POST /admin/workspaces/{workspaceId}/transfer-owner',
    {
      method: 'POST',
      path: (id) => `/admin/workspaces/${id}/transfer-owner`,
      body: (c) => ({ newOwnerUserId: c.newOwner }),
      write: true,
    },
  ],
  [
    'DELETE /admin/workspaces/{workspaceId}',
    { method: 'DELETE', path: (id) => `/admin/workspaces/${id}`, write: true },
  ],
];

/** The state that gives each write something to do, so a refusal is the only reason nothing changes. */
const START: Record<string, State> = {
  'POST /admin/workspaces/{workspaceId}/activate': 'SUSPENDED',
  'POST /admin/workspaces/{workspaceId}/restore': 'ARCHIVED',
};

describe('admin workspace routes: who may call', () => {
  let shared: Awaited<ReturnType<typeof adminWorkspace>>;
  let newOwner: Session;
  beforeAll(async () => {
    shared = await adminWorkspace('guarded');
    newOwner = await registerAndLogin(app.api, { prefix: 'guard-new-owner' });
  });
  const opts = (r: AdminRoute) => (r.body ? { body: r.body({ newOwner: newOwner.userId, owner: plain.userId }) } : {});

  it.each(ROUTES)('%s refuses a normal user with 403 FORBIDDEN', async (_label, r) => {
    // The workspace's own OWNER is a normal user too.
    for (const s of [plain, shared.owner]) {
      expectError(await app.api(r.method, r.path(shared.id), { token: s.accessToken, ...opts(r) }), 403, 'FORBIDDEN');
    }
    expect(await workspaceRow(shared.id)).toMatchObject({ name: shared.name, status: 'ACTIVE', deleted_at: null });
  });

  it.each(ROUTES)('%s refuses an anonymous caller with 401 UNAUTHORIZED', async (_label, r) => {
    expectError(await app.api(r.method, r.path(shared.id), opts(r)), 401, 'UNAUTHORIZED');
  });

  it.each(ROUTES.filter(([, r]) => !r.write))('%s answers the demo admin 200', async (_label, r) => {
    const res = await app.api(r.method, r.path(shared.id), { token: demo.accessToken });
    expect(res.status).toBe(200);
  });

  it.each(ROUTES.filter(([, r]) => r.write))(
    '%s refuses the demo admin with 403 DEMO_READ_ONLY "Demo admin is read-only." and changes nothing',
    async (label, r) => {
      const w = await adminWorkspace('demo-target');
      const start = START[label] ?? 'ACTIVE';
      for (const step of REACH[start])
        expect((await asAdmin('POST', `/admin/workspaces/${w.id}/${step}`)).status).toBe(200);
      const [rowBefore, membersBefore] = [await workspaceRow(w.id), await membersOf(w.id)];
      const countBefore = await app.deps.db
        .selectFrom('workspaces')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('name', '=', 'Refused create')
        .executeTakeFirstOrThrow();
      const rid = requestIdFor('demo-ws-write');

      const res = await app.api(r.method, r.path(w.id), {
        token: demo.accessToken,
        headers: { 'x-request-id': rid },
        ...opts(r),
      });
      expect(expectError(res, 403, 'DEMO_READ_ONLY').message).toBe('Demo admin is read-only.');

      expect(await workspaceRow(w.id)).toEqual(rowBefore);
      expect(await membersOf(w.id)).toEqual(membersBefore);
      const countAfter = await app.deps.db
        .selectFrom('workspaces')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('name', '=', 'Refused create')
        .executeTakeFirstOrThrow();
      expect(countAfter.n).toBe(countBefore.n);
      expect(await app.deps.db.selectFrom('audit_logs').select('id').where('request_id', '=', rid).execute()).toEqual(
        [],
      );
    },
  );

  it('lets the demo admin search and filter workspaces like an admin', async () => {
    const res = await app.api('GET', `/admin/workspaces?search=${encodeURIComponent(shared.name)}&status=ACTIVE`, {
      token: demo.accessToken,
    });
    expect(res.status).toBe(200);
    expect(idsOf(res.body.items)).toEqual([shared.id]);
  });
});
