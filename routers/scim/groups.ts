// SCIM Groups of a workspace: the directory's groups and their members (memberships, by SCIM User id).
// A group's display name is what role mappings name: each change of a group's members or name sets the
// roles of the members concerned (tokens.ts, applyGroupRoles). Every write is audited with the token.
import { sql, type Kysely } from 'kysely';
import { z } from 'zod';
import type { Database } from '../../db/schema.js';
import { isUniqueViolation } from '../../db/errors.js';
import { recordAudit } from '../audit/service.js';
import { ScimError } from './errors.js';
import { compileFilter, parseFilter, type Attribute, type Attributes } from './filter.js';
import { applyPatch } from './patch.js';
import { GROUP_SCHEMA, groupResource, listResponse, readResource, type GroupResource } from './resources.js';
import { applyGroupRoles } from './tokens.js';
import type { ScimCaller } from './users.js';
import type { AppDeps } from '../../server/platform/context.js';

type Db = Kysely<Database>;
type Deps = Pick<AppDeps, 'db'>;

// `members.value eq "<User id>"` (`members[value eq ...]`, `members eq ...`): the groups a User is in, as
// Entra and Okta ask; one probe of the members' primary key (group_id, member_id) per group.
const MEMBERS_VALUE: Attribute = {
  column: sql`gm.member_id::text`,
  type: 'caseExactString',
  some: (condition) =>
    sql<boolean>`exists (select 1 from scim_group_members gm where gm.group_id = g.id and ${condition})`,
};

const GROUP_ATTRIBUTES: Attributes = {
  displayname: { column: sql`g.display_name`, type: 'string' },
  externalid: { column: sql`g.external_id`, type: 'caseExactString' },
  id: { column: sql`g.id::text`, type: 'caseExactString' },
  'meta.created': { column: sql`g.created_at`, type: 'dateTime' },
  'meta.lastmodified': { column: sql`g.updated_at`, type: 'dateTime' },
  'members.value': MEMBERS_VALUE,
  members: MEMBERS_VALUE,
};

const groupRows = (db: Db, workspaceId: string) =>
  db
    .selectFrom('scim_groups as g')
    .select(['g.id', 'g.display_name', 'g.external_id', 'g.created_at', 'g.updated_at'])
    .where('g.workspace_id', '=', workspaceId);
type GroupRow = Awaited<ReturnType<ReturnType<typeof groupRows>['executeTakeFirstOrThrow']>>;

async function membersOf(db: Db, groupIds: string[]) {
  if (!groupIds.length) return new Map<string, Array<{ value: string; display: string }>>();
  const rows = await db
    .selectFrom('scim_group_members as gm')
    .innerJoin('workspace_members as m', 'm.id', 'gm.member_id')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(['gm.group_id', 'gm.member_id', 'u.email'])
    .where('gm.group_id', 'in', groupIds)
    .orderBy('u.email')
    .execute();
  const byGroup = new Map<string, Array<{ value: string; display: string }>>();
  for (const r of rows) {
    const list = byGroup.get(r.group_id) ?? [];
    list.push({ value: r.member_id, display: r.email });
    byGroup.set(r.group_id, list);
  }
  return byGroup;
}

function toScimGroup(g: GroupRow, members: Array<{ value: string; display: string }> | undefined, baseUrl: string) {
  return {
    schemas: [GROUP_SCHEMA],
    id: g.id,
    displayName: g.display_name,
    ...(g.external_id !== null ? { externalId: g.external_id } : {}),
    ...(members
      ? { members: members.map((m) => ({ ...m, $ref: `${baseUrl}/scim/v2/Users/${m.value}`, type: 'User' })) }
      : {}),
    meta: {
      resourceType: 'Group',
      created: g.created_at.toISOString(),
      lastModified: g.updated_at.toISOString(),
      location: `${baseUrl}/scim/v2/Groups/${g.id}`,
    },
  };
}

const notFound = () => new ScimError(404, 'No such Group in this workspace.');

async function loadGroup(db: Db, workspaceId: string, id: string) {
  if (!z.uuid().safeParse(id).success) throw notFound();
  const row = await groupRows(db, workspaceId).where('g.id', '=', id).executeTakeFirst();
  if (!row) throw notFound();
  return row;
}

export async function listGroups(
  { db }: Deps,
  caller: ScimCaller,
  query: { filter?: string; startIndex: number; count: number; withMembers: boolean },
) {
  let rows = groupRows(db, caller.workspaceId);
  if (query.filter) rows = rows.where(compileFilter(parseFilter(query.filter), GROUP_ATTRIBUTES));
  const total = await db
    .selectFrom(rows.as('f'))
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  const page = query.count
    ? await rows
        .orderBy('g.created_at')
        .orderBy('g.id')
        .offset(query.startIndex - 1)
        .limit(query.count)
        .execute()
    : [];
  const members = query.withMembers
    ? await membersOf(
        db,
        page.map((g) => g.id),
      )
    : undefined;
  return listResponse(
    page.map((g) => toScimGroup(g, members ? (members.get(g.id) ?? []) : undefined, caller.baseUrl)),
    Number(total.n),
    query.startIndex,
  );
}

