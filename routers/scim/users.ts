// SCIM Users of a workspace: a User is a membership (its id is the membership's), its userName the
// account's address. Creating one for an unknown address creates the account (verified, no password, no
// personal workspace), marked as provisioned by this workspace. `active: false` suspends the membership
// (refused on the workspace's routes from the next request; not a seat). Deleting it removes the
// membership, and an account that SCIM or SSO created and that belongs nowhere else is suspended with its
// sessions ended. Every write is audited with the token as actor.
import { sql, type Compilable, type Kysely, type Transaction } from 'kysely';
import { z } from 'zod';
import type { Database } from '../../db/schema.js';
import { batchedSelect } from '../../db/batched.js';
import { isUniqueViolation } from '../../db/errors.js';
import type { Actor } from '../../server/platform/actor.js';
import type { AppDeps } from '../../server/platform/context.js';
import { recordAudit } from '../audit/service.js';
import { revokeAllSessions } from '../auth/sessions.js';
import { emitEvent } from '../events/emit.js';
import { assertMemberCapacity } from '../workspaces/members.js';
import { ScimError } from './errors.js';
import { compileFilter, parseFilter, type Attributes } from './filter.js';
import { groupsOf, isoMs, memberPage } from './paging.js';
import { applyPatch } from './patch.js';
import { USER_SCHEMA, listResponse, readResource, userResource, type UserResource } from './resources.js';
import { applyGroupRoles } from './tokens.js';

type Db = Kysely<Database>;
type Deps = Pick<AppDeps, 'db'>;

/** Who calls: the token's workspace, the actor its writes are audited with, and the base of `location`. */
export interface ScimCaller {
  workspaceId: string;
  actor: Actor;
  baseUrl: string;
}

const userRows = (db: Db, workspaceId: string) =>
  db
    .selectFrom('workspace_members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select([
      'm.id',
      'm.user_id',
      'm.role',
      'm.status',
      'm.external_id',
      'm.given_name',
      'm.family_name',
      isoMs('m.created_at').as('created'),
      isoMs('m.updated_at').as('last_modified'),
      'u.email',
      'u.name',
      'u.provisioned_by_workspace_id',
      groupsOf('m.id', workspaceId).as('groups'),
    ])
    .where('m.workspace_id', '=', workspaceId);
type UserRow = Awaited<ReturnType<ReturnType<typeof userRows>['executeTakeFirstOrThrow']>>;

/** What a filter may name, compiled to SQL (filter.ts). The address is stored in lower case. */
const USER_ATTRIBUTES: Attributes = {
  username: { column: sql`u.email`, type: 'string', storedLowerCase: true },
  emails: { column: sql`u.email`, type: 'string', storedLowerCase: true },
  'emails.value': { column: sql`u.email`, type: 'string', storedLowerCase: true },
  'emails.type': { column: sql`'work'`, type: 'string' },
  'emails.primary': { column: sql`true`, type: 'boolean' },
  externalid: { column: sql`m.external_id`, type: 'caseExactString' },
  id: { column: sql`m.id::text`, type: 'caseExactString' },
  active: { column: sql`(m.status = 'ACTIVE')`, type: 'boolean' },
  displayname: { column: sql`u.name`, type: 'string' },
  'name.givenname': { column: sql`m.given_name`, type: 'string' },
  'name.familyname': { column: sql`m.family_name`, type: 'string' },
  'meta.created': { column: sql`m.created_at`, type: 'dateTime' },
  'meta.lastmodified': { column: sql`m.updated_at`, type: 'dateTime' },
};

const byName = (a: { id: string; name: string }, b: { id: string; name: string }) =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : a.id < b.id ? -1 : 1;

/** What toScimUser reads of a row (userRows', or a page's: paging.ts). */
type ScimUserRow = Pick<
  UserRow,
  'id' | 'status' | 'external_id' | 'given_name' | 'family_name' | 'created' | 'last_modified' | 'email' | 'name'
> & { groups: Array<{ id: string; name: string }> };

