// `npx tsx bench/stream.ts`: streamed generation at scale (issue 36). One API process (server/index.ts, as
// a child process so that this client shares no event loop with it) on a throw-away Postgres database,
// MOCK streaming with AI_MOCK_STREAM_CHUNK_DELAY_MS=20; one user whose workspace's limit is lifted.
// First BENCH_STREAM_ALONE streams one after another (the time to the first delta of one stream alone,
// their median); then the floor: bare Express (bench/bare-server.ts, POST /stream) sending the same number
// of events 20 ms apart without authentication or a database, alone and BENCH_STREAMS at once, then
// stopped; then BENCH_STREAMS (1,000) streams at once over the API's POST /ai/generate with Accept:
// text/event-stream. Printed against the targets: every stream completed; the API's peak RSS (VmRSS of
// /proc/<pid>/status every 50 ms) under 300 MB; its event-loop delay p99 during the burst (prom-client's
// nodejs_eventloop_lag_p99_seconds, read from /metrics, which resets it at each read) under 50 ms; the
// burst's median time to the first delta at most 1.2x the one stream alone. Beside them: the CPU the API
// and this client spent in the burst (/proc/<pid>/stat, process.cpuUsage), and the floor's figures, which
// show what this machine allows any server. The client reads with node:http, not fetch (whose web streams
// cost several times more per chunk on the two cores the API shares). The exit code is non-zero only when
// the run crashes. BENCH_PROFILE_DIR: the API writes a V8 CPU profile there when it exits.
// BENCH_POSTGRES_URL: the admin URL (default postgres://postgres@127.0.0.1:5432/postgres).
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuSecondsOf, rssMbOf } from './cpu.js';
import { freePort, withClient } from './local.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const STREAMS = Number(process.env.BENCH_STREAMS ?? 1000);
const ALONE = Number(process.env.BENCH_STREAM_ALONE ?? 15);
const METRICS_TOKEN = crypto.randomBytes(24).toString('hex');
const TARGETS = { rssMb: 300, loopP99Ms: 50, firstDeltaRatio: 1.2 };
const USER = {
  email: `bench-stream-${crypto.randomBytes(4).toString('hex')}@bench.local`,
  password: 'Bench-pass-12345',
};

const secret = () => crypto.randomBytes(32).toString('hex');
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : NaN;
};
const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : NaN;
};

async function json(url: string, method: string, token: string | undefined, body?: unknown) {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as Record<string, any>;
}

interface StreamRun {
  ok: boolean;
  firstDeltaMs?: number;
  totalMs: number;
  deltas: number;
  error?: string;
}

/**
 * One streamed answer, read to its end with node:http (fetch's web streams cost the client several times
 * more per chunk, and the client shares the machine's two cores with the API): the time to its first
 * delta, and whether it completed.
 */
function stream(url: string, route: string, token: string, prompt: string): Promise<StreamRun> {
  const started = performance.now();
  let firstDeltaMs: number | undefined;
  let deltas = 0;
  return new Promise((resolve) => {
    const req = http.request(
      `${url}${route}`,
      {
        method: 'POST',
        agent: false,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      },
      (res) => {
        res.setEncoding('utf8');
        let buffer = '';
        let completed = false;
        let failure: string | undefined;
        res.on('data', (piece: string) => {
          buffer += piece;
          let end;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            if (block.startsWith('event: delta')) {
              deltas += 1;
              firstDeltaMs ??= performance.now() - started;
            } else if (block.startsWith('event: completed')) completed = true;
            else if (block.startsWith('event: error')) failure = block;
            else if (res.statusCode !== 200) failure = `${res.statusCode} ${block}`;
          }
        });
        res.on('end', () => {
          if (res.statusCode !== 200) failure ??= `${res.statusCode} ${buffer.slice(0, 300)}`;
          resolve({
            ok: completed && !failure,
            firstDeltaMs,
            totalMs: performance.now() - started,
            deltas,
            error: failure,
          });
        });
        res.on('error', (err) => resolve({ ok: false, totalMs: 0, deltas, error: err.message }));
      },
    );
    req.on('error', (err) => resolve({ ok: false, totalMs: 0, deltas, error: err.message }));
    req.end(JSON.stringify({ prompt }));
  });
}

