// Platform administration of workspaces: list, create with an owner, edit, state moves, safe delete and
// ownership transfer. Reads for admin and demo admin; writes through adminWriteProcedure.
import { z } from 'zod';
import { adminProcedure, adminWriteProcedure, router } from '../../server/platform/trpc.js';
import { actorOf } from '../../server/platform/actor.js';
import {
  adminCreateWorkspaceInput,
  adminUpdateWorkspaceInput,
  adminWorkspaceDetailOutput,
  adminWorkspaceListInput,
  adminWorkspacePageOutput,
  transferOwnerInput,
  workspaceIdInput,
} from './schemas.js';
import * as workspaces from './admin.js';
import type { WorkspaceMove } from './admin.js';

const tags = ['Admin: workspaces'];

const move = (name: WorkspaceMove, summary: string, description: string) =>
  adminWriteProcedure
    .meta({
      openapi: { method: 'POST', path: `/admin/workspaces/{workspaceId}/${name}`, tags, summary, description },
      errors: ['INVALID_STATE'],
    })
    .input(workspaceIdInput)
    .output(adminWorkspaceDetailOutput)
    .mutation(({ ctx, input }) => workspaces.moveWorkspace(ctx, actorOf(ctx), { ...input, move: name }));

export const adminWorkspacesRouter = router({
  list: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/workspaces',
        description: 'Every workspace, searchable by name and filtered by status, with its owners, paginated.',
        tags,
        summary: 'All workspaces, searchable',
      },
    })
    .input(adminWorkspaceListInput)
    .output(adminWorkspacePageOutput)
    .query(({ ctx, input }) => workspaces.adminListWorkspaces(ctx, input)),

  create: adminWriteProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/admin/workspaces',
        description: 'Creates a workspace for an existing user, who becomes its OWNER.',
        tags,
        summary: 'Create a workspace for an owner',
      },
      errors: ['NOT_FOUND'],
      successStatus: 201,
    })
    .input(adminCreateWorkspaceInput)
    .output(adminWorkspaceDetailOutput)
    .mutation(({ ctx, input }) => workspaces.adminCreateWorkspace(ctx, actorOf(ctx), input)),

  get: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/workspaces/{workspaceId}',
        description: 'One workspace with its owners and members.',
        tags,
        summary: 'One workspace with its members',
      },
    })
    .input(workspaceIdInput)
    .output(adminWorkspaceDetailOutput)
    .query(({ ctx, input }) => workspaces.adminGetWorkspace(ctx, input)),

  update: adminWriteProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/admin/workspaces/{workspaceId}',
        description: 'Renames a workspace.',
        tags,
        summary: 'Rename a workspace',
      },
    })
    .input(adminUpdateWorkspaceInput)
    .output(adminWorkspaceDetailOutput)
    .mutation(({ ctx, input }) => workspaces.adminRenameWorkspace(ctx, actorOf(ctx), input)),

  suspend: move(
    'suspend',
    'Suspend an ACTIVE workspace',
    'Suspends an ACTIVE workspace: its members, keys and webhooks stop working (403 WORKSPACE_UNAVAILABLE) until it is activated.',
  ),
  activate: move('activate', 'Activate a SUSPENDED workspace', 'Activates a SUSPENDED workspace again.'),
  archive: move(
    'archive',
    'Archive an ACTIVE or SUSPENDED workspace',
    'Archives an ACTIVE or SUSPENDED workspace: read-only history, no access for members.',
  ),
  restore: move('restore', 'Restore an ARCHIVED workspace to ACTIVE', 'Restores an ARCHIVED workspace to ACTIVE.'),

  transferOwner: adminWriteProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/admin/workspaces/{workspaceId}/transfer-owner',
        description:
          'Makes a user the only OWNER of the workspace (added as a member if they are not one); the previous owners become ADMIN.',
        tags,
        summary: 'Make a user the only owner',
      },
    })
    .input(transferOwnerInput)
    .output(adminWorkspaceDetailOutput)
    .mutation(({ ctx, input }) => workspaces.transferOwnership(ctx, actorOf(ctx), input)),

  delete: adminWriteProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/admin/workspaces/{workspaceId}',
        description:
          'Deletes a workspace safely: it is hidden everywhere and its members lose access; its records stay for the audit log.',
        tags,
        summary: 'Safe delete (hidden everywhere)',
      },
      errors: ['SUBSCRIPTION_ACTIVE'],
    })
    .input(workspaceIdInput)
    .output(z.object({ message: z.string() }))
    .mutation(({ ctx, input }) => workspaces.deleteWorkspace(ctx, actorOf(ctx), input)),
});
