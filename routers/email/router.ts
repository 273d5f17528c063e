// GET /admin/email-logs: the mails EMAIL_PROVIDER=MOCK wrote instead of sending, newest first.
import { z } from 'zod';
import { adminProcedure, router } from '../../server/trpc.js';
import { offsetOf, pageOf, pageOutput, paginationInput } from '../../server/pagination.js';

const emailLogOutput = z.object({
  id: z.uuid(),
  to: z.string(),
  subject: z.string(),
  template: z.string(),
  text: z.string(),
  link: z.string().nullable(),
  createdAt: z.iso.datetime({ offset: true }),
});

export const emailRouter = router({
  list: adminProcedure
    .meta({ openapi: { method: 'GET', path: '/admin/email-logs', tags: ['Admin'], summary: 'Mails written by the MOCK e-mail provider' } })
    .input(paginationInput.extend({ to: z.email().optional().meta({ description: 'Only mails to this address.' }) }))
    .output(pageOutput(emailLogOutput))
    .query(async ({ ctx, input }) => {
      let query = ctx.db.selectFrom('email_logs');
      if (input.to) query = query.where('to', '=', input.to.trim().toLowerCase());
      const [rows, count] = await Promise.all([
        query
          .select(['id', 'to', 'subject', 'template', 'text', 'link', 'created_at'])
          .orderBy('created_at', 'desc')
          .orderBy('id', 'desc')
          .limit(input.limit)
          .offset(offsetOf(input))
          .execute(),
        query.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
      ]);
      const items = rows.map(({ created_at, ...r }) => ({ ...r, createdAt: created_at.toISOString() }));
      return pageOf(items, Number(count.total), input);
    }),
});
