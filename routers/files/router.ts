// Storage status and workspace branding (the logo upload itself is a plain multipart route: uploads.ts).
import { z } from 'zod';
import { authedProcedure, router, workspaceProcedure } from '../../server/platform/trpc.js';
import { displayName } from '../../server/platform/validation.js';
import { actorOf, recordAudit } from '../audit/service.js';

const color = z.string().regex(/^#[0-9a-fA-F]{6}$/, { error: 'A colour as #RRGGBB.' });
const brandingOutput = z.object({
  workspaceId: z.uuid(),
  displayName: z.string().nullable(),
  primaryColor: z.string().nullable(),
  accentColor: z.string().nullable(),
  logoUrl: z.string().nullable(),
});

async function branding(db: Parameters<typeof recordAudit>[0], workspaceId: string) {
  const w = await db
    .selectFrom('workspaces')
    .select(['id', 'branding_display_name', 'branding_primary_color', 'branding_accent_color', 'logo_file_id'])
    .where('id', '=', workspaceId)
    .executeTakeFirstOrThrow();
  return {
    workspaceId: w.id,
    displayName: w.branding_display_name,
    primaryColor: w.branding_primary_color,
    accentColor: w.branding_accent_color,
    logoUrl: w.logo_file_id ? `/storage/files/${w.logo_file_id}` : null,
  };
}

export const filesRouter = router({
  providerStatus: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/storage/provider-status', tags: ['Storage'], summary: 'The storage provider and its limits' } })
    .input(z.void())
    .output(z.object({ provider: z.enum(['LOCAL', 'S3']), configured: z.boolean(), maxUploadBytes: z.number().int(), acceptedTypes: z.array(z.string()) }))
    .query(({ ctx }) => ({
      provider: ctx.storage.provider,
      configured: ctx.storage.configured,
      maxUploadBytes: 10 * 1024 * 1024,
      acceptedTypes: ['image/png', 'image/jpeg', 'image/webp', 'image/gif', 'application/pdf'],
    })),

  getBranding: workspaceProcedure('workspace.read')
    .meta({ openapi: { method: 'GET', path: '/workspaces/{workspaceId}/branding', tags: ['Workspaces'], summary: 'Display name, colours and logo' } })
    .input(z.object({ workspaceId: z.uuid() }))
    .output(brandingOutput)
    .query(({ ctx }) => branding(ctx.db, ctx.workspace.id)),

  updateBranding: workspaceProcedure('branding.manage')
    .meta({ openapi: { method: 'PATCH', path: '/workspaces/{workspaceId}/branding', tags: ['Workspaces'], summary: 'Set display name and colours' } })
    .input(
      z
        .object({
          workspaceId: z.uuid(),
          displayName: displayName(100).nullable().optional(),
          primaryColor: color.nullable().optional(),
          accentColor: color.nullable().optional(),
        })
        .refine((i) => i.displayName !== undefined || i.primaryColor !== undefined || i.accentColor !== undefined, { error: 'Send displayName, primaryColor or accentColor.' }),
    )
    .output(brandingOutput)
    .mutation(async ({ ctx, input }) => {
      await ctx.db.transaction().execute(async (trx) => {
        await trx
          .updateTable('workspaces')
          .set({
            ...(input.displayName !== undefined && { branding_display_name: input.displayName }),
            ...(input.primaryColor !== undefined && { branding_primary_color: input.primaryColor }),
            ...(input.accentColor !== undefined && { branding_accent_color: input.accentColor }),
            updated_at: new Date(),
          })
          .where('id', '=', ctx.workspace.id)
          .execute();
        await recordAudit(trx, actorOf(ctx), { action: 'workspace.updated', targetType: 'workspace', targetId: ctx.workspace.id, workspaceId: ctx.workspace.id, metadata: { branding: true } });
      });
      return branding(ctx.db, ctx.workspace.id);
    }),
});
