// `npm run bench`: throughput and p99 latency of the API against baselines measured in the same run.
//
// One run does: create a throw-away Postgres database; start three API instances (server/index.ts: plain,
// with the Redis limiter and monitoring, with both off), a bare Express server (bench/bare-server.ts), a
// webhook receiver (bench/receiver.ts) and, for the queue runs, the two queue workers, all as child
// processes, so that autocannon, which runs here, shares no event loop with them; register and sign in one
// user and make the data; run each scenario with autocannon over BENCH_ROUNDS rounds, then the queue runs
// (bench/queue.ts: each worker timed alone, its jobs already queued); print a table and write
// bench/results/latest.json; stop the children and drop the database (also on error and Ctrl-C).
// Scenarios and their targets:
//   bare GET /json                        the baseline of the JSON routes
//   GET /health                           ratio to bare /json, no target
//   GET /auth/me                          ratio to bare /json, target >= 0.45x
//   GET /billing/plans                    ratio to bare /json, target >= 0.6x (the public catalog, from memory)
//   GET /public-api/me                    ratio to bare /json, target >= 0.45x (an API key)
//   bare GET /page, 20 rows from pg       page 1 of the big workspace read by bare Express and pg, without
//                                         authentication or validation: the floor of a page; ratio to
//                                         GET /auth/me, no target
//   GET /ai/history, 1,000 rows           page 1 of a small workspace: ratio to the bare page, no target
//   GET /ai/history page 1, 1,000,000 rows   ratio to the same page of 1,000 rows, target >= 0.77x (1 / 1.3);
//                                         each page of 1,000,000 rows (page 1, page 500, the deep cursor) also
//                                         >= 0.85x of the bound of an authenticated page (GET /auth/me plus
//                                         what the bare page adds to bare /json), p99 <= 2x the bare page's p99
//   POST /mcp tools/call ai_history, 1,000 rows   ratio to GET /ai/history, 1,000 rows, target >= 0.7x (bench/mcp.ts)
//   POST /mcp tools/list                  ratio to GET /auth/me, target >= 0.8x; printed also against its bound
//                                         (GET /auth/me plus what bare Express sending the same answer, bare
//                                         GET /blob, adds to bare /json)
//   GET /ai/history page 500, 1,000,000 rows ratio to page 1 of the same, target >= 0.5x (rows 9,981 to 10,000)
//   GET /ai/history cursor at row 900,000    ratio to page 1 of the same, target >= 0.8x
//   POST /ai/generate (MOCK)              ratio to bare /json, target >= 0.25x
//   GET /auth/me, Redis limiter + monitoring   ratio to the same with both off, target >= 0.9x
//   GET /trpc/auth.me                     the same procedure through /trpc: ratio to GET /auth/me, target >= 1.0x
//   GET /trpc batch of 3 queries          auth.me, plans.catalog and status.search in one /trpc request
//                                         (httpBatchLink's GET): ratio to GET /auth/me, target >= 0.8x
//   bare POST /bcrypt                     one bcrypt.compare at the API's cost: the ceiling of login
//   POST /auth/login                      ratio to bare /bcrypt, target >= 0.85x
//   deliver_webhook via BullMQ            ratio to raw BullMQ no-op jobs, target >= 0.5x
//   production start                      bench/startup.ts: first 200 on /health <= 2 s, idle RSS <= 150 MB
//   deliveries beside a hanging endpoint  bench/isolation.ts: healthy rate >= 0.8x of alone, p99 < 1 s
//   purge beside GET /auth/me             bench/purge.ts: a deleted workspace of BENCH_PURGE_ROWS (1,000,000)
//                                         generations purged while GET /auth/me is loaded: its rate >= 0.8x
//                                         of alone, the purge finished (rows per second printed)
// (the last three run first, each on a database of its own; BENCH_STARTUP_RUNS, BENCH_STARTUP_SETTLE_MS,
// BENCH_ISOLATION_DELIVERIES, BENCH_ISOLATION_RATE, BENCH_ISOLATION_HEALTHY: docs/performance.md)
// The exit code is non-zero only when the run itself crashes; a missed target or a scenario with errors
// is reported in the table, not in the exit code.
//
// Environment: BENCH_POSTGRES_URL (admin URL, default postgres://postgres@127.0.0.1:5432/postgres),
// BENCH_DURATION (seconds per measured run, default 10), BENCH_CONNECTIONS (JSON routes, default 50),
// BENCH_BCRYPT_CONNECTIONS (login and bcrypt, default 8), BENCH_JOBS (queued jobs per queue run, default
// 20000; each queue runs that many in each round), BENCH_WARM_UP_JOBS (jobs each queue worker runs
// untimed first, default 5000),
// BENCH_QUEUE_CONCURRENCY (both queue workers, default 100 as WEBHOOK_WORKER_CONCURRENCY),
// BENCH_ROUNDS (rounds over the scenario list, default 3: each scenario's time is split over them),
// BENCH_ONLY (a regular expression: run only the scenarios whose name matches it, with their baselines;
// the queue runs are named "raw BullMQ no-op jobs" and "deliver_webhook via BullMQ"; BENCH_ONLY=trpc runs the
// two /trpc scenarios with GET /auth/me), BENCH_PROFILE_DIR (every
// child process writes a V8 CPU profile there when it exits, for `node --cpu-prof` analysis).
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { cursorKey, encodeCursor } from '../server/platform/pagination.js';
import { DELIVER_WEBHOOK, WEBHOOK_QUEUE, deliverJobOptions } from '../jobs/queue.js';
import {
  combined,
  startRawJobs,
  startWebhookDeliveries,
  type QueueBench,
  type QueueMeasurement,
  type StartedWorker,
} from './queue.js';
import { STARTUP_TARGETS, measureStartup } from './startup.js';
import { ISOLATION_TARGETS, measureIsolation } from './isolation.js';
import { PURGE_TARGETS, measurePurge } from './purge.js';
import { cpuSecondsBetween, cpuSecondsByPid, cpuSecondsOf } from './cpu.js';
import { MCP_HISTORY_BODY, MCP_LIST_BODY, mcpHeaders, mcpHistoryPage, mcpToolList } from './mcp.js';
import { freePort, withClient } from './local.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RESULTS_FILE = path.join(ROOT, 'bench', 'results', 'latest.json');
const ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const BCRYPT_COST = 12; // the production default, for the API and the bcrypt ceiling alike
const DURATION_S = positiveInt('BENCH_DURATION', 10);
const JSON_CONNECTIONS = positiveInt('BENCH_CONNECTIONS', 50);
const BCRYPT_CONNECTIONS = positiveInt('BENCH_BCRYPT_CONNECTIONS', 8);
// bcrypt-bound runs answer about 7 requests a second: twice as long keeps their ratio from being noise.
const BCRYPT_DURATION_S = 2 * DURATION_S;
const WARM_UP_S = 2;
/** `node` options of every child process: CPU profiles when BENCH_PROFILE_DIR is set. */
const CHILD_NODE_ARGS = process.env.BENCH_PROFILE_DIR
  ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env.BENCH_PROFILE_DIR)}`]
  : [];
/** Rounds over the scenario list; each round runs every scenario for its duration / ROUNDS. */
const ROUNDS = positiveInt('BENCH_ROUNDS', 3);
const JOBS = positiveInt('BENCH_JOBS', 20000);
const CONCURRENCY = positiveInt('BENCH_QUEUE_CONCURRENCY', 100);
const WARM_UP_JOBS = positiveInt('BENCH_WARM_UP_JOBS', 5000);
const ONLY = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY, 'i') : undefined;
const READY_TIMEOUT_MS = 60_000;
/** The scenarios of their own (bench/startup.ts, bench/isolation.ts), run first when selected. */
const STARTUP_SCENARIO = 'production start';
const ISOLATION_SCENARIO = 'deliveries beside a hanging endpoint';
const PURGE_SCENARIO = 'purge beside GET /auth/me';
const PURGE_ROWS = positiveInt('BENCH_PURGE_ROWS', 1_000_000);
const STARTUP_RUNS = positiveInt('BENCH_STARTUP_RUNS', 3);
const STARTUP_SETTLE_MS = positiveInt('BENCH_STARTUP_SETTLE_MS', 5_000);
const ISOLATION_DELIVERIES = positiveInt('BENCH_ISOLATION_DELIVERIES', 20_000);
const ISOLATION_RATE = positiveInt('BENCH_ISOLATION_RATE', 1_000);
const ISOLATION_HEALTHY = positiveInt('BENCH_ISOLATION_HEALTHY', 4);
const USER = { email: 'bench@example.com', password: 'bench-Password-42', name: 'Bench User' };

function positiveInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive whole number, got "${raw}"`);
  return n;
}

