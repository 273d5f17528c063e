// Bodies that would hold a connection: one declared larger than its route takes is refused from its
// headers, before a byte of it is sent, and the connection closed; requests that stall (headers or body
// never finished) are answered 408 within HTTP_HEADERS_TIMEOUT_MS / HTTP_REQUEST_TIMEOUT_MS. Spoken over
// raw sockets, so the test controls exactly what is sent and when.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TRPC_ERROR_CODES_BY_KEY } from '@trpc/server/rpc';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { registerAndLogin, type Session } from '../helpers/http.js';
import { ledger } from '../helpers/secret-ledger.js';
import { sleep } from '../helpers/wait.js';

const MiB = 1024 * 1024;

interface Exchange {
  /** The status of the answer, 0 when none came. */
  status: number;
  headers: Record<string, string>;
  body: any;
  /** Milliseconds from the first byte sent to the first byte of the answer (undefined: no answer). */
  answeredAfterMs?: number;
  /** Milliseconds from the first byte sent until the server closed the connection (undefined: it did not). */
  closedAfterMs?: number;
  /** What came after the answer (its body read by Content-Length): the answers to later requests. */
  more: string;
}

/**
 * Opens a socket to `url`, writes `parts` (strings or pauses in milliseconds), then waits at most `waitMs`
 * for the server to answer and close, or for `answers` answers (status lines) when given. What was sent is
 * only `parts`: no body byte is sent unless given.
 */
function exchange(
  url: string,
  parts: Array<string | Buffer | number>,
  waitMs: number,
  opts: { answers?: number } = {},
): Promise<Exchange> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    let started = 0;
    let answeredAfterMs: number | undefined;
    let closedAfterMs: number | undefined;
    const chunks: Buffer[] = [];
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString();
      ledger.observe('a raw HTTP answer', text);
      const [head = '', ...rest] = text.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(
        lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
      );
      const after = rest.join('\r\n\r\n');
      const length = headers['content-length'] === undefined ? after.length : Number(headers['content-length']);
      let body: unknown = after.slice(0, length);
      const more = after.slice(length);
      try {
        body = JSON.parse(body as string);
      } catch {
        /* not JSON */
      }
      resolve({ status: Number(statusLine.split(' ')[1] ?? 0), headers, body, answeredAfterMs, closedAfterMs, more });
    };
    const timer = setTimeout(finish, waitMs);
    socket.on('data', (chunk: Buffer) => {
      answeredAfterMs ??= performance.now() - started;
      chunks.push(chunk);
      const statusLines =
        Buffer.concat(chunks)
          .toString()
          .match(/HTTP\/1\.1 \d{3} /g) ?? [];
      if (opts.answers && statusLines.length >= opts.answers) finish();
    });
    socket.on('end', () => {
      closedAfterMs = performance.now() - started;
      finish();
    });
    socket.on('close', () => {
      closedAfterMs ??= performance.now() - started;
      finish();
    });
    socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' ? undefined : reject(err)));
    socket.on('connect', async () => {
      started = performance.now();
      for (const part of parts) {
        // A pause the test asks for: the client's pace is what is tested (a body trickled past the request
        // timeout, which Node's HTTP server enforces with its own timers, out of reach of fake timers).
        if (typeof part === 'number') await sleep(part);
        else if (!socket.destroyed) socket.write(part);
      }
    });
  });
}

const head = (method: string, path: string, headers: Record<string, string | number>) => {
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `${method} ${path} HTTP/1.1\r\nHost: localhost\r\n${lines.join('')}\r\n`;
};

const json = { 'Content-Type': 'application/json' };
const FIFTY_MB = 50 * 1024 * 1024;
const TEN_GB = 10 * 1024 * 1024 * 1024;

/** The REST error body, with the request id of the answer. */
function expectErrorAnswer(answer: Exchange, status: number, code: string) {
  expect(answer.status, JSON.stringify(answer)).toBe(status);
  expect(answer.body).toMatchObject({ code, message: expect.any(String), requestId: answer.headers['x-request-id'] });
}

