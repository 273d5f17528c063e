// Storage status and workspace branding (the logo upload itself is a plain multipart route: uploads.ts).
import { z } from 'zod';
import { authedProcedure, router, workspaceProcedure } from '../../server/platform/trpc.js';
import { actorOf } from '../../server/platform/actor.js';
import { brandingInput, brandingOutput, providerStatusOutput, updateBrandingInput } from './schemas.js';
import * as files from './service.js';

export const filesRouter = router({
  providerStatus: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/storage/provider-status',
        description:
          'The storage provider (LOCAL or S3), whether it is configured, the upload size limit and the accepted types.',
        tags: ['Storage'],
        summary: 'The storage provider and its limits',
      },
    })
    .input(z.void())
    .output(providerStatusOutput)
    .query(({ ctx }) => files.providerStatus(ctx)),

  getBranding: workspaceProcedure('workspace.read')
    .meta({
      openapi: {
        method: 'GET',
        path: '/workspaces/{workspaceId}/branding',
        description: "The workspace's display name, colours and logo URL.",
        tags: ['Workspaces'],
        summary: 'Display name, colours and logo',
      },
    })
    .input(brandingInput)
    .output(brandingOutput)
    .query(({ ctx, input }) => files.getBranding(ctx, input)),

  updateBranding: workspaceProcedure('branding.manage')
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/workspaces/{workspaceId}/branding',
        description:
          "Sets the workspace's display name and colours (#RRGGBB); null clears one. The logo is set with POST /workspaces/{workspaceId}/branding/logo.",
        tags: ['Workspaces'],
        summary: 'Set display name and colours',
      },
    })
    .input(updateBrandingInput)
    .output(brandingOutput)
    .mutation(({ ctx, input }) => files.updateBranding(ctx, actorOf(ctx), input)),
});
