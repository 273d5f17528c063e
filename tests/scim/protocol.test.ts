// /scim/v2 as a directory sees it: discovery, the token, the media type and the SCIM error shape; Users
// created, read, replaced, patched and deleted, with what a person notices (an account made for an unknown
// address, a suspended membership refused on the workspace's routes, a removed account suspended with its
// sessions); filters compiled to SQL with every operator; paging; Groups and the roles they map to.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, login } from '../helpers/http.js';
import { registerAs } from '../workspaces/helpers.js';
import { hex, SCIM_CONTENT_TYPE, scimClient, scimWorkspace, type ScimWorkspace } from './helpers.js';

const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';
const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';

let app: TestApp;
let ws: ScimWorkspace;

beforeAll(async () => {
  app = await startTestApp();
  ws = await scimWorkspace(app);
});
afterAll(() => app?.close());

const address = (local: string) => `${local}-${hex()}@${ws.domain}`;
const newUser = (email: string, extra: Record<string, unknown> = {}) => ({
  schemas: [USER_SCHEMA],
  userName: email,
  name: { givenName: 'Ada', familyName: 'Lovelace' },
  emails: [{ value: email, type: 'work', primary: true }],
  active: true,
  ...extra,
});

function expectScimError(res: { status: number; body: any; headers: Headers }, status: number, scimType?: string) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers.get('content-type')).toContain(SCIM_CONTENT_TYPE);
  expect(res.body).toMatchObject({ schemas: [ERROR_SCHEMA], status: String(status), detail: expect.any(String) });
  if (scimType) expect(res.body.scimType).toBe(scimType);
}

describe('discovery and the token', () => {
  it('answers ServiceProviderConfig, ResourceTypes and Schemas in application/scim+json', async () => {
    const config = await ws.scim('GET', '/ServiceProviderConfig');
    expect(config.status).toBe(200);
    expect(config.headers.get('content-type')).toContain(SCIM_CONTENT_TYPE);
    expect(config.body).toMatchObject({ patch: { supported: true }, filter: { supported: true, maxResults: 200 } });
    const types = await ws.scim('GET', '/ResourceTypes');
    expect(types.body.Resources.map((t: { name: string }) => t.name)).toEqual(['User', 'Group']);
    const schemas = await ws.scim('GET', '/Schemas');
    expect(schemas.body.Resources.map((s: { id: string }) => s.id)).toEqual([USER_SCHEMA, GROUP_SCHEMA]);
    expect((await ws.scim('GET', `/Schemas/${USER_SCHEMA}`)).body.name).toBe('User');
    expectScimError(await ws.scim('GET', '/Schemas/urn:nope'), 404);
  });

  it('refuses no token, a malformed one, an unknown one and an access token with a SCIM 401', async () => {
    const owner = ws.owner.accessToken;
    for (const token of [undefined, 'scim_short', `scim_${'A'.repeat(40)}`, owner]) {
      const res = await app.api('GET', '/scim/v2/Users', token ? { token } : {});
      expectScimError(res, 401);
      expect(res.headers.get('www-authenticate')).toContain('Bearer');
    }
  });

  it('refuses an unknown endpoint (404), a body that is not JSON (415) and malformed JSON (400 invalidSyntax)', async () => {
    expectScimError(await ws.scim('GET', '/Widgets'), 404);
    const text = await app.api('POST', '/scim/v2/Users', {
      token: ws.token,
      raw: 'userName=x',
      headers: { 'content-type': 'text/plain' },
    });
    expectScimError(text, 415);
    const broken = await app.api('POST', '/scim/v2/Users', {
      token: ws.token,
      raw: '{"userName":',
      headers: { 'content-type': SCIM_CONTENT_TYPE },
    });
    expectScimError(broken, 400, 'invalidSyntax');
  });

  it('refuses a token once its workspace is deleted by its owner', async () => {
    const other = await scimWorkspace(app);
    const ws2 = await app.deps.db
      .selectFrom('workspaces')
      .select('name')
      .where('id', '=', other.workspaceId)
      .executeTakeFirstOrThrow();
    const del = await app.api('POST', `/workspaces/${other.workspaceId}/delete`, {
      token: other.owner.accessToken,
      body: { confirmName: ws2.name },
    });
    expect(del.status).toBe(200);
    expectScimError(await other.scim('GET', '/Users'), 401);
  });
});

