// A rotated API key names its replacement. A key in its grace period may not be rotated again (each
// rotation would mint one more working key, past the plan's limit), and it no longer counts against the
// limit: its replacement does.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('api_keys')
    .addColumn('replaced_by', 'uuid', (c) => c.references('api_keys.id').onDelete('set null'))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('api_keys').dropColumn('replaced_by').execute();
}
