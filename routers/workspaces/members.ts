// A workspace's members: the member limit, role changes, removal, leaving and handing the workspace over.
// Changes that could leave a workspace without an OWNER lock its members first (lockMembers). Invitations
// are in invitations.ts.
import type { Transaction } from 'kysely';
import type { Database, WorkspaceRole } from '../../db/schema.js';
import { signedInUser, type Actor } from '../../server/platform/actor.js';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import { roleHas } from '../../server/platform/permissions.js';
import { recordAudit } from '../audit/service.js';
import { emitEvent } from '../events/emit.js';
import type { WorkspaceAccess } from './access.js';
import { listMembers, notFound } from './service.js';

type Deps = Pick<AppDeps, 'db'>;

export const memberNotFound = () => new AppError('NOT_FOUND', 'This user is not a member of the workspace.');

/** Members allowed when a workspace's limits say nothing (the Lite plan's). */
export const DEFAULT_MEMBER_LIMIT = 3;

/**
 * Refuses a new member (or invitation) beyond the plan's `limits.members`. Open invitations count, so
 * that invitations cannot be sent beyond the limit; the workspace row is locked so two at once count right.
 */
export async function assertMemberCapacity(
  trx: Transaction<Database>,
  workspaceId: string,
  opts: { countOpenInvitations: boolean; exceptEmail?: string },
) {
  const workspace = await trx
    .selectFrom('workspaces')
    .select('limits')
    .where('id', '=', workspaceId)
    .forUpdate()
    .executeTakeFirstOrThrow();
  const limit = workspace.limits.members ?? DEFAULT_MEMBER_LIMIT;
  const members = await trx
    .selectFrom('workspace_members')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('workspace_id', '=', workspaceId)
    // A membership the directory suspended is not a seat.
    .where('status', '=', 'ACTIVE')
    .executeTakeFirstOrThrow();
  let taken = Number(members.n);
  if (opts.countOpenInvitations) {
    let open = trx
      .selectFrom('workspace_invitations')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('workspace_id', '=', workspaceId)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', new Date());
    if (opts.exceptEmail) open = open.where('email', '!=', opts.exceptEmail);
    taken += Number((await open.executeTakeFirstOrThrow()).n);
  }
  if (taken >= limit) {
    throw new AppError(
      'MEMBER_LIMIT_REACHED',
      `This workspace's plan allows ${limit} members (open invitations included). Upgrade the plan or remove someone first.`,
    );
  }
}

/**
 * Every member row of the workspace, locked: role changes are decided against a stable set of owners. The
 * workspace row is locked first, as transfers and capacity checks do and as the foreign key of the audit
 * row written afterwards needs (FOR KEY SHARE): in the other order, a transfer and a role change deadlock.
 */
export async function lockMembers(trx: Transaction<Database>, workspaceId: string) {
  const workspace = await trx
    .selectFrom('workspaces')
    .select('id')
    .where('id', '=', workspaceId)
    .where('deleted_at', 'is', null)
    .forUpdate()
    .executeTakeFirst();
  if (!workspace) throw notFound();
  return trx
    .selectFrom('workspace_members')
    .select(['user_id', 'role'])
    .where('workspace_id', '=', workspaceId)
    .forUpdate()
    .execute();
}

function assertMayTouchOwners(access: WorkspaceAccess, what: string) {
  if (!roleHas(access.role, 'ownership.manage')) throw new AppError('PERMISSION_DENIED', `Only an owner can ${what}.`);
}

export const lastOwner = () =>
  new AppError('CONFLICT', 'A workspace keeps at least one owner: make someone else an owner first.');

export async function changeMemberRole(
  deps: Deps,
  actor: Actor,
  input: { workspace: WorkspaceAccess; userId: string; role: WorkspaceRole },
) {
  const { db } = deps;
  const { workspace: access, userId, role } = input;
  await db.transaction().execute(async (trx) => {
    const members = await lockMembers(trx, access.id);
    const target = members.find((m) => m.user_id === userId);
    if (!target) throw memberNotFound();
    if (target.role === role) return;
    if (role === 'OWNER' || target.role === 'OWNER') assertMayTouchOwners(access, 'make or unmake owners');
    if (target.role === 'OWNER' && members.filter((m) => m.role === 'OWNER').length === 1) throw lastOwner();
    await trx
      .updateTable('workspace_members')
      .set({ role })
      .where('workspace_id', '=', access.id)
      .where('user_id', '=', userId)
      .execute();
    await recordAudit(trx, actor, {
      action: 'member.role_changed',
      targetType: 'member',
      targetId: userId,
      workspaceId: access.id,
      metadata: { from: target.role, to: role },
    });
  });
  const member = (await listMembers(deps, { workspaceId: access.id })).find((m) => m.userId === userId);
  if (!member) throw memberNotFound();
  return member;
}