describe('Users', () => {
  it('creates an account for an unknown address: verified, no password, no personal workspace', async () => {
    const email = address('new');
    const res = await ws.scim('POST', '/Users', newUser(email, { externalId: `ext-${hex()}` }));
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toContain(SCIM_CONTENT_TYPE);
    expect(res.body).toMatchObject({
      schemas: [USER_SCHEMA],
      id: expect.any(String),
      userName: email,
      name: { givenName: 'Ada', familyName: 'Lovelace' },
      emails: [{ value: email, primary: true }],
      active: true,
      meta: { resourceType: 'User', location: expect.stringContaining(`/scim/v2/Users/${res.body.id}`) },
    });
    const user = await app.deps.db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirstOrThrow();
    expect(user.password_hash).toBeNull();
    expect(user.email_verified_at).not.toBeNull();
    expect(user.provisioned_by_workspace_id).toBe(ws.workspaceId);
    const memberships = await app.deps.db
      .selectFrom('workspace_members')
      .select(['id', 'workspace_id', 'role'])
      .where('user_id', '=', user.id)
      .execute();
    expect(memberships).toEqual([{ id: res.body.id, workspace_id: ws.workspaceId, role: 'MEMBER' }]);
    const audit = await app.deps.db
      .selectFrom('audit_logs')
      .select(['actor_user_id', 'metadata'])
      .where('action', '=', 'scim.user_provisioned')
      .where('target_id', '=', user.id)
      .executeTakeFirstOrThrow();
    expect(audit.actor_user_id).toBeNull();
    expect(audit.metadata).toMatchObject({ scimCredentialId: ws.tokenId, accountCreated: true });
    expect((await ws.scim('GET', `/Users/${res.body.id}`)).body.userName).toBe(email);
  });

  it('adds an existing account as a member without touching its password or name', async () => {
    const email = address('known');
    const person = await registerAs(app, email, 'Known Person');
    const res = await ws.scim('POST', '/Users', newUser(email, { displayName: 'Renamed' }));
    expect(res.status).toBe(201);
    expect(res.body.displayName).toBe('Known Person');
    const again = await login(app.api, email, person.password);
    expect(again.userId).toBe(person.userId);
  });

  it('refuses an address outside the verified domains (400 invalidValue) and a duplicate userName (409 uniqueness)', async () => {
    expectScimError(await ws.scim('POST', '/Users', newUser(`x-${hex()}@elsewhere.example`)), 400, 'invalidValue');
    expectScimError(await ws.scim('POST', '/Users', newUser(`x-${hex()}@gmail.com`)), 400, 'invalidValue');
    const email = address('dup');
    expect((await ws.scim('POST', '/Users', newUser(email))).status).toBe(201);
    expectScimError(await ws.scim('POST', '/Users', newUser(email.toUpperCase())), 409, 'uniqueness');
    const ext = `ext-${hex()}`;
    expect((await ws.scim('POST', '/Users', newUser(address('e1'), { externalId: ext }))).status).toBe(201);
    expectScimError(await ws.scim('POST', '/Users', newUser(address('e2'), { externalId: ext })), 409, 'uniqueness');
  });

  it('refuses what is not a User: no userName, a userName that is no address, a bad active, control characters', async () => {
    for (const body of [
      { schemas: [USER_SCHEMA] },
      newUser('not-an-address', { emails: [] }),
      newUser(address('b'), { active: 'maybe' }),
      newUser(address('c'), { name: { givenName: 'A\u202Eb' } }),
      [],
    ])
      expectScimError(await ws.scim('POST', '/Users', body), 400);
  });

  it('answers 404 for an unknown id, a malformed id and a User of another workspace', async () => {
    const other = await scimWorkspace(app);
    const theirs = await other.scim('POST', '/Users', newUser(`t-${hex()}@${other.domain}`));
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', theirs.body.id]) {
      expectScimError(await ws.scim('GET', `/Users/${id}`), 404);
      expectScimError(
        await ws.scim('PATCH', `/Users/${id}`, { Operations: [{ op: 'replace', value: { active: false } }] }),
        404,
      );
      expectScimError(await ws.scim('DELETE', `/Users/${id}`), 404);
    }
  });

  it('active:false suspends the membership: 403 MEMBERSHIP_SUSPENDED on its routes, not a seat; true restores it', async () => {
    const email = address('leaver');
    const created = await ws.scim('POST', '/Users', newUser(email));
    const member = await app.deps.db
      .selectFrom('users')
      .select('id')
      .where('email', '=', email)
      .executeTakeFirstOrThrow();
    const session = await sessionFor(member.id);
    expect((await app.api('GET', `/workspaces/${ws.workspaceId}`, { token: session })).status).toBe(200);
    const before = (await app.api('GET', `/workspaces/${ws.workspaceId}`, { token: ws.owner.accessToken })).body
      .memberCount;

    const off = await ws.scim('PUT', `/Users/${created.body.id}`, newUser(email, { active: false }));
    expect(off.status).toBe(200);
    expect(off.body.active).toBe(false);
    expectError(await app.api('GET', `/workspaces/${ws.workspaceId}`, { token: session }), 403, 'MEMBERSHIP_SUSPENDED');
    const me = await app.api('GET', '/auth/me', { token: session });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ hasActiveWorkspace: false, workspaceUnavailableReason: 'MEMBERSHIP_SUSPENDED' });
    const after = (await app.api('GET', `/workspaces/${ws.workspaceId}`, { token: ws.owner.accessToken })).body
      .memberCount;
    expect(after).toBe(before - 1);

    const on = await ws.scim('PATCH', `/Users/${created.body.id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'Replace', path: 'active', value: 'True' }],
    });
    expect(on.status).toBe(200);
    expect(on.body.active).toBe(true);
    expect((await app.api('GET', `/workspaces/${ws.workspaceId}`, { token: session })).status).toBe(200);
    const events = await app.deps.db
      .selectFrom('domain_events')
      .select('type')
      .where('workspace_id', '=', ws.workspaceId)
      .where('type', 'in', ['member.suspended', 'member.reactivated'])
      .execute();
    expect(events.map((e) => e.type).sort()).toEqual(['member.reactivated', 'member.suspended']);
  });

  it('DELETE removes the membership (204); an account SCIM made that belongs nowhere else is suspended, its sessions ended', async () => {
    const email = address('gone');
    const created = await ws.scim('POST', '/Users', newUser(email));
    const user = await app.deps.db
      .selectFrom('users')
      .select('id')
      .where('email', '=', email)
      .executeTakeFirstOrThrow();
    const session = await sessionFor(user.id);
    expect((await app.api('GET', '/auth/me', { token: session })).status).toBe(200);
    const del = await ws.scim('DELETE', `/Users/${created.body.id}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expectScimError(await ws.scim('GET', `/Users/${created.body.id}`), 404);
    const res = await app.api('GET', '/auth/me', { token: session });
    expect([401, 403]).toContain(res.status);
    const row = await app.deps.db
      .selectFrom('users')
      .select('status')
      .where('id', '=', user.id)
      .executeTakeFirstOrThrow();
    expect(row.status).toBe('SUSPENDED');
    // Provisioned again: the same account, ACTIVE again.
    const back = await ws.scim('POST', '/Users', newUser(email));
    expect(back.status).toBe(201);
    const again = await app.deps.db
      .selectFrom('users')
      .select(['id', 'status'])
      .where('email', '=', email)
      .executeTakeFirstOrThrow();
    expect(again).toEqual({ id: user.id, status: 'ACTIVE' });
  });

  it('DELETE of an account the person made themselves only removes the membership', async () => {
    const email = address('own');
    const person = await registerAs(app, email, 'Own Account');
    const created = await ws.scim('POST', '/Users', newUser(email));
    expect((await ws.scim('DELETE', `/Users/${created.body.id}`)).status).toBe(204);
    expect((await app.api('GET', '/auth/me', { token: person.accessToken })).status).toBe(200);
  });

  it('never suspends or deletes the last owner (400 mutability)', async () => {
    const list = await ws.scim('GET', `/Users?filter=${encodeURIComponent(`userName eq "${ws.owner.email}"`)}`);
    const ownerId = list.body.Resources[0].id;
    expectScimError(
      await ws.scim('PATCH', `/Users/${ownerId}`, { Operations: [{ op: 'replace', value: { active: false } }] }),
      400,
      'mutability',
    );
    expectScimError(await ws.scim('DELETE', `/Users/${ownerId}`), 400, 'mutability');
    expect((await app.api('GET', `/workspaces/${ws.workspaceId}`, { token: ws.owner.accessToken })).status).toBe(200);
  });
});

