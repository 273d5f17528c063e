// The generated development secrets of a new DATA_DIR when several processes start at once (`npm start`
// and `npm run worker` side by side, two API instances): they must agree on them, or the worker could not
// read what the API encrypted, and none may read the file half written.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig, withDevelopmentSecrets } from '../../server/platform/config.js';

const CONFIG_MODULE = pathToFileURL(path.resolve('server/platform/config.ts')).href;
const DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/not-connected';
const digest = (secret: string) => crypto.createHash('sha256').update(secret).digest('hex');

/** Now, in milliseconds with a fraction, on a clock every process on this machine shares. */
const now = () => performance.timeOrigin + performance.now();

interface Loader {
  ready: Promise<void>;
  /** Lets the process fill in its secrets at the moment `at` (now()); answers their digests. */
  goAt: (at: number) => Promise<string>;
}

/**
 * A process that loads the configuration module and parses its settings, says so, and on the word spins
 * until the moment it is given, so that all of them look for the file and write it within microseconds
 * of each other.
 */
function startLoader(dataDir: string): Loader {
  const script = `
    const { parseConfig, withDevelopmentSecrets } = await import(${JSON.stringify(CONFIG_MODULE)});
    const { createHash } = await import('node:crypto');
    const parsed = parseConfig({ DATABASE_URL: ${JSON.stringify(DATABASE_URL)}, DATA_DIR: ${JSON.stringify(dataDir)} });
    process.stdout.write('ready\\n');
    const at = Number(await new Promise((resolve) => process.stdin.once('data', (d) => resolve(String(d)))));
    while (performance.timeOrigin + performance.now() < at);
    const { config } = withDevelopmentSecrets(parsed);
    const names = ['JWT_ACCESS_SECRET', 'JWT_REFRESH_SECRET', 'WEBHOOK_SECRET_ENCRYPTION_KEY'];
    process.stdout.write(names.map((n) => createHash('sha256').update(config[n]).digest('hex')).join(',') + '\\n');
    process.exit(0);
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (c) => (err += c));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (c) => {
      out += c;
      if (out.startsWith('ready\n')) resolve();
    });
    void exited.then((code) => reject(new Error(`exited (${code}) before it was ready: ${err}`)));
  });
  return {
    ready,
    goAt: async (at) => {
      child.stdin.end(String(at));
      const code = await exited;
      if (code !== 0) throw new Error(`exit ${code}: ${err}`);
      return out.slice('ready\n'.length).trim();
    },
  };
}

const dirs: string[] = [];
const newDataDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'saas-secrets-'));
  dirs.push(dir);
  return path.join(dir, 'data');
};
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe('generated development secrets', () => {
  it('are the same in processes that start together on a new DATA_DIR, from a whole file of mode 0600', async () => {
    const dataDir = newDataDir();
    const loaders = Array.from({ length: 2 }, () => startLoader(dataDir));
    await Promise.all(loaders.map((l) => l.ready));
    const at = now() + 50;
    const answers = await Promise.all(loaders.map((l) => l.goAt(at)));
    expect(new Set(answers).size).toBe(1);
    const file = path.join(dataDir, 'secrets.json');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, string>;
    expect(answers[0]).toBe(
      [stored.JWT_ACCESS_SECRET, stored.JWT_REFRESH_SECRET, stored.WEBHOOK_SECRET_ENCRYPTION_KEY].map(digest).join(','),
    );
    // Nothing written aside is left behind.
    expect(fs.readdirSync(dataDir)).toEqual(['secrets.json']);
  });

  it('completes a file of an older version that lacks a secret, keeping those it has', () => {
    const dataDir = newDataDir();
    fs.mkdirSync(dataDir, { recursive: true });
    const file = path.join(dataDir, 'secrets.json');
    const kept = { JWT_ACCESS_SECRET: 'a'.repeat(48), JWT_REFRESH_SECRET: 'b'.repeat(48) };
    fs.writeFileSync(file, JSON.stringify(kept), { mode: 0o600 });
    const { config } = withDevelopmentSecrets(parseConfig({ DATABASE_URL, DATA_DIR: dataDir }));
    expect(config.JWT_ACCESS_SECRET).toBe(kept.JWT_ACCESS_SECRET);
    expect(config.JWT_REFRESH_SECRET).toBe(kept.JWT_REFRESH_SECRET);
    const stored = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, string>;
    expect(stored.WEBHOOK_SECRET_ENCRYPTION_KEY).toBe(config.WEBHOOK_SECRET_ENCRYPTION_KEY);
    expect(stored.WEBHOOK_SECRET_ENCRYPTION_KEY.length).toBeGreaterThanOrEqual(32);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
  });
});
