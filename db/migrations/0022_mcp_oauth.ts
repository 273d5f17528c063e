// OAuth 2.1 for MCP clients (routers/mcp/oauth.ts): the authorization server's records (oidc-provider's
// models: clients registered dynamically, interactions, codes, tokens, grants), kept in Postgres so every
// instance sees them; and the grants people made, per workspace, to list and revoke.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('oauth_payloads')
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('payload', 'jsonb', (c) => c.notNull())
    .addColumn('grant_id', 'text')
    .addColumn('uid', 'text')
    .addColumn('user_code', 'text')
    .addColumn('expires_at', 'timestamptz')
    .addColumn('consumed_at', 'timestamptz')
    .addPrimaryKeyConstraint('oauth_payloads_pkey', ['model', 'id'])
    .execute();
  await sql`create index oauth_payloads_grant_idx on oauth_payloads (grant_id) where grant_id is not null`.execute(db);
  await sql`create index oauth_payloads_uid_idx on oauth_payloads (uid) where uid is not null`.execute(db);
  await sql`create index oauth_payloads_expires_idx on oauth_payloads (expires_at)`.execute(db);

  await db.schema
    .createTable('oauth_grants')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'uuid', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('client_name', 'text')
    .addColumn('scopes', 'jsonb', (c) => c.notNull())
    .addColumn('resource', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('last_used_at', 'timestamptz')
    .addColumn('revoked_at', 'timestamptz')
    .execute();
  await sql`create index oauth_grants_workspace_idx on oauth_grants (workspace_id, created_at, id)`.execute(db);
  await sql`create index oauth_grants_user_idx on oauth_grants (user_id) where revoked_at is null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('oauth_grants').execute();
  await db.schema.dropTable('oauth_payloads').execute();
}
