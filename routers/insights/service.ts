// A workspace at a glance, from a few indexed queries. Each section beyond the workspace and its member
// count is read only for a role that may read it elsewhere (AI usage, API keys, webhooks, the audit log),
// and is null otherwise.
import { sql } from 'kysely';
import type { AppDeps } from '../../server/platform/context.js';
import { roleHas, type WorkspacePermission } from '../../server/platform/permissions.js';
import type { Actor } from '../../server/platform/actor.js';
import { usage } from '../ai/history.js';
import type { WorkspaceAccess } from '../workspaces/access.js';

const DAYS = 30;

/** One entry per day from `start` (oldest first), 0 on days without generations. */
function everyDaySince(start: Date, counted: Array<{ day: string; n: string | number | bigint }>) {
  const byDay = new Map(counted.map((d) => [d.day, Number(d.n)]));
  return Array.from({ length: DAYS }, (_, i) => {
    const day = new Date(start.getTime() + i * 86_400_000).toISOString().slice(0, 10);
    return { day, generations: byDay.get(day) ?? 0 };
  });
}

/** The caller's workspace at a glance: what their role (`workspace`) may read; AI usage as they see it. */
export async function workspaceInsights(
  deps: Pick<AppDeps, 'db' | 'config'>,
  actor: Actor,
  { workspace: access }: { workspace: WorkspaceAccess },
) {
  const { db } = deps;
  const id = access.id;
  // The last 30 UTC calendar days, today included.
  const now = new Date();
  const since30 = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - (DAYS - 1)));
  const count = (n: { n: string | number | bigint } | undefined) => Number(n?.n ?? 0);
  /** `read()` when the caller's role holds `permission`, else null (and no query). */
  const ifAllowed = <T>(permission: WorkspacePermission, read: () => Promise<T>) =>
    roleHas(access.role, permission) ? read() : null;
  const [workspace, members, ai, apiKeys, webhooks, recentActivity] = await Promise.all([
    db
      .selectFrom('workspaces as w')
      .leftJoin('plans as p', 'p.id', 'w.plan_id')
      .select(['w.id', 'w.name', 'w.edition', 'p.name as plan'])
      .where('w.id', '=', id)
      .executeTakeFirstOrThrow(),
    db
      .selectFrom('workspace_members')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('workspace_id', '=', id)
      .executeTakeFirst(),
    ifAllowed('ai.view_usage', async () => {
      const [aiUsage, perDay] = await Promise.all([
        usage(deps, actor, { workspace: access }),
        db
          .selectFrom('ai_generations')
          .select((eb) => [
            sql<string>`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD')`.as('day'),
            eb.fn.countAll<string>().as('n'),
          ])
          .where('workspace_id', '=', id)
          .where('created_at', '>=', since30)
          .where('status', '=', 'SUCCEEDED')
          .where('is_sample', '=', false)
          .groupBy(sql`1`)
          .orderBy(sql`1`)
          .execute(),
      ]);
      return {
        used: aiUsage.used,
        limit: aiUsage.limit,
        remaining: aiUsage.remaining,
        perDay: everyDaySince(since30, perDay),
      };
    }),
    ifAllowed('api_keys.manage', async () =>
      count(
        await db
          .selectFrom('api_keys')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('workspace_id', '=', id)
          .where('revoked_at', 'is', null)
          .executeTakeFirst(),
      ),
    ),
    ifAllowed('webhooks.manage', async () => {
      const [hooks, deliveries] = await Promise.all([
        db
          .selectFrom('webhooks')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('workspace_id', '=', id)
          .where('is_active', '=', true)
          .executeTakeFirst(),
        db
          .selectFrom('webhook_deliveries')
          .select((eb) => [
            eb.fn.countAll<string>().as('n'),
            eb.fn.countAll<string>().filterWhere('status', '=', 'success').as('ok'),
          ])
          .where('workspace_id', '=', id)
          .where('created_at', '>=', since30)
          .where('status', 'in', ['success', 'failed'])
          .executeTakeFirstOrThrow(),
      ]);
      const finished = Number(deliveries.n);
      return {
        active: count(hooks),
        deliveries30d: finished,
        successRate: finished ? Math.round((Number(deliveries.ok) / finished) * 10_000) / 10_000 : null,
      };
    }),
    ifAllowed('audit.view', async () =>
      (
        await db
          .selectFrom('audit_logs')
          .select(['action', 'created_at'])
          .where('workspace_id', '=', id)
          .orderBy('created_at', 'desc')
          .limit(10)
          .execute()
      ).map((a) => ({
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
}
