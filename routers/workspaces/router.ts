// Workspaces as their members see them: list, create, read, rename; members, invitations and roles.
import { z } from 'zod';
import { messageOutput } from '../auth/schemas.js';
import { authedProcedure, router, workspaceProcedure } from '../../server/platform/trpc.js';
import { actorOf } from '../../server/platform/actor.js';
import {
  acceptInvitationInput,
  acceptedInvitationOutput,
  deleteWorkspaceInput,
  deletionOutput,
  invitationIdInput,
  pendingInvitationOutput,
  transferOwnershipInput,
  changeRoleInput,
  createWorkspaceInput,
  invitationOutput,
  inviteInput,
  listOutput,
  memberInput,
  memberOutput,
  myWorkspaceOutput,
  updateWorkspaceInput,
  workspaceIdInput,
  workspaceOutput,
} from './schemas.js';
import * as workspaces from './service.js';
import * as lifecycle from './lifecycle.js';
import { subscriptionEnder } from '../billing/end-subscription.js';
import * as members from './members.js';
import * as invitations from './invitations.js';

const tags = ['Workspaces'];

export const workspacesRouter = router({
  list: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/workspaces',
        description: 'The workspaces the caller is a member of, with their role in each.',
        tags,
        summary: 'My workspaces, with my role in each',
      },
    })
    .input(z.void())
    .output(listOutput(myWorkspaceOutput))
    .query(({ ctx }) => workspaces.listMyWorkspaces(ctx, { memberships: ctx.memberships })),

  create: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/workspaces',
        description: 'Creates a workspace with the caller as its OWNER.',
        tags,
        summary: 'Create a workspace I own',
      },
      successStatus: 201,
    })
    .input(createWorkspaceInput)
    .output(myWorkspaceOutput)
    .mutation(({ ctx, input }) => workspaces.createWorkspace(ctx, actorOf(ctx), input)),

  acceptInvitation: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/invitations/accept',
        description:
          'Joins the workspace of an invitation with its token, in the role the invitation names. The token must be unused and not expired.',
        tags,
        summary: 'Join a workspace with an invitation token',
      },
      errors: ['FORBIDDEN', 'INVALID_TOKEN', 'MEMBER_LIMIT_REACHED', 'WORKSPACE_UNAVAILABLE'],
    })
    .input(acceptInvitationInput)
    .output(acceptedInvitationOutput)
    .mutation(({ ctx, input }) => invitations.acceptInvitation(ctx, actorOf(ctx), input)),

  get: workspaceProcedure('workspace.read')
    .meta({
      mcp: { scopes: ['read', 'workspace:read'] },
      openapi: {
        method: 'GET',
        path: '/workspaces/{workspaceId}',
        description: 'One workspace the caller is a member of: name, status, edition and dates.',
        tags,
        summary: 'One workspace',
      },
    })
    .input(workspaceIdInput)
    .output(myWorkspaceOutput)
    .query(({ ctx }) => workspaces.getWorkspace(ctx, { workspace: ctx.workspace })),

  update: workspaceProcedure((input) => (input.requireSso !== undefined ? 'ownership.manage' : 'workspace.update'))
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/workspaces/{workspaceId}',
        tags,
        summary: 'Rename a workspace, or require two-factor sign-in of its members',
        description:
          '`name` renames it. `requireMfa: true` refuses members without two-factor sign-in on every route of ' +
          'the workspace (403 `MFA_REQUIRED`; API keys keep working); only a caller who has two-factor sign-in ' +
          'may turn it on (403 `MFA_REQUIRED` otherwise). `requireSso` (OWNER only; needs an ACTIVE SSO connection ' +
          'and a VERIFIED domain, else 409 `INVALID_STATE`) refuses members on its verified domains whose session ' +
          'did not come through its connection (403 `SSO_REQUIRED`); owners keep access (break-glass, audited).',
      },
      errors: ['INVALID_STATE'],
    })
    .input(updateWorkspaceInput)
    .output(workspaceOutput)
    .mutation(({ ctx, input }) =>
      workspaces.updateWorkspace(ctx, actorOf(ctx), { ...input, callerMfaEnabled: ctx.user.mfa_enabled }),
    ),

  members: workspaceProcedure('workspace.read')
    .meta({
      mcp: { scopes: ['read', 'workspace:read'] },
      openapi: {
        method: 'GET',
        path: '/workspaces/{workspaceId}/members',
        description: 'The members of the workspace with their roles.',
        tags,
        summary: 'Members of a workspace',
      },
    })
    .input(workspaceIdInput)
    .output(listOutput(memberOutput))
    .query(async ({ ctx, input }) => ({ items: await workspaces.listMembers(ctx, input) })),

  // Only a role that may make owners (ownership.manage) may invite one.
  invite: workspaceProcedure((input) => (input.role === 'OWNER' ? 'ownership.manage' : 'members.manage'))
    .meta({
      openapi: {
        method: 'POST',
        path: '/workspaces/{workspaceId}/invitations',
        description:
          'Invites someone by e-mail in a role: mails them a link with a token for POST /invitations/accept. Inviting an OWNER takes ownership.manage (OWNER only).',
        tags,
        summary: 'Invite someone by e-mail',
      },
      errors: ['CONFLICT', 'MEMBER_LIMIT_REACHED'],
      successStatus: 201,
    })
    .input(inviteInput)
    .output(invitationOutput)
    .mutation(({ ctx, input }) =>
      invitations.invite(ctx, actorOf(ctx), { ...input, workspace: ctx.workspace, inviterName: ctx.user.name }),
    ),

  changeRole: workspaceProcedure('members.manage')
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/workspaces/{workspaceId}/members/{userId}',
        description:
          "Changes a member's role. The last OWNER cannot be demoted (409 CONFLICT); making or unmaking an OWNER takes ownership.manage.",
        tags,
        summary: "Change a member's role",
      },
      errors: ['CONFLICT'],
    })
    .input(changeRoleInput)
    .output(memberOutput)
    .mutation(({ ctx, input }) => members.changeMemberRole(ctx, actorOf(ctx), { ...input, workspace: ctx.workspace })),

  removeMember: workspaceProcedure('members.manage')
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/workspaces/{workspaceId}/members/{userId}',
        description:
          'Removes a member from the workspace; the last OWNER cannot be removed (409 CONFLICT). Webhooks subscribed to member.removed are told.',
        tags,
        summary: 'Remove a member',
      },
      errors: ['CONFLICT'],
    })
    .input(memberInput)
    .output(z.object({ message: z.string() }))
    .mutation(({ ctx, input }) => members.removeMember(ctx, actorOf(ctx), { ...input, workspace: ctx.workspace })),

  invitations: workspaceProcedure('members.manage')
    .meta({
      openapi: {
        method: 'GET',
        path: '/workspaces/{workspaceId}/invitations',
        description: 'The invitations not yet accepted, revoked or expired, newest first, with who sent each.',
        tags,
        summary: 'Pending invitations',
      },
    })
    .input(workspaceIdInput)
    .output(listOutput(pendingInvitationOutput))
    .query(({ ctx, input }) => invitations.listInvitations(ctx, input)),

  revokeInvitation: workspaceProcedure('members.manage')
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/workspaces/{workspaceId}/invitations/{invitationId}',
        description:
          'Revokes a pending invitation: its link then answers as an unknown token (400 INVALID_TOKEN). An invitation already accepted or revoked is 404.',
        tags,
        summary: 'Revoke an invitation',
      },
    })
    .input(invitationIdInput)
    .output(messageOutput)
    .mutation(({ ctx, input }) => invitations.revokeInvitation(ctx, actorOf(ctx), input)),

  resendInvitation: workspaceProcedure('members.manage')
    .meta({
      openapi: {
        method: 'POST',
        path: '/workspaces/{workspaceId}/invitations/{invitationId}/resend',
        description:
          'Mails a pending (or expired) invitation again with a new link, valid for another 7 days; the previous link stops working. Resending an invitation as OWNER takes ownership.manage.',
        tags,
        summary: 'Send an invitation again',
      },
    })
    .input(invitationIdInput)
    .output(invitationOutput)
    .mutation(({ ctx, input }) =>
      invitations.resendInvitation(ctx, actorOf(ctx), {
        ...input,
        workspace: ctx.workspace,
        inviterName: ctx.user.name,
      }),
    ),

  leave: workspaceProcedure('workspace.read')
    .meta({
      openapi: {
        method: 'POST',
        path: '/workspaces/{workspaceId}/leave',
        description:
          'The caller stops being a member. The last OWNER cannot leave (409 CONFLICT): hand the workspace over first, or delete it. Webhooks subscribed to member.left are told.',
        tags,
        summary: 'Leave a workspace',
      },
      errors: ['CONFLICT'],
    })
    .input(workspaceIdInput)
    .output(messageOutput)
    .mutation(({ ctx, input }) => members.leaveWorkspace(ctx, actorOf(ctx), input)),

  transferOwnership: workspaceProcedure('ownership.manage')
    .meta({
      openapi: {
        method: 'POST',
        path: '/workspaces/{workspaceId}/transfer-ownership',
        description:
          'Hands the workspace to another member: they become its OWNER, and every other owner (the caller included) an ADMIN. Someone who is not a member is 404.',
        tags,
        summary: 'Hand the workspace over to another member',
      },
    })
    .input(transferOwnershipInput)
    .output(listOutput(memberOutput))
    .mutation(async ({ ctx, input }) => ({ items: await members.transferOwnership(ctx, actorOf(ctx), input) })),

  delete: workspaceProcedure('ownership.manage')
    .meta({
      openapi: {
        method: 'POST',
        path: '/workspaces/{workspaceId}/delete',
        description:
          'Deletes the workspace after a grace period (WORKSPACE_DELETION_GRACE_DAYS, 30 by default): `confirmName` must be its name, typed back. Until `purgeAt` its members get 403 WORKSPACE_UNAVAILABLE, its API keys are refused, its webhooks hear only `workspace.deleted`, its subscription is canceled at the processor, and an owner can restore it; then its content is purged.',
        tags,
        summary: 'Delete a workspace (restorable until its purge)',
      },
      errors: ['INVALID_STATE'],
    })
    .input(deleteWorkspaceInput)
    .output(deletionOutput)
    .mutation(({ ctx, input }) => {
      const actor = actorOf(ctx);
      return lifecycle.requestDeletion({ ...ctx, endSubscription: subscriptionEnder(ctx, actor) }, actor, input);
    }),

  restore: workspaceProcedure('ownership.manage', { whilePendingDeletion: true })
    .meta({
      openapi: {
        method: 'POST',
        path: '/workspaces/{workspaceId}/restore',
        description:
          'Undoes a deletion before its purge: the workspace is ACTIVE again, on the default plan (subscribe again to a paid one). After `purgeAt`, or for a workspace that is not deleted, 409 INVALID_STATE.',
        tags,
        summary: 'Restore a deleted workspace',
      },
      errors: ['INVALID_STATE'],
    })
    .input(workspaceIdInput)
    .output(myWorkspaceOutput)
    .mutation(({ ctx }) => lifecycle.restoreWorkspace(ctx, actorOf(ctx), { workspace: ctx.workspace })),
});
