// Inputs and outputs of the product-update routes.
import { z } from 'zod';

export const releaseOutput = z
  .object({
    version: z.string(),
    title: z.string(),
    date: z.string(),
    summary: z.string(),
    highlights: z.array(z.string()),
    fixes: z.array(z.string()),
    breakingChanges: z.array(z.string()),
    upgradeNotes: z.array(z.string()),
    docsUrl: z.string().nullable(),
    downloadAvailable: z.literal(false),
    download: z.object({
      available: z.literal(false),
      url: z.null(),
      checksum: z.null(),
      size: z.null(),
      message: z.string(),
    }),
  })
  .meta({ id: 'Release' });
export const listOutput = z.object({ items: z.array(releaseOutput) });
export const versionInput = z.object({ version: z.string().max(40) });

export const updateStatusOutput = z
  .object({
    installedVersion: z.string(),
    latestVersion: z.string(),
    updateAvailable: z.boolean(),
    channel: z.string(),
    checkEnabled: z.boolean(),
    provider: z.string(),
    licenseEnforcementEnabled: z.boolean(),
    licenseStatus: z.enum(['ACTIVE', 'REQUIRED', 'NOT_REQUIRED']),
    updateAccess: z.enum(['ACTIVE', 'LICENSE_REQUIRED']),
    message: z.string(),
    supportEmail: z.string(),
  })
  .meta({ id: 'UpdateStatus' });