/** A SCIM User, built in one pass (the keys in the order of the answer; no spread per row). */
export function toScimUser(r: ScimUserRow, baseUrl: string) {
  const given = r.given_name;
  const family = r.family_name;
  const name: { givenName?: string; familyName?: string; formatted?: string } = {};
  if (given !== null) name.givenName = given;
  if (family !== null) name.familyName = family;
  const formatted = given && family ? `${given} ${family}` : given || family;
  if (formatted) name.formatted = formatted;
  const location = `${baseUrl}/scim/v2/Users/${r.id}`;
  const meta = { resourceType: 'User', created: r.created, lastModified: r.last_modified, location };
  // Filled in below, in the order of the answer.
  const user = { schemas: [USER_SCHEMA], id: r.id } as {
    schemas: string[];
    id: string;
    externalId?: string;
    userName: string;
    name: typeof name;
    displayName: string;
    emails: Array<{ value: string; type: string; primary: boolean }>;
    active: boolean;
    groups?: Array<{ value: string; $ref: string; display: string; type: string }>;
    meta: typeof meta;
  };
  if (r.external_id !== null) user.externalId = r.external_id;
  user.userName = r.email;
  user.name = name;
  user.displayName = r.name;
  user.emails = [{ value: r.email, type: 'work', primary: true }];
  user.active = r.status === 'ACTIVE';
  // Read-only: the Groups it is in (a PUT or PATCH of `groups` is ignored; Groups name their members).
  if (r.groups.length)
    user.groups = [...r.groups].sort(byName).map((g) => ({
      value: g.id,
      $ref: `${baseUrl}/scim/v2/Groups/${g.id}`,
      display: g.name,
      type: 'direct',
    }));
  user.meta = meta;
  return user;
}

const notFound = () => new ScimError(404, 'No such User in this workspace.');
const isUuid = (id: string) => z.uuid().safeParse(id).success;

async function loadUser(db: Db, workspaceId: string, id: string) {
  if (!isUuid(id)) throw notFound();
  const row = await userRows(db, workspaceId).where('m.id', '=', id).executeTakeFirst();
  if (!row) throw notFound();
  return row;
}

export async function listUsers(
  { db }: Deps,
  caller: ScimCaller,
  query: { filter?: string; startIndex: number; count: number },
) {
  const { workspaceId, baseUrl } = caller;
  if (!query.filter) {
    // Unfiltered: the total from the members' counter, the page from its nearest mark (paging.ts).
    const { rows, total } = await memberPage(db, workspaceId, query.startIndex, query.count);
    return listResponse(
      rows.map((r) => toScimUser(r, baseUrl)),
      total,
      query.startIndex,
    );
  }
  const rows = userRows(db, workspaceId).where(compileFilter(parseFilter(query.filter), USER_ATTRIBUTES));
  const total = db.selectFrom(rows.as('f')).select((eb) => eb.fn.countAll<string>().as('n'));
  const page = rows
    .select(sql<string>`to_char(m.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`.as('list_at'))
    .orderBy('m.created_at')
    .orderBy('m.id')
    .offset(query.startIndex - 1)
    .limit(query.count);
  // Batched with the lists of concurrent requests (db/batched.ts): one statement per batch.
  const rowsOf = async <T>(q: Compilable<T>): Promise<T[]> => {
    const rows: unknown[] = await batchedSelect(db, q.compile());
    return rows as T[];
  };
  const [[counted], found] = await Promise.all([rowsOf(total), query.count === 0 ? [] : rowsOf(page)]);
  // A batch's statement does not keep each select's order: sorted again, as the page was cut.
  const ordered = [...found].sort((x, y) =>
    x.list_at < y.list_at ? -1 : x.list_at > y.list_at ? 1 : x.id < y.id ? -1 : x.id > y.id ? 1 : 0,
  );
  return listResponse(
    ordered.map((r) => toScimUser(r, baseUrl)),
    Number(counted.n),
    query.startIndex,
  );
}

export async function getUser({ db }: Deps, caller: ScimCaller, id: string) {
  return toScimUser(await loadUser(db, caller.workspaceId, id), caller.baseUrl);
}

const EMAIL = z.email();

/** The account's address: userName when it is one, else the primary or work address. */
function addressOf(user: UserResource): string {
  const candidates = [
    user.userName,
    ...(user.emails ?? []).filter((e) => e.primary === true).map((e) => e.value),
    ...(user.emails ?? []).filter((e) => e.type === 'work').map((e) => e.value),
    ...(user.emails ?? []).map((e) => e.value),
  ];
  const found = candidates.find((c) => EMAIL.safeParse(c).success);
  if (!found) throw new ScimError(400, 'userName (or an address in emails) must be an e-mail address.', 'invalidValue');
  return found.toLowerCase();
}

/** Refuses an address outside the workspace's VERIFIED domains (400 invalidValue). */
async function assertVerifiedDomain(db: Db, workspaceId: string, email: string) {
  const domain = email.slice(email.lastIndexOf('@') + 1);
  const verified = await db
    .selectFrom('workspace_domains')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('domain', '=', domain)
    .where('status', '=', 'VERIFIED')
    .executeTakeFirst();
  if (!verified)
    throw new ScimError(
      400,
      `${domain} is not a verified domain of this workspace: verify it before provisioning its addresses.`,
      'invalidValue',
    );
}

