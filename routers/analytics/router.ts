// Product analytics: event intake (anonymous allowed; rate limited like every route) and the admin summary.
import { sql } from 'kysely';
import { z } from 'zod';
import { adminProcedure, authenticateRequest, publicProcedure, router } from '../../server/platform/trpc.js';

const MAX_PROPERTIES_BYTES = 2048;

const eventInput = z.object({
  name: z.string().regex(/^[a-z][a-z0-9_.:-]{0,63}$/, { error: 'An event name: lower-case letters, digits and _ . : - (at most 64), starting with a letter.' }),
  properties: z
    .record(z.string().max(64), z.union([z.string().max(500), z.number(), z.boolean(), z.null()]))
    .refine((p) => Object.keys(p).length <= 20, { error: 'At most 20 properties.' })
    .refine((p) => Buffer.byteLength(JSON.stringify(p)) <= MAX_PROPERTIES_BYTES, { error: `Properties take at most ${MAX_PROPERTIES_BYTES} bytes.` })
    .optional(),
  workspaceId: z.uuid().optional(),
});

export const analyticsRouter = router({
  track: publicProcedure
    .meta({ openapi: { method: 'POST', path: '/analytics/events', tags: ['Analytics'], protect: false, summary: 'Record a product event (202)' }, successStatus: 202 })
    .input(eventInput)
    .output(z.object({ accepted: z.literal(true) }))
    .mutation(async ({ ctx, input }) => {
      // Signed-in callers are attributed; a workspace counts only if they belong to it.
      const principal = ctx.req.headers.authorization ? await authenticateRequest(ctx, ctx.req).catch(() => undefined) : undefined;
      const workspaceId = input.workspaceId && principal?.memberships.some((m) => m.id === input.workspaceId) ? input.workspaceId : null;
      await ctx.db
        .insertInto('analytics_events')
        .values({ name: input.name, properties: JSON.stringify(input.properties ?? {}), user_id: principal?.user.id ?? null, workspace_id: workspaceId })
        .execute();
      return { accepted: true as const };
    }),

  summary: adminProcedure
    .meta({ openapi: { method: 'GET', path: '/admin/analytics/summary', tags: ['Admin'], summary: 'Events by name and day, top events, unique users (30 days)' } })
    .input(z.void())
    .output(
      z.object({
        since: z.iso.datetime({ offset: true }),
        totals: z.object({ events: z.number().int(), uniqueUsers: z.number().int() }),
        topEvents: z.array(z.object({ name: z.string(), count: z.number().int() })),
        byDay: z.array(z.object({ day: z.string(), count: z.number().int() })),
      }),
    )
    .query(async ({ ctx }) => {
      const since = new Date(Date.now() - 30 * 86_400_000);
      const recent = ctx.db.selectFrom('analytics_events').where('created_at', '>=', since);
      const [totals, top, byDay] = await Promise.all([
        recent.select((eb) => [eb.fn.countAll<string>().as('events'), sql<string>`count(distinct user_id)`.as('users')]).executeTakeFirstOrThrow(),
        recent.select((eb) => ['name', eb.fn.countAll<string>().as('count')]).groupBy('name').orderBy('count', 'desc').limit(20).execute(),
        recent
          .select((eb) => [sql<string>`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD')`.as('day'), eb.fn.countAll<string>().as('count')])
          .groupBy(sql`1`)
          .orderBy(sql`1`)
          .execute(),
      ]);
      return {
        since: since.toISOString(),
        totals: { events: Number(totals.events), uniqueUsers: Number(totals.users) },
        topEvents: top.map((t) => ({ name: t.name, count: Number(t.count) })),
        byDay: byDay.map((d) => ({ day: d.day, count: Number(d.count) })),
      };
    }),
});
