// The baselines of the benchmark (bench/run.ts starts it as a child process): a bare Express 5 app with
// no middleware but what each route needs.
//   GET  /json    a small JSON object: the ceiling of any JSON route of the API.
//   POST /bcrypt  {password} -> one bcrypt.compare against a hash made at start-up at BCRYPT_COST: the
//                 ceiling of POST /auth/login. 200 when the password matches, 401 otherwise.
//   GET  /page    ?workspaceId= -> the first 20 AI generations of the workspace, newest first, read with
//                 pg (one prepared statement on the history index), mapped by the API's toGeneration, as
//                 JSON: the floor of a list page, without authentication, validation, totals or signed cursors.
//                 Only with BENCH_DATABASE_URL.
// Settings from the environment: PORT, HOST (default 127.0.0.1), BCRYPT_COST (default 12),
// BENCH_PASSWORD (the password the hash is made of) and BENCH_DATABASE_URL.
import express from 'express';
import bcrypt from 'bcrypt';
import type { Selectable } from 'kysely';
import pg from 'pg';
import type { AiGenerationsTable } from '../db/schema.js';
import { toGeneration } from '../routers/ai/service.js';

const port = Number(process.env.PORT ?? 3100);
const host = process.env.HOST ?? '127.0.0.1';
const cost = Number(process.env.BCRYPT_COST ?? 12);
const password = process.env.BENCH_PASSWORD ?? 'bench-password-1';

const hash = await bcrypt.hash(password, cost);

const app = express();
app.disable('x-powered-by');

app.get('/json', (_req, res) => {
  res.json({ hello: 'world' });
});

app.post('/bcrypt', express.json(), async (req, res) => {
  const candidate: unknown = req.body?.password;
  const ok = typeof candidate === 'string' && (await bcrypt.compare(candidate, hash));
  res.status(ok ? 200 : 401).json({ ok });
});

const databaseUrl = process.env.BENCH_DATABASE_URL;
if (databaseUrl) {
  // As many connections as the API's pool (DATABASE_POOL_MAX's default).
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  const PAGE = {
    name: 'bare-page',
    text: `select * from ai_generations where workspace_id = $1 and not is_sample
           order by created_at desc, id desc limit 21`,
  };
  app.get('/page', async (req, res) => {
    const workspaceId = typeof req.query.workspaceId === 'string' ? req.query.workspaceId : '';
    const { rows } = await pool.query<Selectable<AiGenerationsTable>>({ ...PAGE, values: [workspaceId] });
    const items = rows.slice(0, 20).map(toGeneration);
    const last = items.at(-1);
    res.json({ items, limit: 20, nextCursor: rows.length > 20 && last ? `${last.createdAt}.${last.id}` : null });
  });
}

const server = app.listen(port, host, (err) => {
  if (err) throw err;
  console.log(`bare server on http://${host}:${port} (bcrypt cost ${cost})`);
});

const shutdown = () => server.close(() => process.exit(0));
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
