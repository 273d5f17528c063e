// The production start (`npm run build`, then `npm start` / `npm run worker`: scripts/start.mjs): the
// compiled dist/ runs when it was built from the sources as they are now, never when it was built from
// others (the TypeScript sources run instead, through tsx, with a line on stderr), and with no build at
// all the sources run without a word. The build goes to a folder of the test's own (START_DIST_DIR), under
// node_modules/.cache.
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testEnv } from '../helpers/app.js';
import { holdsWithin } from '../helpers/wait.js';

const dirs: string[] = [];
/** Under the repository's node_modules, so that the compiled modules find their packages as dist/ does. */
const CACHE = path.resolve('node_modules/.cache');
const tempDir = () => {
  fs.mkdirSync(CACHE, { recursive: true });
  const dir = fs.mkdtempSync(path.join(CACHE, 'start-test-'));
  dirs.push(dir);
  return dir;
};
let built: string;

/** `node scripts/start.mjs <what>` with the test settings and `env`; answers its output and exit code. */
function launch(what: 'server' | 'worker', env: Record<string, string | undefined>) {
  const child = spawn(process.execPath, ['scripts/start.mjs', what], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...testEnv(env) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, exited, stdout: () => stdout, stderr: () => stderr };
}

beforeAll(async () => {
  built = tempDir();
  await promisify(execFile)(process.execPath, ['scripts/build.mjs'], {
    env: { ...process.env, START_DIST_DIR: built },
  });
}, 60_000);

afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

describe('npm start and npm run worker (scripts/start.mjs)', () => {
  it('npm run build writes every entry point and the hash of the sources it was built from', () => {
    expect(fs.existsSync(path.join(built, 'server/index.js'))).toBe(true);
    expect(fs.existsSync(path.join(built, 'server/worker.js'))).toBe(true);
    expect(fs.readFileSync(path.join(built, '.sources-hash'), 'utf8')).toMatch(/^[0-9a-f]{64}\n$/);
  });

  it('runs the compiled server when the build matches the sources: it listens and answers GET /health 200', async () => {
    const run = launch('server', { START_DIST_DIR: built });
    try {
      await holdsWithin(() => /"msg":"listening"/.test(run.stdout()) || run.child.exitCode !== null, 60_000);
      const port = Number(/"port":(\d+)/.exec(run.stdout())?.[1]);
      expect(port, run.stdout() + run.stderr()).toBeGreaterThan(0);
      const res = await fetch(`http://127.0.0.1:${port}/health`);
      expect(res.status).toBe(200);
      expect(run.stderr()).not.toMatch(/built from other sources/);
    } finally {
      run.child.kill('SIGTERM');
      expect(await run.exited).toBe(0);
    }
  }, 90_000);

  it('runs what dist/ holds when its hash matches (a stub stands in for the compiled worker here)', async () => {
    const dir = tempDir();
    fs.cpSync(built, dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'server/worker.js'), 'console.log("the compiled worker ran");\n');
    const run = launch('worker', { START_DIST_DIR: dir });
    expect(await run.exited).toBe(0);
    expect(run.stdout()).toContain('the compiled worker ran');
  }, 30_000);

  it('never runs a dist/ built from other sources: the TypeScript sources run, and it says so', async () => {
    const dir = tempDir();
    fs.cpSync(built, dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'server/worker.js'), 'console.log("stale code ran");\n');
    fs.writeFileSync(path.join(dir, '.sources-hash'), `${'0'.repeat(64)}\n`);
    // The worker of the sources, with the queue off: it says so and exits 0.
    const run = launch('worker', { START_DIST_DIR: dir, QUEUES_ENABLED: 'false' });
    expect(await run.exited).toBe(0);
    expect(run.stdout()).not.toContain('stale code ran');
    expect(run.stdout()).toContain('the webhook queue is off');
    expect(run.stderr()).toMatch(/was built from other sources than these: running the TypeScript sources with tsx/);
  }, 60_000);

  it('with no build at all runs the TypeScript sources without a word, and stops on a bad setting naming it', async () => {
    const run = launch('server', { START_DIST_DIR: tempDir(), PORT: 'abc' });
    expect(await run.exited).toBe(1);
    expect(run.stdout() + run.stderr()).toContain('PORT');
    expect(run.stderr()).not.toMatch(/built from other sources/);
  }, 60_000);

  it('refuses an unknown entry with a usage line', async () => {
    const child = spawn(process.execPath, ['scripts/start.mjs', 'nope'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    expect(await new Promise((resolve) => child.once('close', resolve))).toBe(2);
    expect(stderr).toContain('usage: node scripts/start.mjs server|worker');
  });
});
