// Account self-service and the workspace lifecycle: e-mail changes confirmed at the new address, data
// exports, erased accounts (users.deleted_at; the row stays with a tombstone address, so rows that others
// need keep their user id), and workspaces an owner deleted: PENDING_DELETION until `purge_at`, restorable
// until then, purged by a maintenance job afterwards (`purged_at`).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('users').addColumn('deleted_at', 'timestamptz').execute();

  await db.schema
    .createTable('email_changes')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('new_email', 'text', (c) => c.notNull().check(sql`new_email = lower(new_email)`))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('used_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('email_changes_user_idx').on('email_changes').column('user_id').execute();

  await db.schema
    .createTable('user_exports')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('PENDING')
        .check(sql`status in ('PENDING', 'READY', 'FAILED')`),
    )
    .addColumn('storage_key', 'text')
    .addColumn('size_bytes', 'integer')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('ready_at', 'timestamptz')
    .addColumn('expires_at', 'timestamptz')
    .execute();
  // One export in progress per user, whoever asks twice at once (409 EXPORT_IN_PROGRESS).
  await sql`create unique index user_exports_one_pending on user_exports (user_id) where status = 'PENDING'`.execute(
    db,
  );
  await sql`create index user_exports_expiry_idx on user_exports (expires_at) where storage_key is not null`.execute(
    db,
  );

  await sql`alter table workspaces drop constraint workspaces_status_check`.execute(db);
  await sql`alter table workspaces add constraint workspaces_status_check
    check (status in ('ACTIVE', 'SUSPENDED', 'ARCHIVED', 'PENDING_DELETION'))`.execute(db);
  await db.schema
    .alterTable('workspaces')
    .addColumn('deletion_requested_at', 'timestamptz')
    .addColumn('purge_at', 'timestamptz')
    .addColumn('purged_at', 'timestamptz')
    .execute();
  await sql`create index workspaces_purge_idx on workspaces (purge_at) where status = 'PENDING_DELETION' and purged_at is null`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index workspaces_purge_idx`.execute(db);
  await db.schema
    .alterTable('workspaces')
    .dropColumn('deletion_requested_at')
    .dropColumn('purge_at')
    .dropColumn('purged_at')
    .execute();
  await sql`update workspaces set status = 'ARCHIVED' where status = 'PENDING_DELETION'`.execute(db);
  await sql`alter table workspaces drop constraint workspaces_status_check`.execute(db);
  await sql`alter table workspaces add constraint workspaces_status_check
    check (status in ('ACTIVE', 'SUSPENDED', 'ARCHIVED'))`.execute(db);
  await db.schema.dropTable('user_exports').execute();
  await db.schema.dropTable('email_changes').execute();
  await db.schema.alterTable('users').dropColumn('deleted_at').execute();
}
