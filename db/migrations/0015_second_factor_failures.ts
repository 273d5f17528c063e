// Failed second-factor checks per account (routers/auth/second-factor-cap.ts): a fixed window that opens at
// its first failure and counts the failures in it. In Postgres, so every instance shares the count, with or
// without Redis. Frozen once landed.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('second_factor_failures')
    .addColumn('user_id', 'uuid', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    // When the window's first failure came; the window lasts 10 minutes from it.
    .addColumn('window_started_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('failures', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('second_factor_failures').execute();
}
