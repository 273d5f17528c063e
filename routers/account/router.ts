// The account settings of the signed-in user: profile, e-mail change, deletion and data export. Paths sit
// under /auth beside the other routes of one's own account.
import { authedProcedure, publicProcedure, router } from '../../server/platform/trpc.js';
import { actorOf } from '../../server/platform/actor.js';
import { webhookQueueEnabled } from '../../server/platform/queue-mode.js';
import { messageOutput } from '../auth/schemas.js';
import { subscriptionEnder } from '../billing/end-subscription.js';
import * as account from './service.js';
import { deleteAccount, tombstoneEmail } from './erasure.js';
import * as dataExports from './exports.js';
import {
  changeEmailInput,
  deleteAccountInput,
  exportArchiveOutput,
  exportIdInput,
  exportOutput,
  tokenInput,
  updateProfileInput,
  userOutput,
} from './schemas.js';

const tags = ['Account'];

export const accountRouter = router({
  update: authedProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/auth/me',
        description: "Changes the signed-in user's display name; answers the user.",
        tags,
        summary: 'Change my name',
      },
    })
    .input(updateProfileInput)
    .output(userOutput)
    .mutation(({ ctx, input }) => account.updateProfile(ctx, actorOf(ctx), input)),

  changeEmail: authedProcedure
    .meta({
      rateLimit: 'auth',
      openapi: {
        method: 'POST',
        path: '/auth/change-email',
        description:
          'Starts a change of address: mails a single-use link (valid 1 hour) to the new address and a notice to the current one; the address changes when the link is used (POST /auth/confirm-email-change). Send the current `password`; an account without one sends none and needs a sign-in within the last 10 minutes (403 REAUTHENTICATION_REQUIRED otherwise). A wrong password is 401 INVALID_CREDENTIALS; an address already registered 409 EMAIL_TAKEN; demo accounts get 403 DEMO_READ_ONLY.',
        tags,
        summary: 'Change my e-mail address',
      },
      errors: ['REAUTHENTICATION_REQUIRED', 'INVALID_CREDENTIALS', 'EMAIL_TAKEN', 'DEMO_READ_ONLY'],
    })
    .input(changeEmailInput)
    .output(messageOutput)
    .mutation(({ ctx, input }) => account.requestEmailChange(ctx, actorOf(ctx), input)),

  confirmEmailChange: publicProcedure
    .meta({
      rateLimit: 'auth',
      openapi: {
        method: 'POST',
        path: '/auth/confirm-email-change',
        description:
          'Uses the link mailed to the new address: the account signs in with it from now on, verified. A bad, used or expired token is 400 INVALID_TOKEN; an address registered by someone else meanwhile 409 EMAIL_TAKEN.',
        tags,
        protect: false,
        summary: 'Confirm a new e-mail address',
      },
      errors: ['INVALID_TOKEN', 'EMAIL_TAKEN'],
    })
    .input(tokenInput)
    .output(userOutput)
    .mutation(({ ctx, input }) => account.confirmEmailChange(ctx, actorOf(ctx), input)),

  delete: authedProcedure
    .meta({
      rateLimit: 'auth',
      openapi: {
        method: 'POST',
        path: '/auth/me/delete',
        description:
          'Deletes the account at once: the person is erased (what goes and what stays: docs/api.md, "Account settings"), the workspaces only they belong to go with it (subscriptions canceled), and a last mail goes to the address. Send the `password` when the account has one, and a `code` (TOTP or backup) when two-factor sign-in is on; an account without a password needs a sign-in within the last 10 minutes. Refused with 409 OWNERSHIP_TRANSFER_REQUIRED while the caller is the only owner of a workspace with other members (`issues` names them).',
        tags,
        summary: 'Delete my account',
      },
      errors: [
        'REAUTHENTICATION_REQUIRED',
        'INVALID_CREDENTIALS',
        'INVALID_MFA_CODE',
        'OWNERSHIP_TRANSFER_REQUIRED',
        'DEMO_READ_ONLY',
      ],
    })
    .input(deleteAccountInput)
    .output(messageOutput)
    .mutation(({ ctx, input }) => {
      const actor = actorOf(ctx);
      // The subscriptions end after the erasure: their audit entries name the tombstone, not the address.
      const erased = actorOf(actor, { id: ctx.user.id, email: tombstoneEmail(ctx.user.id) });
      return deleteAccount({ ...ctx, endSubscription: subscriptionEnder(ctx, erased) }, actor, input);
    }),

  requestExport: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/auth/me/exports',
        description:
          'Asks for an export of everything the service keeps about you, as one JSON file. It is prepared in the background; a mail says when it is ready. One at a time: 409 EXPORT_IN_PROGRESS while one is being prepared.',
        tags,
        summary: 'Export my data',
      },
      errors: ['EXPORT_IN_PROGRESS'],
      successStatus: 201,
    })
    .output(exportOutput)
    .mutation(({ ctx }) =>
      dataExports.requestExport(ctx, actorOf(ctx), { buildNow: !webhookQueueEnabled(ctx.config) }),
    ),

  export: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/auth/me/exports/{exportId}',
        description: 'Whether an export of mine is ready, and until when it can be downloaded.',
        tags,
        summary: 'One of my data exports',
      },
    })
    .input(exportIdInput)
    .output(exportOutput)
    .query(({ ctx, input }) => dataExports.getExport(ctx, actorOf(ctx), input)),

  downloadExport: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/auth/me/exports/{exportId}/download',
        description:
          'The archive of a READY export, as a JSON attachment: the user, identities, sessions, memberships, generations and audit entries, with no secret. 404 once it expired (24 hours after it was ready).',
        tags,
        summary: 'Download one of my data exports',
      },
    })
    .input(exportIdInput)
    .output(exportArchiveOutput)
    .query(async ({ ctx, input }) => {
      const archive = await dataExports.downloadExport(ctx, actorOf(ctx), input);
      ctx.res.setHeader('Content-Disposition', `attachment; filename="data-export-${input.exportId}.json"`);
      return archive;
    }),
});
