import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, registerAndLogin, type ApiResponse, type Session } from '../helpers/http.js';

let app: TestApp;
let user: Session;
beforeAll(async () => {
  app = await startTestApp();
  user = await registerAndLogin(app.api);
});
afterAll(() => app.close());

/** The request log line of an answer, found by its request id. */
function requestLine(res: ApiResponse): Record<string, unknown> {
  const id = res.headers.get('x-request-id');
  const line = app.logs
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((l) => l.requestId === id && 'status' in l && 'route' in l);
  if (!line) throw new Error(`no request line for ${id}`);
  return line;
}

describe('the request log line', () => {
  it("names an error answer's route template and error code, never the raw id in the route", async () => {
    const id = crypto.randomUUID();
    const res = await app.api('GET', `/workspaces/${id}`, { token: user.accessToken });
    expectError(res, 404, 'NOT_FOUND');
    expect(requestLine(res)).toMatchObject({
      method: 'GET',
      route: '/workspaces/{workspaceId}',
      status: 404,
      code: 'NOT_FOUND',
    });
  });

  it('names the domain code of a refusal, on REST and on /trpc alike', async () => {
    const rest = await app.api('POST', '/auth/login', { body: { email: user.email, password: 'Wrong-pass-123' } });
    expectError(rest, 401, 'INVALID_CREDENTIALS');
    expect(requestLine(rest)).toMatchObject({ route: '/auth/login', status: 401, code: 'INVALID_CREDENTIALS' });

    const trpc = await app.api('GET', '/trpc/auth.me');
    expect(trpc.status).toBe(401);
    expect(requestLine(trpc)).toMatchObject({ route: '/trpc/auth.me', status: 401, code: 'UNAUTHORIZED' });
  });

  it('has no code for a success, and labels a path that matches no route as unmatched', async () => {
    const ok = await app.api('GET', '/auth/me', { token: user.accessToken });
    expect(ok.status).toBe(200);
    const line = requestLine(ok);
    expect(line).toMatchObject({ route: '/auth/me', status: 200 });
    expect(line).not.toHaveProperty('code');

    const unknown = await app.api('GET', `/no-such-route/${crypto.randomUUID()}`);
    expectError(unknown, 404, 'NOT_FOUND');
    expect(requestLine(unknown)).toMatchObject({ route: '(unmatched)', status: 404, code: 'NOT_FOUND' });
  });
});