// ---------------------------------------------------------------- database

interface BenchDatabase {
  name: string;
  url: string;
}

async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect().catch((err: Error) => {
    throw new Error(`The benchmark needs Postgres at ${ADMIN_URL} (set BENCH_POSTGRES_URL): ${err.message}`);
  });
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function createDatabase(): Promise<BenchDatabase> {
  const name = `bench_${Date.now().toString(36)}_${crypto.randomBytes(3).toString('hex')}`;
  await withAdmin((admin) => admin.query(`create database "${name}"`));
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return { name, url: url.toString() };
}

async function dropDatabase(db: BenchDatabase): Promise<void> {
  await withAdmin((admin) => admin.query(`drop database if exists "${db.name}" with (force)`));
}

/** The bcrypt cost the API actually stored for the bench user (the `$2b$12$` prefix). */
async function storedHashCost(db: BenchDatabase, email: string): Promise<number> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    const { rows } = await client.query<{ password_hash: string }>('select password_hash from users where email = $1', [
      email,
    ]);
    return Number(rows[0]?.password_hash.split('$')[2]);
  } finally {
    await client.end();
  }
}

// ---------------------------------------------------------------- child processes

interface Child {
  name: string;
  url: string;
  process: ChildProcess;
  /** Set once the process has exited. */
  exited?: string;
}

/** `node --import tsx <script>` in the repository root; its output goes to this process's output. */
async function startChild(name: string, script: string, env: Record<string, string>): Promise<Child> {
  const port = await freePort();
  const child = spawn(process.execPath, [...CHILD_NODE_ARGS, '--import', 'tsx', script], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const handle: Child = { name, url: `http://127.0.0.1:${port}`, process: child };
  child.once('exit', (code, signal) => (handle.exited = signal ?? `code ${code}`));
  child.once('error', (err) => (handle.exited = err.message));
  return handle;
}

async function waitUntilReady(child: Child, readyPath: string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exited) throw new Error(`${child.name} exited during start-up (${child.exited})`);
    const status = await fetch(child.url + readyPath).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`${child.name} did not answer GET ${readyPath} with 200 within ${READY_TIMEOUT_MS / 1000} s`);
}

