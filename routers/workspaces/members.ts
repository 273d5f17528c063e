// A workspace's members and invitations: inviting, joining, changing roles and removing. Changes that could
// leave a workspace without an OWNER lock its members first (lockMembers).
import type { Transaction } from 'kysely';
import type { Database, WorkspaceRole } from '../../db/schema.js';
import { signedInUser, type Actor } from '../../server/platform/actor.js';
import type { AppDeps } from '../../server/platform/context.js';
import { sendAfterCommit } from '../../server/platform/email/mailer.js';
import { invitationMail, tokenLink } from '../../server/platform/email/templates.js';
import { AppError } from '../../server/platform/errors.js';
import { roleHas } from '../../server/platform/permissions.js';
import { randomToken, sha256Hex } from '../../server/platform/security/tokens.js';
import { recordAudit } from '../audit/service.js';
import { emitEvent } from '../events/emit.js';
import type { WorkspaceAccess } from './access.js';
import { listMembers, notFound } from './service.js';

type Deps = Pick<AppDeps, 'db'>;

export const INVITATION_TTL_DAYS = 7;

export const memberNotFound = () => new AppError('NOT_FOUND', 'This user is not a member of the workspace.');

type InviteDeps = Pick<AppDeps, 'db' | 'config' | 'mailer' | 'logger'>;

/**
 * Invites an address with a role; the mail carries a single-use link valid for 7 days. A new invitation
 * to the same address replaces the open one. Who may invite an OWNER is the procedure's builder's to decide
 * (routers/workspaces/router.ts).
 */
export async function invite(
  deps: InviteDeps,
  actor: Actor,
  input: { workspace: WorkspaceAccess; email: string; role: WorkspaceRole; inviterName: string },
) {
  const { workspace: access, inviterName } = input;
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
export async function acceptInvitation({ db }: Deps, actor: Actor, input: { token: string }) {
  const user = signedInUser(actor);
  const tokenHash = sha256Hex(input.token);
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
