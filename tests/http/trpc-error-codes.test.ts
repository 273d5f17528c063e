// The JSON-RPC `error.code` of a /trpc error answer follows its HTTP status, with tRPC's numbers: for
// errors of procedures (the errorFormatter) and for what is refused before tRPC has the request (the
// error handler). -32603 (internal) is for a real 5xx only.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { STRONG_PASSWORD, registerAndLogin, uniqueEmail, type ApiResponse, type Session } from '../helpers/http.js';
import { AppError, trpcErrorNumber } from '../../server/platform/errors.js';
import { errorHandler, requestId } from '../../server/platform/http.js';

/** tRPC's JSON-RPC numbers (TRPC_ERROR_CODES_BY_KEY), written out so the test does not share the server's table. */
const JSON_RPC = {
  PARSE_ERROR: -32700,
  BAD_REQUEST: -32600,
  INTERNAL: -32603,
  UNAUTHORIZED: -32001,
  FORBIDDEN: -32003,
  NOT_FOUND: -32004,
  CONFLICT: -32009,
  PAYLOAD_TOO_LARGE: -32013,
  UNSUPPORTED_MEDIA_TYPE: -32015,
  TOO_MANY_REQUESTS: -32029,
} as const;

let app: TestApp;
let s: Session;
beforeAll(async () => {
  app = await startTestApp();
  s = await registerAndLogin(app.api, { prefix: 'jsonrpc' });
});
afterAll(() => app.close());

function expectEnvelope(res: ApiResponse, status: number, code: string, jsonRpc: number) {
  const ctx = `${res.status} ${res.text.slice(0, 300)}`;
  expect(res.status, ctx).toBe(status);
  expect(res.body.error.data.code, ctx).toBe(code);
  expect(res.body.error.data.httpStatus, ctx).toBe(status);
  expect(res.body.error.code, ctx).toBe(jsonRpc);
}

describe('/trpc error.code of procedure errors', () => {
  it('a wrong password (401 INVALID_CREDENTIALS) is -32001, not -32603', async () => {
    const res = await app.api('POST', '/trpc/auth.login', { body: { email: s.email, password: 'Wrong-pass-999' } });
    expectEnvelope(res, 401, 'INVALID_CREDENTIALS', JSON_RPC.UNAUTHORIZED);
  });

  it('a call without a token (401 UNAUTHORIZED) is -32001', async () => {
    expectEnvelope(await app.api('GET', '/trpc/auth.me'), 401, 'UNAUTHORIZED', JSON_RPC.UNAUTHORIZED);
  });

  it('an e-mail already registered (409 EMAIL_TAKEN) is -32009', async () => {
    const res = await app.api('POST', '/trpc/auth.register', {
      body: { email: s.email, password: STRONG_PASSWORD, name: 'Again' },
    });
    expectEnvelope(res, 409, 'EMAIL_TAKEN', JSON_RPC.CONFLICT);
  });

  it('an admin route for a user (FORBIDDEN) and a right a MEMBER lacks (PERMISSION_DENIED) are -32003', async () => {
    expectEnvelope(
      await app.api('GET', '/trpc/adminUsers.list', { token: s.accessToken }),
      403,
      'FORBIDDEN',
      JSON_RPC.FORBIDDEN,
    );
    const member = await registerAndLogin(app.api, { prefix: 'jsonrpc-member' });
    await app.deps.db
      .insertInto('workspace_members')
      .values({ workspace_id: s.workspaceId, user_id: member.userId, role: 'MEMBER' })
      .execute();
    const res = await app.api('POST', '/trpc/workspaces.update', {
      token: member.accessToken,
      body: { workspaceId: s.workspaceId, name: 'Renamed' },
    });
    expectEnvelope(res, 403, 'PERMISSION_DENIED', JSON_RPC.FORBIDDEN);
  });

  it('a workspace the caller is not a member of (404 NOT_FOUND) and an unknown procedure are -32004', async () => {
    const other = await registerAndLogin(app.api, { prefix: 'jsonrpc-other' });
    const res = await app.api(
      'GET',
      `/trpc/workspaces.get?input=${encodeURIComponent(JSON.stringify({ workspaceId: other.workspaceId }))}`,
      { token: s.accessToken },
    );
    expectEnvelope(res, 404, 'NOT_FOUND', JSON_RPC.NOT_FOUND);
    expectEnvelope(
      await app.api('POST', '/trpc/auth.noSuchProcedure', { body: {} }),
      404,
      'NOT_FOUND',
      JSON_RPC.NOT_FOUND,
    );
  });

  it('invalid input (400 BAD_REQUEST with issues) and a malformed ?input= are -32600', async () => {
    const res = await app.api('POST', '/trpc/auth.register', {
      body: { email: uniqueEmail('x'), password: STRONG_PASSWORD, name: '' },
    });
    expectEnvelope(res, 400, 'BAD_REQUEST', JSON_RPC.BAD_REQUEST);
    expect(res.body.error.data.issues.map((i: { path: string }) => i.path)).toEqual(['name']);
    expectEnvelope(
      await app.api('GET', '/trpc/auth.me?input=%7B', { token: s.accessToken }),
      400,
      'BAD_REQUEST',
      JSON_RPC.BAD_REQUEST,
    );
  });

  it('a body that is not JSON (415) is -32015', async () => {
    const res = await app.api('POST', '/trpc/auth.login', {
      raw: 'email=a',
      headers: { 'content-type': 'text/plain' },
    });
    expectEnvelope(res, 415, 'UNSUPPORTED_MEDIA_TYPE', JSON_RPC.UNSUPPORTED_MEDIA_TYPE);
  });
});

