// Entry point of `npm run demo:seed` and `npm run demo:reset` (seed.ts, reset.ts): same settings and
// database choice as the server (Postgres with DATABASE_URL, else the embedded database under DATA_DIR),
// migrations first, then the command; prints what it did (counts, addresses, names of settings; never a
// password or a secret) and closes the database. Exit code 1 on a bad setting or a failure.
import { ConfigError, loadConfigOrExit } from '../server/platform/config.js';
import { PasswordHasher } from '../server/platform/security/passwords.js';
import { SecretBox } from '../server/platform/security/secret-box.js';
import { createStorage } from '../server/platform/storage.js';
import { createDb, databaseKind } from '../db/index.js';
import { migrateToLatest } from '../db/migrate.js';
import { resetDemo } from './reset.js';
import { seedDemo } from './seed.js';
import { formatDemoSummary } from './summary.js';

const command = process.argv[2];
if (command !== 'seed' && command !== 'reset') {
  console.error('usage: tsx demo/cli.ts seed|reset   (npm run demo:seed, npm run demo:reset)');
  process.exit(2);
}

const { config, warning } = loadConfigOrExit();
if (warning) console.error(`warning: ${warning}`);

const failed = (err: unknown) =>
  // A configuration problem names the setting; anything else is reported by its message only.
  console.error(
    err instanceof ConfigError
      ? err.message
      : `demo:${command} failed: ${err instanceof Error ? err.message : String(err)}`,
  );

let exitCode = 0;
// The embedded database may be held by a running server: said in one line, like any other failure.
const db = await createDb(config, (err) => console.error(`database connection failed: ${err.message}`)).catch(
  (err: unknown) => {
    failed(err);
    process.exit(1);
  },
);
try {
  const applied = await migrateToLatest(db);
  console.log(`database: ${databaseKind(config)}${applied.length ? `, ${applied.length} migration(s) applied` : ''}`);
  const deps = {
    db,
    config,
    passwords: new PasswordHasher(config.BCRYPT_COST),
    secrets: new SecretBox(config.WEBHOOK_SECRET_ENCRYPTION_KEY),
    storage: createStorage(config),
  };
  const summary = command === 'seed' ? await seedDemo(deps) : await resetDemo(deps, { via: 'command' });
  for (const line of formatDemoSummary(summary)) console.log(line);
} catch (err) {
  exitCode = 1;
  failed(err);
} finally {
  await db.destroy();
}
process.exit(exitCode);
