// Workspaces as their members see them: list, create, read, rename; members, invitations and roles.
import { z } from 'zod';
import { authedProcedure, router, workspaceProcedure } from '../../server/platform/trpc.js';
import { actorOf } from '../../server/platform/actor.js';
import {
  acceptInvitationInput,
  acceptedInvitationOutput,
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
import * as members from './members.js';

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
    .mutation(({ ctx, input }) => members.acceptInvitation(ctx, actorOf(ctx), input)),

  get: workspaceProcedure('workspace.read')
    .meta({
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

  update: workspaceProcedure('workspace.update')
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/workspaces/{workspaceId}',
        tags,
        summary: 'Rename a workspace, or require two-factor sign-in of its members',
        description:
          '`name` renames it. `requireMfa: true` refuses members without two-factor sign-in on every route of ' +
          'the workspace (403 `MFA_REQUIRED`; API keys keep working); only a caller who has two-factor sign-in ' +
          'may turn it on (403 `MFA_REQUIRED` otherwise).',
      },
    })
    .input(updateWorkspaceInput)
    .output(workspaceOutput)
    .mutation(({ ctx, input }) =>
      workspaces.updateWorkspace(ctx, actorOf(ctx), { ...input, callerMfaEnabled: ctx.user.mfa_enabled }),
    ),

  members: workspaceProcedure('workspace.read')
    .meta({
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
      members.invite(ctx, actorOf(ctx), { ...input, workspace: ctx.workspace, inviterName: ctx.user.name }),
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
});
