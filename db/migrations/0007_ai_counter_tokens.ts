// The monthly AI counters keep only the generation count that limits are reserved against. Token totals
// are summed from the month's generations when usage is read: keeping them on the counter row made every
// stored generation take that row's lock, which the reservations of concurrent requests wait for.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('ai_usage_counters').dropColumn('tokens').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('ai_usage_counters')
    .addColumn('tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  // Back-fill from the generations, as the column held them.
  await sql`update ai_usage_counters c set tokens = coalesce((
      select sum(g.prompt_tokens + g.completion_tokens) from ai_generations g
      where g.workspace_id = c.workspace_id and g.status = 'SUCCEEDED'
        and g.created_at >= c.period and g.created_at < c.period + interval '1 month'), 0)`.execute(db);
}
