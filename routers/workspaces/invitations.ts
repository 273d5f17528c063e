// Invitations of a workspace: sending one, the invitee joining with its token, and the pending ones listed,
// revoked and sent again. Tokens are stored hashed; a revoked or replaced token answers as an unknown one.
import type { Database, WorkspaceRole } from '../../db/schema.js';
import type { Selectable } from 'kysely';
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
import { assertMemberCapacity } from './members.js';

type Deps = Pick<AppDeps, 'db'>;
type MailDeps = Pick<AppDeps, 'db' | 'config' | 'mailer' | 'logger'>;

export const INVITATION_TTL_DAYS = 7;

const invitationNotFound = () => new AppError('NOT_FOUND', 'No pending invitation with this id in the workspace.');
const expiresFrom = (now: Date) => new Date(now.getTime() + INVITATION_TTL_DAYS * 86_400_000);

type InvitationRow = Pick<
  Selectable<Database['workspace_invitations']>,
  'id' | 'workspace_id' | 'email' | 'role' | 'expires_at' | 'created_at'
>;

function toInvitation(i: InvitationRow) {
  return {
    id: i.id,
    workspaceId: i.workspace_id,
    email: i.email,
    role: i.role,
    expiresAt: i.expires_at.toISOString(),
    createdAt: i.created_at.toISOString(),
  };
}

function sendInvitation(
  deps: MailDeps,
  mail: { email: string; role: WorkspaceRole; token: string; workspaceName: string; inviterName: string },
) {
  return sendAfterCommit(
    deps,
    invitationMail({
      to: mail.email,
      workspaceName: mail.workspaceName,
      inviterName: mail.inviterName,
      role: mail.role,
      link: tokenLink(deps.config.APP_URL, '/invitations/accept', mail.token),
      validDays: INVITATION_TTL_DAYS,
    }),
  );
}

/**
 * Invites an address with a role; the mail carries a single-use link valid for 7 days. A new invitation
 * to the same address replaces the open one. Who may invite an OWNER is the procedure's builder's to decide
 * (routers/workspaces/router.ts).
 */
export async function invite(
  deps: MailDeps,
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
        expires_at: expiresFrom(now),
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

  await sendInvitation(deps, { email, role: input.role, token, workspaceName: access.name, inviterName });
  return toInvitation(invitation);
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

/** The pending invitations (not accepted, revoked or expired), newest first, with who sent each. */
export async function listInvitations({ db }: Deps, { workspaceId }: { workspaceId: string }) {
  const rows = await db
    .selectFrom('workspace_invitations as i')
    .leftJoin('users as u', (join) => join.onRef('u.id', '=', 'i.invited_by').on('u.deleted_at', 'is', null))
    .select([
      'i.id',
      'i.workspace_id',
      'i.email',
      'i.role',
      'i.expires_at',
      'i.created_at',
      'u.id as inviter_id',
      'u.name as inviter_name',
    ])
    .where('i.workspace_id', '=', workspaceId)
    .where('i.accepted_at', 'is', null)
    .where('i.revoked_at', 'is', null)
    .where('i.expires_at', '>', new Date())
    .orderBy('i.created_at', 'desc')
    .orderBy('i.id', 'desc')
    .execute();
  return {
    items: rows.map((r) => ({
      ...toInvitation(r),
      invitedBy: r.inviter_id && r.inviter_name !== null ? { id: r.inviter_id, name: r.inviter_name } : null,
    })),
  };
}

/** Revokes a pending invitation: its token then answers as an unknown one. */
export async function revokeInvitation(
  { db }: Deps,
  actor: Actor,
  { workspaceId, invitationId }: { workspaceId: string; invitationId: string },
) {
  await db.transaction().execute(async (trx) => {
    const revoked = await trx
      .updateTable('workspace_invitations')
      .set({ revoked_at: new Date() })
      .where('id', '=', invitationId)
      .where('workspace_id', '=', workspaceId)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .returning(['email', 'role'])
      .executeTakeFirst();
    if (!revoked) throw invitationNotFound();
    await recordAudit(trx, actor, {
      action: 'member.invitation_revoked',
      targetType: 'invitation',
      targetId: invitationId,
      workspaceId,
      metadata: { role: revoked.role },
    });
  });
  return { message: 'Invitation revoked.' };
}

/**
 * Sends a pending (or expired, not revoked) invitation again with a new token, valid for another
 * INVITATION_TTL_DAYS: the old token then answers as an unknown one.
 */
export async function resendInvitation(
  deps: MailDeps,
  actor: Actor,
  input: { workspace: WorkspaceAccess; invitationId: string; inviterName: string },
) {
  const { workspace, invitationId } = input;
  const token = randomToken(32);
  const invitation = await deps.db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable('workspace_invitations')
      .set({ token_hash: sha256Hex(token), expires_at: expiresFrom(new Date()) })
      .where('id', '=', invitationId)
      .where('workspace_id', '=', workspace.id)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .returning(['id', 'workspace_id', 'email', 'role', 'expires_at', 'created_at'])
      .executeTakeFirst();
    if (!row) throw invitationNotFound();
    // As inviting an OWNER does (the procedure's permission for invite), renewing such an invitation takes it.
    if (row.role === 'OWNER' && !roleHas(workspace.role, 'ownership.manage'))
      throw new AppError('PERMISSION_DENIED', 'Only an owner can send an invitation to become an owner.');
    await recordAudit(trx, actor, {
      action: 'member.invitation_resent',
      targetType: 'invitation',
      targetId: invitationId,
      workspaceId: workspace.id,
      metadata: { role: row.role },
    });
    return row;
  });
  await sendInvitation(deps, { ...invitation, token, workspaceName: workspace.name, inviterName: input.inviterName });
  return toInvitation(invitation);
}
