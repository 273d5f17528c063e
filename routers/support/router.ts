// Contact messages (public) and support tickets (signed in): stored, announced to SUPPORT_EMAIL, and
// readable by platform admins. Both count in the contact rate-limit tier.
import { z } from 'zod';
import { TICKET_PRIORITIES } from '../../db/schema.js';
import { sendAfterCommit } from '../../server/platform/email/mailer.js';
import { offsetOf, pageOf, pageOutput, paginationInput } from '../../server/platform/pagination.js';
import { adminProcedure, authedProcedure, publicProcedure, router } from '../../server/platform/trpc.js';
import { emailSchema } from '../auth/schemas.js';
import { AppError } from '../../server/platform/errors.js';

const isoDate = z.iso.datetime({ offset: true });
const text = (max: number) => z.string().trim().min(1).max(max);

const contactOutput = z.object({ id: z.uuid(), name: z.string(), email: z.string(), subject: z.string(), message: z.string(), topic: z.string().nullable(), createdAt: isoDate });
const ticketOutput = z.object({
  id: z.uuid(),
  userId: z.uuid().nullable(),
  workspaceId: z.uuid().nullable(),
  subject: z.string(),
  message: z.string(),
  priority: z.enum(TICKET_PRIORITIES),
  status: z.enum(['OPEN', 'PENDING', 'CLOSED']),
  createdAt: isoDate,
});

export const supportRouter = router({
  contact: publicProcedure
    .meta({ rateLimit: 'contact', openapi: { method: 'POST', path: '/contact/messages', tags: ['Support'], protect: false, summary: 'Send a message to the team' }, successStatus: 201 })
    .input(z.object({ name: text(100), email: emailSchema, subject: z.string().trim().max(200).optional(), message: text(5000), topic: z.string().trim().max(50).optional(), tier: z.string().trim().max(50).optional() }))
    .output(contactOutput)
    .mutation(async ({ ctx, input }) => {
      const row = await ctx.db
        .insertInto('contact_messages')
        .values({ name: input.name, email: input.email.toLowerCase(), subject: input.subject ?? '', message: input.message, topic: input.topic ?? input.tier ?? null })
        .returningAll()
        .executeTakeFirstOrThrow();
      await sendAfterCommit(ctx, {
        to: ctx.config.SUPPORT_EMAIL,
        subject: `Contact: ${input.subject || 'new message'}`,
        template: 'contact-message',
        text: `From ${input.name} <${row.email}>${row.topic ? ` (${row.topic})` : ''}:\n\n${input.message}`,
      });
      return { id: row.id, name: row.name, email: row.email, subject: row.subject, message: row.message, topic: row.topic, createdAt: row.created_at.toISOString() };
    }),

  ticket: authedProcedure
    .meta({ rateLimit: 'contact', openapi: { method: 'POST', path: '/support/tickets', tags: ['Support'], summary: 'Open a support ticket' }, errors: ['NOT_FOUND'], successStatus: 201 })
    .input(
      z.object({
        subject: text(200),
        message: text(10_000),
        priority: z.enum(TICKET_PRIORITIES).default('NORMAL'),
        workspaceId: z.uuid().optional(),
        // Accepted for forms that send them; the signed-in account is who the ticket is from.
        name: z.string().max(100).optional(),
        email: z.string().max(254).optional(),
      }),
    )
    .output(ticketOutput)
    .mutation(async ({ ctx, input }) => {
      // Membership is enough, whatever the workspace's state: a suspended workspace is exactly what one
      // writes to support about.
      const workspace = input.workspaceId ? ctx.memberships.find((m) => m.id === input.workspaceId) : undefined;
      if (input.workspaceId && !workspace) throw new AppError('NOT_FOUND', 'Workspace not found.');
      const row = await ctx.db
        .insertInto('support_tickets')
        .values({ user_id: ctx.user.id, workspace_id: workspace?.id ?? null, subject: input.subject, message: input.message, priority: input.priority })
        .returningAll()
        .executeTakeFirstOrThrow();
      await sendAfterCommit(ctx, {
        to: ctx.config.SUPPORT_EMAIL,
        subject: `[${row.priority}] Ticket: ${row.subject}`,
        template: 'support-ticket',
        text: `From ${ctx.user.name} <${ctx.user.email}>${workspace ? ` (workspace ${workspace.name})` : ''}:\n\n${row.message}`,
      });
      return { id: row.id, userId: row.user_id, workspaceId: row.workspace_id, subject: row.subject, message: row.message, priority: row.priority, status: row.status, createdAt: row.created_at.toISOString() };
    }),

  adminContacts: adminProcedure
    .meta({ openapi: { method: 'GET', path: '/admin/contact-messages', tags: ['Admin'], summary: 'Contact messages, newest first' } })
    .input(paginationInput)
    .output(pageOutput(contactOutput))
    .query(async ({ ctx, input }) => {
      const [rows, count] = await Promise.all([
        ctx.db.selectFrom('contact_messages').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(input.limit).offset(offsetOf(input)).execute(),
        ctx.db.selectFrom('contact_messages').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
      ]);
      return pageOf(rows.map((r) => ({ id: r.id, name: r.name, email: r.email, subject: r.subject, message: r.message, topic: r.topic, createdAt: r.created_at.toISOString() })), Number(count.n), input);
    }),

  adminTickets: adminProcedure
    .meta({ openapi: { method: 'GET', path: '/admin/support-tickets', tags: ['Admin'], summary: 'Support tickets, newest first' } })
    .input(paginationInput)
    .output(pageOutput(ticketOutput))
    .query(async ({ ctx, input }) => {
      const [rows, count] = await Promise.all([
        ctx.db.selectFrom('support_tickets').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(input.limit).offset(offsetOf(input)).execute(),
        ctx.db.selectFrom('support_tickets').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
      ]);
      return pageOf(
        rows.map((r) => ({ id: r.id, userId: r.user_id, workspaceId: r.workspace_id, subject: r.subject, message: r.message, priority: r.priority, status: r.status, createdAt: r.created_at.toISOString() })),
        Number(count.n),
        input,
      );
    }),
});
