// A TCP proxy that a test can cut and restore: the service behind it (Redis, Postgres) goes away and comes
// back, as in an outage, while the process under test keeps running.
import net from 'node:net';

/**
 * A TCP proxy to a service (Redis, Postgres): `cut()` closes it and every connection through it (the service
 * is away: connections are refused), `restore()` listens again on the same port.
 */
export class TcpProxy {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  private readonly clients = new Set<net.Socket>();
  private holding = false;
  /** Connections through the proxy that got bytes back from the service. */
  answered = 0;
  port = 0;

  private constructor(private readonly target: URL) {}

  /** A proxy to the service of `target` (a redis:// or postgres:// URL). */
  static async start(target: URL): Promise<TcpProxy> {
    const proxy = new TcpProxy(target);
    await proxy.listen();
    return proxy;
  }

  /** `target` through the proxy: the same URL (user, database) on the proxy's address. */
  get url(): string {
    const through = new URL(this.target);
    through.hostname = '127.0.0.1';
    through.port = String(this.port);
    return through.toString();
  }

  private get targetPort(): number {
    return Number(this.target.port || (this.target.protocol.startsWith('postgres') ? 5432 : 6379));
  }

  private async listen() {
    const server = net.createServer((client) => {
      const upstream = net.connect(this.targetPort, this.target.hostname);
      let counted = false;
      upstream.on('data', () => {
        if (!counted) this.answered++;
        counted = true;
      });
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      this.clients.add(client);
      client.on('close', () => this.clients.delete(client));
      if (!this.holding) client.pipe(upstream);
      upstream.pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  /**
   * Stops passing on what clients send (the connections stay open): requests to the service hang, as to a
   * server that stopped answering, until cut() or the end of the test.
   */
  hold(): void {
    this.holding = true;
    for (const s of this.clients) s.unpipe();
  }

  /** Bytes that clients sent since hold() and that wait in the proxy (a statement held from the service). */
  get heldBytes(): number {
    let n = 0;
    for (const s of this.clients) n += s.readableLength;
    return n;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /**
   * While cut: answers once a client tries to connect again (its connection is ended at once, as a refused
   * one ends; the port is then closed again). A client that lost its connection and reconnects shows itself
   * this way.
   */
  async nextConnectionAttempt(timeoutMs = 10_000): Promise<void> {
    if (this.server) throw new Error('the proxy is not cut');
    const listener = net.createServer((socket) => socket.destroy());
    await new Promise<void>((resolve, reject) => {
      listener.once('error', reject);
      listener.listen(this.port, '127.0.0.1', () => resolve());
    });
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no client tried port ${this.port} in ${timeoutMs} ms`)),
          timeoutMs,
        );
        listener.once('connection', () => {
          clearTimeout(timer);
          resolve();
        });
      });
    } finally {
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    }
  }

  async restore(): Promise<void> {
    this.holding = false;
    if (!this.server) await this.listen();
  }

  close(): Promise<void> {
    return this.cut();
  }
}
