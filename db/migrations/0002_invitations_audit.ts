// Workspace invitations and the audit log. Frozen once landed: change the schema in a new migration.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  const now = sql`now()`;

  await db.schema
    .createTable('workspace_invitations')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('workspace_id', 'uuid', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('email', 'text', (c) => c.notNull().check(sql`email = lower(email)`))
    .addColumn('role', 'text', (c) => c.notNull().check(sql`role in ('OWNER', 'ADMIN', 'MEMBER', 'VIEWER')`))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('invited_by', 'uuid', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('accepted_at', 'timestamptz')
    .addColumn('accepted_by', 'uuid', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('revoked_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  await db.schema
    .createIndex('workspace_invitations_workspace_idx')
    .on('workspace_invitations')
    .columns(['workspace_id', 'email'])
    .execute();

  // Written in the same transaction as the change it records. metadata never holds a secret.
  await db.schema
    .createTable('audit_logs')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('actor_user_id', 'uuid', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('actor_email', 'text')
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('target_type', 'text')
    .addColumn('target_id', 'text')
    .addColumn('workspace_id', 'uuid', (c) => c.references('workspaces.id').onDelete('set null'))
    .addColumn('request_id', 'text')
    .addColumn('ip', 'text')
    .addColumn('metadata', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  await db.schema.createIndex('audit_logs_created_idx').on('audit_logs').columns(['created_at', 'id']).execute();
  await db.schema
    .createIndex('audit_logs_workspace_idx')
    .on('audit_logs')
    .columns(['workspace_id', 'created_at'])
    .execute();
  await db.schema
    .createIndex('audit_logs_actor_idx')
    .on('audit_logs')
    .columns(['actor_user_id', 'created_at'])
    .execute();
  await db.schema.createIndex('audit_logs_action_idx').on('audit_logs').columns(['action', 'created_at']).execute();
  // Admin lists of workspaces filter by state and hide deleted ones.
  await db.schema.createIndex('workspaces_created_idx').on('workspaces').columns(['created_at', 'id']).execute();
  await db.schema.createIndex('users_created_idx').on('users').columns(['created_at', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('users_created_idx').ifExists().execute();
  await db.schema.dropIndex('workspaces_created_idx').ifExists().execute();
  await db.schema.dropTable('audit_logs').ifExists().execute();
  await db.schema.dropTable('workspace_invitations').ifExists().execute();
}
