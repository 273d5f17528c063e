// Inputs and outputs of the account settings routes: profile, e-mail change, deletion and data export.
import { z } from 'zod';
import { EXPORT_STATUSES, WORKSPACE_ROLES, WORKSPACE_STATUSES } from '../../db/schema.js';
import { displayName } from '../../server/platform/validation.js';
import { emailSchema, tokenInput, userOutput } from '../auth/schemas.js';

const isoDate = z.iso.datetime({ offset: true });
const password = z.string().min(1, { error: 'Password is required.' }).max(1024);
const code = z
  .string()
  .min(1)
  .max(64)
  .meta({ description: 'A code of the authenticator app, or one of the backup codes.' });

export const updateProfileInput = z.object({ name: displayName(100).meta({ examples: ['Jane Doe'] }) });
export { userOutput, tokenInput };

export const changeEmailInput = z.object({
  newEmail: emailSchema,
  password: password
    .optional()
    .meta({ description: 'The current password; accounts without one send none and need a recent sign-in.' }),
});

export const deleteAccountInput = z.object({
  password: password.optional().meta({ description: 'The current password, when the account has one.' }),
  code: code.optional().meta({ description: 'When two-factor sign-in is on: a TOTP or a backup code.' }),
});

export const exportIdInput = z.object({ exportId: z.uuid() });
export const exportOutput = z
  .object({
    id: z.uuid(),
    status: z.enum(EXPORT_STATUSES),
    createdAt: isoDate,
    expiresAt: isoDate.nullable().meta({ description: 'Null until READY; the archive is deleted then.' }),
  })
  .meta({ id: 'DataExport' });

const text = (max: number) => z.string().meta({ maxLength: max });

/** The archive of a data export: everything the service keeps about the person, no secret. */
export const exportArchiveOutput = z
  .object({
    exportedAt: isoDate,
    user: userOutput.extend({ lastLoginAt: isoDate.nullable() }),
    identities: z.array(
      z.object({
        provider: text(32),
        email: text(254).nullable(),
        createdAt: isoDate,
        lastUsedAt: isoDate.nullable(),
      }),
    ),
    sessions: z.array(
      z.object({
        id: z.uuid(),
        createdAt: isoDate,
        lastUsedAt: isoDate,
        userAgent: text(512).nullable(),
        ipAddress: text(64).nullable(),
        endedAt: isoDate.nullable(),
      }),
    ),
    memberships: z.array(
      z.object({
        workspaceId: z.uuid(),
        workspaceName: text(100),
        workspaceStatus: z.enum(WORKSPACE_STATUSES),
        role: z.enum(WORKSPACE_ROLES),
        joinedAt: isoDate,
      }),
    ),
    generations: z.array(
      z.object({
        id: z.uuid(),
        workspaceId: z.uuid(),
        model: text(100),
        prompt: z.string(),
        output: z.string(),
        status: text(32),
        createdAt: isoDate,
      }),
    ),
    auditEntries: z.array(
      z.object({
        action: text(100),
        targetType: text(32).nullable(),
        targetId: text(100).nullable(),
        workspaceId: z.uuid().nullable(),
        ip: text(64).nullable(),
        createdAt: isoDate,
      }),
    ),
  })
  .meta({ id: 'DataExportArchive' });
