// A private redis-server for one test file, on a free loopback port, that the test can freeze and thaw
// (SIGSTOP / SIGCONT: the process stops answering while its connections stay open, which is what a
// black-holed network looks like), stop (SIGKILL: connections are refused and its data is gone, as it
// keeps nothing on disk) and start again on the same port, empty.
//
//   const redis = await RedisServer.start();
//   startTestApp({ REDIS_URL: redis.url, ... });
//   redis.freeze(); ... redis.thaw();
//   await redis.stop(); ... await redis.restart();
//   await redis.close(); // in afterAll
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { holdsWithin } from './wait.js';

/** Servers still running, killed if the test process exits without closing them. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** A loopback port free at the time of asking. */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export class RedisServer {
  private child: ChildProcess | undefined;
  private output = '';
  private frozen = false;

  private constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  /** Starts a redis-server on a free port (or `port`) and resolves once it accepts commands. */
  static async start(opts: { port?: number } = {}): Promise<RedisServer> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'test-redis-'));
    const server = new RedisServer(opts.port ?? (await freePort()), dir);
    await server.launch();
    return server;
  }

  /** `redis://127.0.0.1:<port>`. */
  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** True while the process runs (frozen or not). */
  get isRunning(): boolean {
    return this.child !== undefined;
  }

  get isFrozen(): boolean {
    return this.frozen;
  }

  /** SIGSTOP: connections stay open and commands are accepted by the kernel, but nothing is answered. */
  freeze(): void {
    if (!this.child) throw new Error('redis-server is not running');
    this.child.kill('SIGSTOP');
    this.frozen = true;
  }

  /** SIGCONT: the server answers again, starting with what it was sent while frozen. */
  thaw(): void {
    if (!this.child) throw new Error('redis-server is not running');
    this.child.kill('SIGCONT');
    this.frozen = false;
  }

  /** SIGKILL and wait for the exit: connections are refused, the data is lost. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
    this.frozen = false;
  }

  /**
   * While stopped: listens on the port until a client tries to connect, ends that connection at once (as a
   * refused one ends), stops listening, and answers when (performance.now()). A restart right after puts
   * the server back at the worst moment for that client: it has just failed an attempt and backs off.
   */
  async nextConnectionAttempt(timeoutMs = 20_000): Promise<number> {
    if (this.child) throw new Error('redis-server is running: stop it first');
    const listener = net.createServer();
    try {
      await new Promise<void>((resolve, reject) => {
        listener.once('error', reject);
        listener.listen(this.port, '127.0.0.1', () => resolve());
      });
      return await new Promise<number>((resolve, reject) => {
        const noAttempt = () => new Error(`no client tried port ${this.port} within ${timeoutMs} ms`);
        const timer = setTimeout(() => reject(noAttempt()), timeoutMs);
        listener.on('connection', (socket) => {
          socket.destroy();
          clearTimeout(timer);
          resolve(performance.now());
        });
      });
    } finally {
      listener.close();
    }
  }

  /** Starts the server again on the same port, empty (stopping it first if it runs). */
  async restart(): Promise<void> {
    await this.stop();
    await this.launch();
  }

  /** Stops the server and removes its directory. */
  async close(): Promise<void> {
    await this.stop();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  private async launch(): Promise<void> {
    // Nothing persisted: a restart starts empty, as a Redis without persistence does.
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
    args.push('--dir', this.dir);
    const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.output = '';
    const collect = (chunk: Buffer) => void (this.output += chunk.toString('utf8'));
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    running.add(child);
    child.once('exit', () => {
      running.delete(child);
      if (this.child === child) this.child = undefined;
    });
    this.child = child;
    await this.untilReady(child);
  }

  /** Resolves once the server answers PING; rejects when it exits first or after 10 s. */
  private async untilReady(child: ChildProcess): Promise<void> {
    const ready = await holdsWithin(async () => this.child !== child || (await this.answersPing()), 10_000, 25);
    if (this.child !== child) throw new Error(`redis-server on port ${this.port} exited at start-up:\n${this.output}`);
    if (!ready) throw new Error(`redis-server on port ${this.port} did not answer within 10 s:\n${this.output}`);
  }

  private answersPing(): Promise<boolean> {
    return new Promise((resolve) => {
      const socket = net.connect(this.port, '127.0.0.1');
      let reply = '';
      const done = (ok: boolean) => {
        socket.destroy();
        resolve(ok);
      };
      socket.setTimeout(500, () => done(false));
      socket.once('error', () => done(false));
      socket.once('connect', () => socket.write('PING\r\n'));
      socket.on('data', (chunk) => {
        reply += chunk.toString('utf8');
        if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
      });
    });
  }
}
