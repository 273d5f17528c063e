// A local HTTP endpoint for outbound webhook tests: records every request (headers and the exact raw body)
// and answers as the test says (a status and body, a sequence of them, or no answer at all), and checks
// signatures independently of the service's code (node:crypto, from the documented rule). With `tls` it
// serves https with the certificate of tests/fixtures/tls (for the name `localhost` only, issued by a test
// CA that only processes started with NODE_EXTRA_CA_CERTS=TEST_CA_FILE trust).
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { sleep } from './wait.js';

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/tls/${name}`, import.meta.url));
/** The test CA that issued the receiver's certificate (for NODE_EXTRA_CA_CERTS of a child process). */
export const TEST_CA_FILE = fixture('ca.pem');

export interface ReceivedRequest {
  method: string;
  /** Path and query string as received. */
  url: string;
  headers: http.IncomingHttpHeaders;
  /** The exact bytes received, as UTF-8 text. */
  body: string;
  receivedAt: number;
  /** The sender's TCP port (its local port): which process sent it, see tests/instances/processes.ts. */
  remotePort: number;
}

/**
 * How the receiver answers one request: a status (and body, headers; once the test calls release() when
 * `held`, or after `delayMs`), or 'hang' (never answer).
 */
export type Reply =
  { status: number; body?: string; headers?: Record<string, string>; delayMs?: number; held?: boolean } | 'hang';
export type Responder = (req: ReceivedRequest, index: number) => Reply;

export class WebhookReceiver {
  readonly requests: ReceivedRequest[] = [];
  /** When the answer to request i was written (undefined: not answered). */
  readonly answeredAt: Array<number | undefined> = [];
  /** Requests whose sender closed the connection before an answer was written (it gave up waiting, or died). */
  readonly abandoned = new Set<number>();
  private responder: Responder = () => ({ status: 200, body: 'ok' });
  private readonly hanging = new Set<http.ServerResponse>();
  private readonly waiters = new Set<() => void>();
  /** Answers of `held` replies, waiting for release(). */
  private readonly held: Array<() => void> = [];
  private released = false;

  private constructor(
    private readonly server: http.Server,
    private readonly tls: boolean,
  ) {}

  static async start(opts: { tls?: boolean } = {}): Promise<WebhookReceiver> {
    let receiver!: WebhookReceiver;
    const handle: http.RequestListener = (req, res) => receiver.handle(req, res);
    const server = opts.tls
      ? https.createServer(
          { key: fs.readFileSync(fixture('localhost.key')), cert: fs.readFileSync(fixture('localhost.pem')) },
          handle,
        )
      : http.createServer(handle);
    receiver = new WebhookReceiver(server, Boolean(opts.tls));
    // `localhost` may resolve to ::1 first: the https receiver listens on both loopbacks where it can.
    const listen = (host: string) =>
      new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, host, () => {
          server.off('error', reject);
          resolve();
        });
      });
    if (opts.tls) await listen('::').catch(() => listen('127.0.0.1'));
    else await listen('127.0.0.1');
    return receiver;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** http://127.0.0.1:<port><path>, or with `tls` https://localhost:<port><path> (the name its certificate is for). */
  url(path = '/hook', host = this.tls ? 'localhost' : '127.0.0.1'): string {
    return `${this.tls ? 'https' : 'http'}://${host}:${this.port}${path}`;
  }

  /** One reply for every request, a sequence (the last one repeats), or a function of the request. */
  reply(how: Reply | Reply[] | Responder): this {
    if (typeof how === 'function') this.responder = how;
    else if (Array.isArray(how)) this.responder = (_req, i) => how[Math.min(i, how.length - 1)];
    else this.responder = () => how;
    return this;
  }

  /** Waits until at least `n` requests arrived; throws after `timeoutMs`. */
  async waitForRequests(n: number, timeoutMs = 10_000): Promise<ReceivedRequest[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.requests.length < n) {
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(`receiver: expected ${n} requests within ${timeoutMs} ms, got ${this.requests.length}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.min(left, 200));
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.waiters.add(done);
      });
    }
    return this.requests.slice(0, n);
  }

  /**
   * Answers the requests whose reply is `held` (a slow endpoint, for as long as the test needs one), and
   * from now on answers such replies at once.
   */
  release(): void {
    this.released = true;
    for (const answer of this.held.splice(0)) answer();
  }

  /** Drops every request left unanswered ('hang'). */
  releaseHanging(): void {
    for (const res of this.hanging) res.destroy();
    this.hanging.clear();
  }

  async close(): Promise<void> {
    this.releaseHanging();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const received: ReceivedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAt: Date.now(),
        remotePort: req.socket.remotePort ?? 0,
      };
      const index = this.requests.push(received) - 1;
      for (const w of this.waiters) w();
      this.waiters.clear();
      this.answeredAt[index] = undefined;
      const reply = this.responder(received, index);
      // Unanswered requests (hanging or waiting out a delay) are dropped by releaseHanging() and close().
      this.hanging.add(res);
      res.on('close', () => {
        // Still in `hanging` when 'close' comes (asynchronously): not dropped by releaseHanging().
        if (this.hanging.delete(res) && this.answeredAt[index] === undefined) {
          this.abandoned.add(index);
        }
      });
      if (reply === 'hang') return;
      const answer = () => {
        if (res.destroyed) return;
        this.answeredAt[index] = Date.now();
        res.writeHead(reply.status, { 'content-type': 'text/plain', ...reply.headers });
        res.end(reply.body ?? '');
      };
      if (reply.held && !this.released) this.held.push(answer);
      // A fixed wait, where a test asks for one: an endpoint whose latency is the scenario (the cluster test's
      // load). To hold an answer while something is observed, a test uses `held` and release() instead.
      else if (reply.delayMs) void sleep(reply.delayMs).then(answer);
      else answer();
    });
  }
}

/** The documented signature: lowercase hex HMAC-SHA256, key = the whole `whsec_...` secret, over `timestamp + '.' + rawBody`. */
export const expectedSignature = (secret: string, timestamp: string, rawBody: string) =>
  crypto.createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${timestamp}.${rawBody}`, 'utf8').digest('hex');

/** The signatures of X-Service-Signature, in order (comma-separated during a secret rotation). */
export const signaturesOf = (req: ReceivedRequest): string[] =>
  String(req.headers['x-service-signature'] ?? '').split(',');
