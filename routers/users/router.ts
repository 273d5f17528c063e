// Platform administration of users. Reads for admin and demo admin; writes through adminWriteProcedure.
import { listOutput } from '../../server/platform/pagination.js';
import { adminProcedure, adminWriteProcedure, router } from '../../server/platform/trpc.js';
import { actorOf } from '../../server/platform/actor.js';
import { adminUserDetailOutput, adminUserOutput, listUsersInput, updateUserInput, userIdInput } from './schemas.js';
import * as users from './service.js';

const tags = ['Admin: users'];

const move = (name: 'suspend' | 'activate', summary: string, description: string) =>
  adminWriteProcedure
    .meta({
      openapi: { method: 'POST', path: `/admin/users/{userId}/${name}`, tags, summary, description },
      errors: name === 'suspend' ? ['CONFLICT', 'INVALID_STATE'] : ['INVALID_STATE'],
    })
    .input(userIdInput)
    .output(adminUserDetailOutput)
    .mutation(({ ctx, input }) => users.moveUser(ctx, actorOf(ctx), { ...input, move: name }));

export const adminUsersRouter = router({
  list: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/users',
        description:
          'Every user, searchable by e-mail address or name and filtered by status or platform role, paginated.',
        tags,
        summary: 'All users, searchable',
      },
    })
    .input(listUsersInput)
    .output(listOutput(adminUserOutput))
    .query(({ ctx, input }) => users.listUsers(ctx, input)),

  get: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/users/{userId}',
        description: 'One user with their workspace memberships.',
        tags,
        summary: 'One user with their memberships',
      },
    })
    .input(userIdInput)
    .output(adminUserDetailOutput)
    .query(({ ctx, input }) => users.getUser(ctx, input)),

  update: adminWriteProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/admin/users/{userId}',
        description:
          "Changes a user's name or platform role. No admin can change their own platform role (409 CONFLICT).",
        tags,
        summary: 'Change name or platform role',
      },
      errors: ['CONFLICT'],
    })
    .input(updateUserInput)
    .output(adminUserDetailOutput)
    .mutation(({ ctx, input }) => users.updateUser(ctx, actorOf(ctx), input)),

  resetMfa: adminWriteProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/admin/users/{userId}/mfa/reset',
        tags,
        summary: "Turn a user's two-factor sign-in off",
        description:
          'For a user who lost both the authenticator and the backup codes: the secret and the backup codes are ' +
          'deleted, sign-in steps under way end, the user is told by mail, and the reset is audited. ' +
          '409 `MFA_NOT_ENABLED` when the user has no two-factor sign-in.',
      },
      errors: ['MFA_NOT_ENABLED'],
    })
    .input(userIdInput)
    .output(adminUserDetailOutput)
    .mutation(({ ctx, input }) => users.resetUserMfa(ctx, actorOf(ctx), input)),

  suspend: move(
    'suspend',
    'Suspend an ACTIVE user (applies to their very next request)',
    'Suspends an ACTIVE user: from their very next request, every token of theirs is refused (403 USER_SUSPENDED). Their sessions are kept, so activation restores them. No admin can suspend their own account.',
  ),
  activate: move('activate', 'Activate a SUSPENDED user', 'Activates a SUSPENDED user again.'),
});