describe('a body declared larger than its route takes', () => {
  let app: TestApp;
  let user: Session;
  beforeAll(async () => {
    app = await startTestApp({
      BILLING_PROVIDER: 'MOCK',
      PROCESSOR_A_WEBHOOK_SECRET: 'whsec_declared_0123456789abcdef',
      PROCESSOR_B_WEBHOOK_SECRET: 'lemon_declared_0123456789abcdef',
    });
    user = await registerAndLogin(app.api, { prefix: 'declared' });
    ledger.sent(user.accessToken, 'a bearer token');
  });
  afterAll(() => app?.close());

  /** Sends only the headers (no body byte), and expects the answer and the close within 1 s. */
  async function refusedAtOnce(method: string, path: string, headers: Record<string, string | number>) {
    const answer = await exchange(app.url, [head(method, path, headers)], 5000);
    expect(answer.answeredAfterMs, 'answered without the body').toBeLessThan(1000);
    expect(answer.closedAfterMs, 'connection closed by the server').toBeLessThan(1000);
    expect(answer.headers.connection).toBe('close');
    return answer;
  }

  // Before: 50 MB were read before the 413; for 10 GB and nothing sent, the answer was a 400 after 328 s.
  it.each([FIFTY_MB, TEN_GB])('POST /auth/login declared %d bytes: 413 at once, no body sent', async (length) => {
    const answer = await refusedAtOnce('POST', '/auth/login', { ...json, 'Content-Length': length });
    expectErrorAnswer(answer, 413, 'PAYLOAD_TOO_LARGE');
    expect(answer.body.message).toMatch(/1 MiB/);
  });

  it("/trpc declared 10 GB: 413 at once, in tRPC's envelope", async () => {
    const answer = await refusedAtOnce('POST', '/trpc/auth.login', { ...json, 'Content-Length': TEN_GB });
    expect(answer.status).toBe(413);
    expect(answer.body.error).toMatchObject({
      code: TRPC_ERROR_CODES_BY_KEY.PAYLOAD_TOO_LARGE,
      data: { code: 'PAYLOAD_TOO_LARGE', httpStatus: 413, requestId: answer.headers['x-request-id'] },
    });
  });

  it('a DELETE, and a route that does not exist: 413 at once too', async () => {
    const tenGb = { ...json, 'Content-Length': TEN_GB };
    expectErrorAnswer(await refusedAtOnce('POST', '/no-such-route', tenGb), 413, 'PAYLOAD_TOO_LARGE');
    const plan = '/admin/billing/plans/00000000-0000-4000-8000-000000000000';
    expectErrorAnswer(await refusedAtOnce('DELETE', plan, tenGb), 413, 'PAYLOAD_TOO_LARGE');
  });

  it('a GET, whose body is never read: answered as without it, and the connection closed at once', async () => {
    const health = await refusedAtOnce('GET', '/health', { ...json, 'Content-Length': TEN_GB });
    expect(health.status).toBe(200);
    const signedIn = { ...json, Authorization: `Bearer ${user.accessToken}` };
    const me = await refusedAtOnce('GET', '/auth/me', { ...signedIn, 'Content-Length': FIFTY_MB });
    expect(me.status).toBe(200);
    expect(me.body.user.id).toBe(user.userId);
  });

  it('the provider webhooks (1 MiB) declared 50 MB: 413 at once', async () => {
    for (const path of ['/billing/webhooks/processor-a', '/billing/webhooks/processor-b', '/billing/webhooks/mock']) {
      const answer = await refusedAtOnce('POST', path, { ...json, 'Content-Length': FIFTY_MB });
      expectErrorAnswer(answer, 413, 'PAYLOAD_TOO_LARGE');
    }
  });

  it.each([
    ['/storage/upload', 10],
    ['/profile/avatar', 2],
    ['<logo>', 1],
  ] as const)('the upload %s (a %d MiB file) declared past its limit and form: 413 at once', async (route, mib) => {
    const path = route === '<logo>' ? `/workspaces/${user.workspaceId}/branding/logo` : route;
    const headers = { 'Content-Type': 'multipart/form-data; boundary=x', Authorization: `Bearer ${user.accessToken}` };
    for (const length of [mib * MiB + 65 * 1024, TEN_GB]) {
      const answer = await refusedAtOnce('POST', path, { ...headers, 'Content-Length': length });
      expectErrorAnswer(answer, 413, 'PAYLOAD_TOO_LARGE');
      expect(answer.body.message).toContain(`${mib} MiB`);
    }
  });

  it('an upload refused before its body is read (no token) closes the connection, not reading 10 GB', async () => {
    const multipart = { 'Content-Type': 'multipart/form-data; boundary=x' };
    const answer = await refusedAtOnce('POST', '/profile/avatar', { ...multipart, 'Content-Length': TEN_GB });
    expectErrorAnswer(answer, 401, 'UNAUTHORIZED');
  });

  it('a body at the limit is read, and the connection kept', async () => {
    const body = JSON.stringify({ email: 'nobody@tests.local', password: 'x'.repeat(1000) }).padEnd(MiB, ' ');
    const request = head('POST', '/auth/login', { ...json, 'Content-Length': MiB });
    // A later request on the same connection: answered only if the connection was kept.
    const later = head('GET', '/health', {});
    const answer = await exchange(app.url, [request, body, later], 5000, { answers: 2 });
    expectErrorAnswer(answer, 401, 'INVALID_CREDENTIALS');
    expect(answer.headers.connection).toBe('keep-alive');
    // HTTP_KEEP_ALIVE_TIMEOUT_MS, default 65 s: longer than a load balancer's usual 60 s idle timeout.
    expect(answer.headers['keep-alive']).toBe('timeout=65');
    expect(answer.more).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer.closedAfterMs).toBeUndefined();
  });
});

