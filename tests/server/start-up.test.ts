// What a developer sees when starting the service: `.env` read from the working directory (the real
// environment winning over it), the address actually listened on in the start-up line, GET / pointing at
// the docs, and log lines for people at a terminal in development, JSON otherwise.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { listeningPort, startEntry, type Entry } from '../helpers/entry.js';
import { waitFor } from '../helpers/wait.js';
import { createLogger, wantsPrettyLogs } from '../../server/platform/logger.js';

const running: Entry[] = [];
const folders: string[] = [];
afterAll(async () => {
  for (const run of running) {
    run.child.kill('SIGTERM');
    await run.exited;
  }
  for (const dir of folders) fs.rmSync(dir, { recursive: true, force: true });
});

/** A folder of its own with `.env` holding `lines`. */
function folderWithDotEnv(lines: string[]): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dotenv-'));
  folders.push(dir);
  fs.writeFileSync(path.join(dir, '.env'), `${lines.join('\n')}\n`);
  return dir;
}

const DOTENV = [
  '# settings of a local run',
  'NODE_ENV=test',
  'HOST=127.0.0.1',
  'PORT=0',
  `DATABASE_URL=${inject('databaseUrl')}`,
  'JWT_ACCESS_SECRET="dotenv-access-secret-0123456789abcdef0123"',
  'JWT_REFRESH_SECRET=dotenv-refresh-secret-0123456789abcdef0123',
  'WEBHOOK_DELIVERY_ENABLED=false',
  'SERVICE_VERSION=7.7.7-from-dotenv',
];

async function start(env: Record<string, string>, cwd: string) {
  const run = startEntry(env, { cwd });
  running.push(run);
  const port = await listeningPort(run);
  return { run, port, base: `http://127.0.0.1:${port}` };
}

describe('.env', () => {
  it('is read at start-up from the working directory', async () => {
    const { run, base } = await start({}, folderWithDotEnv(DOTENV));
    const root = (await (await fetch(`${base}/`)).json()) as { version: string };
    expect(root.version).toBe('7.7.7-from-dotenv');
    // The settings came from the file alone: the child's environment had none of them.
    expect(run.output()).toContain('"msg":"listening"');
  }, 60_000);

  it('never overrides the real environment', async () => {
    const { base } = await start({ SERVICE_VERSION: '8.8.8-from-environment' }, folderWithDotEnv(DOTENV));
    const root = (await (await fetch(`${base}/`)).json()) as { version: string };
    expect(root.version).toBe('8.8.8-from-environment');
  }, 60_000);

  it('a bad value in it stops the start-up naming the variable, like one of the environment', async () => {
    const run = startEntry({}, { cwd: folderWithDotEnv([...DOTENV, 'BCRYPT_COST=lots']) });
    running.push(run);
    expect(await run.exited).toBe(1);
    expect(run.output()).toContain('BCRYPT_COST');
  }, 60_000);

  it('.env.example lists only real settings, all commented out', async () => {
    const { configSchema } = await import('../../server/platform/config.js');
    const lines = fs.readFileSync('.env.example', 'utf8').split('\n').filter(Boolean);
    expect(lines.every((l) => l.startsWith('#'))).toBe(true);
    const names = lines.map((l) => /^# ([A-Z][A-Z0-9_]*)=/.exec(l)?.[1]).filter((n) => n !== undefined);
    expect(names.length).toBeGreaterThan(15);
    expect(names.filter((n) => !(n in configSchema.shape))).toEqual([]);
  });
});

describe('the start-up line', () => {
  it('names the address actually listened on, with its port', async () => {
    const { run, port } = await start({}, folderWithDotEnv(DOTENV));
    await waitFor(() => run.output().includes('API ready at'), { timeout: 10_000 });
    expect(run.output()).toContain(
      `"msg":"API ready at http://127.0.0.1:${port} (docs at http://127.0.0.1:${port}/docs)"`,
    );
  }, 60_000);

  it('on every interface says so, and links the docs where this machine reaches them', async () => {
    const { run, port } = await start({ HOST: '0.0.0.0' }, folderWithDotEnv(DOTENV));
    await waitFor(() => run.output().includes('API ready at'), { timeout: 10_000 });
    expect(run.output()).toContain(
      `"msg":"API ready at http://0.0.0.0:${port}, every interface (docs at http://127.0.0.1:${port}/docs)"`,
    );
  }, 60_000);
});

describe('GET /', () => {
  let app: TestApp;
  afterAll(() => app?.close());

  it('answers a small JSON pointing at the docs and the OpenAPI document', async () => {
    app = await startTestApp({ SERVICE_VERSION: '3.2.1' });
    const res = await app.api('GET', '/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.body).toEqual({
      name: 'Workspace SaaS API',
      version: '3.2.1',
      docs: '/docs',
      openapi: '/openapi.json',
      health: '/health',
    });
    // The links work.
    expect((await app.api('GET', res.body.openapi)).status).toBe(200);
    expect((await fetch(`${app.url}${res.body.docs}/`)).status).toBe(200);
    // Documented like the other plain routes.
    const doc = (await app.api('GET', '/openapi.json')).body;
    const op = doc.paths['/'].get;
    expect(op.summary).toBeTruthy();
    expect(op.description).toBeTruthy();
    expect(op.security).toEqual([]);
    expect(Object.keys(op.responses['200'].content['application/json'].schema.properties).sort()).toEqual([
      'docs',
      'health',
      'name',
      'openapi',
      'version',
    ]);
  });
});