async function stopChild(child: Child): Promise<void> {
  if (child.exited || child.process.exitCode !== null) return;
  const exited = new Promise((resolve) => child.process.once('exit', resolve));
  child.process.kill('SIGTERM');
  const timer = setTimeout(() => child.process.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

function assertAlive(...children: Child[]): void {
  for (const child of children)
    if (child.exited) throw new Error(`${child.name} exited unexpectedly (${child.exited})`);
}

// ---------------------------------------------------------------- API session

async function postJson(url: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

/** Registers the bench user and signs in; returns the access token. */
async function signIn(apiUrl: string): Promise<string> {
  const registered = await postJson(`${apiUrl}/auth/register`, USER);
  if (registered.status !== 201)
    throw new Error(`POST /auth/register answered ${registered.status}: ${JSON.stringify(registered.json)}`);
  const login = await postJson(`${apiUrl}/auth/login`, { email: USER.email, password: USER.password });
  if (login.status !== 200 || typeof login.json.accessToken !== 'string') {
    throw new Error(`POST /auth/login answered ${login.status}: ${JSON.stringify(login.json)}`);
  }
  return login.json.accessToken;
}

// ---------------------------------------------------------------- scenarios

interface Scenario {
  name: string;
  url: string;
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  warmUp: boolean;
  /** Seconds of the measured run (default BENCH_DURATION). */
  durationS?: number;
  /** Name of the scenario this one is compared with, and the minimum ratio to it. */
  baseline?: string;
  target?: number;
  /** Checked on one answer before the first run: why the answer is not the one meant to be measured, if not. */
  check?: (status: number, body: string) => string | undefined;
}

interface Measurement {
  name: string;
  method: string;
  url: string;
  connections: number;
  durationS: number;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /**
   * CPU time per request of the server answering (the API or the bare server) and of every Postgres
   * process of the machine (µs, over the measured runs; undefined where /proc cannot be read).
   */
  serverCpuUs?: number;
  postgresCpuUs?: number;
  /** Why the scenario is not trustworthy (non-2xx answers, connection errors), if it is not. */
  error?: string;
  baseline?: string;
  ratio?: number;
  target?: number;
  verdict: 'PASS' | 'FAIL' | 'ERROR' | '-';
}

interface Targets {
  /** The API as shipped, rate limiting off (it would refuse a benchmark). */
  api: string;
  /** The same with the Redis rate limiter (limits out of reach) and monitoring on. */
  fullStack: string;
  /** The same with rate limiting and monitoring off. */
  bareStack: string;
  bare: string;
  accessToken: string;
  apiKey: string;
  /** A workspace holding 1,000,000 generations, and one holding 1,000. */
  historyWorkspace: string;
  smallHistoryWorkspace: string;
  /** A cursor of historyWorkspace's list after its 900,000th row. */
  deepCursor: string;
  /** An API key (scope read) of smallHistoryWorkspace, for /mcp. */
  mcpKey: string;
}

function scenarios(t: Targets): Scenario[] {
  const json = { 'content-type': 'application/json' };
  const auth = { authorization: `Bearer ${t.accessToken}` };
  const credentials = JSON.stringify({ email: USER.email, password: USER.password });
  const history = (workspaceId: string, query: string) =>
    `${t.api}/workspaces/${workspaceId}/ai/generations?limit=20&${query}`;
  const base = { connections: JSON_CONNECTIONS, warmUp: true } as const;
  return [
    { name: 'bare GET /json', url: `${t.bare}/json`, method: 'GET', ...base },
    {
      name: BARE_PAGE,
      url: `${t.bare}/page?workspaceId=${t.historyWorkspace}`,
      method: 'GET',
      ...base,
      baseline: 'GET /auth/me',
      check: historyPage(),
    },
    { name: 'GET /health', url: `${t.api}/health`, method: 'GET', ...base, baseline: 'bare GET /json' },
    {
      name: 'GET /auth/me',
      url: `${t.api}/auth/me`,
      method: 'GET',
      headers: auth,
      ...base,
      baseline: 'bare GET /json',
      target: 0.45,
    },
    {
      name: 'GET /trpc/auth.me',
      url: `${t.api}/trpc/auth.me`,
      method: 'GET',
      headers: auth,
      ...base,
      baseline: 'GET /auth/me',
      target: 1.0,
      check: trpcAnswer(1),
    },
    {
      name: `GET /trpc batch of 3 (${TRPC_BATCH.join(',')})`,
      url: `${t.api}/trpc/${TRPC_BATCH.join(',')}?batch=1&input=${encodeURIComponent('{}')}`,
      method: 'GET',
      headers: auth,
      ...base,
      baseline: 'GET /auth/me',
      target: 0.8,
      check: trpcAnswer(TRPC_BATCH.length),
    },
    {
      name: 'GET /billing/plans',
      url: `${t.api}/billing/plans`,
      method: 'GET',
      ...base,
      baseline: 'bare GET /json',
      target: 0.6,
    },
    {
      name: 'GET /public-api/me',
      url: `${t.api}/public-api/me`,
      method: 'GET',
      headers: { 'x-api-key': t.apiKey },
      ...base,
      baseline: 'bare GET /json',
      target: 0.45,
    },
    {
      name: 'GET /ai/history, 1,000 rows',
      url: history(t.smallHistoryWorkspace, 'page=1'),
      method: 'GET',
      headers: auth,
      ...base,
      baseline: BARE_PAGE,
      check: historyPage(1_000),
    },
    {
      name: 'POST /mcp tools/call ai_history, 1,000 rows',
      url: `${t.api}/mcp`,
      method: 'POST',
      headers: mcpHeaders(t.mcpKey),
      body: MCP_HISTORY_BODY,
      ...base,
      baseline: 'GET /ai/history, 1,000 rows',
      target: 0.7,
      check: mcpHistoryPage(1_000),
    },
    {
      name: TOOL_LIST_FLOOR,
      url: `${t.bare}/blob`,
      method: 'GET',
      ...base,
      baseline: 'bare GET /json',
    },
    {
      name: 'POST /mcp tools/list',
      url: `${t.api}/mcp`,
      method: 'POST',
      headers: mcpHeaders(t.mcpKey),
      body: MCP_LIST_BODY,
      ...base,
      baseline: 'GET /auth/me',
      target: 0.8,
      check: mcpToolList,
    },
    {
      name: 'GET /ai/history page 1, 1,000,000 rows',
      url: history(t.historyWorkspace, 'page=1'),
      method: 'GET',
      headers: auth,
      ...base,
      baseline: 'GET /ai/history, 1,000 rows',
      target: 0.77, // within 1.3x of the same page of a small workspace
      check: historyPage(HISTORY_ROWS),
    },
    {
      name: 'GET /ai/history page 500, 1,000,000 rows',
      url: history(t.historyWorkspace, 'page=500'),
      method: 'GET',
      headers: auth,
      ...base,
      baseline: 'GET /ai/history page 1, 1,000,000 rows',
      target: 0.5,
      check: historyPage(HISTORY_ROWS),
    },
    {
      name: 'GET /ai/history cursor at row 900,000',
      url: history(t.historyWorkspace, `cursor=${t.deepCursor}`),
      method: 'GET',
      headers: auth,
      ...base,
      baseline: 'GET /ai/history page 1, 1,000,000 rows',
      target: 0.8,
      check: historyPage(),
    },
    {
      name: 'POST /ai/generate (MOCK)',
      url: `${t.api}/ai/generate`,
      method: 'POST',
      headers: { ...auth, ...json },
      body: JSON.stringify({ prompt: 'Write a tagline for a benchmark' }),
      ...base,
      baseline: 'bare GET /json',
      target: 0.25,
    },
    {
      name: 'GET /auth/me, limiter and monitoring off',
      url: `${t.bareStack}/auth/me`,
      method: 'GET',
      headers: auth,
      ...base,
    },
    {
      name: 'GET /auth/me, Redis limiter + monitoring',
      url: `${t.fullStack}/auth/me`,
      method: 'GET',
      headers: auth,
      ...base,
      baseline: 'GET /auth/me, limiter and monitoring off',
      target: 0.9,
    },
    {
      name: 'bare POST /bcrypt',
      url: `${t.bare}/bcrypt`,
      method: 'POST',
      headers: json,
      body: JSON.stringify({ password: USER.password }),
      connections: BCRYPT_CONNECTIONS,
      warmUp: true,
      durationS: BCRYPT_DURATION_S,
    },
    {
      name: 'POST /auth/login',
      url: `${t.api}/auth/login`,
      method: 'POST',
      headers: json,
      body: credentials,
      connections: BCRYPT_CONNECTIONS,
      warmUp: true,
      durationS: BCRYPT_DURATION_S,
      baseline: 'bare POST /bcrypt',
      target: 0.85,
    },
  ];
}

/** The floor of a list page (bench/bare-server.ts): page 1 of the big workspace, read by bare Express and pg. */
const BARE_PAGE = 'bare GET /page, 20 rows from pg';
/** The floor of tools/list's answer: bare Express sending the same bytes (bench/bare-server.ts /blob). */
const TOOL_LIST_FLOOR = 'bare GET /blob, the MCP tools/list answer';

/** Each page of the big history workspace: at least this ratio of GET /auth/me, and this p99. */
/** Each history page of the big workspace against the bound of an authenticated page, and its p99 against the bare page's. */
const HISTORY_TO_BOUND = 0.85;
const HISTORY_P99_TO_BARE = 2;

/** The rows of the big history workspace (the small one holds 1,000). */
const HISTORY_ROWS = 1_000_000;
const DEEP_ROW = 900_000;

/** A full page of 20 generations (in page mode, of a list of `total`), with a cursor to the next. */
const historyPage = (total?: number) => (status: number, body: string) => {
  const page = JSON.parse(body) as { items?: unknown[]; total?: number; nextCursor?: string | null };
  const ok =
    status === 200 &&
    page.items?.length === 20 &&
    typeof page.nextCursor === 'string' &&
    (total === undefined || page.total === total);
  return ok ? undefined : `answered ${status}: ${body.slice(0, 300)}`;
};

/** Three cheap queries, as @trpc/client's httpBatchLink sends them together (GET, `?batch=1`). */
const TRPC_BATCH = ['auth.me', 'status.search', 'status.security'];

/** A /trpc answer of `calls` successes: 200 with `{ result }` (a batch: an array of them; 207 is a mixed batch). */
const trpcAnswer = (calls: number) => (status: number, body: string) => {
  const parsed = JSON.parse(body) as unknown;
  const answers = Array.isArray(parsed) ? parsed : [parsed];
  const ok =
    status === 200 && answers.length === calls && answers.every((a) => a && typeof a === 'object' && 'result' in a);
  return ok ? undefined : `answered ${status}: ${body.slice(0, 300)}`;
};

/** The scenarios BENCH_ONLY names, each with the baseline it is compared with; all without it. */
function selected(all: Scenario[]): Scenario[] {
  if (!ONLY) return all;
  const wanted = new Set(all.filter((s) => ONLY.test(s.name)).map((s) => s.name));
  // And the baselines' baselines (a history page of 1,000 rows -> the bare page -> GET /auth/me).
  for (let grew = true; grew;) {
    const before = wanted.size;
    for (const s of all) if (wanted.has(s.name) && s.baseline) wanted.add(s.baseline);
    grew = wanted.size > before;
  }
  return all.filter((s) => wanted.has(s.name));
}

function load(s: Scenario, durationS: number): Promise<autocannon.Result> {
  return autocannon({
    url: s.url,
    method: s.method,
    headers: s.headers,
    body: s.body,
    connections: s.connections,
    duration: durationS,
  });
}

/** Fails the run when a scenario's answer is not the one it means to measure (a 2xx error, a 207 batch). */
async function checkAnswer(s: Scenario): Promise<void> {
  if (!s.check) return;
  const res = await fetch(s.url, { method: s.method, headers: s.headers, body: s.body });
  const problem = s.check(res.status, await res.text());
  if (problem) throw new Error(`${s.method} ${s.url} ${problem}`);
}

interface Round {
  result: autocannon.Result;
  /** CPU seconds of the answering server and of Postgres during the run. */
  serverCpuS?: number;
  postgresCpuS?: number;
}

/** One measured run of a scenario (after its warm-up, the first time), with the CPU it cost `serverPid`. */
async function measureRound(s: Scenario, round: number, serverPid?: number): Promise<Round> {
  if (round === 1) await checkAnswer(s);
  if (s.warmUp && round === 1) await load(s, WARM_UP_S);
  const cpu = () => Promise.all([serverPid ? cpuSecondsOf(serverPid) : undefined, cpuSecondsByPid('postgres')]);
  const before = await cpu();
  const result = await load(s, (s.durationS ?? DURATION_S) / ROUNDS);
  const after = await cpu();
  const serverCpuS = before[0] !== undefined && after[0] !== undefined ? after[0] - before[0] : undefined;
  return { result, serverCpuS, postgresCpuS: cpuSecondsBetween(before[1], after[1]) };
}

/**
 * Requests a run got through: those answered, plus half of those still waiting for their answer when the
 * run ended. autocannon keeps every connection busy (a closed loop), so each connection ends a run in the
 * middle of a request, on average half-way: counting only the answered ones takes about half a request
 * per connection off every run, which matters where answers take seconds (bcrypt: 2 s answers in 7 s
 * rounds lost more of login's count than of its baseline's) and not at all at thousands a second.
 */
const requestsThrough = (r: autocannon.Result) => (r.requests.total + r.requests.sent) / 2;

/** A scenario's rounds as one measurement: requests summed over the rounds, the median p50 and p99. */
function combine(s: Scenario, measuredRounds: Round[]): Measurement {
  const rounds = measuredRounds.map((r) => r.result);
  const durationS = s.durationS ?? DURATION_S;
  const answered = rounds.reduce((n, r) => n + r.requests.total, 0);
  const perRequestUs = (f: (r: Round) => number | undefined) => {
    const seconds = measuredRounds.map(f);
    if (answered === 0 || seconds.some((x) => x === undefined)) return undefined;
    return (seconds.reduce((a = 0, b = 0) => a + b, 0)! * 1e6) / answered;
  };
  const sum = (f: (r: autocannon.Result) => number) => rounds.reduce((n, r) => n + f(r), 0);
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const requests = sum((r) => r.requests.total);
  const non2xx = sum((r) => r.non2xx);
  const errors = sum((r) => r.errors);
  const timeouts = sum((r) => r.timeouts);
  const problems = [
    non2xx ? `${non2xx} non-2xx answers` : '',
    errors ? `${errors} connection errors (${timeouts} timeouts)` : '',
    requests === 0 ? 'no answer at all' : '',
  ].filter(Boolean);
  return {
    name: s.name,
    method: s.method,
    url: s.url,
    connections: s.connections,
    durationS,
    // Total over time rather than the mean of per-second samples, which is coarse at a few requests a second.
    reqPerSec: sum(requestsThrough) / durationS,
    p50Ms: median(rounds.map((r) => r.latency.p50)),
    p99Ms: median(rounds.map((r) => r.latency.p99)),
    requests,
    non2xx,
    errors,
    timeouts,
    serverCpuUs: perRequestUs((r) => r.serverCpuS),
    postgresCpuUs: perRequestUs((r) => r.postgresCpuS),
    error: problems.length ? problems.join(', ') : undefined,
    baseline: s.baseline,
    target: s.target,
    verdict: problems.length ? 'ERROR' : '-',
  };
}

/** Fills in ratio and verdict from the baseline measured in the same run. */
function compare(results: Measurement[]): Measurement[] {
  return results.map((m) => {
    const base = results.find((b) => b.name === m.baseline);
    if (!base) return m;
    const ratio = m.reqPerSec / base.reqPerSec;
    let verdict = m.verdict;
    if (base.error) verdict = 'ERROR';
    else if (verdict !== 'ERROR' && m.target !== undefined) verdict = ratio >= m.target ? 'PASS' : 'FAIL';
    return { ...m, ratio, verdict };
  });
}

// ---------------------------------------------------------------- report

function table(results: Measurement[]): string {
  const header = [
    'scenario',
    'conns',
    'req/s',
    'p99 ms',
    'server µs',
    'pg µs',
    'ratio',
    'baseline',
    'target',
    'verdict',
  ];
  const us = (x?: number) => (x === undefined ? '?' : x.toFixed(0));
  const rows = results.map((m) => [
    m.name,
    String(m.connections),
    m.reqPerSec.toFixed(1),
    m.p99Ms.toFixed(0),
    us(m.serverCpuUs),
    us(m.postgresCpuUs),
    m.ratio === undefined ? '(baseline)' : `${m.ratio.toFixed(2)}x`,
    m.baseline ?? '',
    m.target === undefined ? '' : `>= ${m.target.toFixed(2)}x`,
    m.verdict,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 || i === 7 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  const errors = results.filter((m) => m.error).map((m) => `  ERROR ${m.name}: ${m.error}`);
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line), ...errors].join('\n');
}

async function writeResults(results: Measurement[]): Promise<void> {
  const report = {
    finishedAt: new Date().toISOString(),
    node: process.version,
    cpus: os.cpus().length,
    settings: {
      durationS: DURATION_S,
      rounds: ROUNDS,
      warmUpS: WARM_UP_S,
      jsonConnections: JSON_CONNECTIONS,
      bcryptConnections: BCRYPT_CONNECTIONS,
      bcryptCost: BCRYPT_COST,
      queueJobs: JOBS,
      queueWarmUpJobs: WARM_UP_JOBS,
      queueConcurrency: CONCURRENCY,
    },
    results,
  };
  await fs.mkdir(path.dirname(RESULTS_FILE), { recursive: true });
  await fs.writeFile(RESULTS_FILE, `${JSON.stringify(report, null, 2)}\n`);
}

// ---------------------------------------------------------------- main

const secret = () => crypto.randomBytes(36).toString('base64url'); // 48 characters

/** Everything to undo at the end, in reverse order of creation. */
const cleanups: Array<() => Promise<void>> = [];
let cleaning: Promise<void> | undefined;
const cleanUp = () =>
  (cleaning ??= (async () => {
    // Each step is bounded: a stuck step is reported and the rest still run.
    for (const undo of cleanups.reverse()) {
      let timer: NodeJS.Timeout | undefined;
      const stuck = new Promise<void>((resolve) => {
        timer = setTimeout(
          () => resolve(console.error(`clean-up: a step took over 15 s (${undo.toString().slice(0, 80)})`)),
          15_000,
        );
      });
      await Promise.race([undo().catch((err: Error) => console.error(`clean-up: ${err.message}`)), stuck]);
      clearTimeout(timer);
    }
  })());

/** Authenticated JSON call; fails the run on any other answer than `expect`. */
async function call(
  url: string,
  method: string,
  token: string,
  body: unknown,
  expect: number,
): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status !== expect)
    throw new Error(`${method} ${url} answered ${res.status}: ${JSON.stringify(json).slice(0, 300)}`);
  return json;
}

/** CPU per job of the worker and of Redis, where it could be read. */
const cpuNote = (q: QueueMeasurement) =>
  q.workerCpuUs === undefined
    ? ''
    : ` (CPU a job: worker ${us(q.workerCpuUs)}, Redis ${us(q.redisCpuUs)}, Postgres ${us(q.postgresCpuUs)}${q.receiverCpuUs === undefined ? '' : `, receiver ${us(q.receiverCpuUs)}`})`;
const us = (x: number | undefined) => (x === undefined ? '?' : `${x.toFixed(0)} µs`);

/** A child process that has no HTTP port (workers): ready once it prints `readyLine`. */
function startWorker(
  name: string,
  script: string,
  env: Record<string, string>,
  readyLine: RegExp,
): Promise<StartedWorker> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CHILD_NODE_ARGS, '--import', 'tsx', script], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const stop = async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    };
    cleanups.push(stop);
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (readyLine.test(out)) resolve({ pid: child.pid!, stop });
    });
    child.once('exit', (code) => reject(new Error(`${name} exited (${code}) before it was ready: ${out.slice(-500)}`)));
  });
}

