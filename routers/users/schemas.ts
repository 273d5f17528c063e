// Inputs and outputs of the platform administration of users.
import { z } from 'zod';
import { PLATFORM_ROLES, USER_STATUSES } from '../../db/schema.js';
import { listInput } from '../../server/platform/pagination.js';
import { displayName } from '../../server/platform/validation.js';
import { userOutput, workspaceSummaryOutput } from '../auth/schemas.js';

const isoDate = z.iso.datetime({ offset: true });

export const adminUserOutput = userOutput
  .extend({ lastLoginAt: isoDate.nullable(), updatedAt: isoDate })
  .meta({ id: 'AdminUser' });
export const adminUserDetailOutput = adminUserOutput
  .extend({ memberships: z.array(workspaceSummaryOutput) })
  .meta({ id: 'AdminUserDetail' });

export const userIdInput = z.object({ userId: z.uuid() });

export const listUsersInput = listInput.extend({
  search: z.string().trim().max(100).optional().meta({ description: 'Part of the e-mail address or name.' }),
  status: z.enum(USER_STATUSES).optional(),
  platformRole: z.enum(PLATFORM_ROLES).optional(),
});

export const updateUserInput = userIdInput
  .extend({ name: displayName(100).optional(), platformRole: z.enum(PLATFORM_ROLES).optional() })
  .refine((i) => i.name !== undefined || i.platformRole !== undefined, { error: 'Send name, platformRole or both.' });