export async function removeMember(
  { db }: Deps,
  actor: Actor,
  { workspace: access, userId }: { workspace: WorkspaceAccess; userId: string },
) {
  await db.transaction().execute(async (trx) => {
    const members = await lockMembers(trx, access.id);
    const target = members.find((m) => m.user_id === userId);
    if (!target) throw memberNotFound();
    if (target.role === 'OWNER') {
      assertMayTouchOwners(access, 'remove an owner');
      if (members.filter((m) => m.role === 'OWNER').length === 1) throw lastOwner();
    }
    await trx
      .deleteFrom('workspace_members')
      .where('workspace_id', '=', access.id)
      .where('user_id', '=', userId)
      .execute();
    await emitEvent(trx, access.id, 'member.removed', { userId, role: target.role });
    await recordAudit(trx, actor, {
      action: 'member.removed',
      targetType: 'member',
      targetId: userId,
      workspaceId: access.id,
      metadata: { role: target.role },
    });
  });
  return { message: 'Member removed.' };
}

/** Leaves a workspace; its last OWNER cannot (409 CONFLICT: hand it over or delete it first). */
export async function leaveWorkspace({ db }: Deps, actor: Actor, { workspaceId }: { workspaceId: string }) {
  const { id: userId } = signedInUser(actor);
  await db.transaction().execute(async (trx) => {
    const members = await lockMembers(trx, workspaceId);
    const me = members.find((m) => m.user_id === userId);
    if (!me) throw memberNotFound();
    if (me.role === 'OWNER' && members.filter((m) => m.role === 'OWNER').length === 1)
      throw new AppError(
        'CONFLICT',
        'You are the last owner: hand the workspace over (POST .../transfer-ownership) or delete it first.',
      );
    await trx
      .deleteFrom('workspace_members')
      .where('workspace_id', '=', workspaceId)
      .where('user_id', '=', userId)
      .execute();
    await emitEvent(trx, workspaceId, 'member.left', { userId, role: me.role });
    await recordAudit(trx, actor, {
      action: 'member.left',
      targetType: 'member',
      targetId: userId,
      workspaceId,
      metadata: { role: me.role },
    });
  });
  return { message: 'You left the workspace.' };
}

/**
 * Makes `newOwnerUserId` the workspace's OWNER and every other owner an ADMIN, under the lock of its
 * members, so two hand-overs at once leave one owner. `joinIfNeeded`: the platform admin's transfer may
 * name someone who is not a member yet; an owner's hand-over only a member (404 otherwise).
 */
export async function handOver(
  trx: Transaction<Database>,
  actor: Actor,
  input: { workspaceId: string; newOwnerUserId: string; joinIfNeeded: boolean },
) {
  const { workspaceId, newOwnerUserId } = input;
  const members = await lockMembers(trx, workspaceId);
  if (!input.joinIfNeeded && !members.some((m) => m.user_id === newOwnerUserId)) throw memberNotFound();
  const previous = members.filter((m) => m.role === 'OWNER' && m.user_id !== newOwnerUserId);
  await trx
    .insertInto('workspace_members')
    .values({ workspace_id: workspaceId, user_id: newOwnerUserId, role: 'OWNER' })
    .onConflict((oc) => oc.columns(['workspace_id', 'user_id']).doUpdateSet({ role: 'OWNER' }))
    .execute();
  if (previous.length) {
    await trx
      .updateTable('workspace_members')
      .set({ role: 'ADMIN' })
      .where('workspace_id', '=', workspaceId)
      .where(
        'user_id',
        'in',
        previous.map((p) => p.user_id),
      )
      .execute();
  }
  await recordAudit(trx, actor, {
    action: 'workspace.owner_transferred',
    targetType: 'workspace',
    targetId: workspaceId,
    workspaceId,
    metadata: { newOwnerUserId, previousOwnerUserIds: previous.map((p) => p.user_id) },
  });
}

/** An owner hands the workspace to another member (the owners, the caller included, become ADMIN). */
export async function transferOwnership(
  deps: Deps,
  actor: Actor,
  input: { workspaceId: string; newOwnerUserId: string },
) {
  await deps.db.transaction().execute((trx) => handOver(trx, actor, { ...input, joinIfNeeded: false }));
  return listMembers(deps, input);
}
