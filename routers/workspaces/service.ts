// Workspaces, their members and invitations, and the platform admin's operations on them. Every change is
// audited in its own transaction; changes that could leave a workspace without an OWNER lock its members.
import type { Kysely, Transaction } from 'kysely';
import {
  LIVE_SUBSCRIPTION_STATUSES,
  type Database,
  type WorkspaceRole,
  type WorkspaceStatus,
} from '../../db/schema.js';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import { sendAfterCommit } from '../../server/platform/email/mailer.js';
import { invitationMail, tokenLink } from '../../server/platform/email/templates.js';
import { mapItems, paginate, type ListRequest } from '../../server/platform/pagination.js';
import type { Config } from '../../server/platform/config.js';
import { roleHas } from '../../server/platform/permissions.js';
import { randomToken, sha256Hex } from '../../server/platform/security/tokens.js';
import { recordAudit, type Actor } from '../audit/service.js';
import { emitEvent } from '../events/emit.js';
import type { WorkspaceAccess } from './access.js';

type Db = Kysely<Database>;

export const INVITATION_TTL_DAYS = 7;

const notFound = () => new AppError('NOT_FOUND', 'Workspace not found.');
const memberNotFound = () => new AppError('NOT_FOUND', 'This user is not a member of the workspace.');

// ---------------------------------------------------------------- reading

/** Workspace rows as clients see them, with their member count; deleted ones never. */
function workspaceRows(db: Db) {
  return db
    .selectFrom('workspaces as w')
    .select((eb) => [
      'w.id',
      'w.name',
      'w.status',
      'w.edition',
      'w.is_personal',
      'w.require_mfa',
      'w.created_at',
      'w.updated_at',
      eb
        .selectFrom('workspace_members as m')
        .select((e) => e.fn.countAll<string>().as('n'))
        .whereRef('m.workspace_id', '=', 'w.id')
        .as('member_count'),
    ])
    .where('w.deleted_at', 'is', null);
}

type WorkspaceRow = Awaited<ReturnType<ReturnType<typeof workspaceRows>['executeTakeFirstOrThrow']>>;

function toWorkspace(w: WorkspaceRow) {
  return {
    id: w.id,
    name: w.name,
    status: w.status,
    edition: w.edition,
    isPersonal: w.is_personal,
    requireMfa: w.require_mfa,
    memberCount: Number(w.member_count ?? 0),
    createdAt: w.created_at.toISOString(),
    updatedAt: w.updated_at.toISOString(),
  };
}

/** A workspace that is not deleted, as clients see it (with its member count). */
export async function loadWorkspace(db: Db, workspaceId: string) {
  const row = await workspaceRows(db).where('w.id', '=', workspaceId).executeTakeFirst();
  if (!row) throw notFound();
  return toWorkspace(row);
}

/** The caller's workspaces, every state but deleted, in the order they joined them. */
export async function listMyWorkspaces(db: Db, memberships: WorkspaceAccess[]) {
  if (memberships.length === 0) return { items: [] };
  const rows = await workspaceRows(db)
    .where(
      'w.id',
      'in',
      memberships.map((m) => m.id),
    )
    .execute();
  const byId = new Map(rows.map((r) => [r.id, toWorkspace(r)]));
  return {
    items: memberships.flatMap((m) => {
      const w = byId.get(m.id);
      return w ? [{ ...w, role: m.role }] : [];
    }),
  };
}

export async function getWorkspace(db: Db, access: WorkspaceAccess) {
  return { ...(await loadWorkspace(db, access.id)), role: access.role };
}

