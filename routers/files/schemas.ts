// Inputs and outputs of the storage status and workspace branding routes (the multipart uploads are
// plain routes, documented in uploads.ts).
import { z } from 'zod';
import { displayName } from '../../server/platform/validation.js';

const color = z
  .string()
  .regex(/^#[0-9a-fA-F]{6}$/, { error: 'A colour as #RRGGBB.' })
  .max(7, { error: 'A colour as #RRGGBB.' });

export const providerStatusOutput = z
  .object({
    provider: z.enum(['LOCAL', 'S3']),
    configured: z.boolean(),
    maxUploadBytes: z.number().int(),
    acceptedTypes: z.array(z.string()),
  })
  .meta({ id: 'StorageProviderStatus' });

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

export const brandingOutput = z
  .object({
    workspaceId: z.uuid(),
    displayName: z.string().nullable(),
    primaryColor: z.string().nullable(),
    accentColor: z.string().nullable(),
    logoUrl: z.string().nullable(),
  })
  .meta({ id: 'Branding' });

/** The answers of the multipart uploads (uploads.ts), as their OpenAPI entries name them. */
export const storedFileOutput = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    contentType: z.enum(['image/png', 'image/jpeg', 'image/webp', 'image/gif', 'application/pdf']),
    size: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31 - 1)
      .meta({ description: 'Bytes as stored.' }),
    name: z
      .string()
      .max(255)
      .meta({ description: 'The file name as sent, made safe.', examples: ['report.pdf'] }),
    url: z
      .string()
      .max(64)
      .meta({
        description: 'Where to download it (GET).',
        examples: ['/storage/files/3f1c2a9e-6b7d-4c1e-9a2b-5d4e3f2a1b0c'],
      }),
    createdAt: z.iso.datetime({ offset: true }),
  })
  .meta({ id: 'StoredFile' });

export const avatarOutput = z
  .object({
    avatarUrl: z
      .string()
      .max(64)
      .meta({ examples: ['/users/3f1c2a9e-6b7d-4c1e-9a2b-5d4e3f2a1b0c/avatar'] }),
    contentType: z.literal('image/webp'),
    width: z.literal(512),
    height: z.literal(512),
    size: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31 - 1),
  })
  .meta({ id: 'Avatar' });

export const logoOutput = z
  .object({
    logoUrl: z
      .string()
      .max(64)
      .meta({ examples: ['/storage/files/3f1c2a9e-6b7d-4c1e-9a2b-5d4e3f2a1b0c'] }),
    contentType: z.literal('image/webp'),
    size: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31 - 1),
  })
  .meta({ id: 'Logo' });
