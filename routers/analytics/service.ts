// Product analytics: events as they come in, and the admin's summary of the last 30 days.
import { sql } from 'kysely';
import type { Db } from '../../db/index.js';
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
