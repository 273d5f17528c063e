// Postgres going away under a running API (behind a TCP proxy the test cuts): requests are answered 503
// SERVICE_UNAVAILABLE with Retry-After, an outage the client may wait out, on REST, /trpc and the plain
// Express routes, never a 500; /health says degraded. When Postgres is back, the same requests succeed
// without a restart.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startAppBehindDatabaseProxy, type TestApp } from '../helpers/app.js';
import { apiClient, registerAndLogin, type ApiResponse, type Session } from '../helpers/http.js';
import { listeningPort, startEntry, type Entry } from '../helpers/entry.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait.js';

let proxy: TcpProxy;
let app: TestApp;
let close: (() => Promise<void>) | undefined;
let s: Session;

beforeAll(async () => {
  ({ app, proxy, close } = await startAppBehindDatabaseProxy());
  s = await registerAndLogin(app.api, { prefix: 'outage' });
});
afterAll(() => close?.());

const MESSAGE = 'The service is temporarily unavailable. Please try again in a moment.';

function expectUnavailable(res: ApiResponse) {
  expect(res.status, res.text).toBe(503);
  expect(res.headers.get('retry-after')).toBe('5');
  const requestId = res.headers.get('x-request-id');
  if (res.body?.error)
    expect(res.body.error).toMatchObject({
      message: MESSAGE,
      data: { code: 'SERVICE_UNAVAILABLE', httpStatus: 503, requestId },
    });
  else expect(res.body).toEqual({ code: 'SERVICE_UNAVAILABLE', message: MESSAGE, requestId });
  // Nothing of the failure itself (no address, no driver message, no stack).
  expect(res.text).not.toMatch(/ECONNREFUSED|terminated|127\.0\.0\.1|at .*\.js/);
}

describe('Postgres away under a running API', () => {
  it('answers 503 SERVICE_UNAVAILABLE with Retry-After on REST, /trpc and the plain routes, and /health says degraded', async () => {
    const workspacesBefore = (await app.api('GET', '/workspaces', { token: s.accessToken })).body;
    await proxy.cut();
    try {
      expectUnavailable(await app.api('GET', '/auth/me', { token: s.accessToken }));
      expectUnavailable(await app.api('GET', '/workspaces', { token: s.accessToken }));
      expectUnavailable(
        await app.api('POST', '/workspaces', { token: s.accessToken, body: { name: 'Made during the outage' } }),
      );
      expectUnavailable(await app.api('POST', '/auth/login', { body: { email: s.email, password: s.password } }));
      expectUnavailable(await app.api('GET', '/trpc/auth.me', { token: s.accessToken }));
      expectUnavailable(await app.api('GET', `/users/${s.userId}/avatar`, { token: s.accessToken }));
      const health = await app.api('GET', '/health');
      expect(health.status).toBe(503);
      expect(health.body).toMatchObject({ status: 'degraded', database: { reachable: false } });
      // The operators see it: each failure is logged as an error.
      expect(app.logs.some((l) => JSON.parse(l).level >= 50 && l.includes('ECONNREFUSED'))).toBe(true);
    } finally {
      await proxy.restore();
    }
    // Back: the same requests succeed with the same session, and the outage wrote nothing.
    const me = await waitFor200(() => app.api('GET', '/auth/me', { token: s.accessToken }));
    expect(me.body.user).toMatchObject({ id: s.userId });
    expect((await app.api('GET', '/workspaces', { token: s.accessToken })).body).toEqual(workspacesBefore);
    expect((await app.api('GET', '/trpc/auth.me', { token: s.accessToken })).status).toBe(200);
    expect((await app.api('GET', '/health')).status).toBe(200);
  });
});

describe('Postgres lost while a request holds a connection (the real entry point, as `npm start` runs it)', () => {
  let entry: Entry | undefined;
  let held: TcpProxy | undefined;
  afterAll(async () => {
    entry?.child.kill('SIGKILL');
    await held?.close();
  });

  it('answers that request 503 and keeps running (an error of a checked-out client used to be uncaught: the process died)', async () => {
    held = await TcpProxy.start(new URL(inject('databaseUrl')));
    entry = startEntry({
      NODE_ENV: 'test',
      DATABASE_URL: held.url,
      HOST: '127.0.0.1',
      PORT: '0',
      BCRYPT_COST: '4',
      JWT_ACCESS_SECRET: 'outage-test-access-secret-0123456789abcdef',
      JWT_REFRESH_SECRET: 'outage-test-refresh-secret-0123456789abcdef',
    });
    const api = apiClient(`http://127.0.0.1:${await listeningPort(entry)}`);
    const session = await registerAndLogin(api, { prefix: 'outage-entry' });

    // Postgres stops answering: the request's statement waits on a checked-out connection (in the proxy).
    held.hold();
    const inFlight = api('GET', '/workspaces', { token: session.accessToken });
    await waitFor(() => held!.heldBytes > 0, { message: 'a statement held on its way to Postgres' });
    // Then the connection is lost.
    await held.cut();
    expectUnavailable(await inFlight);
    // A later request is answered (503: Postgres is still away): the lost connection's error, raised when
    // it was cut, did not end the process.
    expectUnavailable(await api('GET', '/workspaces', { token: session.accessToken }));
    expect(entry.child.exitCode, entry.output().slice(-1_000)).toBeNull();
    expect(entry.output()).not.toMatch(/Connection terminated unexpectedly\n\s+at /);

    await held.restore();
    const back = await waitFor200(() => api('GET', '/workspaces', { token: session.accessToken }));
    expect(back.body.items).toEqual(expect.any(Array));
  }, 60_000);
});

/** The answer of `request` once it is 200 (tried every 100 ms for at most 10 s). */
const waitFor200 = (request: () => Promise<ApiResponse>) =>
  waitFor(
    async () => {
      const res = await request();
      expect(res.status, res.text).toBe(200);
      return res;
    },
    { interval: 100, message: 'a 200' },
  );
