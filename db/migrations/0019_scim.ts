// Directory sync (SCIM 2.0). A SCIM User is a membership: memberships gain an id (the SCIM id), a status
// (SUSPENDED: `active: false`, refused on the workspace's routes and not counted as a seat), the directory's
// externalId and name parts, and when they last changed (meta.lastModified). Tokens are stored as SHA-256
// only. Groups and their members are the directory's; role mappings turn group names into roles. Users
// remember the workspace whose directory (or single sign-on) created the account.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('workspace_members')
    .addColumn('id', 'uuid', (c) => c.notNull().defaultTo(sql`gen_random_uuid()`))
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('ACTIVE')
        .check(sql`status in ('ACTIVE', 'SUSPENDED')`),
    )
    .addColumn('external_id', 'text')
    .addColumn('given_name', 'text')
    .addColumn('family_name', 'text')
    .addColumn('scim_managed', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await sql`create unique index workspace_members_id_key on workspace_members (id)`.execute(db);
  await sql`create unique index workspace_members_external_id_key on workspace_members (workspace_id, external_id) where external_id is not null`.execute(
    db,
  );
  // SCIM lists page by (created_at, id) within a workspace.
  await sql`create index workspace_members_scim_page_idx on workspace_members (workspace_id, created_at, id)`.execute(
    db,
  );

  await db.schema
    .alterTable('users')
    .addColumn('provisioned_by_workspace_id', 'uuid', (c) => c.references('workspaces.id').onDelete('set null'))
    .execute();

  await db.schema
    .createTable('scim_tokens')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('workspace_id', 'uuid', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('prefix', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_by', 'uuid', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('last_used_at', 'timestamptz')
    .addColumn('revoked_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('scim_tokens_workspace_idx').on('scim_tokens').columns(['workspace_id']).execute();

  await db.schema
    .createTable('scim_groups')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('workspace_id', 'uuid', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('display_name', 'text', (c) => c.notNull())
    .addColumn('external_id', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('scim_groups_workspace_name_key', ['workspace_id', 'display_name'])
    .execute();
  await sql`create index scim_groups_page_idx on scim_groups (workspace_id, created_at, id)`.execute(db);

  await db.schema
    .createTable('scim_group_members')
    .addColumn('group_id', 'uuid', (c) => c.notNull().references('scim_groups.id').onDelete('cascade'))
    .addColumn('member_id', 'uuid', (c) => c.notNull().references('workspace_members.id').onDelete('cascade'))
    .addPrimaryKeyConstraint('scim_group_members_pkey', ['group_id', 'member_id'])
    .execute();
  await db.schema
    .createIndex('scim_group_members_member_idx')
    .on('scim_group_members')
    .columns(['member_id'])
    .execute();

  await db.schema
    .createTable('scim_role_mappings')
    .addColumn('workspace_id', 'uuid', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('group_name', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull().check(sql`role in ('ADMIN', 'MEMBER', 'VIEWER')`))
    .addPrimaryKeyConstraint('scim_role_mappings_pkey', ['workspace_id', 'group_name'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['scim_role_mappings', 'scim_group_members', 'scim_groups', 'scim_tokens'])
    await db.schema.dropTable(table).ifExists().execute();
  await db.schema.alterTable('users').dropColumn('provisioned_by_workspace_id').execute();
  await sql`drop index if exists workspace_members_scim_page_idx`.execute(db);
  await sql`drop index if exists workspace_members_external_id_key`.execute(db);
  await sql`drop index if exists workspace_members_id_key`.execute(db);
  for (const column of ['updated_at', 'scim_managed', 'family_name', 'given_name', 'external_id', 'status', 'id'])
    await db.schema.alterTable('workspace_members').dropColumn(column).execute();
}
