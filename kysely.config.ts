// kysely-ctl configuration (`npm run migrate`, `npx kysely migrate:list`, ...): the same database choice
// and the same migration list as the server.
import { defineConfig } from 'kysely-ctl';
import { loadDotEnv, parseConfig } from './server/platform/config.js';
import { createDialect } from './db/index.js';
import { migrationProvider } from './db/migrate.js';

export default defineConfig({
  dialect: () => {
    loadDotEnv();
    return createDialect(parseConfig(process.env));
  },
  migrations: { provider: migrationProvider },
});
