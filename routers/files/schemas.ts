// Inputs and outputs of the storage status and workspace branding routes (the multipart uploads are
// plain routes, documented in uploads.ts).
import { z } from 'zod';
import { displayName } from '../../server/platform/validation.js';

const color = z.string().regex(/^#[0-9a-fA-F]{6}$/, { error: 'A colour as #RRGGBB.' });

export const providerStatusOutput = z.object({
  provider: z.enum(['LOCAL', 'S3']),
  configured: z.boolean(),
  maxUploadBytes: z.number().int(),
  acceptedTypes: z.array(z.string()),
});

export const brandingInput = z.object({ workspaceId: z.uuid() });

export const updateBrandingInput = z
  .object({
    workspaceId: z.uuid(),
    displayName: displayName(100).nullable().optional(),
    primaryColor: color.nullable().optional(),
    accentColor: color.nullable().optional(),
  })
  .refine((i) => i.displayName !== undefined || i.primaryColor !== undefined || i.accentColor !== undefined, {
    error: 'Send displayName, primaryColor or accentColor.',
  });
export type BrandingChanges = Omit<z.infer<typeof updateBrandingInput>, 'workspaceId'>;

export const brandingOutput = z.object({
  workspaceId: z.uuid(),
  displayName: z.string().nullable(),
  primaryColor: z.string().nullable(),
  accentColor: z.string().nullable(),
  logoUrl: z.string().nullable(),
});
