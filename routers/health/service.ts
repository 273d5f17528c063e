// Whether this instance should get traffic: `degraded` while the database does not answer, `draining`
// from the start of a shutdown (server/server.ts), `ok` otherwise.
import { sql } from 'kysely';
import type { Db } from '../../db/index.js';
import type { AppDeps } from '../../server/platform/context.js';

const DB_PING_TIMEOUT_MS = 2000;

async function pingDatabase(db: Db): Promise<{ reachable: boolean; latencyMs: number | null }> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      sql`select 1`.execute(db),
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), DB_PING_TIMEOUT_MS))),
    ]);
    return { reachable: true, latencyMs: Math.round((performance.now() - started) * 10) / 10 };
  } catch {
    return { reachable: false, latencyMs: null };
  } finally {
    clearTimeout(timer);
  }
}

export async function health(deps: Pick<AppDeps, 'db' | 'config' | 'lifecycle' | 'startedAt'>) {
  const database = await pingDatabase(deps.db);
  const status: 'ok' | 'degraded' | 'draining' = deps.lifecycle.draining
    ? 'draining'
    : database.reachable
      ? 'ok'
      : 'degraded';
  return {
    status,
    version: deps.config.SERVICE_VERSION,
    uptimeSeconds: Math.round((Date.now() - deps.startedAt.getTime()) / 1000),
    database,
  };
}