describe('a client still sending its body when the answer comes (fetch)', () => {
  let app: TestApp;
  let user: Session;
  beforeAll(async () => {
    app = await startTestApp();
    user = await registerAndLogin(app.api, { prefix: 'lingering' });
    ledger.sent(user.accessToken, 'a bearer token');
  });
  afterAll(() => app?.close());

  const upload = (path: string, field: string, bytes: number, token?: string) => {
    const form = new FormData();
    form.append(field, new Blob([new Uint8Array(bytes)], { type: 'image/png' }), 'big.png');
    return fetch(app.url + path, {
      method: 'POST',
      body: form,
      headers: token ? { Authorization: `Bearer ${token}` } : {},
    });
  };

  it('fetch reads the answer: a 3 MiB avatar (limit 2 MiB) is 413, an upload without a token 401', async () => {
    const res = await upload('/profile/avatar', 'avatar', 3 * MiB, user.accessToken);
    expect(res.status).toBe(413);
    expect(res.headers.get('connection')).toBe('close');
    expect(await res.json()).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    const anonymous = await upload('/storage/upload', 'file', MiB);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ code: 'UNAUTHORIZED' });
  });

  // Before: the connection was cut right after the answer, so a client still writing its body got a reset
  // (EPIPE or ECONNRESET; fetch then fails without showing the answer).
  it('keeps the connection open while the rest of the body comes, then closes it', async () => {
    // allowHalfOpen: the client does not close its side when the server ends its own, so it sees a reset.
    const socket = net.connect({ port: Number(new URL(app.url).port), host: '127.0.0.1', allowHalfOpen: true });
    const errors: string[] = [];
    socket.on('error', (err: NodeJS.ErrnoException) => errors.push(err.code ?? err.message));
    let answer = '';
    let serverEnded = false;
    const answered = new Promise<void>((resolve) =>
      socket.on('data', (chunk) => ((answer += chunk.toString()), resolve())),
    );
    const ended = new Promise<void>((resolve) => socket.on('end', () => ((serverEnded = true), resolve())));
    await new Promise<void>((resolve) => socket.on('connect', () => resolve()));
    socket.write(
      head('POST', '/storage/upload', { 'Content-Type': 'multipart/form-data; boundary=x', 'Content-Length': MiB }),
    );
    await answered;
    expect(answer).toMatch(/^HTTP\/1.1 401 /);
    const endedWhileSending: boolean[] = [];
    for (let i = 0; i < 4; i++) {
      // The client's pace is the scenario: still sending 100 ms, 200 ms... after the answer came. A server
      // that cuts the connection does it soon after answering; each pause gives that time to show before
      // the next write (nothing the server does here can be awaited instead).
      await sleep(100);
      endedWhileSending.push(serverEnded);
      await new Promise<void>((resolve) => socket.write(Buffer.alloc(MiB / 4), () => resolve()));
    }
    await ended;
    socket.destroy();
    expect(endedWhileSending).toEqual([false, false, false, false]);
    expect(errors).toEqual([]);
  });

  it('the server stops reading after 16 MiB, and the answer still arrives first', async () => {
    const answer = await exchange(
      app.url,
      [head('POST', '/auth/login', { ...json, 'Content-Length': FIFTY_MB }), 'x'.repeat(20 * MiB)],
      5000,
    );
    expectErrorAnswer(answer, 413, 'PAYLOAD_TOO_LARGE');
    expect(answer.closedAfterMs).toBeLessThan(5000);
  });
});

