// The purge of a deleted workspace beside live traffic (bench/run.ts, scenario "purge beside GET /auth/me"):
// one API instance (a child process) on a database of its own, a workspace of BENCH_PURGE_ROWS generations
// (1,000,000 by default) marked PENDING_DELETION past its purge time, and the purge run here as the worker
// runs it (routers/workspaces/lifecycle.ts, purgeDeletedWorkspaces, in a process of its own). GET /auth/me
// is loaded with autocannon first alone, then for as long as the purge runs; the target is the load's rate
// during the purge at least 0.8x of its rate alone, and the purge finished (rows per second printed).
import autocannon from 'autocannon';
import { createDb } from '../db/index.js';
import { parseConfig, withDevelopmentSecrets } from '../server/platform/config.js';
import { createLogger } from '../server/platform/logger.js';
import { createStorage } from '../server/platform/storage.js';
import { purgeDeletedWorkspaces } from '../routers/workspaces/lifecycle.js';
import { queryRows } from './local.js';

export const PURGE_TARGETS = { ratio: 0.8 };

export interface PurgeFigures {
  rows: number;
  seedSeconds: number;
  aloneRate: number;
  duringRate: number;
  ratio: number;
  purgeSeconds: number;
  rowsPerSecond: number;
  /** Generations of the workspace left after the purge (0 when it finished). */
  left: number;
}

interface Options {
  databaseUrl: string;
  apiUrl: string;
  accessToken: string;
  workspaceId: string;
  rows: number;
  durationS: number;
  connections: number;
  env: Record<string, string>;
}

const loadMe = (o: Options, seconds: number) =>
  autocannon({
    url: `${o.apiUrl}/auth/me`,
    connections: o.connections,
    duration: seconds,
    headers: { authorization: `Bearer ${o.accessToken}` },
  });

export async function measurePurge(o: Options): Promise<PurgeFigures> {
  const seeded = Date.now();
  await queryRows(
    o.databaseUrl,
    `insert into ai_generations (workspace_id, provider, model, prompt, output, status, prompt_tokens, completion_tokens, created_at)
     select $1, 'MOCK', 'mock-writer-1', 'prompt ' || i, 'output ' || i, 'SUCCEEDED', 10, 40, now() - (i || ' seconds')::interval
     from generate_series(1, $2::int) as i`,
    [o.workspaceId, o.rows],
  );
  await queryRows(o.databaseUrl, 'vacuum (analyze) ai_generations');
  const seedSeconds = (Date.now() - seeded) / 1000;

  await loadMe(o, 2); // warm-up
  const alone = await loadMe(o, o.durationS);

  await queryRows(
    o.databaseUrl,
    `update workspaces set status = 'PENDING_DELETION', deletion_requested_at = now(), purge_at = now() - interval '1 second'
     where id = $1`,
    [o.workspaceId],
  );
  const { config } = withDevelopmentSecrets(parseConfig({ ...o.env, DATABASE_URL: o.databaseUrl, LOG_LEVEL: 'warn' }));
  const db = await createDb(config);
  const deps = { db, config, storage: createStorage(config), logger: createLogger(config) };
  let requests = 0;
  let loadSeconds = 0;
  const started = Date.now();
  let purgeSeconds = 0;
  const purge = purgeDeletedWorkspaces(deps).then(() => (purgeSeconds = (Date.now() - started) / 1000));
  try {
    // Windows of load until the purge is done; the rate is over the windows that overlapped it.
    let finished = false;
    void purge.then(() => (finished = true));
    while (!finished) {
      const window = await loadMe(o, 5);
      requests += window.requests.total;
      loadSeconds += window.duration;
    }
    await purge;
  } finally {
    await db.destroy();
  }
  const [{ n }] = await queryRows<{ n: string }>(
    o.databaseUrl,
    'select count(*)::text as n from ai_generations where workspace_id = $1',
    [o.workspaceId],
  );
  const duringRate = requests / loadSeconds;
  return {
    rows: o.rows,
    seedSeconds,
    aloneRate: alone.requests.average,
    duringRate,
    ratio: duringRate / alone.requests.average,
    purgeSeconds,
    rowsPerSecond: o.rows / purgeSeconds,
    left: Number(n),
  };
}
