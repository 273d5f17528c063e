// Runs db/migrations to the latest version: at start-up, in the test set-up, and through kysely-ctl
// (`npm run migrate`, which uses the same provider). Migrations are listed here explicitly, so they load
// the same way under tsx, vitest or compiled JavaScript; tests/db/migrations.test.ts checks that every file
// of db/migrations is listed.
import { Migrator, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import * as m0001 from './migrations/0001_accounts.js';
import * as m0002 from './migrations/0002_invitations_audit.js';
import * as m0003 from './migrations/0003_billing.js';
import * as m0004 from './migrations/0004_ai.js';
import * as m0005 from './migrations/0005_developer.js';
import * as m0006 from './migrations/0006_content.js';
import * as m0007 from './migrations/0007_ai_counter_tokens.js';
import * as m0008 from './migrations/0008_api_key_rotation.js';
import * as m0009 from './migrations/0009_refresh_token_newest.js';
import * as m0010 from './migrations/0010_identity_providers.js';
import * as m0011 from './migrations/0011_mfa_sessions.js';
import * as m0012 from './migrations/0012_idempotency_keys.js';
import * as m0013 from './migrations/0013_list_scale.js';
import * as m0014 from './migrations/0014_list_changes.js';
import * as m0015 from './migrations/0015_second_factor_failures.js';
import * as m0016 from './migrations/0016_self_service.js';
import * as m0017 from './migrations/0017_sso_domains.js';
import * as m0018 from './migrations/0018_sso_connections.js';
import * as m0019 from './migrations/0019_scim.js';
import * as m0020 from './migrations/0020_ai_streaming.js';
import * as m0021 from './migrations/0021_billing_seats_usage.js';
import * as m0022 from './migrations/0022_mcp_oauth.js';
import * as m0023 from './migrations/0023_member_counters.js';

export const migrations: Record<string, Migration> = {
  '0001_accounts': m0001,
  '0002_invitations_audit': m0002,
  '0003_billing': m0003,
  '0004_ai': m0004,
  '0005_developer': m0005,
  '0006_content': m0006,
  '0007_ai_counter_tokens': m0007,
  '0008_api_key_rotation': m0008,
  '0009_refresh_token_newest': m0009,
  '0010_identity_providers': m0010,
  '0011_mfa_sessions': m0011,
  '0012_idempotency_keys': m0012,
  '0013_list_scale': m0013,
  '0014_list_changes': m0014,
  '0015_second_factor_failures': m0015,
  '0016_self_service': m0016,
  '0017_sso_domains': m0017,
  '0018_sso_connections': m0018,
  '0019_scim': m0019,
  '0020_ai_streaming': m0020,
  '0021_billing_seats_usage': m0021,
  '0022_mcp_oauth': m0022,
  '0023_member_counters': m0023,
};

export const migrationProvider: MigrationProvider = { getMigrations: () => Promise.resolve(migrations) };

// Kysely<any>: migrations run on any database, before the app's Database type describes it.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    const name = failed ? ` (${failed.migrationName})` : '';
    throw new Error(`Database migration failed${name}: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  }
  return (results ?? []).map((r) => r.migrationName);
}
