// Platform administration of users. Reads for admin and demo admin; writes through adminWriteProcedure.
import { z } from 'zod';
import { PLATFORM_ROLES, USER_STATUSES } from '../../db/schema.js';
import { userOutput, workspaceSummaryOutput } from '../auth/schemas.js';
import { pageOutput, paginationInput } from '../../server/platform/pagination.js';
import { displayName } from '../../server/platform/validation.js';
import { adminProcedure, adminWriteProcedure, router } from '../../server/platform/trpc.js';
import { actorOf } from '../audit/service.js';
import * as users from './service.js';

const tags = ['Admin: users'];
const isoDate = z.iso.datetime({ offset: true });

const adminUserOutput = userOutput.extend({ lastLoginAt: isoDate.nullable(), updatedAt: isoDate });
const adminUserDetailOutput = adminUserOutput.extend({ memberships: z.array(workspaceSummaryOutput) });

const userIdInput = z.object({ userId: z.uuid() });

const move = (name: 'suspend' | 'activate', summary: string) =>
  adminWriteProcedure
    .meta({ openapi: { method: 'POST', path: `/admin/users/{userId}/${name}`, tags, summary }, errors: name === 'suspend' ? ['CONFLICT', 'INVALID_STATE'] : ['INVALID_STATE'] })
    .input(userIdInput)
    .output(adminUserDetailOutput)
    .mutation(({ ctx, input }) => users.moveUser(ctx.db, actorOf(ctx), input.userId, name));

export const adminUsersRouter = router({
  list: adminProcedure
    .meta({ openapi: { method: 'GET', path: '/admin/users', tags, summary: 'All users, searchable' } })
    .input(
      paginationInput.extend({
        search: z.string().trim().max(100).optional().meta({ description: 'Part of the e-mail address or name.' }),
        status: z.enum(USER_STATUSES).optional(),
        platformRole: z.enum(PLATFORM_ROLES).optional(),
      }),
    )
    .output(pageOutput(adminUserOutput))
    .query(({ ctx, input: { page, limit, ...filters } }) => users.listUsers(ctx.db, filters, { page, limit })),

  get: adminProcedure
    .meta({ openapi: { method: 'GET', path: '/admin/users/{userId}', tags, summary: 'One user with their memberships' } })
    .input(userIdInput)
    .output(adminUserDetailOutput)
    .query(({ ctx, input }) => users.getUser(ctx.db, input.userId)),

  update: adminWriteProcedure
    .meta({ openapi: { method: 'PATCH', path: '/admin/users/{userId}', tags, summary: 'Change name or platform role' }, errors: ['CONFLICT'] })
    .input(
      userIdInput
        .extend({ name: displayName(100).optional(), platformRole: z.enum(PLATFORM_ROLES).optional() })
        .refine((i) => i.name !== undefined || i.platformRole !== undefined, { error: 'Send name, platformRole or both.' }),
    )
    .output(adminUserDetailOutput)
    .mutation(({ ctx, input: { userId, ...changes } }) => users.updateUser(ctx.db, actorOf(ctx), userId, changes)),

  suspend: move('suspend', 'Suspend an ACTIVE user (applies to their very next request)'),
  activate: move('activate', 'Activate a SUSPENDED user'),
});
