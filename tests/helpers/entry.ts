// The real entry point (what `npm start` runs, server/index.ts) as a child process, with its output.
import { spawn, type ChildProcess } from 'node:child_process';

export interface Entry {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

export function startEntry(env: Record<string, string>): Entry {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/index.ts'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (out += c));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

/** Polls `check` every 50 ms until it holds; throws after `timeoutMs`. */
export async function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The port an entry logged when it started listening (waits for the line, at most 30 s). */
export async function listeningPort(entry: Entry): Promise<number> {
  await waitUntil(() => /"msg":"listening"/.test(entry.output()), 30_000);
  return Number(/"port":(\d+)/.exec(entry.output())![1]);
}
