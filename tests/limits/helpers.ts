// Fixtures of the rate-limit tests: an HTTP client that can pick its source address (127.x.y.z, all
// loopback on Linux) and reports how long each answer took, the assertions of a limited and of a counted
// answer, and redis-server processes of our own (never the shared Redis of the suite).
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { expect } from 'vitest';
import { ledger, trackBody } from '../helpers/secret-ledger.js';
import { holdsWithin, waitFor } from '../helpers/wait.js';

export const RATE_LIMIT_MESSAGE = 'Too many requests. Please try again later.';

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
  text: string;
  /** Milliseconds from sending to the end of the answer. */
  ms: number;
}

export interface SendOptions {
  body?: unknown;
  token?: string;
  headers?: Record<string, string>;
  /** Source address of the connection (any 127.x.y.z). */
  from?: string;
  /** Connection to reuse (keep-alive, one socket), e.g. to send several requests on one connection. */
  agent?: http.Agent;
  /** A raw body, sent as is (Content-Type from `headers`). */
  raw?: Buffer;
  /** Sends the path as written (dot segments, backslashes), like `curl --path-as-is`; else as URL resolves it. */
  asIs?: boolean;
}

/** One HTTP request to `baseUrl + path`, through node:http so the source address can be chosen. */
export function send(baseUrl: string, method: string, path: string, opts: SendOptions = {}): Promise<Answer> {
  const url = new URL(path, baseUrl);
  const headers: Record<string, string> = { ...opts.headers };
  let payload: string | Buffer | undefined = opts.raw;
  if (opts.raw) headers['content-length'] = String(opts.raw.length);
  if (opts.body !== undefined) {
    payload = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
    headers['content-length'] = String(Buffer.byteLength(payload));
    trackBody(opts.body);
  }
  if (opts.token !== undefined) {
    headers.authorization = `Bearer ${opts.token}`;
    ledger.sent(opts.token, 'a bearer token');
  }
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: opts.asIs ? path : url.pathname + url.search,
        method,
        headers,
        localAddress: opts.from,
        agent: opts.agent ?? false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          ledger.observe(`${method} ${url.pathname}`, text);
          let body: unknown = text;
          try {
            body = text ? JSON.parse(text) : undefined;
          } catch {
            /* not JSON */
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, text, ms: performance.now() - started });
        });
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${path}: no answer within 10 s`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** A client bound to one app (and optionally one source address). */
export type Client = (method: string, path: string, opts?: SendOptions) => Promise<Answer>;
export const clientOf =
  (baseUrl: string, defaults: SendOptions = {}): Client =>
  (method, path, opts = {}) =>
    send(baseUrl, method, path, { ...defaults, ...opts, headers: { ...defaults.headers, ...opts.headers } });

/** A multipart/form-data body of one file in `field`. */
export function multipart(
  field: string,
  filename: string,
  type: string,
  data: Buffer,
): Pick<SendOptions, 'headers' | 'raw'> {
  const boundary = `----rl${Math.random().toString(16).slice(2)}`;
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\nContent-Type: ${type}\r\n\r\n`;
  return {
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    raw: Buffer.concat([Buffer.from(head), data, Buffer.from(`\r\n--${boundary}--\r\n`)]),
  };
}

let addressSeq = 0;
/** A loopback address no other test of this file uses: a client with a count of its own. */
export function freshLoopback(): string {
  addressSeq++;
  return `127.0.${Math.floor(addressSeq / 250) + 10}.${(addressSeq % 250) + 2}`;
}

let publicSeq = 0;
/** A public-looking client address for X-Forwarded-For, unique in this file. */
export function freshPublicAddress(): string {
  publicSeq++;
  return `198.51.${Math.floor(publicSeq / 250)}.${(publicSeq % 250) + 1}`;
}

const header = (res: Answer, name: string) => {
  const v = res.headers[name.toLowerCase()];
  return Array.isArray(v) ? v.join(', ') : v;
};

/** Parses `RateLimit: limit=L, remaining=R, reset=S`. */
export function rateLimitHeader(res: Answer) {
  const v = header(res, 'RateLimit');
  const m = v?.match(/^limit=(\d+), remaining=(\d+), reset=(\d+)$/);
  if (!m) throw new Error(`no well-formed RateLimit header on ${res.status} ${res.text.slice(0, 200)}: ${v}`);
  return { limit: Number(m[1]), remaining: Number(m[2]), reset: Number(m[3]) };
}

