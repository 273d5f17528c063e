// Verified domains of a workspace (enterprise single sign-on and directory sync rely on them): a domain is
// PENDING until a TXT record proves the workspace controls it, and VERIFIED by one workspace at most (the
// partial unique index). A verified domain whose record has gone since `missing_since` for 7 days goes back
// to PENDING (the periodic re-check).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('workspace_domains')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('workspace_id', 'uuid', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('domain', 'text', (c) => c.notNull().check(sql`domain = lower(domain)`))
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('PENDING')
        .check(sql`status in ('PENDING', 'VERIFIED')`),
    )
    .addColumn('verification_token', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('verified_at', 'timestamptz')
    .addColumn('checked_at', 'timestamptz')
    .addColumn('missing_since', 'timestamptz')
    .addUniqueConstraint('workspace_domains_workspace_domain_key', ['workspace_id', 'domain'])
    .execute();
  await sql`create unique index workspace_domains_verified_key on workspace_domains (domain) where status = 'VERIFIED'`.execute(
    db,
  );
  await sql`create index workspace_domains_recheck_idx on workspace_domains (checked_at) where status = 'VERIFIED'`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('workspace_domains').execute();
}