/**
 * One set-based insert per workspace (1,000,000 rows take about 80 s here), then a vacuum.
 * Answers a cursor after the big workspace's DEEP_ROW-th row, signed as the API signs them.
 */
async function seedHistory(url: string, big: string, small: string, accessSecret: string): Promise<string> {
  const started = Date.now();
  const insert = (workspaceId: string, rows: number) =>
    withClient(url, (client) =>
      client.query(
        `insert into ai_generations (workspace_id, provider, model, prompt, output, status, prompt_tokens, completion_tokens, created_at)
         select $1, 'MOCK', 'mock-writer-1', 'prompt ' || i, 'output ' || i, 'SUCCEEDED', 10, 40, now() - (i || ' seconds')::interval
         from generate_series(1, $2::int) as i`,
        [workspaceId, rows],
      ),
    );
  await insert(big, HISTORY_ROWS);
  await insert(small, 1_000);
  const at = await withClient(url, async (client) => {
    // As autovacuum leaves it: statistics, and a visibility map that lets the deep pages read the index alone.
    await client.query('vacuum (analyze) ai_generations');
    const { rows } = await client.query<{ id: string; at: string }>(
      `select id, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at
       from ai_generations where workspace_id = $1 and not is_sample
       order by created_at desc, id desc offset $2 limit 1`,
      [big, DEEP_ROW - 1],
    );
    return rows[0];
  });
  console.log(
    `bench: ${HISTORY_ROWS.toLocaleString('en')} + 1,000 generations in ${((Date.now() - started) / 1000).toFixed(0)} s`,
  );
  return encodeCursor(cursorKey({ JWT_ACCESS_SECRET: accessSecret }), 'ai.history', at.at, at.id);
}