describe('log lines', () => {
  it('are for people only in development at a terminal', () => {
    expect(wantsPrettyLogs({ NODE_ENV: 'development' }, true)).toBe(true);
    expect(wantsPrettyLogs({ NODE_ENV: 'development' }, false)).toBe(false);
    expect(wantsPrettyLogs({ NODE_ENV: 'production' }, true)).toBe(false);
    expect(wantsPrettyLogs({ NODE_ENV: 'test' }, true)).toBe(false);
  });

  it('a logger given a destination writes JSON whatever the settings', () => {
    const lines: string[] = [];
    createLogger({ LOG_LEVEL: 'info', NODE_ENV: 'development' }, { write: (l: string) => void lines.push(l) }).info(
      'hello',
    );
    expect(JSON.parse(lines[0]).msg).toBe('hello');
  });

  /** `npm start`'s entry in development, its stdout a terminal (`script` gives it a pseudo-terminal) or a pipe. */
  async function firstLines(terminal: boolean): Promise<string> {
    const dir = folderWithDotEnv(DOTENV.map((l) => (l === 'NODE_ENV=test' ? 'NODE_ENV=development' : l)));
    const loader = path.resolve('node_modules/tsx/dist/loader.mjs');
    // `exec`: the entry replaces the shell, so it is the shell's pid (a pipe) or `script`'s only child.
    const entry = `exec ${JSON.stringify(process.execPath)} --import ${JSON.stringify(`file://${loader}`)} ${JSON.stringify(path.resolve('server/index.ts'))}`;
    const [command, args] = terminal ? ['script', ['-qfec', entry, '/dev/null']] : ['sh', ['-c', entry]];
    const child = spawn(command, args, {
      cwd: dir,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, TERM: 'dumb' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    const exited = new Promise((resolve) => child.on('exit', resolve));
    try {
      await waitFor(() => out.includes('API ready at'), { timeout: 45_000 });
    } finally {
      // The entry itself: under `script`, its child (by the parent's pid, never by name).
      if (terminal)
        await new Promise((resolve) => spawn('pkill', ['-TERM', '-P', String(child.pid)]).on('exit', resolve));
      else child.kill('SIGTERM');
      await exited;
    }
    return out;
  }

  it('at a terminal in development, are pino-pretty lines (level, message), not JSON', async () => {
    const out = await firstLines(true);
    const ready = out.split(/\r?\n/).find((l) => l.includes('API ready at'))!;
    expect(ready).toMatch(/INFO.*API ready at http:\/\/127\.0\.0\.1:\d+/);
    expect(ready.trim().startsWith('{')).toBe(false);
  }, 60_000);

  it('through a pipe, even in development, are JSON lines', async () => {
    const out = await firstLines(false);
    const ready = out.split('\n').find((l) => l.includes('API ready at'))!;
    expect(JSON.parse(ready)).toMatchObject({ level: 30, msg: expect.stringContaining('API ready at') });
  }, 60_000);
});
