import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/http.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ CORS_ORIGINS: 'https://app.example.com' });
});
afterAll(() => app.close());

/** Sends raw bytes and returns the raw HTTP answer (for requests fetch refuses to make). */
function rawRequest(url: string, payload: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(payload));
    let data = '';
    socket.on('data', (c) => (data += c.toString()));
    socket.on('end', () => resolve(data));
    socket.on('error', reject);
  });
}

describe('GET /health', () => {
  it('answers status, version, uptime and database reachability without authentication', async () => {
    const res = await app.api('GET', '/health');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'ok', version: '1.2.0', database: { reachable: true } });
    expect(typeof res.body.uptimeSeconds).toBe('number');
  });
});

describe('X-Request-Id', () => {
  it('is on every answer: success, 401, 404, 400', async () => {
    for (const res of [
      await app.api('GET', '/health'),
      await app.api('GET', '/auth/me'),
      await app.api('GET', '/no-such-route'),
      await app.api('POST', '/auth/login', { raw: '{', headers: { 'content-type': 'application/json' } }),
    ]) {
      expect(res.headers.get('x-request-id')).toMatch(/^[\w.:-]{1,128}$/);
    }
  });

  it('echoes a safe client value and replaces an unsafe one', async () => {
    const safe = await app.api('GET', '/health', { headers: { 'x-request-id': 'trace-abc.123:x' } });
    expect(safe.headers.get('x-request-id')).toBe('trace-abc.123:x');
    const unsafe = await app.api('GET', '/health', { headers: { 'x-request-id': '<script>alert(1)</script>' } });
    expect(unsafe.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const tooLong = await app.api('GET', '/health', { headers: { 'x-request-id': 'a'.repeat(200) } });
    expect(tooLong.headers.get('x-request-id')).toHaveLength(36);
  });

  it('equals the requestId of an error body', async () => {
    const res = await app.api('GET', '/nope', { headers: { 'x-request-id': 'req-42' } });
    expect(expectError(res, 404, 'NOT_FOUND').requestId).toBe('req-42');
  });
});

describe('errors of the HTTP layer', () => {
  it('answers unknown routes 404 NOT_FOUND in the error shape, whatever the method', async () => {
    for (const [method, path] of [
      ['GET', '/nope'],
      ['POST', '/auth/nope'],
      ['DELETE', '/auth/login'],
      ['PUT', '/auth/login'],
    ]) {
      expectError(await app.api(method, path, method === 'POST' ? { body: {} } : {}), 404, 'NOT_FOUND');
    }
  });

  it('answers malformed JSON 400 BAD_REQUEST, on REST and on /trpc (there in the tRPC envelope, as a parse error)', async () => {
    const headers = { 'content-type': 'application/json' };
    expectError(
      await app.api('POST', '/auth/login', { raw: '{"email": "a@b.c", "password": ', headers }),
      400,
      'BAD_REQUEST',
    );
    const trpc = await app.api('POST', '/trpc/auth.login', { raw: '{"email"', headers });
    expect(trpc.status).toBe(400);
    expect(trpc.body.error).toMatchObject({
      code: -32700,
      data: { code: 'BAD_REQUEST', httpStatus: 400, requestId: trpc.headers.get('x-request-id') },
    });
  });

  it('answers a JSON body over 1 MiB 413 PAYLOAD_TOO_LARGE and one just under it normally', async () => {
    const big = JSON.stringify({ email: 'a@tests.local', password: 'x'.repeat(1024 * 1024) });
    expectError(
      await app.api('POST', '/auth/login', { raw: big, headers: { 'content-type': 'application/json' } }),
      413,
      'PAYLOAD_TOO_LARGE',
    );
    // The password has a bound of its own (1,024 characters): the bulk is a field the route ignores.
    const justUnder = JSON.stringify({
      email: 'a@tests.local',
      password: 'Wrong-pass-999',
      padding: 'x'.repeat(1024 * 1024 - 100),
    });
    expectError(
      await app.api('POST', '/auth/login', { raw: justUnder, headers: { 'content-type': 'application/json' } }),
      401,
      'INVALID_CREDENTIALS',
    );
  });

  it('answers a non-JSON body 415 UNSUPPORTED_MEDIA_TYPE', async () => {
    const res = await app.api('POST', '/auth/login', { raw: 'email=a@b.c', headers: { 'content-type': 'text/plain' } });
    expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('treats a body-less POST as an empty JSON object (400 with issues, not 415)', async () => {
    const err = expectError(await app.api('POST', '/auth/login'), 400, 'BAD_REQUEST');
    expect(err.issues?.map((i) => i.path).sort()).toEqual(['email', 'password']);
  });

  it('answers headers over 16 KiB with 431 in the error shape', async () => {
    const answer = await rawRequest(
      app.url,
      `GET /auth/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${'a'.repeat(1024 * 1024)}\r\n\r\n`,
    );
    const [head, body] = answer.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 431 /);
    expect(head).toMatch(/X-Request-Id: [0-9a-f-]{36}/i);
    expect(JSON.parse(body)).toMatchObject({
      code: 'REQUEST_HEADER_FIELDS_TOO_LARGE',
      message: expect.any(String),
      requestId: expect.any(String),
    });
  });

  it.each(['*', 'auth/login'])(
    'answers the request target %s 400 in the error shape, and keeps serving (it used to end the process)',
    async (target) => {
      const answer = await rawRequest(app.url, `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      const [head, body] = answer.split('\r\n\r\n');
      expect(head).toMatch(/^HTTP\/1\.1 400 /);
      expect(JSON.parse(body)).toMatchObject({ code: 'BAD_REQUEST', requestId: expect.any(String) });
      expect((await fetch(`${app.url}/health`)).status).toBe(200);
    },
  );

  it('never puts a stack trace or a file path in an error body', async () => {
    const res = await app.api('POST', '/auth/register', { body: { email: 5, password: [], name: {} } });
    expectError(res, 400, 'BAD_REQUEST');
    expect(res.text).not.toMatch(/node_modules|\.ts:\d+|\n\s+at /);
  });
});

describe('headers', () => {
  it('sets the security headers of helmet and hides the framework', async () => {
    const res = await app.api('GET', '/health');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('strict-transport-security')).toMatch(/max-age=/);
    expect(res.headers.get('content-security-policy')).toMatch(/default-src 'self'/);
    expect(res.headers.get('x-powered-by')).toBeNull();
  });

  it('allows CORS for the configured origins only', async () => {
    const allowed = await app.api('OPTIONS', '/auth/login', {
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' },
    });
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    const other = await app.api('GET', '/health', { headers: { origin: 'https://evil.example.com' } });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('GET /docs', () => {
  it('serves the docs UI from the installed package, with no CDN', async () => {
    const res = await app.api('GET', '/docs/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/html/);
    expect(res.text).not.toMatch(/https?:\/\/(cdn|unpkg|cdnjs|jsdelivr)/);
    const asset = await app.api('GET', '/docs/swagger-ui-bundle.js');
    expect(asset.status).toBe(200);
  });
});