/** Verdicts of the scenarios of their own, added to the final verdict. */
const ownVerdicts: string[] = [];

/** The production start and the isolation of endpoints, each on a database of its own. */
async function ownScenarios(): Promise<void> {
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    JWT_ACCESS_SECRET: secret(),
    JWT_REFRESH_SECRET: secret(),
    WEBHOOK_SECRET_ENCRYPTION_KEY: secret(),
  };
  const verdict = (name: string, ok: boolean) => {
    if (!ok) ownVerdicts.push(`${name} FAIL`);
    return ok ? 'PASS' : 'FAIL';
  };
  if (!ONLY || ONLY.test(STARTUP_SCENARIO)) {
    const db = await createDatabase();
    try {
      console.log(`  ${STARTUP_SCENARIO}: npm run build, then ${STARTUP_RUNS} starts of node scripts/start.mjs server`);
      const f = await measureStartup({
        root: ROOT,
        env: { ...env, DATABASE_URL: db.url },
        runs: STARTUP_RUNS,
        settleMs: STARTUP_SETTLE_MS,
      });
      for (const r of f.runs)
        console.log(
          `    first 200 on /health after ${r.firstHealthyMs.toFixed(0)} ms (CPU ${r.cpuMsAtFirstHealthy ?? '?'} ms), idle RSS ${r.idleRssMb?.toFixed(0) ?? '?'} MB`,
        );
      const t = STARTUP_TARGETS;
      console.log(
        `  ${STARTUP_SCENARIO} (medians): first 200 after ${f.firstHealthyMs.toFixed(0)} ms, target <= ${t.firstHealthyMs} ms: ${verdict('start-up time', f.firstHealthyMs <= t.firstHealthyMs)}; ` +
          `CPU by then ${f.cpuMsAtFirstHealthy ?? '?'} ms; idle RSS ${f.idleRssMb?.toFixed(0) ?? '?'} MB, target <= ${t.idleRssMb} MB: ${verdict('idle RSS', (f.idleRssMb ?? Infinity) <= t.idleRssMb)}`,
      );
    } finally {
      await dropDatabase(db);
    }
  }
  if (!ONLY || ONLY.test(ISOLATION_SCENARIO)) {
    const db = await createDatabase();
    try {
      console.log(
        `  ${ISOLATION_SCENARIO}: ${ISOLATION_DELIVERIES} deliveries at ${ISOLATION_RATE}/s, half to an endpoint that never answers (timeout 10 s), half over ${ISOLATION_HEALTHY} healthy endpoints`,
      );
      const f = await measureIsolation({
        databaseUrl: db.url,
        redisUrl: `${process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'}/8`,
        env: { ...env, DATABASE_URL: db.url, WEBHOOK_WORKER_CONCURRENCY: String(CONCURRENCY) },
        deliveries: ISOLATION_DELIVERIES,
        ratePerSec: ISOLATION_RATE,
        healthyEndpoints: ISOLATION_HEALTHY,
        startWorker: (workerEnv) =>
          startWorker('webhook worker (lanes)', 'server/worker.ts', workerEnv, /worker ready/),
      });
      const line = (label: string, r: typeof f.alone) =>
        `    ${label}: ${r.delivered} of ${r.healthy} healthy deliveries, ${r.ratePerSec.toFixed(0)}/s, enqueue to receipt p50 ${r.p50Ms.toFixed(0)} ms, p99 ${r.p99Ms.toFixed(0)} ms`;
      console.log(line('alone', f.alone));
      console.log(line('beside the hanging endpoint', f.beside));
      const ratio = f.beside.ratePerSec / f.alone.ratePerSec;
      const t = ISOLATION_TARGETS;
      console.log(
        `  ${ISOLATION_SCENARIO}: healthy rate ${ratio.toFixed(2)}x of alone, target >= ${t.ratio}x: ${verdict('isolation rate', ratio >= t.ratio && f.beside.delivered === f.beside.healthy)}; ` +
          `p99 ${f.beside.p99Ms.toFixed(0)} ms, target < ${t.p99Ms} ms: ${verdict('isolation p99', f.beside.p99Ms < t.p99Ms)}; the hanging endpoint got ${f.hangingRequests} requests`,
      );
    } finally {
      await dropDatabase(db);
    }
  }
  if (!ONLY || ONLY.test(PURGE_SCENARIO)) {
    const db = await createDatabase();
    const api = await startChild('api (purge)', 'server/index.ts', { ...env, DATABASE_URL: db.url, LOG_LEVEL: 'warn' });
    try {
      await waitUntilReady(api, '/health');
      const accessToken = await signIn(api.url);
      const created = await fetch(`${api.url}/workspaces`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
        body: JSON.stringify({ name: 'Purged' }),
      });
      const workspaceId = ((await created.json()) as { id: string }).id;
      console.log(
        `  ${PURGE_SCENARIO}: ${PURGE_ROWS.toLocaleString('en')} generations of a deleted workspace, purged as the worker does`,
      );
      const f = await measurePurge({
        databaseUrl: db.url,
        apiUrl: api.url,
        accessToken,
        workspaceId,
        rows: PURGE_ROWS,
        durationS: DURATION_S,
        connections: JSON_CONNECTIONS,
        env: { ...env, DATABASE_URL: db.url },
      });
      console.log(
        `    seeded in ${f.seedSeconds.toFixed(0)} s; GET /auth/me alone ${f.aloneRate.toFixed(0)}/s, during the purge ${f.duringRate.toFixed(0)}/s`,
      );
      console.log(
        `  ${PURGE_SCENARIO}: load ${f.ratio.toFixed(2)}x of alone, target >= ${PURGE_TARGETS.ratio}x: ${verdict('purge load', f.ratio >= PURGE_TARGETS.ratio)}; ` +
          `purge ${f.purgeSeconds.toFixed(1)} s, ${f.rowsPerSecond.toFixed(0)} rows/s, ${f.left} left: ${verdict('purge finished', f.left === 0)}`,
      );
    } finally {
      await stopChild(api);
      await dropDatabase(db);
    }
  }
}

