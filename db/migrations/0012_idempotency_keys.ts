// Idempotency keys of REST POST and PATCH requests (server/platform/idempotency.ts): one row per caller and
// key, claimed while the first request runs (status null), then holding its answer for 24 hours. In
// Postgres, so that a retry reaching another instance finds it. Frozen once landed.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('idempotency_keys')
    // Whose key: `user:<id>`, `api-key:<id>`, or for anonymous calls the route and the client address.
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    // HMAC of method, URL and body: the same key with another request is refused.
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    // Null while the first request runs.
    .addColumn('status', 'integer')
    // The answer's body, sealed (it may carry a secret shown once, such as a new API key).
    .addColumn('body', 'text')
    .addColumn('content_type', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pkey', ['scope', 'key'])
    .execute();
  await db.schema.createIndex('idempotency_keys_expires_at_idx').on('idempotency_keys').column('expires_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('idempotency_keys').execute();
}
