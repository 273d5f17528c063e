// Contact messages (public) and support tickets (signed in): stored, announced to SUPPORT_EMAIL, and
// readable by platform admins. Both count in the contact rate-limit tier.
import { listInput, listOutput } from '../../server/platform/pagination.js';
import { actorOf } from '../../server/platform/actor.js';
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
        description:
          'Sends a message to the team from the contact form; no account needed. May require a captcha answer when captcha is on.',
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
      openapi: {
        method: 'POST',
        path: '/support/tickets',
        description: 'Opens a support ticket as the signed-in user.',
        tags: ['Support'],
        summary: 'Open a support ticket',
      },
      errors: ['NOT_FOUND'],
      successStatus: 201,
    })
    .input(ticketInput)
    .output(ticketOutput)
    .mutation(({ ctx, input }) =>
      support.openTicket(ctx, actorOf(ctx), { ...input, callerName: ctx.user.name, memberships: ctx.memberships }),
    ),

  adminContacts: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/contact-messages',
        description: 'Contact form messages, newest first, paginated.',
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
        description: 'Support tickets, newest first, paginated.',
        tags: ['Admin'],
        summary: 'Support tickets, newest first',
      },
    })
    .input(listInput)
    .output(listOutput(ticketOutput))
    .query(({ ctx, input }) => support.listTickets(ctx, input)),
});
