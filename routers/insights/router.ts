// GET /dashboard/insights: a workspace at a glance, from a few indexed queries. Any member may ask; each
// section beyond the workspace and its member count is there only for a role that may read it elsewhere
// (AI usage, API keys, webhooks, the audit log), and null otherwise.
import { sql } from 'kysely';
import { z } from 'zod';
import { roleHas, type WorkspacePermission } from '../../server/platform/permissions.js';
import { router, workspaceProcedure } from '../../server/platform/trpc.js';
import { usage } from '../ai/service.js';

const DAYS = 30;

/** One entry per day from `start` (oldest first), 0 on days without generations. */
function everyDaySince(start: Date, counted: Array<{ day: string; n: string | number | bigint }>) {
  const byDay = new Map(counted.map((d) => [d.day, Number(d.n)]));
  return Array.from({ length: DAYS }, (_, i) => {
    const day = new Date(start.getTime() + i * 86_400_000).toISOString().slice(0, 10);
    return { day, generations: byDay.get(day) ?? 0 };
  });
}

export const insightsRouter = router({
  insights: workspaceProcedure('workspace.read', { orActiveWorkspace: true })
    .meta({ openapi: { method: 'GET', path: '/dashboard/insights', tags: ['Dashboard'], summary: 'Members, plan, AI usage, API keys, webhooks and recent activity of a workspace' } })
    .input(z.object({ workspaceId: z.uuid().optional() }))
    .output(
      z.object({
        workspace: z.object({ id: z.uuid(), name: z.string(), edition: z.string(), plan: z.string().nullable() }),
        members: z.number().int(),
        ai: z
          .object({ used: z.number().int(), limit: z.number().int(), remaining: z.number().int(), perDay: z.array(z.object({ day: z.string(), generations: z.number().int() })) })
          .nullable()
          .meta({ description: 'Null unless the role may view AI usage (ai.view_usage).' }),
        apiKeys: z.number().int().nullable().meta({ description: 'Null unless the role manages API keys.' }),
        webhooks: z
          .object({ active: z.number().int(), deliveries30d: z.number().int(), successRate: z.number().nullable() })
          .nullable()
          .meta({ description: 'Null unless the role manages webhooks.' }),
        recentActivity: z
          .array(z.object({ action: z.string(), createdAt: z.iso.datetime({ offset: true }) }))
          .nullable()
          .meta({ description: 'Null unless the role may read the audit log (audit.view).' }),
      }),
    )
    .query(async ({ ctx }) => {
      const { db } = ctx;
      const id = ctx.workspace.id;
      // The last 30 UTC calendar days, today included.
      const now = new Date();
      const since30 = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - (DAYS - 1)));
      const count = (n: { n: string | number | bigint } | undefined) => Number(n?.n ?? 0);
      /** `read()` when the caller's role holds `permission`, else null (and no query). */
      const ifAllowed = <T>(permission: WorkspacePermission, read: () => Promise<T>) => (roleHas(ctx.workspace.role, permission) ? read() : null);
      const [workspace, members, ai, apiKeys, webhooks, recentActivity] = await Promise.all([
        db.selectFrom('workspaces as w').leftJoin('plans as p', 'p.id', 'w.plan_id').select(['w.id', 'w.name', 'w.edition', 'p.name as plan']).where('w.id', '=', id).executeTakeFirstOrThrow(),
        db.selectFrom('workspace_members').select((eb) => eb.fn.countAll<string>().as('n')).where('workspace_id', '=', id).executeTakeFirst(),
        ifAllowed('ai.view_usage', async () => {
          const [aiUsage, perDay] = await Promise.all([
            usage(ctx, ctx.workspace, ctx.user),
            db
              .selectFrom('ai_generations')
              .select((eb) => [sql<string>`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD')`.as('day'), eb.fn.countAll<string>().as('n')])
              .where('workspace_id', '=', id)
              .where('created_at', '>=', since30)
              .where('status', '=', 'SUCCEEDED')
              .where('is_sample', '=', false)
              .groupBy(sql`1`)
              .orderBy(sql`1`)
              .execute(),
          ]);
          return { used: aiUsage.used, limit: aiUsage.limit, remaining: aiUsage.remaining, perDay: everyDaySince(since30, perDay) };
        }),
        ifAllowed('api_keys.manage', async () =>
          count(await db.selectFrom('api_keys').select((eb) => eb.fn.countAll<string>().as('n')).where('workspace_id', '=', id).where('revoked_at', 'is', null).executeTakeFirst()),
        ),
        ifAllowed('webhooks.manage', async () => {
          const [hooks, deliveries] = await Promise.all([
            db.selectFrom('webhooks').select((eb) => eb.fn.countAll<string>().as('n')).where('workspace_id', '=', id).where('is_active', '=', true).executeTakeFirst(),
            db
              .selectFrom('webhook_deliveries')
              .select((eb) => [eb.fn.countAll<string>().as('n'), eb.fn.countAll<string>().filterWhere('status', '=', 'success').as('ok')])
              .where('workspace_id', '=', id)
              .where('created_at', '>=', since30)
              .where('status', 'in', ['success', 'failed'])
              .executeTakeFirstOrThrow(),
          ]);
          const finished = Number(deliveries.n);
          return { active: count(hooks), deliveries30d: finished, successRate: finished ? Math.round((Number(deliveries.ok) / finished) * 10_000) / 10_000 : null };
        }),
        ifAllowed('audit.view', async () =>
          (await db.selectFrom('audit_logs').select(['action', 'created_at']).where('workspace_id', '=', id).orderBy('created_at', 'desc').limit(10).execute()).map((a) => ({
            action: a.action,
            createdAt: a.created_at.toISOString(),
          })),
        ),
      ]);
      return {
        workspace: { id: workspace.id, name: workspace.name, edition: workspace.edition, plan: workspace.plan },
        members: count(members),
        ai,
        apiKeys,
        webhooks,
        recentActivity,
      };
    }),
});