/** Targets of no server: what scenarios() needs to name the scenarios before any server runs. */
const PLACEHOLDER_TARGETS: Targets = {
  api: 'http://placeholder',
  fullStack: 'http://placeholder',
  bareStack: 'http://placeholder',
  bare: 'http://placeholder',
  accessToken: '',
  apiKey: '',
  historyWorkspace: '',
  smallHistoryWorkspace: '',
  deepCursor: '',
  mcpKey: '',
};

/** Whether BENCH_ONLY selects any scenario of the main list (the HTTP scenarios and the queue runs). */
function mainListSelected(): boolean {
  if (!ONLY) return true;
  const names = [
    ...scenarios(PLACEHOLDER_TARGETS).map((s) => s.name),
    'raw BullMQ no-op jobs',
    'deliver_webhook via BullMQ',
  ];
  return names.some((n) => ONLY.test(n));
}

/** Whether a selected scenario reads AI history (which needs the 1,000,000 generations seeded). */
const historySelected = () =>
  selected(scenarios(PLACEHOLDER_TARGETS)).some(
    (s) => s.name.startsWith('GET /ai/history') || s.name === BARE_PAGE || s.name.includes('ai_history'),
  );

async function main(): Promise<void> {
  await ownScenarios();
  if (!mainListSelected()) {
    console.log(ownVerdicts.length ? `verdict: ${ownVerdicts.join(', ')}` : 'verdict: all targets met');
    return;
  }
  const db = await createDatabase();
  cleanups.push(() => dropDatabase(db));
  const redisBase = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
  const shared = {
    NODE_ENV: 'production',
    DATABASE_URL: db.url,
    LOG_LEVEL: 'warn',
    BCRYPT_COST: String(BCRYPT_COST),
    JWT_ACCESS_SECRET: secret(),
    JWT_REFRESH_SECRET: secret(),
    WEBHOOK_SECRET_ENCRYPTION_KEY: secret(),
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    AI_MONTHLY_GENERATION_LIMIT: '1000000000',
  };
  const unlimited = '1000000000';
  const apis = {
    api: await startChild('API', 'server/index.ts', { ...shared, RATE_LIMIT_ENABLED: 'false' }),
    fullStack: await startChild('API (Redis limiter + monitoring)', 'server/index.ts', {
      ...shared,
      RATE_LIMIT_ENABLED: 'true',
      REDIS_URL: `${redisBase}/9`,
      MONITORING_ENABLED: 'true',
      RATE_LIMIT_MAX_REQUESTS: unlimited,
      RATE_LIMIT_AUTH_MAX_REQUESTS: unlimited,
      RATE_LIMIT_PUBLIC_API_MAX_REQUESTS: unlimited,
    }),
    bareStack: await startChild('API (limiter and monitoring off)', 'server/index.ts', {
      ...shared,
      RATE_LIMIT_ENABLED: 'false',
      MONITORING_ENABLED: 'false',
    }),
  };
  for (const child of Object.values(apis)) cleanups.push(() => stopChild(child));
  const bare = await startChild('bare server', 'bench/bare-server.ts', {
    NODE_ENV: 'production',
    BENCH_DATABASE_URL: db.url,
    BCRYPT_COST: String(BCRYPT_COST),
    BENCH_PASSWORD: USER.password,
  });
  cleanups.push(() => stopChild(bare));
  const receiver = await startChild('webhook receiver', 'bench/receiver.ts', {});
  cleanups.push(() => stopChild(receiver));
  await Promise.all([
    ...Object.values(apis).map((a) => waitUntilReady(a, '/health')),
    waitUntilReady(bare, '/json'),
    waitUntilReady(receiver, '/ready'),
  ]);

  const accessToken = await signIn(apis.api.url);
  const apiCost = await storedHashCost(db, USER.email);
  if (apiCost !== BCRYPT_COST) throw new Error(`the API hashed at bcrypt cost ${apiCost}, expected ${BCRYPT_COST}`);

  // Data: an Enterprise workspace with an API key and a webhook to the loopback receiver, and two more
  // holding 1,000,000 and 1,000 generations for the history pages (only when a history scenario runs).
  await call(`${apis.api.url}/billing/checkout`, 'POST', accessToken, { planCode: 'enterprise' }, 200);
  const current = await call(`${apis.api.url}/billing/current`, 'GET', accessToken, undefined, 200);
  const workspaceId = String(current.workspaceId);
  // Enterprise allows 5,000 generations a month, fewer than a 10 s generate run can make: lift the
  // workspace's copy of its plan limits so every answer of the run is a generation.
  await withClient(db.url, (client) =>
    client.query(
      `update workspaces set limits = limits || '{"aiMonthlyGenerations": 1000000000}'::jsonb where id = $1`,
      [workspaceId],
    ),
  );
  const key = await call(
    `${apis.api.url}/workspaces/${workspaceId}/api-keys`,
    'POST',
    accessToken,
    { name: 'bench', scopes: ['read'] },
    201,
  );
  const hook = await call(
    `${apis.api.url}/workspaces/${workspaceId}/webhooks`,
    'POST',
    accessToken,
    { name: 'bench', url: `${receiver.url}/hook`, events: ['billing.updated'] },
    201,
  );
  const history = await call(`${apis.api.url}/workspaces`, 'POST', accessToken, { name: 'bench history' }, 201);
  const smallHistory = await call(`${apis.api.url}/workspaces`, 'POST', accessToken, { name: 'bench small' }, 201);
  // The MCP scenarios read the small workspace's history with a key of its own (its plan must allow keys).
  await call(
    `${apis.api.url}/billing/checkout`,
    'POST',
    accessToken,
    { planCode: 'enterprise', workspaceId: smallHistory.id },
    200,
  );
  const mcpKey = await call(
    `${apis.api.url}/workspaces/${String(smallHistory.id)}/api-keys`,
    'POST',
    accessToken,
    { name: 'bench mcp', scopes: ['read'] },
    201,
  );
  let deepCursor = '';
  if (historySelected()) {
    deepCursor = await seedHistory(db.url, String(history.id), String(smallHistory.id), shared.JWT_ACCESS_SECRET);
  }

  // The tools/list answer, stored at the bare server: the floor of sending it.
  const toolList = await fetch(`${apis.api.url}/mcp`, {
    method: 'POST',
    headers: mcpHeaders(String(mcpKey.rawKey)),
    body: MCP_LIST_BODY,
  }).then((r) => r.text());
  await fetch(`${bare.url}/blob`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: toolList });

  console.log(
    `bench: ${DURATION_S} s per run, ${JSON_CONNECTIONS} connections (JSON routes), ${BCRYPT_CONNECTIONS} (login, bcrypt cost ${BCRYPT_COST}), ${os.cpus().length} CPUs, node ${process.version}`,
  );
  const targets: Targets = {
    api: apis.api.url,
    fullStack: apis.fullStack.url,
    bareStack: apis.bareStack.url,
    bare: bare.url,
    accessToken,
    apiKey: String(key.rawKey),
    historyWorkspace: String(history.id),
    smallHistoryWorkspace: String(smallHistory.id),
    deepCursor: encodeURIComponent(deepCursor),
    mcpKey: String(mcpKey.rawKey),
  };
  // Every scenario runs in BENCH_ROUNDS rounds over the whole list, so that a slow minute of a shared
  // machine weighs on every scenario and its baseline alike instead of on whichever ran then.
  const list = selected(scenarios(targets));
  const rounds = new Map<string, Round[]>(list.map((s) => [s.name, []]));
  const pidOf = new Map([...Object.values(apis), bare].map((child) => [child.url, child.process.pid] as const));
  for (let round = 1; round <= ROUNDS; round++) {
    console.log(`  round ${round} of ${ROUNDS}`);
    for (const s of list) {
      process.stdout.write(`    ${s.name} ...`);
      const measuredRound = await measureRound(s, round, pidOf.get(new URL(s.url).origin));
      assertAlive(...Object.values(apis), bare);
      rounds.get(s.name)!.push(measuredRound);
      const r = measuredRound.result;
      console.log(
        ` ${(requestsThrough(r) / ((s.durationS ?? DURATION_S) / ROUNDS)).toFixed(1)} req/s, p99 ${r.latency.p99} ms`,
      );
    }
  }
  const measured: Measurement[] = list.map((s) => combine(s, rounds.get(s.name)!));
  for (const m of measured) if (m.error) console.log(`  ERROR ${m.name}: ${m.error}`);

  // Queues: raw no-op jobs against deliver_webhook jobs, both workers at the same concurrency (the
  // webhook worker's default).
  const queueRedis = `${redisBase}/8`;
  if (ONLY && !ONLY.test('deliver_webhook via BullMQ') && !ONLY.test('raw BullMQ no-op jobs')) return report(measured);
  const raw = await startRawJobs({
    redisUrl: queueRedis,
    warmUp: WARM_UP_JOBS,
    concurrency: CONCURRENCY,
    startWorker: (env) => startWorker('raw worker', 'bench/raw-worker.ts', env, /raw worker ready/),
  });
  const workerEnv = {
    ...shared,
    REDIS_URL: queueRedis,
    QUEUES_ENABLED: 'true',
    WEBHOOK_QUEUE_ENABLED: 'true',
    WEBHOOK_WORKER_CONCURRENCY: String(CONCURRENCY),
    LOG_LEVEL: 'info',
  };
  const producerConnection = new Redis(queueRedis, { maxRetriesPerRequest: null });
  const producer = new Queue(WEBHOOK_QUEUE, { connection: producerConnection });
  cleanups.push(async () => {
    await producer.close();
    producerConnection.disconnect();
  });
  const deliveries = await startWebhookDeliveries({
    databaseUrl: db.url,
    webhookId: String(hook.id),
    workspaceId,
    warmUp: WARM_UP_JOBS,
    queue: producer,
    redis: producerConnection,
    receiverPid: receiver.process.pid,
    enqueue: async (ids) => {
      const options = { WEBHOOK_MAX_RETRIES: 3, WEBHOOK_RETRY_BACKOFF_SECONDS: 30 };
      await producer.addBulk(
        ids.map((deliveryId) => ({
          name: DELIVER_WEBHOOK,
          data: { deliveryId },
          opts: deliverJobOptions(options, deliveryId),
        })),
      );
    },
    startWorker: () => startWorker('webhook worker', 'server/worker.ts', workerEnv, /worker ready/),
  });
  // The two alternate over the rounds, as the HTTP scenarios do.
  const rawRuns: QueueMeasurement[] = [];
  const deliveryRuns: QueueMeasurement[] = [];
  const timedRun = async (label: string, unit: string, bench: QueueBench, runs: QueueMeasurement[]) => {
    process.stdout.write(`    ${label} (${JOBS}) ...`);
    const run = await bench.run(JOBS);
    runs.push(run);
    console.log(` ${run.jobsPerSec.toFixed(0)} ${unit}/s${cpuNote(run)}`);
  };
  for (let round = 1; round <= ROUNDS; round++) {
    console.log(`  queues, round ${round} of ${ROUNDS}`);
    await timedRun('raw BullMQ no-op jobs', 'jobs', raw, rawRuns);
    await timedRun('deliver_webhook jobs', 'deliveries', deliveries, deliveryRuns);
  }
  await raw.stop();
  await deliveries.stop();
  const asMeasurement = (name: string, q: QueueMeasurement, baseline?: string, target?: number): Measurement => ({
    name,
    method: 'QUEUE',
    url: '',
    connections: CONCURRENCY,
    durationS: q.seconds,
    reqPerSec: q.jobsPerSec,
    p50Ms: 0,
    p99Ms: 0,
    requests: q.jobs,
    non2xx: 0,
    errors: 0,
    timeouts: 0,
    baseline,
    target,
    verdict: '-',
  });
  measured.push(
    asMeasurement('raw BullMQ no-op jobs', combined(rawRuns)),
    asMeasurement('deliver_webhook via BullMQ', combined(deliveryRuns), 'raw BullMQ no-op jobs', 0.5),
  );
  await report(measured);
}

