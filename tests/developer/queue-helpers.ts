// Fixtures of the queue-mode tests (queue.test.ts): the real worker (`server/worker.ts`) as a child process
// with its output captured, a webhook receiver whose answers may wait or never come, a TCP proxy in front
// of Redis that the test can cut and restore (tests/helpers/tcp-proxy.ts), and dumps of the Redis keys
// under a prefix.
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { testEnv } from '../helpers/app.js';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

// ---------------------------------------------------------------- the worker as a child process

export interface WorkerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  at: number;
}

/** The environment of a worker child process: the test settings with `settings`, PATH and HOME, nothing unset. */
export function workerEnvOf(settings: Record<string, string | undefined>): Record<string, string> {
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, ...testEnv(settings) };
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

/** `node --import tsx server/worker.ts`, as `npm run worker` runs it, with stdout and stderr kept. */
export class WorkerProcess {
  /** stdout and stderr, in arrival order. */
  private readonly chunks: string[] = [];
  private readonly listeners = new Set<() => void>();
  readonly exited: Promise<WorkerExit>;
  exit: WorkerExit | undefined;

  private constructor(
    readonly label: string,
    readonly child: ChildProcess,
  ) {
    const collect = (chunk: Buffer) => {
      this.chunks.push(chunk.toString('utf8'));
      this.notify();
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    this.exited = new Promise((resolve) => {
      // 'close', not 'exit': the output's last chunks can arrive after 'exit' (its last log lines).
      child.once('close', (code, signal) => {
        this.exit = { code, signal, at: Date.now() };
        this.notify();
        resolve(this.exit);
      });
    });
  }

  static start(label: string, env: Record<string, string>): WorkerProcess {
    const child = spawn(process.execPath, ['--import', 'tsx', 'server/worker.ts'], {
      cwd: REPO_ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new WorkerProcess(label, child);
  }

  /** Everything the process wrote, stdout and stderr. */
  get output(): string {
    return this.chunks.join('');
  }

  /** The JSON log lines of the output (pino); other lines are skipped. */
  logs(): Array<Record<string, unknown>> {
    return this.output
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .flatMap((l) => {
        try {
          return [JSON.parse(l) as Record<string, unknown>];
        } catch {
          return [];
        }
      });
  }

  get running(): boolean {
    return this.exit === undefined;
  }

  /** Waits for a log line whose `msg` matches; fails at once when the process exits first. */
  async waitForLog(msg: string | RegExp, timeoutMs = 20_000): Promise<Record<string, unknown>> {
    const matches = (m: unknown) => typeof m === 'string' && (typeof msg === 'string' ? m === msg : msg.test(m));
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const line = this.logs().find((l) => matches(l.msg));
      if (line) return line;
      if (this.exit)
        throw new Error(
          `worker ${this.label} exited (${JSON.stringify(this.exit)}) before logging ${msg}; output:\n${this.output.slice(-4000)}`,
        );
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(
          `worker ${this.label} did not log ${msg} within ${timeoutMs} ms; output:\n${this.output.slice(-4000)}`,
        );
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.listeners.delete(done);
          resolve();
        };
        const timer = setTimeout(done, Math.min(left, 250));
        this.listeners.add(done);
      });
    }
  }

  /** Sends `signal` (if the process still runs) and waits for it to exit. */
  async stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<WorkerExit> {
    if (this.running) this.child.kill(signal);
    return this.exited;
  }

  private notify() {
    for (const l of [...this.listeners]) l();
  }
}

// ---------------------------------------------------------------- Redis behind a switch

export { TcpProxy } from '../helpers/tcp-proxy.js';

/** A loopback port nothing listens on. */
export async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

// ---------------------------------------------------------------- what Redis holds

export interface KeyDump {
  type: string;
  /** Hash fields (hashes only). */
  fields?: Record<string, string>;
  /** Every value of the key as text. */
  text: string;
}

async function keysUnder(redis: Redis, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', '500');
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return [...new Set(keys)];
}

/** Every key under `prefix:` with all its values. */
export async function dumpKeys(redis: Redis, prefix: string): Promise<Map<string, KeyDump>> {
  const out = new Map<string, KeyDump>();
  for (const key of await keysUnder(redis, prefix)) {
    const type = await redis.type(key);
    let text = '';
    let fields: Record<string, string> | undefined;
    if (type === 'string') text = (await redis.get(key)) ?? '';
    else if (type === 'hash') {
      fields = await redis.hgetall(key);
      text = JSON.stringify(fields);
    } else if (type === 'list') text = JSON.stringify(await redis.lrange(key, 0, -1));
    else if (type === 'set') text = JSON.stringify(await redis.smembers(key));
    else if (type === 'zset') text = JSON.stringify(await redis.zrange(key, '0', '-1', 'WITHSCORES'));
    else if (type === 'stream') text = JSON.stringify(await redis.xrange(key, '-', '+'));
    out.set(key, { type, fields, text });
  }
  return out;
}

/** Deletes every key under `prefix:`; answers how many there were. */
export async function deleteKeys(redis: Redis, prefix: string): Promise<number> {
  const keys = await keysUnder(redis, prefix);
  for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500));
  return keys.length;
}

/** Resolves as `promise`, or rejects naming `what` after `ms`. */
export async function within<T>(ms: number, promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
