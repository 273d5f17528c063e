// Two-factor sign-in and sessions: a user's TOTP secret (sealed) and backup codes (hashed), the one-time
// tokens of the second sign-in step, a workspace's policy requiring 2FA of its members, and a row per
// session (one sign-in, one refresh-token family) that access tokens name and that revocation marks.
// Frozen once landed: change the schema in a new migration.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  const now = sql`now()`;

  // Kept in the same transaction as user_totp.confirmed_at, so authentication reads it with the user.
  await db.schema
    .alterTable('users')
    .addColumn('mfa_enabled', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute();
  await db.schema
    .alterTable('workspaces')
    .addColumn('require_mfa', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute();

  // One TOTP secret per user: pending until confirmed_at. `last_used_step` is the 30-second step of the
  // last code accepted: a code of that step or an earlier one is never accepted again.
  await db.schema
    .createTable('user_totp')
    .addColumn('user_id', 'uuid', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    .addColumn('secret_encrypted', 'text', (c) => c.notNull())
    .addColumn('confirmed_at', 'timestamptz')
    .addColumn('last_used_step', 'bigint')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();

  // Backup codes: SHA-256 only, each used once (used_at).
  await db.schema
    .createTable('mfa_backup_codes')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('code_hash', 'text', (c) => c.notNull())
    .addColumn('used_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addUniqueConstraint('mfa_backup_codes_user_code_key', ['user_id', 'code_hash'])
    .execute();

  // The token between a sign-in's first step and its second: SHA-256 only, single use, short-lived, and
  // a bounded number of codes may be tried with it.
  await db.schema
    .createTable('mfa_challenges')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('used_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  await db.schema.createIndex('mfa_challenges_user_idx').on('mfa_challenges').column('user_id').execute();

  // A session is a refresh-token family: its id is the family id, and access tokens carry it (`sid`).
  await db.schema
    .createTable('sessions')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('user_agent', 'text')
    .addColumn('ip_address', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('last_used_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    // The expiry of the family's newest refresh token: past it, the session is over.
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('revoked_at', 'timestamptz')
    .addColumn('revoked_reason', 'text')
    .execute();
  await db.schema.createIndex('sessions_user_idx').on('sessions').columns(['user_id', 'created_at']).execute();

  // The families that exist already become sessions: first token's agent and address, last token's times.
  await sql`insert into sessions (id, user_id, user_agent, ip_address, created_at, last_used_at, expires_at, revoked_at, revoked_reason)
    select distinct on (family_id) family_id, user_id,
      first_value(user_agent) over w, first_value(created_ip) over w,
      min(created_at) over w, max(created_at) over w, max(expires_at) over w,
      case when bool_and(revoked_at is not null) over w then max(revoked_at) over w end,
      case when bool_and(revoked_at is not null) over w then 'revoked' end
    from refresh_tokens
    window w as (partition by family_id order by created_at, id rows between unbounded preceding and unbounded following)
    order by family_id`.execute(db);
  await db.schema
    .alterTable('refresh_tokens')
    .addForeignKeyConstraint('refresh_tokens_family_fk', ['family_id'], 'sessions', ['id'], (c) =>
      c.onDelete('cascade'),
    )
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('refresh_tokens').dropConstraint('refresh_tokens_family_fk').ifExists().execute();
  await db.schema.dropTable('sessions').ifExists().execute();
  await db.schema.dropTable('mfa_challenges').ifExists().execute();
  await db.schema.dropTable('mfa_backup_codes').ifExists().execute();
  await db.schema.dropTable('user_totp').ifExists().execute();
  await db.schema.alterTable('workspaces').dropColumn('require_mfa').execute();
  await db.schema.alterTable('users').dropColumn('mfa_enabled').execute();
}