describe('stalled requests', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ HTTP_HEADERS_TIMEOUT_MS: '1000', HTTP_REQUEST_TIMEOUT_MS: '2000' });
  });
  afterAll(() => app?.close());

  it('headers sent halfway, then nothing: 408 after about HTTP_HEADERS_TIMEOUT_MS (1 s), and closed', async () => {
    const answer = await exchange(app.url, ['POST /auth/login HTTP/1.1\r\nHost: localhost\r\nContent-Ty'], 6000);
    expectErrorAnswer(answer, 408, 'REQUEST_TIMEOUT');
    expect(answer.answeredAfterMs).toBeGreaterThanOrEqual(900);
    expect(answer.answeredAfterMs).toBeLessThan(2000);
    expect(answer.closedAfterMs).toBeLessThan(2500);
  });

  it('a connection that sends nothing at all is answered 408 and closed within the same bound', async () => {
    const answer = await exchange(app.url, [], 6000);
    expectErrorAnswer(answer, 408, 'REQUEST_TIMEOUT');
    expect(answer.closedAfterMs).toBeGreaterThanOrEqual(900);
    expect(answer.closedAfterMs).toBeLessThan(2500);
  });

  it('headers and half the body, then nothing: 408 after about HTTP_REQUEST_TIMEOUT_MS (2 s), and closed', async () => {
    const body = JSON.stringify({ email: 'slow@tests.local', password: 'Slow-pass-123' });
    const request = head('POST', '/auth/login', { ...json, 'Content-Length': body.length });
    const answer = await exchange(app.url, [request, body.slice(0, 20)], 8000);
    expectErrorAnswer(answer, 408, 'REQUEST_TIMEOUT');
    expect(answer.body.message).toMatch(/2 s/);
    expect(answer.answeredAfterMs).toBeGreaterThanOrEqual(1900);
    expect(answer.answeredAfterMs).toBeLessThan(3500);
    expect(answer.closedAfterMs).toBeLessThan(4000);
  });

  it('a body trickled a byte at a time past HTTP_REQUEST_TIMEOUT_MS is cut off the same way', async () => {
    const body = JSON.stringify({ email: 'trickle@tests.local', password: 'Trickle-pass-123' });
    const trickle = [...body].flatMap((c) => [c, 100]);
    const request = head('POST', '/auth/login', { ...json, 'Content-Length': body.length });
    const answer = await exchange(app.url, [request, ...trickle], 8000);
    expectErrorAnswer(answer, 408, 'REQUEST_TIMEOUT');
    expect(answer.answeredAfterMs).toBeLessThan(3500);
  });

  it('keeps serving, and a request that arrives in time is answered normally', async () => {
    const credentials = { email: 'ontime@tests.local', password: 'Ontime-pass-123' };
    const res = await app.api('POST', '/auth/login', { body: credentials });
    expect(res.status).toBe(401);
    expect((await app.api('GET', '/health')).status).toBe(200);
  });
});
