// Chooses the database: real Postgres through `pg` when DATABASE_URL is a postgres:// URL, else embedded
// PGlite under DATA_DIR/pglite (or in memory for DATABASE_URL=memory://). Same migrations on both.
import fs from 'node:fs';
import path from 'node:path';
import { Kysely, PostgresDialect, type Dialect } from 'kysely';
import pg from 'pg';
import type { Config } from '../server/platform/config.js';
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
    // eslint-disable-next-line @typescript-eslint/unbound-method -- called with `this` below
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
    const pool = new pg.Pool({
      connectionString: config.DATABASE_URL,
      max: config.DATABASE_POOL_MAX,
      Client: PreparingClient,
    });
    // An idle client losing its connection must not crash the process; the pool replaces it.
    pool.on('error', (err) => onPoolError?.(err));
    // The prepared statements are planned for the values of each execution, never by a generic plan: a
    // generic plan made while a table was small (a seq scan of a new webhook_deliveries) would stay until
    // the next ANALYZE, however large the table grew meanwhile. And no JIT compilation: it pays off on
    // long analytical queries, never on a request's, and a batched list page (db/batched.ts), whose row
    // estimate knows no parameter value, looked costly enough to be compiled on every execution (20 ms of
    // Postgres CPU for a statement that runs in 1 ms). Queued before the client's first query.
    pool.on(
      'connect',
      (client) =>
        void client
          .query('set plan_cache_mode = force_custom_plan; set jit = off')
          .catch((err: Error) => onPoolError?.(err)),
    );
    return new PostgresDialect({ pool });
  }
  // Loaded only when used: PGlite costs hundreds of MB of WebAssembly memory.
  const { PGlite } = await import('@electric-sql/pglite');
  if (kind === 'pglite-memory') return new PGliteDialect(await PGlite.create('memory://'));
  const dataDir = path.resolve(config.DATA_DIR, 'pglite');
  fs.mkdirSync(dataDir, { recursive: true });
  const release = claimDataDir(dataDir);
  try {
    return new PGliteDialect(await PGlite.create(dataDir), release);
  } catch (err) {
    release();
    throw err;
  }
}

/**
 * PGlite is one process's database: a second process opening the same directory (`npm run demo:seed`
 * while `npm start` runs) writes files the first never reads, and one of the two loses its writes. The
 * directory is claimed by a lock file holding the owner's pid; the lock of a process that is gone is taken
 * over. Answers the release (also run when the process exits).
 */
function claimDataDir(dataDir: string): () => void {
  const lockFile = `${dataDir}.lock`;
  for (;;) {
    try {
      fs.writeFileSync(lockFile, String(process.pid), { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number(fs.readFileSync(lockFile, 'utf8'));
      if (owner && owner !== process.pid && isRunning(owner)) {
        throw new Error(
          `The embedded database in ${dataDir} is in use by process ${owner} (npm start?). Stop it first, or set DATABASE_URL to a Postgres server.`,
          { cause: err },
        );
      }
      fs.rmSync(lockFile, { force: true });
    }
  }
  const release = () => {
    process.off('exit', release);
    if (fs.existsSync(lockFile) && fs.readFileSync(lockFile, 'utf8') === String(process.pid))
      fs.rmSync(lockFile, { force: true });
  };
  process.on('exit', release);
  return release;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function createDb(config: DbConfig, onPoolError?: (err: Error) => void): Promise<Db> {
  return new Kysely<Database>({ dialect: await createDialect(config, onPoolError) });
}
