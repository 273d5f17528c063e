// Product analytics: event intake (anonymous allowed; rate limited like every route) and the admin summary.
import { z } from 'zod';
import { actorOf } from '../../server/platform/actor.js';
import type { Context } from '../../server/platform/context.js';
import { adminProcedure, authenticateRequest, publicProcedure, router } from '../../server/platform/trpc.js';
import { acceptedOutput, eventInput, eventsInput, eventsOutput, summaryOutput } from './schemas.js';
import * as analytics from './service.js';

/** The caller behind a valid access token, if the request carries one; anonymous otherwise. */
const callerOf = (ctx: Context) =>
  ctx.req.headers.authorization ? authenticateRequest(ctx, ctx.req).catch(() => undefined) : Promise.resolve(undefined);

export const analyticsRouter = router({
  track: publicProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/analytics/events',
        description:
          'Records a product analytics event (a name and optional properties). Accepted for later processing: 202.',
        tags: ['Analytics'],
        protect: false,
        summary: 'Record a product event (202)',
      },
      successStatus: 202,
    })
    .input(eventInput)
    .output(acceptedOutput)
    .mutation(async ({ ctx, input }) => {
      const caller = await callerOf(ctx);
      return analytics.trackEvent(ctx, actorOf(ctx, caller?.user ?? null), {
        ...input,
        memberships: caller?.memberships ?? [],
      });
    }),

  summary: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/analytics/summary',
        description: 'Product events of the last 30 days: by name and day, the top events and unique users.',
        tags: ['Admin'],
        summary: 'Events by name and day, top events, unique users (30 days)',
      },
    })
    .input(z.void())
    .output(summaryOutput)
    .query(({ ctx }) => analytics.summary(ctx)),

  events: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/analytics/events',
        tags: ['Admin'],
        summary: 'Product events, newest first',
        description:
          'Every recorded event, newest first, optionally of one name. Paginated by page or by cursor (docs: Pagination): the total is exact without a name, counted up to 10,000 with one.',
      },
    })
    .input(eventsInput)
    .output(eventsOutput)
    .query(({ ctx, input }) => analytics.listEvents(ctx, input)),
});
