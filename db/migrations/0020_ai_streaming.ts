// Streaming generation (docs/api.md, "Streaming generation"): a streamed generation is stored RUNNING when
// its stream starts and closed when it ends: SUCCEEDED, FAILED, or CANCELED (the client went away: its
// partial output is kept, and it counts). `heartbeat_at` is renewed while the stream runs, so the periodic
// sweep can close the generations of an API process that died mid-stream.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table ai_generations drop constraint if exists ai_generations_status_check`.execute(db);
  await sql`alter table ai_generations add constraint ai_generations_status_check
    check (status in ('SUCCEEDED', 'FAILED', 'RUNNING', 'CANCELED'))`.execute(db);
  await db.schema.alterTable('ai_generations').addColumn('heartbeat_at', 'timestamptz').execute();
  await sql`create index ai_generations_running_idx on ai_generations (heartbeat_at) where status = 'RUNNING'`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists ai_generations_running_idx`.execute(db);
  await db.schema.alterTable('ai_generations').dropColumn('heartbeat_at').execute();
  await sql`update ai_generations set status = 'FAILED' where status in ('RUNNING', 'CANCELED')`.execute(db);
  await sql`alter table ai_generations drop constraint if exists ai_generations_status_check`.execute(db);
  await sql`alter table ai_generations add constraint ai_generations_status_check
    check (status in ('SUCCEEDED', 'FAILED'))`.execute(db);
}