/** An access token of a session for `userId` (an account without a password: the session as SSO would make it). */
async function sessionFor(userId: string): Promise<string> {
  const { issueTokens } = await import('../../routers/auth/sessions.js');
  const pair = await issueTokens(app.deps, app.deps.db, userId, { ip: null, userAgent: null });
  return pair.accessToken;
}

describe('filters and paging', () => {
  let other: ScimWorkspace;
  const people: Array<{ id: string; email: string; ext: string }> = [];

  beforeAll(async () => {
    other = await scimWorkspace(app);
    for (let i = 0; i < 7; i++) {
      const email = `p${i}-${hex()}@${other.domain}`;
      const ext = `E-${i}`;
      const res = await other.scim('POST', '/Users', newUser(email, { externalId: ext, active: i % 2 === 0 }));
      expect(res.status, res.text).toBe(201);
      people.push({ id: res.body.id, email, ext });
    }
  });

  const find = async (filter: string) => {
    const res = await other.scim('GET', `/Users?filter=${encodeURIComponent(filter)}&count=200`);
    expect(res.status, res.text).toBe(200);
    return (res.body.Resources as Array<{ userName: string; externalId?: string }>)
      .map((r) => r.externalId ?? 'owner')
      .sort();
  };

  it('compiles every operator, and/or/not, value paths and dates', async () => {
    expect(await find(`userName eq "${people[3].email.toUpperCase()}"`)).toEqual(['E-3']);
    expect(await find(`externalId eq "E-1"`)).toEqual(['E-1']);
    expect(await find(`externalId eq "e-1"`)).toEqual([]);
    expect(await find(`externalId ne "E-1" and externalId pr`)).toEqual(['E-0', 'E-2', 'E-3', 'E-4', 'E-5', 'E-6']);
    expect(await find(`userName sw "p2-"`)).toEqual(['E-2']);
    expect(await find(`emails.value co "p5-"`)).toEqual(['E-5']);
    expect(await find(`userName ew "@${other.domain}" and active eq false`)).toEqual(['E-1', 'E-3', 'E-5']);
    expect(await find(`active eq "True" and externalId pr`)).toEqual(['E-0', 'E-2', 'E-4', 'E-6']);
    expect(await find(`externalId gt "E-4"`)).toEqual(['E-5', 'E-6']);
    expect(await find(`externalId ge "E-4" and externalId le "E-5"`)).toEqual(['E-4', 'E-5']);
    expect(await find(`externalId lt "E-1"`)).toEqual(['E-0']);
    expect(await find(`externalId eq "E-1" or externalId eq "E-2"`)).toEqual(['E-1', 'E-2']);
    expect(await find(`not (externalId pr)`)).toEqual(['owner']);
    expect(await find(`emails[type eq "work" and value co "p6-"]`)).toEqual(['E-6']);
    expect(await find(`meta.lastModified gt "2000-01-01T00:00:00Z" and externalId eq "E-0"`)).toEqual(['E-0']);
    expect(await find(`meta.lastModified lt "2000-01-01T00:00:00Z"`)).toEqual([]);
    expect(await find(`userName co "%"`)).toEqual([]);
  });

  it('refuses an unknown attribute, a text that does not parse and a bad value (400 invalidFilter)', async () => {
    for (const filter of [
      'password eq "x"',
      'userName eq',
      'active gt true',
      'meta.lastModified gt "yesterday"',
      'userName eq 3',
    ])
      expectScimError(await other.scim('GET', `/Users?filter=${encodeURIComponent(filter)}`), 400, 'invalidFilter');
  });

  it('pages by startIndex and count, with totalResults over the filter', async () => {
    const filter = encodeURIComponent('externalId pr');
    const page = await other.scim('GET', `/Users?filter=${filter}&startIndex=3&count=2`);
    expect(page.body).toMatchObject({ totalResults: 7, startIndex: 3, itemsPerPage: 2 });
    expect(page.body.Resources.map((r: { externalId: string }) => r.externalId)).toEqual(['E-2', 'E-3']);
    const last = await other.scim('GET', `/Users?filter=${filter}&startIndex=7&count=5`);
    expect(last.body.Resources.map((r: { externalId: string }) => r.externalId)).toEqual(['E-6']);
    const none = await other.scim('GET', `/Users?filter=${filter}&count=0`);
    expect(none.body).toMatchObject({ totalResults: 7, itemsPerPage: 0, Resources: [] });
    const past = await other.scim('GET', `/Users?startIndex=100`);
    expect(past.body).toMatchObject({ totalResults: 8, itemsPerPage: 0 });
    const clamped = await other.scim('GET', `/Users?startIndex=-4&count=100000`);
    expect(clamped.body).toMatchObject({ startIndex: 1, itemsPerPage: 8 });
    expectScimError(await other.scim('GET', '/Users?count=ten'), 400, 'invalidValue');
  });

  it('never lists the Users of another workspace', async () => {
    const res = await ws.scim('GET', `/Users?filter=${encodeURIComponent(`userName eq "${people[0].email}"`)}`);
    expect(res.body.totalResults).toBe(0);
  });
});

