// The baselines of the benchmark (bench/run.ts starts it as a child process): a bare Express 5 app with
// no middleware but what each route needs.
//   GET  /json    a small JSON object: the ceiling of any JSON route of the API.
//   POST /bcrypt  {password} -> one bcrypt.compare against a hash made at start-up at BCRYPT_COST: the
//                 ceiling of POST /auth/login. 200 when the password matches, 401 otherwise.
//   GET  /page    ?workspaceId= -> the first 20 AI generations of the workspace, newest first, read with
//                 pg (one prepared statement on the history index), mapped by the API's toGeneration, as
//                 JSON: the floor of a list page, without authentication, validation, totals or signed cursors.
//                 Only with BENCH_DATABASE_URL.
//   GET  /scim-page ?workspaceId=&startIndex=&count= -> the SCIM ListResponse of `count` members from
//                 `startIndex`, as /scim/v2/Users answers it (the API's toScimUser, same JSON): the floor of
//                 the SCIM page (bench/scim.ts). The (created_at, id) of every member is read once, at the
//                 first request; each page is then one prepared keyset statement from its first member's
//                 key. No authentication, validation or counters. Only with BENCH_DATABASE_URL.
//   POST /stream  an event stream shaped as the API's streamed generation (`started`, BENCH_STREAM_CHUNKS
//                 `delta` events STREAM_CHUNK_DELAY_MS apart, the first at once, then `completed`), without
//                 authentication, validation or a database: the floor of a streamed answer (bench/stream.ts).
//   PUT  /blob    stores the body; GET /blob answers it as JSON: the floor of sending an answer of that
//                 size (bench/run.ts stores the API's MCP tools/list answer there).
//   GET  /loop    {p99Ms}: this process's event-loop delay p99 since the last read (10 ms resolution).
// Settings from the environment: PORT, HOST (default 127.0.0.1), BCRYPT_COST (default 12),
// BENCH_PASSWORD (the password the hash is made of) and BENCH_DATABASE_URL.
import crypto from 'node:crypto';
import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import express from 'express';
import bcrypt from 'bcrypt';
import type { Selectable } from 'kysely';
import pg from 'pg';
import type { AiGenerationsTable } from '../db/schema.js';
import { toGeneration } from '../routers/ai/service.js';
import { listResponse } from '../routers/scim/resources.js';
import { toScimUser } from '../routers/scim/users.js';

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

const streamChunks = Number(process.env.BENCH_STREAM_CHUNKS ?? 55);
const streamDelayMs = Number(process.env.STREAM_CHUNK_DELAY_MS ?? 20);
const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

let blob = '{}';
app.put('/blob', express.text({ type: '*/*', limit: '1mb' }), (req, res) => {
  blob = String(req.body);
  res.status(204).end();
});
app.get('/blob', (_req, res) => {
  res.type('application/json').send(blob);
});

// The event-loop delay as the API's /metrics measures it (prom-client: 10 ms resolution), p99 since the
// last read: the floor of the streaming bench's loop delay.
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();
app.get('/loop', (_req, res) => {
  res.json({ p99Ms: loop.percentile(99) / 1e6 });
  loop.reset();
});

app.post('/stream', (req, res) => {
  const id = crypto.randomUUID();
  res.status(200).set({ 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache' });
  res.flushHeaders();
  res.write(sse('started', { id }));
  let sent = 0;
  const send = () => {
    if (res.destroyed) return;
    res.write(sse('delta', { text: 'word ' }));
    sent += 1;
    if (sent < streamChunks) return void setTimeout(send, streamDelayMs);
    res.end(sse('completed', { id, output: 'word '.repeat(streamChunks) }));
  };
  send();
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

  // The SCIM page's floor: every member's key, in order, read once per workspace (the bench's only one).
  const keysOf = new Map<string, Promise<Array<{ at: string; id: string }>>>();
  const KEYS = `select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at, id
                from workspace_members where workspace_id = $1 order by created_at, id`;
  const SCIM_PAGE = {
    name: 'bare-scim-page',
    text: `select m.id, m.status, m.external_id, m.given_name, m.family_name,
             to_char(m.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created,
             to_char(m.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as last_modified,
             u.email, u.name,
             case when exists (select 1 from scim_groups wg where wg.workspace_id = $1)
               then coalesce((select json_agg(json_build_object('id', gm.group_id,
                 'name', (select g.display_name from scim_groups g where g.id = gm.group_id)))
                 from scim_group_members gm where gm.member_id = m.id), '[]'::json)
               else '[]'::json end as groups
           from workspace_members m join users u on u.id = m.user_id
           where m.workspace_id = $1 and (m.created_at, m.id) >= ($2::timestamptz, $3::uuid)
           order by m.created_at, m.id limit $4`,
  };
  app.get('/scim-page', async (req, res) => {
    const workspaceId = typeof req.query.workspaceId === 'string' ? req.query.workspaceId : '';
    const startIndex = Number(req.query.startIndex);
    const count = Number(req.query.count);
    let keys = keysOf.get(workspaceId);
    if (!keys) {
      keys = pool.query<{ at: string; id: string }>(KEYS, [workspaceId]).then((r) => r.rows);
      keysOf.set(workspaceId, keys);
    }
    const all = await keys;
    const key = all[startIndex - 1];
    const { rows } = await pool.query({ ...SCIM_PAGE, values: [workspaceId, key.at, key.id, count] });
    const baseUrl = `${req.protocol}://${req.get('host')}`;
    const body = listResponse(
      rows.map((r) => toScimUser(r, baseUrl)),
      all.length,
      startIndex,
    );
    res.type('application/scim+json').send(JSON.stringify(body));
  });
}

// The API's listen backlog (server/server.ts), so that a burst of connections meets the same queue.
const server = http.createServer(app).listen({ port, host, backlog: 4096 }, () => {
  console.log(`bare server on http://${host}:${port} (bcrypt cost ${cost})`);
});

const shutdown = () => server.close(() => process.exit(0));
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
