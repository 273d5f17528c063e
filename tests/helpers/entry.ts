// The real entry point (what `npm start` runs, server/index.ts) as a child process, with its output.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { waitFor } from './wait.js';

export interface Entry {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** With `cwd`, the entry runs in that folder (its `.env`, its `./data`), loaded from this repository. */
export function startEntry(env: Record<string, string>, opts: { cwd?: string } = {}): Entry {
  const args = opts.cwd
    ? [
        '--import',
        pathToFileURL(path.resolve('node_modules/tsx/dist/loader.mjs')).href,
        path.resolve('server/index.ts'),
      ]
    : ['--import', 'tsx', 'server/index.ts'];
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    cwd: opts.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (out += c));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

/** The port an entry logged when it started listening (waits for the line, at most 30 s). */
export async function listeningPort(entry: Entry): Promise<number> {
  await waitFor(() => /"msg":"listening"/.test(entry.output()), {
    timeout: 30_000,
    message: 'the entry to log "listening"',
  }).catch((err: Error) => {
    throw new Error(`${err.message}; its output:\n${entry.output().slice(-2_000)}`);
  });
  return Number(/"port":(\d+)/.exec(entry.output())![1]);
}
