// Uploaded files and branding, avatars, analytics events, contact messages and support tickets, and the
// full-text indexes of search. Frozen once landed.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  const now = sql`now()`;

  await db.schema
    .createTable('files')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('workspace_id', 'uuid', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('uploaded_by', 'uuid', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('upload', 'logo')`))
    // A generated name inside the storage provider: the client's file name is never a path.
    .addColumn('storage_key', 'text', (c) => c.notNull().unique())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('size_bytes', 'integer', (c) => c.notNull())
    .addColumn('original_name', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  await db.schema.createIndex('files_workspace_idx').on('files').columns(['workspace_id', 'created_at']).execute();

  await db.schema
    .alterTable('workspaces')
    .addColumn('branding_display_name', 'text')
    .addColumn('branding_primary_color', 'text')
    .addColumn('branding_accent_color', 'text')
    .addColumn('logo_file_id', 'uuid', (c) => c.references('files.id').onDelete('set null'))
    .execute();
  await db.schema
    .alterTable('users')
    .addColumn('avatar_key', 'text')
    .addColumn('avatar_updated_at', 'timestamptz')
    .execute();

  await db.schema
    .createTable('analytics_events')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('properties', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('user_id', 'uuid', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('workspace_id', 'uuid', (c) => c.references('workspaces.id').onDelete('set null'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  await db.schema.createIndex('analytics_events_created_idx').on('analytics_events').columns(['created_at']).execute();
  await db.schema
    .createIndex('analytics_events_name_idx')
    .on('analytics_events')
    .columns(['name', 'created_at'])
    .execute();

  await db.schema
    .createTable('contact_messages')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('message', 'text', (c) => c.notNull())
    .addColumn('topic', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  await db.schema
    .createIndex('contact_messages_created_idx')
    .on('contact_messages')
    .columns(['created_at', 'id'])
    .execute();

  await db.schema
    .createTable('support_tickets')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('user_id', 'uuid', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('workspace_id', 'uuid', (c) => c.references('workspaces.id').onDelete('set null'))
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('message', 'text', (c) => c.notNull())
    .addColumn('priority', 'text', (c) =>
      c
        .notNull()
        .defaultTo('NORMAL')
        .check(sql`priority in ('LOW', 'NORMAL', 'HIGH', 'URGENT')`),
    )
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('OPEN')
        .check(sql`status in ('OPEN', 'PENDING', 'CLOSED')`),
    )
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  await db.schema
    .createIndex('support_tickets_created_idx')
    .on('support_tickets')
    .columns(['created_at', 'id'])
    .execute();

  // Search: full-text indexes over what a workspace can search (its generations and templates).
  await sql`create index ai_generations_search_idx on ai_generations using gin (to_tsvector('simple', prompt || ' ' || output))`.execute(
    db,
  );
  await sql`create index ai_templates_search_idx on ai_templates using gin (to_tsvector('simple', name || ' ' || description || ' ' || body))`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists ai_templates_search_idx`.execute(db);
  await sql`drop index if exists ai_generations_search_idx`.execute(db);
  for (const table of ['support_tickets', 'contact_messages', 'analytics_events'])
    await db.schema.dropTable(table).ifExists().execute();
  await db.schema.alterTable('users').dropColumn('avatar_updated_at').dropColumn('avatar_key').execute();
  await db.schema
    .alterTable('workspaces')
    .dropColumn('logo_file_id')
    .dropColumn('branding_accent_color')
    .dropColumn('branding_primary_color')
    .dropColumn('branding_display_name')
    .execute();
  await db.schema.dropTable('files').ifExists().execute();
}