/**
 * The pages of the big workspace against the bound of an authenticated page and the bare page's p99, added
 * to the verdicts. An authenticated page does at least what GET /auth/me does and what the bare page adds
 * to bare /json (a statement of 21 rows, their mapping and their JSON): its time an answer is at least the
 * sum of the two, whatever the implementation.
 */
function historyAtScale(results: Measurement[]): void {
  const me = results.find((m) => m.name === 'GET /auth/me');
  const bare = results.find((m) => m.name === BARE_PAGE);
  const bareJson = results.find((m) => m.name === 'bare GET /json');
  const pages = results.filter((m) => m.name.startsWith('GET /ai/history') && m.name.includes('1,000,000'));
  if (!me || !bare || !bareJson || pages.length === 0) return;
  const us = (m: Measurement) => 1e6 / m.reqPerSec;
  const rowsCost = us(bare) - us(bareJson);
  const boundRate = 1e6 / (us(me) + rowsCost);
  console.log(
    `  ${BARE_PAGE}: ${(bare.reqPerSec / me.reqPerSec).toFixed(2)}x of GET /auth/me, p99 ${bare.p99Ms.toFixed(0)} ms ` +
      '(no authentication, validation, total or signed cursor: the floor of a page)',
  );
  console.log(
    `  the bound of an authenticated page: GET /auth/me plus what the bare page adds to bare /json ` +
      `(${rowsCost.toFixed(0)} µs an answer at full load): ${boundRate.toFixed(0)}/s, ${(boundRate / me.reqPerSec).toFixed(2)}x of GET /auth/me`,
  );
  for (const m of pages) {
    const ratio = m.reqPerSec / boundRate;
    const p99Ratio = m.p99Ms / bare.p99Ms;
    const ok = ratio >= HISTORY_TO_BOUND && p99Ratio <= HISTORY_P99_TO_BARE;
    if (!ok) ownVerdicts.push(`${m.name} against the bound FAIL`);
    console.log(
      `  ${m.name}: ${ratio.toFixed(2)}x of the bound (target >= ${HISTORY_TO_BOUND}x), ` +
        `p99 ${m.p99Ms.toFixed(0)} ms, ${p99Ratio.toFixed(2)}x of the bare page's (target <= ${HISTORY_P99_TO_BARE}x): ${ok ? 'PASS' : 'FAIL'}`,
    );
  }
  console.log('');
}

