// Sign-in through identity providers (GitHub, Google, an OpenID Connect provider): accounts may have no
// password; the identities linked to an account; the flows under way (state, PKCE verifier, nonce), kept
// here so that any instance can finish a flow another began; and the one-time codes that finish a sign-in.
// Frozen once landed: change the schema in a new migration.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  const now = sql`now()`;

  // An account created through an identity provider has no password until it sets one (password reset).
  await db.schema
    .alterTable('users')
    .alterColumn('password_hash', (c) => c.dropNotNull())
    .execute();

  // One row per identity: `subject` is the provider's stable id of the person. An identity belongs to one
  // account, and an account has at most one identity of each provider.
  await db.schema
    .createTable('user_identities')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    // As the provider last gave it, lower-cased; shown in the account's settings.
    .addColumn('email', 'text')
    .addColumn('email_verified', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('last_used_at', 'timestamptz')
    .addUniqueConstraint('user_identities_provider_subject_key', ['provider', 'subject'])
    .addUniqueConstraint('user_identities_user_provider_key', ['user_id', 'provider'])
    .execute();

  // A flow between its start and its callback: single use (used_at), short-lived (expires_at). Only the
  // SHA-256 of `state` and of the browser binding are kept; the PKCE verifier and the nonce must be sent
  // to the provider, so they are kept as they are, for at most the flow's 10 minutes.
  await db.schema
    .createTable('oauth_states')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('state_hash', 'text', (c) => c.notNull().unique())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('purpose', 'text', (c) => c.notNull().check(sql`purpose in ('SIGN_IN', 'LINK')`))
    // LINK: the signed-in account the identity is to be linked to.
    .addColumn('user_id', 'uuid', (c) => c.references('users.id').onDelete('cascade'))
    .addColumn('browser_hash', 'text')
    .addColumn('code_verifier', 'text', (c) => c.notNull())
    .addColumn('nonce', 'text')
    .addColumn('redirect_uri', 'text', (c) => c.notNull())
    .addColumn('redirect_to', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('used_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addCheckConstraint('oauth_states_link_user', sql`(purpose = 'LINK') = (user_id is not null)`)
    .execute();

  // The one-time code the callback hands to the web app, exchanged once for a session. A LINK code carries
  // the identity to link once the account that started the link presents it.
  await db.schema
    .createTable('oauth_exchange_codes')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('code_hash', 'text', (c) => c.notNull().unique())
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('SIGN_IN', 'LINK')`))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('email', 'text')
    .addColumn('email_verified', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('used_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('oauth_exchange_codes').ifExists().execute();
  await db.schema.dropTable('oauth_states').ifExists().execute();
  await db.schema.dropTable('user_identities').ifExists().execute();
  // Accounts without a password cannot be kept by the older schema.
  await db.deleteFrom('users').where('password_hash', 'is', null).execute();
  await db.schema
    .alterTable('users')
    .alterColumn('password_hash', (c) => c.setNotNull())
    .execute();
}