/** `count` streams at once: their runs, the burst's length, and the CPU the server and this client spent. */
async function burst(url: string, route: string, token: string, count: number, serverPid: number) {
  const cpuBefore = (await cpuSecondsOf(serverPid)) ?? NaN;
  const clientBefore = process.cpuUsage();
  const started = performance.now();
  const runs = await Promise.all(
    Array.from({ length: count }, (_, i) => stream(url, route, token, `Bench stream ${i % 50} of many`)),
  );
  const client = process.cpuUsage(clientBefore);
  return {
    runs,
    ms: performance.now() - started,
    serverCpuMs: (((await cpuSecondsOf(serverPid)) ?? NaN) - cpuBefore) * 1000,
    clientCpuMs: (client.user + client.system) / 1000,
  };
}

async function loopP99Ms(url: string): Promise<number> {
  const text = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } }).then((r) =>
    r.text(),
  );
  const line = /^nodejs_eventloop_lag_p99_seconds (\S+)$/m.exec(text);
  return line ? Number(line[1]) * 1000 : NaN;
}

/** A child process on a free port, answering 200 on `readyPath` (stopped with SIGTERM). */
async function startChild(script: string, env: Record<string, string>, readyPath: string, profile: boolean) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const flags =
    profile && process.env.BENCH_PROFILE_DIR
      ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env.BENCH_PROFILE_DIR)}`]
      : [];
  const child = spawn(process.execPath, [...flags, '--import', 'tsx', script], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'production', PORT: String(port), HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = signal ?? `code ${code}`));
  const stop = async () => {
    if (exited) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await gone;
  };
  for (const deadline = Date.now() + 60_000; ;) {
    if (exited) throw new Error(`${script} exited (${exited})`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${script} did not start within 60 s`);
    }
    const status = await fetch(`${url}${readyPath}`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url, pid: child.pid!, stop };
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

