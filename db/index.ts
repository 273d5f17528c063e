// Chooses the database: real Postgres through `pg` when DATABASE_URL is a postgres:// URL, else embedded
// PGlite under DATA_DIR/pglite (or in memory for DATABASE_URL=memory://). Same migrations on both.
import fs from 'node:fs';
import path from 'node:path';
import { Kysely, PostgresDialect, type Dialect } from 'kysely';
import pg from 'pg';
import type { Config } from '../server/config.js';
import type { Database } from './schema.js';
import { PGliteDialect } from './pglite-dialect.js';
import { preparedStatements } from './compiled.js';

/**
 * A pg client that runs the SQL of compiledOnce() queries as named prepared statements, and that outlives
 * the loss of its connection while it is checked out of the pool. pg emits 'error' on such a client (a
 * Postgres restart, a failover, a dropped socket), and the pool listens only to its idle clients: an
 * 'error' without a listener is an uncaught exception, which would take the whole process down. The
 * error has already failed the client's queries, which answer 503; the pool drops the dead client when
 * it is released, and reports idle clients' errors itself (onPoolError).
 */
class PreparingClient extends pg.Client {
  constructor(...args: ConstructorParameters<typeof pg.Client>) {
    super(...args);
    this.on('error', () => undefined);
  }

  override query(...args: unknown[]): never {
    const [text, values] = args;
    const name = typeof text === 'string' && Array.isArray(values) ? preparedStatements.get(text) : undefined;
    const query = super.query as (...a: unknown[]) => never;
    return name ? query.call(this, { name, text, values }, ...args.slice(2)) : query.apply(this, args);
  }
}

export type Db = Kysely<Database>;
export type { Database };

type DbConfig = Pick<Config, 'DATABASE_URL' | 'DATABASE_POOL_MAX' | 'DATA_DIR'>;

export function databaseKind(config: Pick<Config, 'DATABASE_URL'>): 'postgres' | 'pglite' | 'pglite-memory' {
  if (!config.DATABASE_URL) return 'pglite';
  return config.DATABASE_URL === 'memory://' ? 'pglite-memory' : 'postgres';
}

export async function createDialect(config: DbConfig, onPoolError?: (err: Error) => void): Promise<Dialect> {
  const kind = databaseKind(config);
  if (kind === 'postgres') {
    const pool = new pg.Pool({ connectionString: config.DATABASE_URL, max: config.DATABASE_POOL_MAX, Client: PreparingClient });
    // An idle client losing its connection must not crash the process; the pool replaces it.
    pool.on('error', (err) => onPoolError?.(err));
    // The prepared statements are planned for the values of each execution, never by a generic plan: a
    // generic plan made while a table was small (a seq scan of a new webhook_deliveries) would stay until
    // the next ANALYZE, however large the table grew meanwhile. Queued before the client's first query.
    pool.on('connect', (client) => void client.query('set plan_cache_mode = force_custom_plan').catch((err: Error) => onPoolError?.(err)));
    return new PostgresDialect({ pool });
  }
  // Loaded only when used: PGlite costs hundreds of MB of WebAssembly memory.
  const { PGlite } = await import('@electric-sql/pglite');
  let dataDir = 'memory://';
  if (kind === 'pglite') {
    dataDir = path.resolve(config.DATA_DIR, 'pglite');
    fs.mkdirSync(dataDir, { recursive: true });
  }
  const pglite = await PGlite.create(dataDir);
  return new PGliteDialect(pglite);
}

export async function createDb(config: DbConfig, onPoolError?: (err: Error) => void): Promise<Db> {
  return new Kysely<Database>({ dialect: await createDialect(config, onPoolError) });
}