const uniqueness = (detail: string) => new ScimError(409, detail, 'uniqueness');

/** Unique violations of a User's write as SCIM's 409 uniqueness. */
function mapUniqueness(err: unknown): never {
  if (isUniqueViolation(err, 'workspace_members_external_id_key'))
    throw uniqueness('Another User of this workspace has this externalId.');
  if (isUniqueViolation(err, 'users_email')) throw uniqueness('Another account has this userName.');
  throw err;
}

const displayNameOf = (user: UserResource, email: string) =>
  user.displayName ||
  user.name?.formatted ||
  [user.name?.givenName, user.name?.familyName].filter(Boolean).join(' ') ||
  email.slice(0, email.indexOf('@'));

const memberEvent = (r: { id: string; user_id: string; role: UserRow['role'] }) => ({
  memberId: r.id,
  userId: r.user_id,
  role: r.role,
});

export async function createUser({ db }: Deps, caller: ScimCaller, body: unknown) {
  const user = readResource(userResource, body);
  const email = addressOf(user);
  const { workspaceId, actor } = caller;
  await assertVerifiedDomain(db, workspaceId, email);
  const active = user.active ?? true;
  const id = await db
    .transaction()
    .execute(async (trx) => {
      if (active) await assertMemberCapacity(trx, workspaceId, { countOpenInvitations: false });
      const inserted = await trx
        .insertInto('users')
        .values({
          email,
          name: displayNameOf(user, email).slice(0, 100),
          password_hash: null,
          email_verified_at: new Date(),
          provisioned_by_workspace_id: workspaceId,
        })
        .onConflict((oc) => oc.column('email').doNothing())
        .returning('id')
        .executeTakeFirst();
      const existing = inserted
        ? undefined
        : await trx
            .selectFrom('users')
            .select(['id', 'status', 'provisioned_by_workspace_id'])
            .where('email', '=', email)
            .forUpdate()
            .executeTakeFirstOrThrow();
      const account = { id: (inserted ?? existing)!.id };
      // An account this workspace's directory made, suspended when it was removed, comes back.
      if (existing?.status === 'SUSPENDED' && existing.provisioned_by_workspace_id === workspaceId)
        await trx.updateTable('users').set({ status: 'ACTIVE' }).where('id', '=', existing.id).execute();
      const member = await trx
        .insertInto('workspace_members')
        .values({
          workspace_id: workspaceId,
          user_id: account.id,
          role: 'MEMBER',
          status: active ? 'ACTIVE' : 'SUSPENDED',
          external_id: user.externalId ?? null,
          given_name: user.name?.givenName ?? null,
          family_name: user.name?.familyName ?? null,
          scim_managed: true,
        })
        .onConflict((oc) => oc.columns(['workspace_id', 'user_id']).doNothing())
        .returning(['id', 'user_id', 'role'])
        .executeTakeFirst();
      if (!member) throw uniqueness(`${email} is already a User of this workspace.`);
      await applyGroupRoles(trx, actor, workspaceId, [member.id]);
      await recordAudit(trx, actor, {
        action: 'scim.user_provisioned',
        targetType: 'member',
        targetId: account.id,
        workspaceId,
        metadata: { memberId: member.id, accountCreated: Boolean(inserted), active },
      });
      await emitEvent(trx, workspaceId, 'member.provisioned', memberEvent(member));
      return member.id;
    })
    .catch(mapUniqueness);
  return getUser({ db }, caller, id);
}

/** The other ACTIVE owners of the workspace besides `memberId`: the directory never removes the last. */
async function assertNotLastOwner(trx: Transaction<Database>, workspaceId: string, target: UserRow) {
  if (target.role !== 'OWNER') return;
  const others = await trx
    .selectFrom('workspace_members')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('role', '=', 'OWNER')
    .where('status', '=', 'ACTIVE')
    .where('id', '!=', target.id)
    .execute();
  if (others.length === 0)
    throw new ScimError(
      400,
      'This User is the last owner of the workspace: it cannot be deactivated or deleted.',
      'mutability',
    );
}