async function main() {
  const name = `bench_stream_${Date.now().toString(36)}_${crypto.randomBytes(3).toString('hex')}`;
  await withClient(ADMIN_URL, (c) => c.query(`create database "${name}"`));
  const dbUrl = new URL(ADMIN_URL);
  dbUrl.pathname = `/${name}`;
  const stops: Array<() => Promise<void>> = [];
  try {
    const api = await startChild(
      'server/index.ts',
      {
        DATABASE_URL: dbUrl.toString(),
        LOG_LEVEL: 'warn',
        BCRYPT_COST: '12',
        JWT_ACCESS_SECRET: secret(),
        JWT_REFRESH_SECRET: secret(),
        WEBHOOK_SECRET_ENCRYPTION_KEY: secret(),
        AI_MONTHLY_GENERATION_LIMIT: '1000000000',
        AI_MOCK_STREAM_CHUNK_DELAY_MS: '20',
        RATE_LIMIT_ENABLED: 'false',
        METRICS_TOKEN,
      },
      '/health',
      true,
    );
    stops.push(api.stop);
    const url = api.url;
    await json(`${url}/auth/register`, 'POST', undefined, { ...USER, name: 'Bench' });
    const login = await json(`${url}/auth/login`, 'POST', undefined, USER);
    const workspaceId = String(login.activeWorkspace.id);
    await withClient(dbUrl.toString(), (c) =>
      c.query(`update workspaces set limits = limits || '{"aiMonthlyGenerations": 1000000000}'::jsonb where id = $1`, [
        workspaceId,
      ]),
    );
    // A fresh token: the membership (and its limits) is read at sign-in.
    const fresh = String((await json(`${url}/auth/login`, 'POST', undefined, USER)).accessToken);

    const alone: StreamRun[] = [];
    for (let i = 0; i < ALONE; i++) alone.push(await stream(url, '/ai/generate', fresh, `Bench stream alone ${i}`));
    if (!alone.every((r) => r.ok)) throw new Error(`a stream alone failed: ${alone.find((r) => !r.ok)?.error}`);
    const aloneFirst = median(alone.map((r) => r.firstDeltaMs!));
    const chunks = median(alone.map((r) => r.deltas));

    // The floor: the same stream shape from bare Express, alone and at once (started after the API's
    // alone runs, stopped before the API's burst, so that neither shares the machine with the other).
    const bare = await startChild(
      'bench/bare-server.ts',
      { BCRYPT_COST: '4', BENCH_STREAM_CHUNKS: String(chunks), STREAM_CHUNK_DELAY_MS: '20' },
      '/json',
      true,
    );
    stops.push(bare.stop);
    const bareAlone: StreamRun[] = [];
    for (let i = 0; i < ALONE; i++) bareAlone.push(await stream(bare.url, '/stream', '-', 'alone'));
    await fetch(`${bare.url}/loop`); // resets its histogram
    const bareBurst = await burst(bare.url, '/stream', '-', STREAMS, bare.pid);
    const bareLoopP99 = Number(((await fetch(`${bare.url}/loop`).then((r) => r.json())) as { p99Ms: number }).p99Ms);
    await bare.stop();
    const bareAloneFirst = median(bareAlone.map((r) => r.firstDeltaMs!));
    const bareFirst = median(bareBurst.runs.filter((r) => r.firstDeltaMs !== undefined).map((r) => r.firstDeltaMs!));

    let peakRss = 0;
    const sampler = setInterval(() => {
      void rssMbOf(api.pid).then((mb) => (peakRss = Math.max(peakRss, mb ?? 0)));
    }, 50);
    await loopP99Ms(url); // resets the histogram: what follows is the burst's
    const apiBurst = await burst(url, '/ai/generate', fresh, STREAMS, api.pid);
    const loopP99 = await loopP99Ms(url);
    clearInterval(sampler);
    peakRss = Math.max(peakRss, (await rssMbOf(api.pid)) ?? 0);

    const { runs } = apiBurst;
    const completed = runs.filter((r) => r.ok).length;
    const firsts = runs.filter((r) => r.firstDeltaMs !== undefined).map((r) => r.firstDeltaMs!);
    const burstFirst = median(firsts);
    const ratio = burstFirst / aloneFirst;
    const bareRatio = bareFirst / bareAloneFirst;
    const events = sum(runs.map((r) => r.deltas + 2));
    const mark = (ok: boolean) => (ok ? 'met' : 'MISSED');
    const line = (label: string, text: string) => console.log(`${label.padEnd(33)}${text}`);
    line('streams at once', `${STREAMS} (MOCK, ${chunks} chunks 20 ms apart)`);
    line('completed', `${completed} / ${STREAMS}   target all   ${mark(completed === STREAMS)}`);
    line('API peak RSS', `${peakRss.toFixed(0)} MB   target < ${TARGETS.rssMb} MB   ${mark(peakRss < TARGETS.rssMb)}`);
    line(
      'API event-loop delay p99',
      `${loopP99.toFixed(1)} ms   target < ${TARGETS.loopP99Ms} ms   ${mark(loopP99 < TARGETS.loopP99Ms)}`,
    );
    line(
      'time to first delta, median',
      `${burstFirst.toFixed(1)} ms at once vs ${aloneFirst.toFixed(1)} ms alone = ${ratio.toFixed(2)}x   target <= ${TARGETS.firstDeltaRatio}x   ${mark(ratio <= TARGETS.firstDeltaRatio)}`,
    );
    line('time to first delta, p99', `${percentile(firsts, 99).toFixed(1)} ms at once`);
    line('whole burst', `${(apiBurst.ms / 1000).toFixed(2)} s`);
    line(
      'API CPU in the burst',
      `${apiBurst.serverCpuMs.toFixed(0)} ms: ${((apiBurst.serverCpuMs * 1000) / STREAMS).toFixed(0)} µs a stream, ${((apiBurst.serverCpuMs * 1000) / events).toFixed(1)} µs an event (${events} events)`,
    );
    line('this client CPU in the burst', `${apiBurst.clientCpuMs.toFixed(0)} ms`);
    line(
      'floor: bare Express streams',
      `first delta ${bareFirst.toFixed(1)} ms at once vs ${bareAloneFirst.toFixed(1)} ms alone = ${bareRatio.toFixed(2)}x; ` +
        `${bareBurst.runs.filter((r) => r.ok).length} completed in ${(bareBurst.ms / 1000).toFixed(2)} s; ` +
        `event-loop delay p99 ${bareLoopP99.toFixed(1)} ms; server CPU ${bareBurst.serverCpuMs.toFixed(0)} ms, ` +
        `client ${bareBurst.clientCpuMs.toFixed(0)} ms`,
    );
    line(
      'API first delta against the floor',
      `${(burstFirst / bareFirst).toFixed(2)}x the bare streams' median at once`,
    );
    const failures = runs.filter((r) => !r.ok).slice(0, 3);
    if (failures.length) console.log('first failures:', failures.map((f) => f.error).join(' | '));
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await withClient(ADMIN_URL, (c) => c.query(`drop database if exists "${name}" with (force)`));
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