export async function getGroup({ db }: Deps, caller: ScimCaller, id: string, withMembers = true) {
  const g = await loadGroup(db, caller.workspaceId, id);
  const members = withMembers ? ((await membersOf(db, [g.id])).get(g.id) ?? []) : undefined;
  return toScimGroup(g, members, caller.baseUrl);
}

/** The members named by a Group, checked to be Users of the workspace (400 invalidValue otherwise). */
async function memberIds(db: Db, workspaceId: string, group: GroupResource): Promise<string[]> {
  const ids = [...new Set((group.members ?? []).map((m) => m.value))];
  if (!ids.length) return [];
  if (ids.some((id) => !z.uuid().safeParse(id).success))
    throw new ScimError(400, 'members[].value names Users by their id.', 'invalidValue');
  const found = await db
    .selectFrom('workspace_members')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('id', 'in', ids)
    .execute();
  if (found.length !== ids.length)
    throw new ScimError(400, 'members[] names a User that is not in this workspace.', 'invalidValue');
  return ids;
}

const mapUniqueness = (err: unknown): never => {
  if (isUniqueViolation(err, 'scim_groups_workspace_name_key'))
    throw new ScimError(409, 'Another Group of this workspace has this displayName.', 'uniqueness');
  throw err;
};

export async function createGroup({ db }: Deps, caller: ScimCaller, body: unknown) {
  const group = readResource(groupResource, body);
  const { workspaceId, actor } = caller;
  const members = await memberIds(db, workspaceId, group);
  const id = await db
    .transaction()
    .execute(async (trx) => {
      const row = await trx
        .insertInto('scim_groups')
        .values({ workspace_id: workspaceId, display_name: group.displayName, external_id: group.externalId ?? null })
        .returning('id')
        .executeTakeFirstOrThrow();
      if (members.length)
        await trx
          .insertInto('scim_group_members')
          .values(members.map((m) => ({ group_id: row.id, member_id: m })))
          .execute();
      await applyGroupRoles(trx, actor, workspaceId, members);
      await recordAudit(trx, actor, {
        action: 'scim.group_created',
        targetType: 'scim_group',
        targetId: row.id,
        workspaceId,
        metadata: { displayName: group.displayName, members: members.length },
      });
      return row.id;
    })
    .catch(mapUniqueness);
  return getGroup({ db }, caller, id);
}

/** Stores a whole Group (PUT, or a PATCH's result); the roles of members who joined or left follow. */
async function storeGroup(db: Db, caller: ScimCaller, current: GroupRow, group: GroupResource) {
  const { workspaceId, actor } = caller;
  const members = await memberIds(db, workspaceId, group);
  await db
    .transaction()
    .execute(async (trx) => {
      await trx
        .updateTable('scim_groups')
        .set({ display_name: group.displayName, external_id: group.externalId ?? null, updated_at: new Date() })
        .where('id', '=', current.id)
        .execute();
      const before = await trx
        .deleteFrom('scim_group_members')
        .where('group_id', '=', current.id)
        .returning('member_id')
        .execute();
      if (members.length)
        await trx
          .insertInto('scim_group_members')
          .values(members.map((m) => ({ group_id: current.id, member_id: m })))
          .execute();
      const touched = [...new Set([...before.map((b) => b.member_id), ...members])];
      await applyGroupRoles(trx, actor, workspaceId, touched);
      await recordAudit(trx, actor, {
        action: 'scim.group_updated',
        targetType: 'scim_group',
        targetId: current.id,
        workspaceId,
        metadata: { displayName: group.displayName, members: members.length },
      });
    })
    .catch(mapUniqueness);
  return getGroup({ db }, caller, current.id);
}

export async function replaceGroup({ db }: Deps, caller: ScimCaller, id: string, body: unknown) {
  const current = await loadGroup(db, caller.workspaceId, id);
  return storeGroup(db, caller, current, readResource(groupResource, body));
}

export async function patchGroup({ db }: Deps, caller: ScimCaller, id: string, body: unknown) {
  const resource = await getGroup({ db }, caller, id);
  const current = await loadGroup(db, caller.workspaceId, id);
  const patched = applyPatch(resource, body);
  return storeGroup(db, caller, current, readResource(groupResource, patched));
}

export async function deleteGroup({ db }: Deps, caller: ScimCaller, id: string) {
  const { workspaceId, actor } = caller;
  const current = await loadGroup(db, workspaceId, id);
  await db.transaction().execute(async (trx) => {
    const before = await trx
      .deleteFrom('scim_group_members')
      .where('group_id', '=', current.id)
      .returning('member_id')
      .execute();
    await trx.deleteFrom('scim_groups').where('id', '=', current.id).execute();
    await applyGroupRoles(
      trx,
      actor,
      workspaceId,
      before.map((b) => b.member_id),
    );
    await recordAudit(trx, actor, {
      action: 'scim.group_deleted',
      targetType: 'scim_group',
      targetId: current.id,
      workspaceId,
      metadata: { displayName: current.display_name },
    });
  });
}
