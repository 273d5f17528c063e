// Developer platform: workspace API keys (hash and prefix only), outbound webhooks (signing secrets
// encrypted), and their delivery log. Frozen once landed.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  const now = sql`now()`;

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('workspace_id', 'uuid', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    // The first 12 characters of the raw key, to recognise it in lists; the key itself is never stored.
    .addColumn('prefix', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('scopes', 'jsonb', (c) => c.notNull())
    .addColumn('created_by', 'uuid', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('expires_at', 'timestamptz')
    .addColumn('last_used_at', 'timestamptz')
    .addColumn('revoked_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  await db.schema
    .createIndex('api_keys_workspace_idx')
    .on('api_keys')
    .columns(['workspace_id', 'created_at'])
    .execute();

  await db.schema
    .createTable('webhooks')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('workspace_id', 'uuid', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('events', 'jsonb', (c) => c.notNull())
    // AES-256-GCM, under WEBHOOK_SECRET_ENCRYPTION_KEY.
    .addColumn('secret_encrypted', 'text', (c) => c.notNull())
    // After a rotation, the old secret keeps signing (as a second signature) until this time.
    .addColumn('previous_secret_encrypted', 'text')
    .addColumn('previous_secret_expires_at', 'timestamptz')
    .addColumn('is_active', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('disabled_reason', 'text')
    .addColumn('consecutive_failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('failing_since', 'timestamptz')
    .addColumn('created_by', 'uuid', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  await db.schema
    .createIndex('webhooks_workspace_idx')
    .on('webhooks')
    .columns(['workspace_id', 'created_at'])
    .execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('webhook_id', 'uuid', (c) => c.notNull().references('webhooks.id').onDelete('cascade'))
    .addColumn('workspace_id', 'uuid', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('event', 'text', (c) => c.notNull())
    // The domain event it carries (null for test deliveries): one delivery per webhook and event.
    .addColumn('domain_event_id', 'uuid', (c) => c.references('domain_events.id').onDelete('set null'))
    .addColumn('payload', 'jsonb', (c) => c.notNull())
    .addColumn('status', 'text', (c) =>
      c.notNull().check(sql`status in ('pending', 'retrying', 'success', 'failed', 'disabled')`),
    )
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('request_headers', 'jsonb')
    .addColumn('response_status', 'integer')
    .addColumn('response_preview', 'text')
    .addColumn('duration_ms', 'integer')
    .addColumn('next_retry_at', 'timestamptz')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_event_key')
    .on('webhook_deliveries')
    .columns(['webhook_id', 'domain_event_id'])
    .unique()
    .where('domain_event_id', 'is not', null)
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_workspace_idx')
    .on('webhook_deliveries')
    .columns(['workspace_id', 'created_at', 'id'])
    .execute();
  // The sweeper's work list: deliveries waiting for a first attempt or a retry.
  await db.schema
    .createIndex('webhook_deliveries_due_idx')
    .on('webhook_deliveries')
    .column('next_retry_at')
    .where(sql.ref('status'), 'in', sql`('pending', 'retrying')`)
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['webhook_deliveries', 'webhooks', 'api_keys'])
    await db.schema.dropTable(table).ifExists().execute();
}
