// Product analytics: events as they come in, and the admin's summary of the last 30 days.
import { sql } from 'kysely';
import type { Db } from '../../db/index.js';
import type { Config } from '../../server/platform/config.js';
import { mapItems, paginate, type ListRequest } from '../../server/platform/pagination.js';
import type { Principal } from '../auth/sessions.js';
import type { EventInput } from './schemas.js';

/** Stores an event. A signed-in caller is attributed; a workspace counts only if they belong to it. */
export async function trackEvent(db: Db, input: EventInput, caller: Principal | undefined) {
  const workspaceId =
    input.workspaceId && caller?.memberships.some((m) => m.id === input.workspaceId) ? input.workspaceId : null;
  await db
    .insertInto('analytics_events')
    .values({
      name: input.name,
      properties: JSON.stringify(input.properties ?? {}),
      user_id: caller?.user.id ?? null,
      workspace_id: workspaceId,
    })
    .execute();
  return { accepted: true as const };
}

/** The events as they came in, newest first, by page or cursor; the total is exact without a name. */
export async function listEvents(deps: { db: Db; config: Config }, filters: { name?: string }, request: ListRequest) {
  let query = deps.db
    .selectFrom('analytics_events')
    .select(['id', 'name', 'properties', 'user_id', 'workspace_id', 'created_at']);
  if (filters.name) query = query.where('name', '=', filters.name);
  const page = await paginate(deps, query, {
    list: 'admin.analytics-events',
    request,
    counters: filters.name ? undefined : { scope: 'analytics_events' },
  });
  return mapItems(page, (e) => ({
    id: e.id,
    name: e.name,
    properties: e.properties,
    userId: e.user_id,
    workspaceId: e.workspace_id,
    createdAt: e.created_at.toISOString(),
  }));
}

/** Events by name and by UTC day, the top 20 events and the unique users, over the last 30 days. */
export async function summary(db: Db) {
  const since = new Date(Date.now() - 30 * 86_400_000);
  const recent = db.selectFrom('analytics_events').where('created_at', '>=', since);
  const [totals, top, byDay] = await Promise.all([
    recent
      .select((eb) => [eb.fn.countAll<string>().as('events'), sql<string>`count(distinct user_id)`.as('users')])
      .executeTakeFirstOrThrow(),
    recent
      .select((eb) => ['name', eb.fn.countAll<string>().as('count')])
      .groupBy('name')
      .orderBy('count', 'desc')
      .limit(20)
      .execute(),
    recent
      .select((eb) => [
        sql<string>`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD')`.as('day'),
        eb.fn.countAll<string>().as('count'),
      ])
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
}