describe('/trpc error.code of what is refused before tRPC', () => {
  it('malformed JSON is -32700 and a body over the limit (413) is -32013', async () => {
    const malformed = await app.api('POST', '/trpc/auth.login', {
      raw: '{"email":',
      headers: { 'content-type': 'application/json' },
    });
    expectEnvelope(malformed, 400, 'BAD_REQUEST', JSON_RPC.PARSE_ERROR);
    const big = await app.api('POST', '/trpc/auth.login', {
      raw: JSON.stringify({ email: 'x'.repeat(1_100_000) }),
      headers: { 'content-type': 'application/json' },
    });
    expectEnvelope(big, 413, 'PAYLOAD_TOO_LARGE', JSON_RPC.PAYLOAD_TOO_LARGE);
  });

  it('an error raised before tRPC on a /trpc path has the number of its status class (the error handler)', async () => {
    const errors: Record<string, Error> = {
      limited: new AppError('RATE_LIMITED', 'Slow down.'),
      conflict: new AppError('SETTINGS_READ_ONLY', 'Read only.'),
      outage: new AppError('SERVICE_UNAVAILABLE', 'Away.'),
      bug: new Error('a bug'),
    };
    const mini = express();
    mini.use(requestId);
    mini.use('/trpc/:what', (req, _res, next) => next(errors[req.params.what]));
    mini.use(errorHandler(app.deps.logger));
    const server = http.createServer(mini).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/trpc`;
      const answer = async (what: string) => {
        const res = await fetch(`${url}/${what}`);
        const text = await res.text();
        return { status: res.status, headers: res.headers, text, body: JSON.parse(text) };
      };
      expectEnvelope(await answer('limited'), 429, 'RATE_LIMITED', JSON_RPC.TOO_MANY_REQUESTS);
      expectEnvelope(await answer('conflict'), 409, 'SETTINGS_READ_ONLY', JSON_RPC.CONFLICT);
      // tRPC numbers 503 like 500: the status and data.code tell them apart.
      expectEnvelope(await answer('outage'), 503, 'SERVICE_UNAVAILABLE', JSON_RPC.INTERNAL);
      expectEnvelope(await answer('bug'), 500, 'INTERNAL_SERVER_ERROR', JSON_RPC.INTERNAL);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('trpcErrorNumber maps every HTTP status to the number of its class', () => {
    const table: Array<[number, number]> = [
      [400, -32600],
      [401, -32001],
      [402, -32002],
      [403, -32003],
      [404, -32004],
      [405, -32005],
      [408, -32008],
      [409, -32009],
      [412, -32012],
      [413, -32013],
      [415, -32015],
      [422, -32022],
      [428, -32028],
      [429, -32029],
      [431, -32600],
      [418, -32600],
      [499, -32099],
      [500, -32603],
      [502, -32603],
      [503, -32603],
      [504, -32603],
    ];
    expect(table.map(([status]) => [status, trpcErrorNumber(status)])).toEqual(table);
  });
});
