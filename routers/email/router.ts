// GET /admin/email-logs: the mails EMAIL_PROVIDER=MOCK wrote instead of sending, newest first.
import { listOutput } from '../../server/platform/pagination.js';
import { adminProcedure, router } from '../../server/platform/trpc.js';
import { emailLogOutput, emailLogsInput } from './schemas.js';
import { listEmailLogs } from './service.js';

export const emailRouter = router({
  list: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/email-logs',
        description:
          'The mails the MOCK e-mail provider wrote instead of sending, newest first (development and tests).',
        tags: ['Admin'],
        summary: 'Mails written by the MOCK e-mail provider',
      },
    })
    .input(emailLogsInput)
    .output(listOutput(emailLogOutput))
    .query(({ ctx, input }) => listEmailLogs(ctx, { ...input, callerPlatformRole: ctx.user.platform_role })),
});