/**
 * tools/list against its bound: it does at least what GET /auth/me does (a credential checked) and what
 * sending its answer adds to bare /json (the same bytes from bare Express), whatever the implementation.
 */
function toolListBound(results: Measurement[]): void {
  const find = (name: string) => results.find((m) => m.name === name);
  const [me, floor, bareJson, list] = [
    find('GET /auth/me'),
    find(TOOL_LIST_FLOOR),
    find('bare GET /json'),
    find('POST /mcp tools/list'),
  ];
  if (!me || !floor || !bareJson || !list) return;
  const us = (m: Measurement) => 1e6 / m.reqPerSec;
  const answerCost = us(floor) - us(bareJson);
  const boundRate = 1e6 / (us(me) + answerCost);
  console.log(
    `  POST /mcp tools/list: its answer adds ${answerCost.toFixed(0)} µs to bare /json; the bound (GET /auth/me plus that) ` +
      `is ${boundRate.toFixed(0)}/s, ${(boundRate / me.reqPerSec).toFixed(2)}x of GET /auth/me; tools/list reads ` +
      `${(list.reqPerSec / boundRate).toFixed(2)}x of the bound\n`,
  );
}

async function report(measured: Measurement[]): Promise<void> {
  const results = compare(measured);
  console.log(`\n${table(results)}\n`);
  historyAtScale(results);
  toolListBound(results);
  if (!ONLY) await writeResults(results);
  const missed = results
    .filter((m) => m.verdict === 'FAIL' || m.verdict === 'ERROR')
    .map((m) => `${m.name} ${m.verdict}`)
    .concat(ownVerdicts);
  console.log(missed.length ? `verdict: ${missed.join(', ')}` : 'verdict: all targets met');
  console.log(
    ONLY
      ? 'a partial run (BENCH_ONLY): results not written'
      : `results written to ${path.relative(ROOT, RESULTS_FILE)}`,
  );
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping the servers and dropping the bench database`);
    void cleanUp().finally(() => process.exit(130));
  });
}

try {
  await main();
  await cleanUp();
  // Whatever handle a client library keeps open, the run is over.
  process.exit(0);
} catch (err) {
  console.error('bench crashed:', err);
  await cleanUp();
  process.exit(1);
}