/** A request that went through the limiter and was counted: not 429, with the policy and what is left. */
export function expectCounted(res: Answer, limit: number, windowSeconds: number, remaining: number) {
  const ctx = `${res.status} ${res.text.slice(0, 300)}`;
  expect(res.status, ctx).not.toBe(429);
  expect(res.status, ctx).toBeLessThan(500);
  expect(header(res, 'RateLimit-Policy'), ctx).toBe(`${limit};w=${windowSeconds}`);
  const rl = rateLimitHeader(res);
  expect(rl.limit).toBe(limit);
  expect(rl.remaining, `remaining after this request (${ctx})`).toBe(remaining);
  expect(rl.reset).toBeGreaterThanOrEqual(1);
  expect(rl.reset).toBeLessThanOrEqual(windowSeconds);
  expect(header(res, 'Retry-After')).toBeUndefined();
}

/** The 429 of the rate limiter on a REST route: body, Retry-After and RateLimit headers. Answers Retry-After. */
export function expectRateLimited(res: Answer, limit: number, windowSeconds: number): number {
  const ctx = `${res.status} ${res.text.slice(0, 300)}`;
  expect(res.status, ctx).toBe(429);
  expect(res.headers['content-type'], ctx).toMatch(/^application\/json/);
  expect(res.body, ctx).toEqual({
    code: 'RATE_LIMITED',
    message: RATE_LIMIT_MESSAGE,
    requestId: header(res, 'X-Request-Id'),
  });
  const retryAfter = header(res, 'Retry-After');
  expect(retryAfter, `Retry-After (${ctx})`).toMatch(/^\d+$/);
  const seconds = Number(retryAfter);
  expect(seconds).toBeGreaterThanOrEqual(1);
  expect(seconds).toBeLessThanOrEqual(windowSeconds);
  expect(header(res, 'RateLimit-Policy')).toBe(`${limit};w=${windowSeconds}`);
  expect(rateLimitHeader(res)).toEqual({ limit, remaining: 0, reset: seconds });
  return seconds;
}

/** A request the limiter left alone: not 429, and no rate-limit headers at all. */
export function expectNotLimited(res: Answer) {
  const ctx = `${res.status} ${res.text.slice(0, 300)}`;
  expect(res.status, ctx).not.toBe(429);
  expect(res.status, ctx).toBeLessThan(500);
  expect(header(res, 'RateLimit'), ctx).toBeUndefined();
  expect(header(res, 'RateLimit-Policy'), ctx).toBeUndefined();
  expect(header(res, 'Retry-After'), ctx).toBeUndefined();
}

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

/** Sends PING over a fresh connection; true when the server answers PONG within `ms`. */
function pings(port: number, ms = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(ms, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => done(d.toString().startsWith('+PONG')));
  });
}

/** A redis-server child process of this test file, on a free port, without persistence. */
export class RedisServer {
  private static readonly all = new Set<RedisServer>();
  private exited = false;
  private constructor(
    readonly port: number,
    private readonly child: ChildProcess,
  ) {
    child.once('exit', () => {
      this.exited = true;
    });
  }

  static async start(): Promise<RedisServer> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const port = await freePort();
      const child = spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        { stdio: 'ignore' },
      );
      const server = new RedisServer(port, child);
      RedisServer.all.add(server);
      const up = await holdsWithin(async () => server.exited || (await pings(port)), 10_000, 50);
      if (up && !server.exited) return server;
      server.kill(); // lost the port to someone else, or never came up
    }
    throw new Error('could not start a redis-server of our own');
  }

  get url() {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid() {
    return this.child.pid!;
  }

  /** Freezes the server (SIGSTOP): connections stay open, nothing is answered. */
  freeze() {
    if (!this.exited) process.kill(this.pid, 'SIGSTOP');
  }

  /** Kills the server at once (SIGKILL works on a frozen process too) and waits for its exit. */
  async stop() {
    this.kill();
    await waitFor(() => this.exited, { timeout: 2_000, message: `redis-server ${this.pid} to exit` });
  }

  private kill() {
    RedisServer.all.delete(this);
    if (!this.exited) this.child.kill('SIGKILL');
  }

  /** Kills every server this file started (afterAll, and the exit hook below). */
  static async stopAll() {
    await Promise.all([...RedisServer.all].map((s) => s.stop()));
  }

  static killAllNow() {
    for (const s of RedisServer.all) s.kill();
  }
}

// If the test process ends without afterAll (a crash), no redis-server of ours outlives it.
process.once('exit', () => RedisServer.killAllNow());
