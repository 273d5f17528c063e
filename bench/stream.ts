// `npx tsx bench/stream.ts`: streamed generation at scale (issue 36). One API process (server/index.ts, as
// a child process so that this client shares no event loop with it) on a throw-away Postgres database,
// MOCK streaming with AI_MOCK_STREAM_CHUNK_DELAY_MS=20; one user whose workspace's limit is lifted.
// First BENCH_STREAM_ALONE streams one after another (the time to the first delta of one stream alone,
// their median), then BENCH_STREAMS (1,000) streams at once over POST /ai/generate with Accept:
// text/event-stream. Printed against the targets: every stream completed; the API's peak RSS (VmRSS of
// /proc/<pid>/status every 50 ms) under 300 MB; its event-loop delay p99 during the burst (prom-client's
// nodejs_eventloop_lag_p99_seconds, read from /metrics, which resets it at each read) under 50 ms; the
// burst's median time to the first delta at most 1.2x the one stream alone. The exit code is non-zero
// only when the run crashes. BENCH_PROFILE_DIR: the API writes a V8 CPU profile there when it exits.
// BENCH_POSTGRES_URL: the admin URL (default postgres://postgres@127.0.0.1:5432/postgres).
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

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

async function withAdmin<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function rssMbOf(pid: number): Promise<number | undefined> {
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8').catch(() => undefined);
  const kb = status && /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
  return kb ? Number(kb) / 1024 : undefined;
}

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

/** One streamed generation, read to its end: the time to its first delta, and whether it completed. */
async function stream(url: string, token: string, prompt: string): Promise<StreamRun> {
  const started = performance.now();
  let firstDeltaMs: number | undefined;
  let deltas = 0;
  try {
    const res = await fetch(`${url}/ai/generate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ prompt }),
    });
    if (res.status !== 200) return { ok: false, totalMs: 0, deltas, error: `${res.status} ${await res.text()}` };
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    let completed = false;
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      buffer += r.value;
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (block.startsWith('event: delta')) {
          deltas += 1;
          firstDeltaMs ??= performance.now() - started;
        } else if (block.startsWith('event: completed')) completed = true;
        else if (block.startsWith('event: error')) return { ok: false, totalMs: 0, deltas, error: block };
      }
    }
    return { ok: completed, firstDeltaMs, totalMs: performance.now() - started, deltas };
  } catch (err) {
    return { ok: false, totalMs: 0, deltas, error: (err as Error).message };
  }
}

async function loopP99Ms(url: string): Promise<number> {
  const text = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } }).then((r) =>
    r.text(),
  );
  const line = /^nodejs_eventloop_lag_p99_seconds (\S+)$/m.exec(text);
  return line ? Number(line[1]) * 1000 : NaN;
}

async function main() {
  const name = `bench_stream_${Date.now().toString(36)}_${crypto.randomBytes(3).toString('hex')}`;
  await withAdmin(ADMIN_URL, (c) => c.query(`create database "${name}"`));
  const dbUrl = new URL(ADMIN_URL);
  dbUrl.pathname = `/${name}`;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const profile = process.env.BENCH_PROFILE_DIR
    ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env.BENCH_PROFILE_DIR)}`]
    : [];
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', 'server/index.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: 'production',
      PORT: String(port),
      HOST: '127.0.0.1',
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
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = signal ?? `code ${code}`));
  const stop = async () => {
    if (!exited) {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await gone;
    }
    await withAdmin(ADMIN_URL, (c) => c.query(`drop database if exists "${name}" with (force)`));
  };
  try {
    for (const deadline = Date.now() + 60_000; ;) {
      if (exited) throw new Error(`the API exited (${exited})`);
      if (Date.now() > deadline) throw new Error('the API did not start within 60 s');
      if (
        (await fetch(`${url}/health`).then(
          (r) => r.status,
          () => 0,
        )) === 200
      )
        break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await json(`${url}/auth/register`, 'POST', undefined, { ...USER, name: 'Bench' });
    const login = await json(`${url}/auth/login`, 'POST', undefined, USER);
    const token = String(login.accessToken);
    const workspaceId = String(login.activeWorkspace.id);
    await withAdmin(dbUrl.toString(), (c) =>
      c.query(`update workspaces set limits = limits || '{"aiMonthlyGenerations": 1000000000}'::jsonb where id = $1`, [
        workspaceId,
      ]),
    );
    // A fresh token: the membership (and its limits) is read at sign-in.
    const fresh = String((await json(`${url}/auth/login`, 'POST', undefined, USER)).accessToken);
    void token;

    const alone: StreamRun[] = [];
    for (let i = 0; i < ALONE; i++) alone.push(await stream(url, fresh, `Bench stream alone ${i}`));
    if (!alone.every((r) => r.ok)) throw new Error(`a stream alone failed: ${alone.find((r) => !r.ok)?.error}`);
    const aloneFirst = median(alone.map((r) => r.firstDeltaMs!));

    let peakRss = 0;
    const sampler = setInterval(() => {
      void rssMbOf(child.pid!).then((mb) => (peakRss = Math.max(peakRss, mb ?? 0)));
    }, 50);
    await loopP99Ms(url); // resets the histogram: what follows is the burst's
    const started = performance.now();
    const runs = await Promise.all(
      Array.from({ length: STREAMS }, (_, i) => stream(url, fresh, `Bench stream ${i % 50} of many`)),
    );
    const burstMs = performance.now() - started;
    const loopP99 = await loopP99Ms(url);
    clearInterval(sampler);
    peakRss = Math.max(peakRss, (await rssMbOf(child.pid!)) ?? 0);

    const completed = runs.filter((r) => r.ok).length;
    const firsts = runs.filter((r) => r.firstDeltaMs !== undefined).map((r) => r.firstDeltaMs!);
    const burstFirst = median(firsts);
    const ratio = burstFirst / aloneFirst;
    const mark = (ok: boolean) => (ok ? 'met' : 'MISSED');
    console.log(
      `streams at once                  ${STREAMS} (MOCK, ${median(runs.map((r) => r.deltas))} chunks 20 ms apart, median)`,
    );
    console.log(
      `completed                        ${completed} / ${STREAMS}   target all   ${mark(completed === STREAMS)}`,
    );
    console.log(
      `API peak RSS                     ${peakRss.toFixed(0)} MB   target < ${TARGETS.rssMb} MB   ${mark(peakRss < TARGETS.rssMb)}`,
    );
    console.log(
      `API event-loop delay p99         ${loopP99.toFixed(1)} ms   target < ${TARGETS.loopP99Ms} ms   ${mark(loopP99 < TARGETS.loopP99Ms)}`,
    );
    console.log(
      `time to first delta, median     ${burstFirst.toFixed(1)} ms at once vs ${aloneFirst.toFixed(1)} ms alone = ${ratio.toFixed(2)}x   target <= ${TARGETS.firstDeltaRatio}x   ${mark(ratio <= TARGETS.firstDeltaRatio)}`,
    );
    console.log(`time to first delta, p99        ${percentile(firsts, 99).toFixed(1)} ms at once`);
    console.log(`whole burst                      ${(burstMs / 1000).toFixed(2)} s`);
    const failures = runs.filter((r) => !r.ok).slice(0, 3);
    if (failures.length) console.log('first failures:', failures.map((f) => f.error).join(' | '));
  } finally {
    await stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
