// The service as separate processes, as production runs it: API instances (`npm start`: server/index.ts)
// and workers (`npm run worker`: server/worker.ts), each a child of the test with its output kept, and a
// way to look at its JSON log lines, wait for one, and stop it with a signal.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { testEnv } from '../helpers/app.js';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  at: number;
}

/** The environment of a child: the suite's test settings (tests/helpers/app.ts) with `overrides`, strings only. */
export function childEnv(overrides: Record<string, string | undefined>): Record<string, string> {
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, ...testEnv(overrides) };
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

/** Every process started, so that a test's afterAll (and the exit of the test process) can kill them all. */
const spawned = new Set<ServiceProcess>();
process.once('exit', () => {
  for (const p of spawned) p.signal('SIGKILL');
});

/** Kills (SIGKILL) every process started here that still runs, and waits for their exits. */
export async function killAll(): Promise<void> {
  await Promise.all([...spawned].map((p) => p.stop('SIGKILL')));
}

export class ServiceProcess {
  private readonly chunks: string[] = [];
  private readonly listeners = new Set<() => void>();
  readonly exited: Promise<Exit>;
  exit: Exit | undefined;
  readonly startedAt = Date.now();

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
    spawned.add(this);
    this.exited = new Promise((resolve) => {
      // 'close', not 'exit': the last log lines can arrive after 'exit'.
      child.once('close', (code, signal) => {
        spawned.delete(this);
        this.exit = { code, signal, at: Date.now() };
        this.notify();
        resolve(this.exit);
      });
    });
  }

  /** `node --import tsx <script>`, as the npm scripts run it. */
  static start(label: string, script: 'server/index.ts' | 'server/worker.ts', env: Record<string, string>) {
    const child = spawn(process.execPath, ['--import', 'tsx', script], {
      cwd: REPO_ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new ServiceProcess(label, child);
  }

  get output(): string {
    return this.chunks.join('');
  }

  get running(): boolean {
    return this.exit === undefined;
  }

  /** The JSON log lines (pino); other output is skipped. */
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

  /** Waits for a log line whose `msg` matches; fails at once when the process exits first. */
  async waitForLog(msg: string | RegExp, timeoutMs = 30_000): Promise<Record<string, unknown>> {
    const matches = (m: unknown) => typeof m === 'string' && (typeof msg === 'string' ? m === msg : msg.test(m));
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const line = this.logs().find((l) => matches(l.msg));
      if (line) return line;
      if (this.exit) {
        throw new Error(`${this.label} exited (${JSON.stringify(this.exit)}) before logging ${msg}:\n${this.tail()}`);
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${this.label} did not log ${msg} within ${timeoutMs} ms:\n${this.tail()}`);
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

  /** The end of the output, for failure messages. */
  tail(chars = 3000): string {
    return this.output.slice(-chars);
  }

  /** Sends `signal` if the process still runs. */
  signal(signal: NodeJS.Signals): void {
    if (this.running) this.child.kill(signal);
  }

  /** Sends `signal` and waits for the exit; SIGKILL after `graceMs` if it has not exited by then. */
  async stop(signal: NodeJS.Signals = 'SIGKILL', graceMs = 20_000): Promise<Exit> {
    this.signal(signal);
    return this.exitWithin(graceMs);
  }

  /** Waits for the exit; SIGKILL after `ms` if it has not exited by then (the exit then says so). */
  async exitWithin(ms: number): Promise<Exit> {
    const timer = setTimeout(() => this.signal('SIGKILL'), ms);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  private notify() {
    for (const l of [...this.listeners]) l();
  }
}

/** An API instance: its process and the base URL it logged when it started listening. */
export interface ApiInstance {
  proc: ServiceProcess;
  url: string;
}

/** Starts server/index.ts and waits until it is ready (listening, and its signal handlers in place). */
export async function startApi(label: string, env: Record<string, string>): Promise<ApiInstance> {
  const proc = ServiceProcess.start(label, 'server/index.ts', env);
  await proc.waitForLog(/^API ready at /, 45_000);
  const line = await proc.waitForLog('listening', 0);
  return { proc, url: `http://127.0.0.1:${line.port as number}` };
}

export async function startWorker(label: string, env: Record<string, string>): Promise<ServiceProcess> {
  const proc = ServiceProcess.start(label, 'server/worker.ts', env);
  await proc.waitForLog('worker ready', 45_000);
  return proc;
}

/** Whether something accepts TCP connections on the loopback port. */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** A loopback port nothing listens on (free when asked). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * The local ports of the TCP sockets process `pid` holds open (Linux: its /proc/<pid>/fd links to socket
 * inodes, /proc/net/tcp{,6} the inodes' addresses): on the far side, the remote ports of its connections.
 */
export function tcpPortsOf(pid: number): Set<number> {
  const inodes = new Set<string>();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    let link: string;
    try {
      link = fs.readlinkSync(`/proc/${pid}/fd/${fd}`, { encoding: 'utf8' });
    } catch {
      continue; // closed since the listing
    }
    const inode = /^socket:\[(\d+)\]$/.exec(link)?.[1];
    if (inode) inodes.add(inode);
  }
  const ports = new Set<number>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
    for (const line of fs.readFileSync(table, 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length > 9 && inodes.has(cols[9])) ports.add(parseInt(cols[1].split(':')[1], 16));
    }
  }
  return ports;
}
