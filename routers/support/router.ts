// Contact messages (public) and support tickets (signed in): stored, announced to SUPPORT_EMAIL, and
// readable by platform admins. Both count in the contact rate-limit tier.
import { listInput, listOutput } from '../../server/platform/pagination.js';
import { adminProcedure, authedProcedure, publicProcedure, router } from '../../server/platform/trpc.js';
import { contactInput, contactOutput, ticketInput, ticketOutput } from './schemas.js';
import * as support from './service.js';

export const supportRouter = router({
  contact: publicProcedure
    .meta({
      rateLimit: 'contact',
      openapi: {
        method: 'POST',
        path: '/contact/messages',
        tags: ['Support'],
        protect: false,
        summary: 'Send a message to the team',
      },
      successStatus: 201,
    })
    .input(contactInput)
    .output(contactOutput)
    .mutation(({ ctx, input }) => support.sendContactMessage(ctx, input)),

  ticket: authedProcedure
    .meta({
      rateLimit: 'contact',
      openapi: { method: 'POST', path: '/support/tickets', tags: ['Support'], summary: 'Open a support ticket' },
      errors: ['NOT_FOUND'],
      successStatus: 201,
    })
    .input(ticketInput)
    .output(ticketOutput)
    .mutation(({ ctx, input }) => support.openTicket(ctx, ctx.user, ctx.memberships, input)),

  adminContacts: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/contact-messages',
        tags: ['Admin'],
        summary: 'Contact messages, newest first',
      },
    })
    .input(listInput)
    .output(listOutput(contactOutput))
    .query(({ ctx, input }) => support.listContactMessages(ctx, input)),

  adminTickets: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/support-tickets',
        tags: ['Admin'],
        summary: 'Support tickets, newest first',
      },
    })
    .input(listInput)
    .output(listOutput(ticketOutput))
    .query(({ ctx, input }) => support.listTickets(ctx, input)),
});
