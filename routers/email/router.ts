// GET /admin/email-logs: the mails EMAIL_PROVIDER=MOCK wrote instead of sending, newest first.
import { z } from 'zod';
import { platformRoleHas } from '../../server/platform/permissions.js';
import { adminProcedure, router } from '../../server/platform/trpc.js';
import { offsetOf, pageOf, pageOutput, paginationInput } from '../../server/platform/pagination.js';

const emailLogOutput = z.object({
  id: z.uuid(),
  to: z.string(),
  subject: z.string(),
  template: z.string(),
  text: z.string(),
  link: z.string().nullable(),
  createdAt: z.iso.datetime({ offset: true }),
});

/** What the read-only demo admin sees in place of a mail's link. */
export const HIDDEN_LINK = '[link hidden from the read-only demo admin]';

/**
 * A mail's link carries a single-use token (a password reset, a verification, an invitation): whoever
 * reads it can act as the recipient. The demo admin reads what an admin reads but must not be able to take
 * over an account (a reset link of the real admin would make it one), so it gets the mails without their
 * links, in `link` and in the text alike.
 */
function withoutLink<M extends { text: string; link: string | null }>(mail: M): M {
  return mail.link ? { ...mail, text: mail.text.split(mail.link).join(HIDDEN_LINK), link: null } : mail;
}

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
      const readOnly = !platformRoleHas(ctx.user.platform_role, 'admin.write');
      const items = rows.map(({ created_at, ...r }) => {
        const mail = { ...r, createdAt: created_at.toISOString() };
        return readOnly ? withoutLink(mail) : mail;
      });
      return pageOf(items, Number(count.total), input);
    }),
});
