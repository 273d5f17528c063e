// Platform administration of workspaces: list, create with an owner, edit, state moves, safe delete and
// ownership transfer. Reads for admin and demo admin; writes through adminWriteProcedure.
import { z } from 'zod';
import { adminProcedure, adminWriteProcedure, router } from '../../server/platform/trpc.js';
import { actorOf } from '../audit/service.js';
import {
  adminCreateWorkspaceInput,
  adminUpdateWorkspaceInput,
  adminWorkspaceDetailOutput,
  adminWorkspaceListInput,
  adminWorkspacePageOutput,
  transferOwnerInput,
  workspaceIdInput,
} from './schemas.js';
import * as workspaces from './service.js';
import type { WorkspaceMove } from './service.js';

const tags = ['Admin: workspaces'];

const move = (name: WorkspaceMove, summary: string) =>
  adminWriteProcedure
    .meta({
      openapi: { method: 'POST', path: `/admin/workspaces/{workspaceId}/${name}`, tags, summary },
      errors: ['INVALID_STATE'],
    })
    .input(workspaceIdInput)
    .output(adminWorkspaceDetailOutput)
    .mutation(({ ctx, input }) => workspaces.moveWorkspace(ctx.db, actorOf(ctx), input.workspaceId, name));

export const adminWorkspacesRouter = router({
  list: adminProcedure
    .meta({ openapi: { method: 'GET', path: '/admin/workspaces', tags, summary: 'All workspaces, searchable' } })
    .input(adminWorkspaceListInput)
    .output(adminWorkspacePageOutput)
    .query(({ ctx, input: { page, limit, cursor, ...filters } }) =>
      workspaces.adminListWorkspaces(ctx, filters, { page, limit, cursor }),
    ),

  create: adminWriteProcedure
    .meta({
      openapi: { method: 'POST', path: '/admin/workspaces', tags, summary: 'Create a workspace for an owner' },
      errors: ['NOT_FOUND'],
      successStatus: 201,
    })
    .input(adminCreateWorkspaceInput)
    .output(adminWorkspaceDetailOutput)
    .mutation(({ ctx, input }) => workspaces.adminCreateWorkspace(ctx.db, actorOf(ctx), input)),

  get: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/workspaces/{workspaceId}',
        tags,
        summary: 'One workspace with its members',
      },
    })
    .input(workspaceIdInput)
    .output(adminWorkspaceDetailOutput)
    .query(({ ctx, input }) => workspaces.adminGetWorkspace(ctx.db, input.workspaceId)),

  update: adminWriteProcedure
    .meta({
      openapi: { method: 'PATCH', path: '/admin/workspaces/{workspaceId}', tags, summary: 'Rename a workspace' },
    })
    .input(adminUpdateWorkspaceInput)
    .output(adminWorkspaceDetailOutput)
    .mutation(({ ctx, input }) => workspaces.adminRenameWorkspace(ctx.db, actorOf(ctx), input.workspaceId, input.name)),

  suspend: move('suspend', 'Suspend an ACTIVE workspace'),
  activate: move('activate', 'Activate a SUSPENDED workspace'),
  archive: move('archive', 'Archive an ACTIVE or SUSPENDED workspace'),
  restore: move('restore', 'Restore an ARCHIVED workspace to ACTIVE'),

  transferOwner: adminWriteProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/admin/workspaces/{workspaceId}/transfer-owner',
        tags,
        summary: 'Make a user the only owner',
      },
    })
    .input(transferOwnerInput)
    .output(adminWorkspaceDetailOutput)
    .mutation(({ ctx, input }) =>
      workspaces.transferOwnership(ctx.db, actorOf(ctx), input.workspaceId, input.newOwnerUserId),
    ),

  delete: adminWriteProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/admin/workspaces/{workspaceId}',
        tags,
        summary: 'Safe delete (hidden everywhere)',
      },
      errors: ['SUBSCRIPTION_ACTIVE'],
    })
    .input(workspaceIdInput)
    .output(z.object({ message: z.string() }))
    .mutation(({ ctx, input }) => workspaces.deleteWorkspace(ctx.db, actorOf(ctx), input.workspaceId)),
});