describe('Groups and roles', () => {
  it('gives members the highest role their mapped groups give; owners keep theirs', async () => {
    const g = await scimWorkspace(app);
    const scim = scimClient(app.api, g.token);
    const put = await app.api('PUT', `/workspaces/${g.workspaceId}/scim/role-mappings`, {
      token: g.owner.accessToken,
      body: {
        mappings: [
          { group: 'Admins', role: 'ADMIN' },
          { group: 'Readers', role: 'VIEWER' },
        ],
      },
    });
    expect(put.status).toBe(200);
    const a = await scim('POST', '/Users', newUser(`a-${hex()}@${g.domain}`));
    const b = await scim('POST', '/Users', newUser(`b-${hex()}@${g.domain}`));
    const roleOf = async (id: string) =>
      (await app.deps.db.selectFrom('workspace_members').select('role').where('id', '=', id).executeTakeFirstOrThrow())
        .role;

    const readers = await scim('POST', '/Groups', {
      schemas: [GROUP_SCHEMA],
      displayName: 'Readers',
      members: [{ value: a.body.id }, { value: b.body.id }],
    });
    expect(readers.status).toBe(201);
    expect(readers.body.members.map((m: { value: string }) => m.value).sort()).toEqual([a.body.id, b.body.id].sort());
    expect(await roleOf(a.body.id)).toBe('VIEWER');
    expectScimError(await scim('POST', '/Groups', { displayName: 'Readers' }), 409, 'uniqueness');

    const admins = await scim('POST', '/Groups', { displayName: 'Admins', members: [] });
    const add = await scim('PATCH', `/Groups/${admins.body.id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'Add', path: 'members', value: [{ value: a.body.id }] }],
    });
    expect(add.status, add.text).toBe(200);
    expect(await roleOf(a.body.id)).toBe('ADMIN');
    expect(await roleOf(b.body.id)).toBe('VIEWER');

    const remove = await scim('PATCH', `/Groups/${admins.body.id}`, {
      Operations: [{ op: 'remove', path: `members[value eq "${a.body.id}"]` }],
    });
    expect(remove.status, remove.text).toBe(200);
    expect(await roleOf(a.body.id)).toBe('VIEWER');

    // Removing by value someone who is not a member (a directory retrying) changes nothing.
    const again = await scim('PATCH', `/Groups/${admins.body.id}`, {
      Operations: [{ op: 'Remove', path: 'members', value: [{ value: a.body.id }] }],
    });
    expect(again.status, again.text).toBe(200);
    expect(again.body.members).toEqual([]);

    expect((await scim('DELETE', `/Groups/${readers.body.id}`)).status).toBe(204);
    expect(await roleOf(a.body.id)).toBe('MEMBER');

    const ownerRow = await app.deps.db
      .selectFrom('workspace_members')
      .select('id')
      .where('workspace_id', '=', g.workspaceId)
      .where('user_id', '=', g.owner.userId)
      .executeTakeFirstOrThrow();
    await scim('PUT', `/Groups/${admins.body.id}`, { displayName: 'Admins', members: [{ value: ownerRow.id }] });
    expect(await roleOf(ownerRow.id)).toBe('OWNER');

    const list = await scim(
      'GET',
      `/Groups?filter=${encodeURIComponent('displayName eq "admins"')}&excludedAttributes=members`,
    );
    expect(list.body.totalResults).toBe(1);
    expect(list.body.Resources[0]).not.toHaveProperty('members');
    expectScimError(
      await scim('POST', '/Groups', { displayName: 'X', members: [{ value: 'nope' }] }),
      400,
      'invalidValue',
    );
    expectScimError(await scim('GET', '/Groups/not-a-uuid'), 404);
  });
});
