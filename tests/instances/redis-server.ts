// A private redis-server of the test (no persistence, loopback, a free port), which the test may stop and
// start again on the same port (Redis down: connections refused) or freeze and thaw (SIGSTOP / SIGCONT:
// connections stay open and nothing answers).
import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { freePort, waitFor } from './processes.js';

export class RedisServer {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();

  private constructor(readonly port: number) {}

  static async start(): Promise<RedisServer> {
    const server = new RedisServer(await freePort());
    await server.launch();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts redis-server on the port and waits until it answers PING. */
  async launch(): Promise<void> {
    const child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    await waitFor('redis-server to answer PING', () => this.ping(), 10_000, 50);
  }

  /** Redis goes away: the process is killed and its port refuses connections (its data is gone). */
  async stop(): Promise<void> {
    this.child?.kill('SIGKILL');
    await this.exited;
    this.child = undefined;
  }

  /** Redis hangs: connections stay open, nothing is answered. */
  freeze(): void {
    this.child?.kill('SIGSTOP');
  }

  thaw(): void {
    this.child?.kill('SIGCONT');
  }

  /** Kills it for good (thawed first, so the kill is not left pending). */
  async close(): Promise<void> {
    this.thaw();
    await this.stop();
  }

  private async ping(): Promise<boolean> {
    const client = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => undefined);
    try {
      await client.connect();
      return (await client.ping()) === 'PONG';
    } catch {
      return false;
    } finally {
      client.disconnect();
    }
  }
}
