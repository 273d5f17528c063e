// Product analytics: events as they come in, and the admin's summary of the last 30 days.
import { sql } from 'kysely';
import type { Actor } from '../../server/platform/actor.js';
import type { AppDeps } from '../../server/platform/context.js';
import { mapItems, paginate, type ListRequest } from '../../server/platform/pagination.js';
import type { EventInput } from './schemas.js';

type Deps = Pick<AppDeps, 'db'>;

/**
 * Stores an event. A signed-in caller (the actor) is attributed; a workspace counts only if they belong to
 * it (`memberships`: theirs, empty for an anonymous caller).
 */
export async function trackEvent(
  { db }: Deps,
  actor: Actor,
  input: EventInput & { memberships: ReadonlyArray<{ id: string }> },
) {
  const { memberships, ...event } = input;
  const workspaceId =
    event.workspaceId && memberships.some((m) => m.id === event.workspaceId) ? event.workspaceId : null;
  await db
    .insertInto('analytics_events')
    .values({
      name: event.name,
      properties: JSON.stringify(event.properties ?? {}),
      user_id: actor.userId,
      workspace_id: workspaceId,
    })
    .execute();
  return { accepted: true as const };
}

/** The events as they came in, newest first, by page or cursor; the total is exact without a name. */
export async function listEvents(deps: Pick<AppDeps, 'db' | 'config'>, input: ListRequest & { name?: string }) {
  const { name, ...request } = input;
  const filters = { name };
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
export async function summary({ db }: Deps) {
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
