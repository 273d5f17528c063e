// A process loads the heavy modules its settings use, and no others: the API on Postgres with the MOCK
// providers (what the production figures are measured on) starts and answers without loading a vendor SDK,
// the embedded database, the queue libraries, the image and upload libraries or the docs UI; with
// AI_PROVIDER=PROVIDER_A it loads the OpenAI SDK, and only that one. The entry point runs as a child
// process with a module hook that notes every package it loads (printed on exit).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testEnv } from '../helpers/app.js';
import { holdsWithin } from '../helpers/wait.js';

const HEAVY = [
  'stripe',
  'openai',
  '@anthropic-ai/sdk',
  '@aws-sdk/client-s3',
  '@electric-sql/pglite',
  'sharp',
  'file-type',
  'multer',
  'bullmq',
  'ioredis',
  'nodemailer',
  'openid-client',
  'swagger-ui-express',
];

let dir: string;
let register: string;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lean-'));
  const hooks = path.join(dir, 'hooks.mjs');
  fs.writeFileSync(
    hooks,
    `let port;
export async function initialize(data) { port = data.port; }
export async function load(url, context, next) {
  const m = /node_modules\\/((@[^/]+\\/)?[^/]+)/.exec(url);
  if (m) port.postMessage(m[1]);
  return next(url, context);
}
`,
  );
  register = path.join(dir, 'register.mjs');
  fs.writeFileSync(
    register,
    `import { register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';
const { port1, port2 } = new MessageChannel();
const seen = new Set();
port1.on('message', (p) => seen.add(p));
port1.unref();
register(${JSON.stringify(new URL(`file://${hooks}`).href)}, { data: { port: port2 }, transferList: [port2] });
process.on('exit', () => process.stderr.write('PACKAGES ' + JSON.stringify([...seen]) + '\\n'));
`,
  );
});

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Starts server/index.ts with `settings`, calls GET /health and GET /auth/me, stops it; answers the packages it loaded. */
async function packagesLoaded(settings: Record<string, string>): Promise<string[]> {
  const child = spawn(process.execPath, ['--import', register, '--import', 'tsx', 'server/index.ts'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...testEnv(settings) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const closed = new Promise((resolve) => child.once('close', resolve));
  await holdsWithin(() => /"msg":"listening"/.test(stdout) || child.exitCode !== null, 60_000);
  const port = Number(/"port":(\d+)/.exec(stdout)?.[1]);
  expect(port, stdout + stderr).toBeGreaterThan(0);
  expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
  expect((await fetch(`http://127.0.0.1:${port}/auth/me`)).status).toBe(401);
  child.kill('SIGTERM');
  await closed;
  const line = /^PACKAGES (.*)$/m.exec(stderr)?.[1];
  expect(line, stderr).toBeDefined();
  return JSON.parse(line!) as string[];
}

describe('a lean process', () => {
  it('the API on Postgres with the MOCK providers loads no vendor SDK, queue, upload, image or docs-UI module', async () => {
    const loaded = await packagesLoaded({});
    expect(loaded).toContain('express');
    expect(loaded).toContain('pg');
    expect(HEAVY.filter((p) => loaded.includes(p))).toEqual([]);
  }, 90_000);

  it('AI_PROVIDER=PROVIDER_A loads the OpenAI SDK, and no other heavy module', async () => {
    const loaded = await packagesLoaded({ AI_PROVIDER: 'PROVIDER_A', PROVIDER_A_API_KEY: 'sk-test-lean' });
    expect(HEAVY.filter((p) => loaded.includes(p))).toEqual(['openai']);
  }, 90_000);
});
