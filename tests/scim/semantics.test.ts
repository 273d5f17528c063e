// What a directory and a workspace's owner see of SCIM beyond the basics: a User the directory deactivates
// shows as SUSPENDED in the workspace's members list (and ACTIVE again when reactivated); a User carries the
// Groups it is in (read-only `groups`); Groups are found by a member (`members.value eq`, as Entra and
// Okta ask), compiled to SQL, alone or with other conditions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { hex, scimWorkspace, type ScimWorkspace } from './helpers.js';

const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

let app: TestApp;
let d: ScimWorkspace;

beforeAll(async () => {
  app = await startTestApp();
  d = await scimWorkspace(app);
});
afterAll(() => app?.close());

async function createUser(local: string) {
  const res = await d.scim('POST', '/Users', { schemas: [USER_SCHEMA], userName: `${local}-${hex()}@${d.domain}` });
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string; userName: string };
}

async function createGroup(displayName: string, memberIds: string[]) {
  const res = await d.scim('POST', '/Groups', {
    schemas: [GROUP_SCHEMA],
    displayName,
    members: memberIds.map((value) => ({ value })),
  });
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string; displayName: string };
}

const setActive = (id: string, value: boolean) =>
  d.scim('PATCH', `/Users/${id}`, {
    schemas: [PATCH_SCHEMA],
    Operations: [{ op: 'replace', path: 'active', value }],
  });

async function membersList() {
  const res = await app.api('GET', `/workspaces/${d.workspaceId}/members`, { token: d.owner.accessToken });
  expect(res.status, res.text).toBe(200);
  return res.body.items as Array<{ userId: string; email: string; status: string }>;
}

describe("the workspace's members list", () => {
  it('shows a member the directory deactivates as SUSPENDED, and ACTIVE again once reactivated', async () => {
    const user = await createUser('leaver');
    const find = async () => (await membersList()).find((m) => m.email === user.userName);
    expect(await find()).toMatchObject({ status: 'ACTIVE' });

    expect((await setActive(user.id, false)).status).toBe(200);
    expect(await find()).toMatchObject({ status: 'SUSPENDED' });
    // The owner, whom the directory did not touch, stays ACTIVE.
    expect((await membersList()).find((m) => m.userId === d.owner.userId)).toMatchObject({ status: 'ACTIVE' });

    expect((await setActive(user.id, true)).status).toBe(200);
    expect(await find()).toMatchObject({ status: 'ACTIVE' });
  });
});

describe("a User's groups", () => {
  it('lists the Groups a User is in, by name, on the User, its list page and its filter', async () => {
    const ada = await createUser('ada');
    const bob = await createUser('bob');
    const eng = await createGroup(`Engineering ${hex()}`, [ada.id, bob.id]);
    const ops = await createGroup(`Ops ${hex()}`, [ada.id]);

    const got = await d.scim('GET', `/Users/${ada.id}`);
    expect(got.status).toBe(200);
    const expected = [eng, ops]
      .sort((a, b) => (a.displayName < b.displayName ? -1 : 1))
      .map((g) => ({
        value: g.id,
        display: g.displayName,
        type: 'direct',
        $ref: expect.stringMatching(new RegExp(`/scim/v2/Groups/${g.id}$`)),
      }));
    expect(got.body.groups).toEqual(expected);

    const filtered = await d.scim('GET', `/Users?filter=${encodeURIComponent(`userName eq "${ada.userName}"`)}`);
    expect(filtered.body.Resources[0].groups).toEqual(expected);
    const page = await d.scim('GET', '/Users?count=200');
    const listed = (page.body.Resources as Array<{ id: string; groups?: unknown[] }>).find((u) => u.id === bob.id);
    expect(listed?.groups).toEqual([expect.objectContaining({ value: eng.id, display: eng.displayName })]);

    // A User in no Group has no groups; leaving a Group takes it off the User.
    const carol = await createUser('carol');
    expect((await d.scim('GET', `/Users/${carol.id}`)).body.groups).toBeUndefined();
    const left = await d.scim('PATCH', `/Groups/${ops.id}`, {
      schemas: [PATCH_SCHEMA],
      Operations: [{ op: 'remove', path: `members[value eq "${ada.id}"]` }],
    });
    expect(left.status, left.text).toBe(200);
    expect((await d.scim('GET', `/Users/${ada.id}`)).body.groups).toEqual([expected.find((g) => g.value === eng.id)]);
  });

  it('ignores groups sent on a User (read-only): membership changes only through Groups', async () => {
    const dan = await createUser('dan');
    const team = await createGroup(`Team ${hex()}`, []);
    const put = await d.scim('PUT', `/Users/${dan.id}`, {
      schemas: [USER_SCHEMA],
      userName: dan.userName,
      groups: [{ value: team.id }],
    });
    expect(put.status, put.text).toBe(200);
    expect(put.body.groups).toBeUndefined();
    const group = await d.scim('GET', `/Groups/${team.id}`);
    expect(group.body.members).toEqual([]);
  });
});

describe('Groups by member', () => {
  it('finds the Groups of a User with members.value eq, members[value eq] and with other conditions', async () => {
    const eve = await createUser('eve');
    const fay = await createUser('fay');
    const red = await createGroup(`Red ${hex()}`, [eve.id, fay.id]);
    const blue = await createGroup(`Blue ${hex()}`, [eve.id]);
    await createGroup(`Green ${hex()}`, [fay.id]);

    const groupsOf = async (filter: string) => {
      const res = await d.scim('GET', `/Groups?excludedAttributes=members&filter=${encodeURIComponent(filter)}`);
      expect(res.status, res.text).toBe(200);
      expect(res.body.totalResults).toBe(res.body.Resources.length);
      return (res.body.Resources as Array<{ id: string; members?: unknown }>).map((g) => g.id).sort();
    };
    expect(await groupsOf(`members.value eq "${eve.id}"`)).toEqual([red.id, blue.id].sort());
    expect(await groupsOf(`members[value eq "${eve.id}"]`)).toEqual([red.id, blue.id].sort());
    expect(await groupsOf(`members.value eq "${eve.id}" and displayName eq "${blue.displayName}"`)).toEqual([blue.id]);
    expect(await groupsOf(`members.value eq "${eve.id}" and members.value eq "${fay.id}"`)).toEqual([red.id]);
    expect(await groupsOf(`members.value eq "${eve.id}" and not (members.value eq "${fay.id}")`)).toEqual([blue.id]);
    // No such member, or a value that is no id at all: no Group, not an error.
    expect(await groupsOf(`members.value eq "${crypto.randomUUID()}"`)).toEqual([]);
    expect(await groupsOf('members.value eq "not-an-id"')).toEqual([]);
    // members.display is not filterable: a 400 invalidFilter, not a silent empty list.
    const refused = await d.scim('GET', `/Groups?filter=${encodeURIComponent('members.display eq "x"')}`);
    expect(refused.status).toBe(400);
    expect(refused.body.scimType).toBe('invalidFilter');
  });
});