/** Stores a whole User (PUT, or the result of a PATCH) over `current`. */
async function storeUser(db: Db, caller: ScimCaller, current: UserRow, user: UserResource) {
  const { workspaceId, actor } = caller;
  const email = addressOf(user);
  const active = user.active ?? true;
  if (email !== current.email) {
    // Only an account this directory made is the directory's to rename.
    if (current.provisioned_by_workspace_id !== workspaceId)
      throw new ScimError(400, 'The userName of an account this directory did not create cannot change.', 'mutability');
    await assertVerifiedDomain(db, workspaceId, email);
  }
  await db
    .transaction()
    .execute(async (trx) => {
      const locked = await trx
        .selectFrom('workspace_members')
        .select(['status', 'role'])
        .where('id', '=', current.id)
        .forUpdate()
        .executeTakeFirst();
      if (!locked) throw notFound();
      const wasActive = locked.status === 'ACTIVE';
      if (wasActive && !active) await assertNotLastOwner(trx, workspaceId, current);
      if (!wasActive && active) await assertMemberCapacity(trx, workspaceId, { countOpenInvitations: false });
      await trx
        .updateTable('workspace_members')
        .set({
          status: active ? 'ACTIVE' : 'SUSPENDED',
          external_id: user.externalId ?? null,
          given_name: user.name?.givenName ?? null,
          family_name: user.name?.familyName ?? null,
          scim_managed: true,
          updated_at: new Date(),
        })
        .where('id', '=', current.id)
        .execute();
      if (current.provisioned_by_workspace_id === workspaceId)
        await trx
          .updateTable('users')
          .set({ email, name: displayNameOf(user, email).slice(0, 100), updated_at: new Date() })
          .where('id', '=', current.user_id)
          .execute();
      await applyGroupRoles(trx, actor, workspaceId, [current.id]);
      const audit = { targetType: 'member' as const, targetId: current.user_id, workspaceId };
      await recordAudit(trx, actor, {
        ...audit,
        action: 'scim.user_updated',
        metadata: { memberId: current.id, ...(email !== current.email ? { emailChanged: true } : {}) },
      });
      if (wasActive !== active) {
        await recordAudit(trx, actor, {
          ...audit,
          action: active ? 'scim.user_reactivated' : 'scim.user_suspended',
          metadata: { memberId: current.id },
        });
        await emitEvent(trx, workspaceId, active ? 'member.reactivated' : 'member.suspended', memberEvent(current));
      }
    })
    .catch(mapUniqueness);
  return getUser({ db }, caller, current.id);
}

export async function replaceUser({ db }: Deps, caller: ScimCaller, id: string, body: unknown) {
  const current = await loadUser(db, caller.workspaceId, id);
  return storeUser(db, caller, current, readResource(userResource, body));
}

export async function patchUser({ db }: Deps, caller: ScimCaller, id: string, body: unknown) {
  const current = await loadUser(db, caller.workspaceId, id);
  const patched = applyPatch(toScimUser(current, caller.baseUrl), body);
  return storeUser(db, caller, current, readResource(userResource, patched));
}

/**
 * Removes the membership. An account that SCIM or SSO created (of any workspace) and that is now a member
 * of nothing is suspended and its sessions end.
 */
export async function deleteUser({ db }: Deps, caller: ScimCaller, id: string) {
  const { workspaceId, actor } = caller;
  const current = await loadUser(db, workspaceId, id);
  await db.transaction().execute(async (trx) => {
    await trx.selectFrom('workspaces').select('id').where('id', '=', workspaceId).forUpdate().executeTakeFirstOrThrow();
    await assertNotLastOwner(trx, workspaceId, current);
    const removed = await trx
      .deleteFrom('workspace_members')
      .where('id', '=', current.id)
      .returning(['id', 'user_id', 'role'])
      .executeTakeFirst();
    if (!removed) throw notFound();
    await recordAudit(trx, actor, {
      action: 'scim.user_deprovisioned',
      targetType: 'member',
      targetId: current.user_id,
      workspaceId,
      metadata: { memberId: current.id, role: removed.role },
    });
    await emitEvent(trx, workspaceId, 'member.deprovisioned', memberEvent(removed));
    if (current.provisioned_by_workspace_id === null) return;
    const elsewhere = await trx
      .selectFrom('workspace_members')
      .select('id')
      .where('user_id', '=', current.user_id)
      .limit(1)
      .executeTakeFirst();
    if (elsewhere) return;
    const suspended = await trx
      .updateTable('users')
      .set({ status: 'SUSPENDED', updated_at: new Date() })
      .where('id', '=', current.user_id)
      .where('status', '=', 'ACTIVE')
      .returning('id')
      .executeTakeFirst();
    if (!suspended) return;
    const ended = await revokeAllSessions(trx, current.user_id, 'scim_deprovisioned');
    await recordAudit(trx, actor, {
      action: 'user.suspended',
      targetType: 'user',
      targetId: current.user_id,
      workspaceId,
      metadata: { reason: 'scim_deprovisioned', sessionsEnded: ended },
    });
  });
}
