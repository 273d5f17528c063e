// The production start of the API (bench/run.ts, scenario "production start"): builds dist/ (`npm run
// build`), then starts `node scripts/start.mjs server` (what `npm start` runs) as a child process against
// a throw-away Postgres database with the MOCK providers and nothing else configured, BENCH_STARTUP_RUNS
// times (one untimed start first migrates the database, as a deployment's first start does). Each run
// polls GET /health every 20 ms and takes the time from the spawn to the first 200, the CPU the process had
// used by then (/proc/<pid>/stat: the wall time on a busy shared machine is mostly waiting for a core), and
// its resident memory (VmRSS of /proc/<pid>/status) once it has been idle for BENCH_STARTUP_SETTLE_MS.
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { cpuSecondsOf, rssMbOf } from './cpu.js';
import { freePort } from './local.js';

export interface StartupRun {
  firstHealthyMs: number;
  cpuMsAtFirstHealthy?: number;
  idleRssMb?: number;
}

export interface StartupFigures {
  runs: StartupRun[];
  /** Medians of the runs. */
  firstHealthyMs: number;
  cpuMsAtFirstHealthy?: number;
  idleRssMb?: number;
}

export const STARTUP_TARGETS = { firstHealthyMs: 2_000, idleRssMb: 150 };

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** One start: spawn, first 200 on /health, settle, RSS, SIGTERM. */
async function startOnce(root: string, env: Record<string, string>, settleMs: number): Promise<StartupRun> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, ['scripts/start.mjs', 'server'], {
    cwd: root,
    env: { ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = signal ?? `code ${code}`));
  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (exited) throw new Error(`the API exited during start-up (${exited}): ${stderr.slice(-500)}`);
      if (Date.now() > deadline) throw new Error('the API did not answer GET /health with 200 within 60 s');
      const status = await fetch(`http://127.0.0.1:${port}/health`).then(
        (r) => r.status,
        () => 0,
      );
      if (status === 200) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const firstHealthyMs = performance.now() - started;
    const cpuMsAtFirstHealthy = await cpuSecondsOf(child.pid!).then((s) => (s === undefined ? undefined : s * 1000));
    if (/built from other sources/.test(stderr)) throw new Error(`the launcher did not run dist/: ${stderr}`);
    await new Promise((r) => setTimeout(r, settleMs));
    const idleRssMb = await rssMbOf(child.pid!);
    return { firstHealthyMs, cpuMsAtFirstHealthy, idleRssMb };
  } finally {
    if (!exited) {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await gone;
    }
  }
}

export async function measureStartup(opts: {
  root: string;
  env: Record<string, string>;
  runs: number;
  settleMs: number;
}): Promise<StartupFigures> {
  await promisify(execFile)(process.execPath, [path.join(opts.root, 'scripts/build.mjs')], { cwd: opts.root });
  // Untimed: migrates the new database.
  await startOnce(opts.root, opts.env, 0);
  const runs: StartupRun[] = [];
  for (let i = 0; i < opts.runs; i++) runs.push(await startOnce(opts.root, opts.env, opts.settleMs));
  const med = (of: (r: StartupRun) => number | undefined) =>
    runs.every((r) => of(r) !== undefined) ? median(runs.map((r) => of(r)!)) : undefined;
  return {
    runs,
    firstHealthyMs: median(runs.map((r) => r.firstHealthyMs)),
    cpuMsAtFirstHealthy: med((r) => r.cpuMsAtFirstHealthy),
    idleRssMb: med((r) => r.idleRssMb),
  };
}
