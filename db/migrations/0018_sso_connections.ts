// Enterprise single sign-on after verified domains: a workspace's SAML and OpenID Connect connections, the
// sign-in requests they send (single use, bound to the browser that started them), the SAML assertion ids
// already taken (replay), the identities a connection signed in, the session's method and connection, and
// the workspace's `require_sso` policy.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('sso_connections')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('workspace_id', 'uuid', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull().check(sql`type in ('SAML', 'OIDC')`))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('ACTIVE')
        .check(sql`status in ('ACTIVE', 'INACTIVE')`),
    )
    .addColumn('default_role', 'text', (c) =>
      c
        .notNull()
        .defaultTo('MEMBER')
        .check(sql`default_role in ('ADMIN', 'MEMBER', 'VIEWER')`),
    )
    .addColumn('allow_idp_initiated', 'boolean', (c) => c.notNull().defaultTo(false))
    // SAML: the identity provider's entity id, SSO URL (HTTP-Redirect) and signing certificates (PEM
    // bodies; two during a roll-over).
    .addColumn('idp_entity_id', 'text')
    .addColumn('idp_sso_url', 'text')
    .addColumn('idp_certificates', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'`))
    // OIDC: the issuer, the client id and the client secret sealed (SecretBox), never answered.
    .addColumn('issuer', 'text')
    .addColumn('client_id', 'text')
    .addColumn('client_secret_encrypted', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('sso_connections_workspace_idx').on('sso_connections').column('workspace_id').execute();

  // A sign-in (or link) request sent to the identity provider: the SAML AuthnRequest ID or the OIDC state's
  // hash, single use, 10 minutes, for one connection and one browser (SHA-256 of its binding cookie).
  await db.schema
    .createTable('sso_requests')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('connection_id', 'uuid', (c) => c.notNull().references('sso_connections.id').onDelete('cascade'))
    .addColumn('purpose', 'text', (c) => c.notNull().check(sql`purpose in ('SIGN_IN', 'LINK')`))
    .addColumn('user_id', 'uuid', (c) => c.references('users.id').onDelete('cascade'))
    .addColumn('browser_hash', 'text')
    .addColumn('code_verifier', 'text')
    .addColumn('nonce', 'text')
    .addColumn('redirect_to', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('used_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  // SAML assertion ids taken, kept until the assertion could no longer be valid (replay).
  await db.schema
    .createTable('sso_assertions')
    .addColumn('connection_id', 'uuid', (c) => c.notNull().references('sso_connections.id').onDelete('cascade'))
    .addColumn('assertion_id', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('sso_assertions_pkey', ['connection_id', 'assertion_id'])
    .execute();

  // Who a connection signed in: its subject (SAML NameID, OIDC sub), and whether it created the account.
  await db.schema
    .createTable('sso_identities')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('connection_id', 'uuid', (c) => c.notNull().references('sso_connections.id').onDelete('cascade'))
    .addColumn('workspace_id', 'uuid', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('created_account', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('last_used_at', 'timestamptz')
    .addUniqueConstraint('sso_identities_connection_subject_key', ['connection_id', 'subject'])
    .execute();
  await db.schema.createIndex('sso_identities_user_idx').on('sso_identities').column('user_id').execute();

  // The one-time code of an SSO sign-in names its connection; the session it opens keeps it.
  await db.schema
    .alterTable('oauth_exchange_codes')
    .addColumn('sso_connection_id', 'uuid', (c) => c.references('sso_connections.id').onDelete('cascade'))
    .execute();
  await db.schema
    .alterTable('sessions')
    .addColumn('method', 'text')
    .addColumn('sso_connection_id', 'uuid', (c) => c.references('sso_connections.id').onDelete('set null'))
    .execute();

  await db.schema
    .alterTable('workspaces')
    .addColumn('require_sso', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('workspaces').dropColumn('require_sso').execute();
  await db.schema.alterTable('sessions').dropColumn('method').dropColumn('sso_connection_id').execute();
  await db.schema.alterTable('oauth_exchange_codes').dropColumn('sso_connection_id').execute();
  await db.schema.dropTable('sso_identities').execute();
  await db.schema.dropTable('sso_assertions').execute();
  await db.schema.dropTable('sso_requests').execute();
  await db.schema.dropTable('sso_connections').execute();
}