export async function listMembers(db: Db, workspaceId: string) {
  const rows = await db
    .selectFrom('workspace_members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(['u.id', 'u.email', 'u.name', 'm.role', 'm.created_at'])
    .where('m.workspace_id', '=', workspaceId)
    .orderBy('m.created_at')
    .orderBy('u.id')
    .execute();
  return rows.map((r) => ({
    userId: r.id,
    email: r.email,
    name: r.name,
    role: r.role,
    joinedAt: r.created_at.toISOString(),
  }));
}

// ---------------------------------------------------------------- members' changes

/** A new workspace owned by `ownerId`, on the default plan (its edition and limits). */
export async function insertWorkspace(
  db: Db,
  opts: { name: string; ownerId: string; isPersonal?: boolean },
): Promise<WorkspaceAccess> {
  const plan = await db
    .selectFrom('plans')
    .select(['id', 'edition', 'limits'])
    .where('is_default', '=', true)
    .executeTakeFirst();
  const workspace = await db
    .insertInto('workspaces')
    .values({
      name: opts.name,
      is_personal: opts.isPersonal ?? false,
      plan_id: plan?.id ?? null,
      edition: plan?.edition ?? 'LITE',
      limits: JSON.stringify(plan?.limits ?? {}),
    })
    .returning(['id', 'name', 'status', 'edition', 'limits', 'require_mfa'])
    .executeTakeFirstOrThrow();
  await db
    .insertInto('workspace_members')
    .values({ workspace_id: workspace.id, user_id: opts.ownerId, role: 'OWNER' })
    .execute();
  return { ...workspace, role: 'OWNER' };
}

export async function createWorkspace(db: Db, actor: Actor & { userId: string }, input: { name: string }) {
  const id = await db.transaction().execute(async (trx) => {
    const { id } = await insertWorkspace(trx, { name: input.name, ownerId: actor.userId });
    await recordAudit(trx, actor, {
      action: 'workspace.created',
      targetType: 'workspace',
      targetId: id,
      workspaceId: id,
      metadata: { name: input.name },
    });
    return id;
  });
  return { ...(await loadWorkspace(db, id)), role: 'OWNER' as const };
}

export async function renameWorkspace(db: Db, actor: Actor, workspaceId: string, name: string) {
  return updateWorkspace(db, actor, workspaceId, { name });
}

/**
 * A member's change of a workspace: its name, and whether members need two-factor sign-in. Requiring it
 * takes a caller who has it (`callerMfaEnabled`), so no one locks themselves out by mistake.
 */
export async function updateWorkspace(
  db: Db,
  actor: Actor,
  workspaceId: string,
  changes: { name?: string; requireMfa?: boolean },
  callerMfaEnabled = true,
) {
  if (changes.requireMfa && !callerMfaEnabled)
    throw new AppError(
      'MFA_REQUIRED',
      'Turn on two-factor sign-in for your own account before requiring it of the members.',
    );
  await db.transaction().execute(async (trx) => {
    const updated = await trx
      .updateTable('workspaces')
      .set({
        ...(changes.name !== undefined ? { name: changes.name } : {}),
        ...(changes.requireMfa !== undefined ? { require_mfa: changes.requireMfa } : {}),
        updated_at: new Date(),
      })
      .where('id', '=', workspaceId)
      .where('deleted_at', 'is', null)
      .returning('id')
      .executeTakeFirst();
    if (!updated) throw notFound();
    await recordAudit(trx, actor, {
      action: 'workspace.updated',
      targetType: 'workspace',
      targetId: workspaceId,
      workspaceId,
      metadata: {
        ...(changes.name !== undefined ? { name: changes.name } : {}),
        ...(changes.requireMfa !== undefined ? { requireMfa: changes.requireMfa } : {}),
      },
    });
  });
  return loadWorkspace(db, workspaceId);
}

type InviteDeps = Pick<AppDeps, 'db' | 'config' | 'mailer' | 'logger'>;

/**
 * Invites an address with a role; the mail carries a single-use link valid for 7 days. A new invitation
 * to the same address replaces the open one. Who may invite an OWNER is the procedure's builder's to decide
 * (routers/workspaces/router.ts).
 */
export async function invite(
  deps: InviteDeps,
  actor: Actor,
  access: WorkspaceAccess,
  input: { email: string; role: WorkspaceRole },
  inviterName: string,
) {
  const email = input.email.trim().toLowerCase();
  const token = randomToken(32);
  const invitation = await deps.db.transaction().execute(async (trx) => {
    await assertMemberCapacity(trx, access.id, { countOpenInvitations: true, exceptEmail: email });
    const member = await trx
      .selectFrom('workspace_members as m')
      .innerJoin('users as u', 'u.id', 'm.user_id')
      .select('u.id')
      .where('m.workspace_id', '=', access.id)
      .where('u.email', '=', email)
      .executeTakeFirst();
    if (member) throw new AppError('CONFLICT', `${email} is already a member of this workspace.`);
    const now = new Date();
    await trx
      .updateTable('workspace_invitations')
      .set({ revoked_at: now })
      .where('workspace_id', '=', access.id)
      .where('email', '=', email)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .execute();
    const invitation = await trx
      .insertInto('workspace_invitations')
      .values({
        workspace_id: access.id,
        email,
        role: input.role,
        token_hash: sha256Hex(token),
        invited_by: actor.userId,
        expires_at: new Date(now.getTime() + INVITATION_TTL_DAYS * 86_400_000),
      })
      .returning(['id', 'workspace_id', 'email', 'role', 'expires_at', 'created_at'])
      .executeTakeFirstOrThrow();
    await recordAudit(trx, actor, {
      action: 'member.invited',
      targetType: 'invitation',
      targetId: invitation.id,
      workspaceId: access.id,
      metadata: { email, role: input.role },
    });
    return invitation;
  });

  await sendAfterCommit(
    deps,
    invitationMail({
      to: email,
      workspaceName: access.name,
      inviterName,
      role: input.role,
      link: tokenLink(deps.config.APP_URL, '/invitations/accept', token),
      validDays: INVITATION_TTL_DAYS,
    }),
  );
  return {
    id: invitation.id,
    workspaceId: invitation.workspace_id,
    email: invitation.email,
    role: invitation.role,
    expiresAt: invitation.expires_at.toISOString(),
    createdAt: invitation.created_at.toISOString(),
  };
}

/**
 * Uses an invitation: the signed-in user, whose address it was sent to, joins with the invited role, or
 * keeps the role they already have. Marking the invitation used is one conditional update, so two
 * acceptances add the member once.
 */
export async function acceptInvitation(db: Db, actor: Actor, user: { id: string; email: string }, token: string) {
  const tokenHash = sha256Hex(token);
  return db.transaction().execute(async (trx) => {
    // The workspace row is locked before the invitation's, the order of invite() (which replaces the open
    // invitation under that lock): in the other order, a new invitation sent while this one is accepted
    // deadlocks. The lock also keeps the membership read below true until the insert.
    const target = await trx
      .selectFrom('workspace_invitations')
      .select('workspace_id')
      .where('token_hash', '=', tokenHash)
      .executeTakeFirst();
    const workspace =
      target &&
      (await trx
        .selectFrom('workspaces')
        .select(['id', 'name', 'status', 'edition'])
        .where('id', '=', target.workspace_id)
        .where('deleted_at', 'is', null)
        .forUpdate()
        .executeTakeFirst());
    const invitation = await trx
      .updateTable('workspace_invitations')
      .set({ accepted_at: new Date(), accepted_by: user.id })
      .where('token_hash', '=', tokenHash)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', new Date())
      .returning(['id', 'workspace_id', 'email', 'role'])
      .executeTakeFirst();
    if (!invitation) throw new AppError('INVALID_TOKEN', 'This invitation link is invalid, expired or already used.');
    if (invitation.email !== user.email) {
      throw new AppError(
        'FORBIDDEN',
        'This invitation was sent to another e-mail address. Sign in with that address to accept it.',
      );
    }
    if (!workspace) throw new AppError('INVALID_TOKEN', 'This invitation link is invalid, expired or already used.');
    if (workspace.status !== 'ACTIVE') {
      throw new AppError(
        'WORKSPACE_UNAVAILABLE',
        `This workspace is ${workspace.status.toLowerCase()}; the invitation cannot be used now.`,
      );
    }
    // Already a member (say, made owner by a transfer since): nobody joins, so the member limit is not in play.
    const memberRole = async () =>
      (
        await trx
          .selectFrom('workspace_members')
          .select('role')
          .where('workspace_id', '=', workspace.id)
          .where('user_id', '=', user.id)
          .executeTakeFirst()
      )?.role;
    const existing = await memberRole();
    if (existing) return { workspace: { ...workspace, role: existing } };

    await assertMemberCapacity(trx, workspace.id, { countOpenInvitations: false });
    // The demo reset adds members without the workspace lock: a row it wrote meanwhile is kept, not a 500.
    const joined = await trx
      .insertInto('workspace_members')
      .values({ workspace_id: workspace.id, user_id: user.id, role: invitation.role })
      .onConflict((oc) => oc.columns(['workspace_id', 'user_id']).doNothing())
      .returning('role')
      .executeTakeFirst();
    if (!joined) return { workspace: { ...workspace, role: (await memberRole())! } };
    const { role } = joined;
    await emitEvent(trx, workspace.id, 'member.added', { userId: user.id, role });
    await recordAudit(trx, actor, {
      action: 'member.joined',
      targetType: 'member',
      targetId: user.id,
      workspaceId: workspace.id,
      metadata: { role, invitationId: invitation.id },
    });
    return { workspace: { ...workspace, role } };
  });
}

/** Members allowed when a workspace's limits say nothing (the Lite plan's). */
export const DEFAULT_MEMBER_LIMIT = 3;

/**
 * Refuses a new member (or invitation) beyond the plan's `limits.members`. Open invitations count, so
 * that invitations cannot be sent beyond the limit; the workspace row is locked so two at once count right.
 */
async function assertMemberCapacity(
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
async function lockMembers(trx: Transaction<Database>, workspaceId: string) {
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

const lastOwner = () =>
  new AppError('CONFLICT', 'A workspace keeps at least one owner: make someone else an owner first.');

export async function changeMemberRole(
  db: Db,
  actor: Actor,
  access: WorkspaceAccess,
  userId: string,
  role: WorkspaceRole,
) {
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
  const member = (await listMembers(db, access.id)).find((m) => m.userId === userId);
  if (!member) throw memberNotFound();
  return member;
}

export async function removeMember(db: Db, actor: Actor, access: WorkspaceAccess, userId: string) {
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

// ---------------------------------------------------------------- platform administration

async function owners(db: Db, workspaceIds: string[]) {
  if (workspaceIds.length === 0) return new Map<string, Array<{ id: string; email: string; name: string }>>();
  const rows = await db
    .selectFrom('workspace_members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(['m.workspace_id', 'u.id', 'u.email', 'u.name'])
    .where('m.workspace_id', 'in', workspaceIds)
    .where('m.role', '=', 'OWNER')
    .orderBy('m.created_at')
    .execute();
  const byWorkspace = new Map<string, Array<{ id: string; email: string; name: string }>>();
  for (const { workspace_id, ...owner } of rows)
    byWorkspace.set(workspace_id, [...(byWorkspace.get(workspace_id) ?? []), owner]);
  return byWorkspace;
}

/** Newest first, by page or cursor, each with its owners; the total is exact without filters. */
export async function adminListWorkspaces(
  deps: { db: Db; config: Config },
  filters: { search?: string; status?: WorkspaceStatus },
  request: ListRequest,
) {
  const { db } = deps;
  let query = workspaceRows(db);
  if (filters.search) query = query.where('w.name', 'ilike', `%${escapeLike(filters.search)}%`);
  if (filters.status) query = query.where('w.status', '=', filters.status);
  const page = await paginate(deps, query, {
    list: 'admin.workspaces',
    request,
    counters: filters.search || filters.status ? undefined : { scope: 'workspaces' },
    createdAt: 'w.created_at',
    id: 'w.id',
  });
  const ownersOf = await owners(
    db,
    page.items.map((r) => r.id),
  );
  return mapItems(page, (r) => ({ ...toWorkspace(r), owners: ownersOf.get(r.id) ?? [] }));
}

export async function adminGetWorkspace(db: Db, workspaceId: string) {
  const workspace = await loadWorkspace(db, workspaceId);
  const [ownersOf, members] = await Promise.all([owners(db, [workspaceId]), listMembers(db, workspaceId)]);
  return { ...workspace, owners: ownersOf.get(workspaceId) ?? [], members };
}

async function assertUserExists(db: Db, userId: string) {
  const user = await db.selectFrom('users').select('id').where('id', '=', userId).executeTakeFirst();
  if (!user) throw new AppError('NOT_FOUND', 'User not found.');
}

export async function adminCreateWorkspace(db: Db, actor: Actor, input: { name: string; ownerUserId: string }) {
  await assertUserExists(db, input.ownerUserId);
  const id = await db.transaction().execute(async (trx) => {
    const { id } = await insertWorkspace(trx, { name: input.name, ownerId: input.ownerUserId });
    await recordAudit(trx, actor, {
      action: 'workspace.created',
      targetType: 'workspace',
      targetId: id,
      workspaceId: id,
      metadata: { name: input.name, ownerUserId: input.ownerUserId },
    });
    return id;
  });
  return adminGetWorkspace(db, id);
}

export async function adminRenameWorkspace(db: Db, actor: Actor, workspaceId: string, name: string) {
  await renameWorkspace(db, actor, workspaceId, name);
  return adminGetWorkspace(db, workspaceId);
}

/** The admin's workspace state moves: the states each starts from, where it leads (409 INVALID_STATE otherwise). */
export const WORKSPACE_MOVES = {
  suspend: { from: ['ACTIVE'], to: 'SUSPENDED', action: 'workspace.suspended' },
  activate: { from: ['SUSPENDED'], to: 'ACTIVE', action: 'workspace.activated' },
  archive: { from: ['ACTIVE', 'SUSPENDED'], to: 'ARCHIVED', action: 'workspace.archived' },
  restore: { from: ['ARCHIVED'], to: 'ACTIVE', action: 'workspace.restored' },
} as const satisfies Record<string, { from: readonly WorkspaceStatus[]; to: WorkspaceStatus; action: string }>;

export type WorkspaceMove = keyof typeof WORKSPACE_MOVES;

export async function moveWorkspace(db: Db, actor: Actor, workspaceId: string, move: WorkspaceMove) {
  const rule = WORKSPACE_MOVES[move];
  await db.transaction().execute(async (trx) => {
    const workspace = await trx
      .selectFrom('workspaces')
      .select('status')
      .where('id', '=', workspaceId)
      .where('deleted_at', 'is', null)
      .forUpdate()
      .executeTakeFirst();
    if (!workspace) throw notFound();
    if (!(rule.from as readonly WorkspaceStatus[]).includes(workspace.status)) {
      throw new AppError(
        'INVALID_STATE',
        `The workspace is ${workspace.status}; ${move} applies only to a workspace that is ${rule.from.join(' or ')}.`,
      );
    }
    await trx
      .updateTable('workspaces')
      .set({ status: rule.to, updated_at: new Date() })
      .where('id', '=', workspaceId)
      .execute();
    await recordAudit(trx, actor, {
      action: rule.action,
      targetType: 'workspace',
      targetId: workspaceId,
      workspaceId,
      metadata: { from: workspace.status, to: rule.to },
    });
  });
  return adminGetWorkspace(db, workspaceId);
}

/**
 * Safe delete: a soft delete that hides the workspace everywhere (lists, sign-in context, its routes),
 * refused while a paid subscription is live (cancel it first, or customers keep being charged).
 */
export async function deleteWorkspace(db: Db, actor: Actor, workspaceId: string) {
  await db.transaction().execute(async (trx) => {
    const paid = await trx
      .selectFrom('subscriptions as s')
      .innerJoin('plans as p', 'p.id', 's.plan_id')
      .select('s.id')
      .where('s.workspace_id', '=', workspaceId)
      .where('s.status', 'in', [...LIVE_SUBSCRIPTION_STATUSES])
      .where('p.price_cents', '>', 0)
      .executeTakeFirst();
    if (paid) {
      throw new AppError(
        'SUBSCRIPTION_ACTIVE',
        'This workspace has an active paid subscription: cancel it before deleting the workspace.',
      );
    }
    const deleted = await trx
      .updateTable('workspaces')
      .set({ deleted_at: new Date(), updated_at: new Date() })
      .where('id', '=', workspaceId)
      .where('deleted_at', 'is', null)
      .returning('status')
      .executeTakeFirst();
    if (!deleted) throw notFound();
    await recordAudit(trx, actor, {
      action: 'workspace.deleted',
      targetType: 'workspace',
      targetId: workspaceId,
      workspaceId,
      metadata: { status: deleted.status },
    });
  });
  return { message: 'Workspace deleted.' };
}

/**
 * Makes `newOwnerUserId` the only OWNER (joining the workspace if needed); previous owners become ADMIN.
 * The workspace row is locked (lockMembers), so two transfers at once apply one after the other and leave one owner.
 */
export async function transferOwnership(db: Db, actor: Actor, workspaceId: string, newOwnerUserId: string) {
  await assertUserExists(db, newOwnerUserId);
  await db.transaction().execute(async (trx) => {
    const previous = (await lockMembers(trx, workspaceId)).filter(
      (m) => m.role === 'OWNER' && m.user_id !== newOwnerUserId,
    );
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
  });
  return adminGetWorkspace(db, workspaceId);
}

/** `%`, `_` and `\` match literally in an ILIKE pattern built from user input. */
export const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);
