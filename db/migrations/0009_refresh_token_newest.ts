// A refresh-token family's newest token is the one it has not superseded: `superseded_at` is the moment a
// newer token of the family was issued. Past the reuse grace, only the newest token may be refreshed, so a
// token replayed within the grace cannot fork a session that lives on. At most one token of a family is
// the newest (a partial unique index).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('refresh_tokens').addColumn('superseded_at', 'timestamptz').execute();
  // Every token but the last issued of its family was superseded when the next one was issued.
  await sql`update refresh_tokens t set superseded_at = n.next_issued_at
    from (select id, lead(created_at) over (partition by family_id order by created_at, id) as next_issued_at
          from refresh_tokens) n
    where n.id = t.id and n.next_issued_at is not null`.execute(db);
  await sql`create unique index refresh_tokens_newest_idx on refresh_tokens (family_id) where superseded_at is null`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('refresh_tokens_newest_idx').ifExists().execute();
  await db.schema.alterTable('refresh_tokens').dropColumn('superseded_at').execute();
}
