// /trpc answers the calls of tRPC's non-streaming links itself (server/platform/trpc-http.ts) rather than through
// @trpc/server's Express adapter, which wrapped each one in a Fetch Request and Response. These tests hold it
// to the adapter: the same request to both gives the same status, body and headers, for the app's router
// and for a router of odd procedures; tRPC's own client (httpLink, httpBatchLink, httpBatchStreamLink) works
// against the app, errors and mixed batches included; a call whose client goes away is aborted and still
// counted in flight until it settles.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type RequestHandler } from 'express';
import { z } from 'zod';
import { TRPCClientError, createTRPCClient, httpBatchLink, httpBatchStreamLink, httpLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { registerAndLogin, signedInOf, type Session } from '../helpers/http.js';
import {
  errorHandler,
  refuseAmbiguousPath,
  requestId,
  trpcAdapterHandler,
  trpcHandler,
} from '../../server/platform/http.js';
import { publicProcedure, router, startAuthentication } from '../../server/platform/trpc.js';
import { InFlight } from '../../server/platform/in-flight.js';
import { appRouter, type AppRouter } from '../../routers/index.js';
import type { AppDeps } from '../../server/platform/context.js';
import type { AnyTRPCRouter } from '@trpc/server';

let app: TestApp;
let s: Session;
beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
  s = await registerAndLogin(app.api, { prefix: 'trpc-protocol', name: 'Proto' });
});
afterAll(() => app?.close());

/** Released by the test: the procedure `slow` waits for it. */
let releaseSlow: () => void = () => {};
/** What `slow` saw of its signal. */
const slowSaw: { started: boolean; aborted: boolean } = { started: false, aborted: false };

/** Procedures the app's router has no example of. */
const oddRouter = router({
  ok: publicProcedure.query(() => ({ ok: true })),
  echo: publicProcedure.input(z.object({ n: z.number() })).query(({ input }) => input),
  add: publicProcedure.input(z.object({ n: z.number() })).mutation(({ input }) => ({ n: input.n + 1 })),
  noInput: publicProcedure.mutation(() => 'done'),
  optionalInput: publicProcedure.input(z.object({ n: z.number() }).optional()).query(({ input }) => input ?? null),
  // Only a streaming link can carry a promise: 415 UNSUPPORTED_MEDIA_TYPE on the others.
  streamLike: publicProcedure.query(() => ({ later: Promise.resolve(1) })),
  // The database away: 503 with Retry-After (errors.ts).
  unavailable: publicProcedure.query(() => {
    throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  }),
  bug: publicProcedure.query(() => {
    throw new Error('a bug');
  }),
  nested: router({ deeper: router({ leaf: publicProcedure.query(() => 'leaf') }) }),
  ticks: publicProcedure.subscription(async function* () {
    yield 1;
  }),
  slow: publicProcedure.query(async ({ signal }) => {
    slowSaw.started = true;
    signal?.addEventListener('abort', () => (slowSaw.aborted = true));
    await new Promise<void>((resolve) => (releaseSlow = resolve));
    return 'slow';
  }),
});

interface Mini {
  url: string;
  close(): Promise<void>;
}

/** The parts of the app a /trpc request goes through (server/app.ts), with `handler` mounted at /trpc. */
async function mini(handler: RequestHandler, deps: AppDeps = app.deps): Promise<Mini> {
  const e = express();
  e.use(requestId);
  e.use(refuseAmbiguousPath);
  e.use(startAuthentication(deps));
  const json = express.json({ verify: (r, _res, buf) => ((r as express.Request).rawBody = buf) });
  e.use((req, res, next) => (req.method === 'GET' || req.method === 'HEAD' ? next() : json(req, res, next)));
  e.use('/trpc', handler);
  e.use(errorHandler(deps.logger));
  const server = http.createServer(e).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

interface Sent {
  body?: string;
  headers?: Record<string, string>;
}

async function send(base: string, method: string, path: string, opts: Sent, id: string): Promise<Answer> {
  const res = await fetch(base + path, { method, body: opts.body, headers: { 'x-request-id': id, ...opts.headers } });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** A GET of `target` as written, fragment included (fetch() would drop it): status and body. */
function getAsIs(base: string, target: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.get({ host: hostname, port, path: target, headers: { 'x-request-id': 'as-is' } }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
}

type Case = [method: string, path: string, opts?: Sent & { token?: boolean }];

/**
 * Each case sent to both handlers under the same request id: the same status, body, and the headers a client
 * reads (Allow, Retry-After, Vary). The content type is application/json on every answer of the handler;
 * the adapter said text/plain of the errors that fail a whole request (its Fetch Response's default).
 */
async function expectSameAnswers(routerUnderTest: AnyTRPCRouter, cases: Case[]) {
  const handler = await mini(trpcHandler(routerUnderTest, app.deps));
  const adapter = await mini(trpcAdapterHandler(routerUnderTest, app.deps));
  const differences: string[] = [];
  try {
    for (const [i, [method, path, opts = {}]] of cases.entries()) {
      const headers = { ...opts.headers, ...(opts.token ? { authorization: `Bearer ${s.accessToken}` } : {}) };
      const a = await send(handler.url, method, path, { ...opts, headers }, `same-${i}`);
      const b = await send(adapter.url, method, path, { ...opts, headers }, `same-${i}`);
      const what = `${method} ${path.slice(0, 100)} ${opts.body?.slice(0, 60) ?? ''}`;
      const differ = (name: string, x: unknown, y: unknown) =>
        differences.push(`${what}: ${name} ${String(x)}, adapter ${String(y)}`);
      if (a.status !== b.status) differ('status', a.status, b.status);
      if (a.text !== b.text) differ('body', `\n  ${a.text.slice(0, 400)}`, `\n  ${b.text.slice(0, 400)}`);
      for (const name of ['allow', 'retry-after', 'vary', 'x-request-id']) {
        if (a.headers.get(name) !== b.headers.get(name)) differ(name, a.headers.get(name), b.headers.get(name));
      }
      const [type, adapterType] = [a.headers.get('content-type'), b.headers.get('content-type')];
      if (type !== adapterType && !(type === 'application/json' && adapterType === 'text/plain;charset=UTF-8')) {
        differ('content-type', type, adapterType);
      }
    }
  } finally {
    await handler.close();
    await adapter.close();
  }
  expect(differences, differences.join('\n')).toEqual([]);
}

const q = (value: unknown) => encodeURIComponent(JSON.stringify(value));
const json = { 'content-type': 'application/json' };
/** A case sent with the session's access token. */
const auth = { token: true } as const;
type ClientError = TRPCClientError<AppRouter>;

describe("/trpc answers as @trpc/server's adapter does", () => {
  it("for the app's procedures: queries, batches, mutations, and every way of getting them wrong", async () => {
    const wrongLogin = JSON.stringify({ email: s.email, password: 'Wrong-pass-999' });
    const logins = (refreshToken: unknown) => `{"0":${wrongLogin},"1":${JSON.stringify({ refreshToken })}}`;
    await expectSameAnswers(appRouter, [
      ['GET', '/trpc/auth.me', auth],
      ['GET', '/trpc/auth.me'],
      ['GET', '/trpc/auth.me', { headers: { authorization: 'Bearer not.a.token' } }],
      ['GET', '/trpc/auth.me?input=%7B', auth],
      ['GET', '/trpc/auth.me?input=%E0%A4%A', auth],
      ['GET', '/trpc/auth.me?input=null', auth],
      ['GET', '/trpc/auth.me?input=', auth],
      ['GET', '/trpc/auth.me', { ...auth, headers: json }],
      ['GET', '/trpc/auth.me', { ...auth, headers: { 'content-type': 'text/plain' } }],
      ['GET', `/trpc/auth.me,plans.catalog,status.search?batch=1&input=${q({})}`, auth],
      ['GET', '/trpc/auth.me,plans.catalog?batch=1', auth],
      ['GET', '/trpc/auth.me,plans.catalog?batch=1'],
      ['GET', `/trpc/auth.me,workspaces.get?batch=1&input=${q({ 1: { workspaceId: s.workspaceId } })}`, auth],
      ['GET', `/trpc/auth.me,workspaces.get,status.search?batch=1&input=${q({ 1: { workspaceId: 'x' } })}`, auth],
      ['GET', `/trpc/workspaces.get,auth.me?batch=1&input=${q({ 0: { workspaceId: 'not-a-uuid' } })}`, auth],
      ['GET', `/trpc/workspaces.get?input=${q({ workspaceId: s.workspaceId })}`, auth],
      ['GET', '/trpc/auth.me,auth.me', auth],
      ['GET', `/trpc/${Array.from({ length: 100 }, () => 'status.search').join(',')}?batch=1`],
      ['GET', `/trpc/${Array.from({ length: 101 }, () => 'status.search').join(',')}?batch=1`],
      ['GET', `/trpc/auth.me,status.search?batch=1&input=${q([1])}`, auth],
      ['GET', '/trpc/auth.me,status.search?batch=1&input=%5B%5B%5B', auth],
      ['GET', '/trpc/auth.me?batch=0', auth],
      ['GET', '/trpc/auth.me?batch=true', auth],
      ['GET', '/trpc/does.not.exist'],
      ['GET', '/trpc/status.search,does.not.exist?batch=1'],
      ['GET', '/trpc'],
      ['GET', '/trpc/'],
      ['GET', '/trpc/auth.login'],
      ['GET', '/trpc/auth.me,auth.login?batch=1', auth],
      ['GET', '/trpc/status.search?connectionParams=%7Bbad'],
      ['GET', `/trpc/status.search?connectionParams=${q({ a: 1 })}`],
      ['GET', `/trpc/status.search?connectionParams=${q({ a: 'b' })}`],
      ['GET', '/trpc/status.search', { headers: { 'trpc-accept': 'application/something' } }],
      ['POST', '/trpc/auth.login', { body: wrongLogin, headers: json }],
      ['POST', '/trpc/auth.login', { body: JSON.stringify({ email: 'not-an-email', password: 42 }), headers: json }],
      ['POST', '/trpc/auth.login', { body: wrongLogin, headers: { 'content-type': 'Application/JSON; a=b' } }],
      ['POST', '/trpc/auth.login', { body: 'email=a', headers: { 'content-type': 'text/plain' } }],
      ['POST', '/trpc/auth.login', { body: 'email=a' }],
      ['POST', '/trpc/auth.login', { headers: json }],
      ['POST', '/trpc/auth.login'],
      ['POST', '/trpc/auth.me', { body: '{}', headers: json, ...auth }],
      ['POST', '/trpc/auth.me', auth],
      ['POST', '/trpc/auth.login,auth.refresh?batch=1', { body: logins('x'), headers: json }],
      ['POST', '/trpc/auth.login,auth.refresh?batch=1', { body: logins(4), headers: json }],
      ['POST', '/trpc/auth.login,auth.login?batch=1', { body: '[]', headers: json }],
      ['POST', '/trpc/auth.login?batch=1', { body: `[${wrongLogin}]`, headers: json }],
      ['POST', '/trpc/workspaces.create', { body: '{"name":{"toString":"x"}}', headers: json, ...auth }],
      ['POST', '/trpc/auth.me,auth.login?batch=1', { body: '{}', headers: json, ...auth }],
      ['PUT', '/trpc/auth.login', { body: wrongLogin, headers: json }],
      ['DELETE', '/trpc/auth.me', auth],
      ['HEAD', '/trpc/auth.me', auth],
    ]);
  });

  it('for odd procedures: stream-like results, outages, bugs, nested paths, subscriptions, no input', async () => {
    await expectSameAnswers(oddRouter, [
      ['GET', '/trpc/ok'],
      ['GET', `/trpc/echo?input=${q({ n: 1 })}`],
      ['GET', `/trpc/echo?input=${q({ n: 'x' })}`],
      ['GET', `/trpc/optionalInput`],
      ['GET', `/trpc/optionalInput?input=${q({ n: 2 })}`],
      ['GET', `/trpc/optionalInput,optionalInput?batch=1&input=${q({ 1: { n: 3 } })}`],
      ['GET', '/trpc/streamLike'],
      ['GET', '/trpc/ok,streamLike?batch=1'],
      ['GET', '/trpc/unavailable'],
      ['GET', '/trpc/ok,unavailable?batch=1'],
      ['GET', '/trpc/unavailable,bug?batch=1'],
      ['GET', '/trpc/bug'],
      ['GET', '/trpc/nested.deeper.leaf'],
      ['GET', '/trpc/nested.deeper'],
      ['GET', '/trpc/ticks,ok?batch=1'],
      ['POST', '/trpc/add', { body: JSON.stringify({ n: 1 }), headers: json }],
      ['POST', '/trpc/add,add?batch=1', { body: JSON.stringify({ 0: { n: 1 }, 1: { n: 'x' } }), headers: json }],
      ['POST', '/trpc/add,noInput?batch=1', { body: JSON.stringify({ 0: { n: 1 } }), headers: json }],
      ['POST', '/trpc/noInput', { headers: json }],
      ['POST', '/trpc/noInput', { body: '', headers: json }],
      ['POST', '/trpc/ok', { body: '{}', headers: json }],
      ['POST', '/trpc/ticks', { body: '{}', headers: json }],
    ]);
  });

  it("reads the query of a target with a fragment as WHATWG URL does (the adapter's reading)", async () => {
    const handler = await mini(trpcHandler(oddRouter, app.deps));
    const adapter = await mini(trpcAdapterHandler(oddRouter, app.deps));
    try {
      // fetch() drops a fragment; Node hands it on in req.url.
      const targets: Array<[string, number]> = [
        [`/trpc/echo?input=${q({ n: 1 })}#x`, 200],
        [`/trpc/echo#?input=${q({ n: 1 })}`, 400],
        ['/trpc/ok#x', 200],
      ];
      for (const [target, status] of targets) {
        const a = await getAsIs(handler.url, target);
        expect(a).toEqual(await getAsIs(adapter.url, target));
        expect(a.status, `${target}: ${a.body}`).toBe(status);
      }
    } finally {
      await handler.close();
      await adapter.close();
    }
  });

  it('hands a subscription to the adapter, which streams it (server-sent events)', async () => {
    const ours = await mini(trpcHandler(oddRouter, app.deps));
    try {
      const res = await fetch(`${ours.url}/trpc/ticks`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(await res.text()).toMatch(/data: 1/);
    } finally {
      await ours.close();
    }
  });
});

describe("tRPC's own client against /trpc", () => {
  /** A fetch that counts the requests the links send. */
  function counting() {
    const sent: string[] = [];
    const f: typeof fetch = (input, init) => {
      sent.push(String(input instanceof Request ? input.url : input));
      return fetch(input, init);
    };
    return { fetch: f, sent };
  }
  const bearer = () => ({ authorization: `Bearer ${s.accessToken}` });

  it('httpLink: a query, a mutation, and their errors with our code, status and request id', async () => {
    const client = createTRPCClient<AppRouter>({ links: [httpLink({ url: `${app.url}/trpc`, headers: bearer })] });
    const me = await client.auth.me.query();
    expect(me.user).toMatchObject({ id: s.userId, email: s.email, name: 'Proto' });
    const failed = await client.auth.login.mutate({ email: s.email, password: 'Wrong-pass-999' }).catch((e) => e);
    expect(failed).toBeInstanceOf(TRPCClientError);
    const error = failed as ClientError;
    expect(error.data).toMatchObject({ code: 'INVALID_CREDENTIALS', httpStatus: 401, path: 'auth.login' });
    expect(error.data?.requestId).toEqual(expect.any(String));
    const invalid: ClientError = await client.auth.login.mutate({ email: 'no-email', password: 'x' }).catch((e) => e);
    expect(invalid.data?.code).toBe('BAD_REQUEST');
    expect(invalid.data?.issues?.map((i) => i.path)).toContain('email');
  });

  it('httpBatchLink as tRPC sets it up (no maxItems): 11, then 100 calls in one request; 101 refused whole', async () => {
    const counter = counting();
    const client = createTRPCClient<AppRouter>({
      links: [httpBatchLink({ url: `${app.url}/trpc`, headers: bearer, fetch: counter.fetch })],
    });
    for (const size of [11, 100]) {
      const answers = await Promise.all(Array.from({ length: size }, () => client.status.search.query()));
      expect(answers.every((a) => a.enabled)).toBe(true);
    }
    expect(counter.sent).toHaveLength(2);
    const refused = await Promise.allSettled(Array.from({ length: 101 }, () => client.status.search.query()));
    expect(counter.sent).toHaveLength(3);
    expect(refused.every((r) => r.status === 'rejected')).toBe(true);
    const error = (refused[0] as PromiseRejectedResult).reason as ClientError;
    expect(error.message).toBe('Batch call exceeds maximum size');
    expect(error.data).toMatchObject({ code: 'BAD_REQUEST', httpStatus: 400 });
  });

  it('TRPC_MAX_BATCH_SIZE sets the bound: 3 here, so a batch of 4 is refused whole and one of 3 taken', async () => {
    const small = await startTestApp({ TRPC_MAX_BATCH_SIZE: '3' });
    try {
      const three = await small.api('GET', `/trpc/${Array(3).fill('status.search').join(',')}?batch=1`);
      expect(three.status, three.text).toBe(200);
      const four = await small.api('GET', `/trpc/${Array(4).fill('status.search').join(',')}?batch=1`);
      expect(four.status).toBe(400);
      expect(four.body.error.message).toBe('Batch call exceeds maximum size');
    } finally {
      await small.close();
    }
  });

  it('httpBatchLink: calls made together go in one request; a failed call fails alone', async () => {
    const counter = counting();
    const link = httpBatchLink({ url: `${app.url}/trpc`, headers: bearer, fetch: counter.fetch, maxItems: 10 });
    const client = createTRPCClient<AppRouter>({ links: [link] });
    const [me, plans, wrong, search] = await Promise.allSettled([
      client.auth.me.query(),
      client.plans.catalog.query(),
      client.workspaces.get.query({ workspaceId: 'not-a-uuid' }),
      client.status.search.query(),
    ]);
    expect(counter.sent).toHaveLength(1);
    expect(counter.sent[0]).toContain('/trpc/auth.me,plans.catalog,workspaces.get,status.search?batch=1');
    expect(me.status === 'fulfilled' && me.value.user.id).toBe(s.userId);
    expect(plans.status === 'fulfilled' && Array.isArray(plans.value.items)).toBe(true);
    expect(search.status === 'fulfilled' && search.value.enabled).toBe(true);
    expect(wrong.status).toBe('rejected');
    const error = (wrong as PromiseRejectedResult).reason as TRPCClientError<AppRouter>;
    expect(error).toBeInstanceOf(TRPCClientError);
    expect(error.data).toMatchObject({ code: 'BAD_REQUEST', httpStatus: 400, path: 'workspaces.get' });

    // Mutations batch too (a POST with the inputs by index).
    const posts = counting();
    const postLink = httpBatchLink({ url: `${app.url}/trpc`, fetch: posts.fetch });
    const poster = createTRPCClient<AppRouter>({ links: [postLink] });
    const logins = await Promise.allSettled([
      poster.auth.login.mutate({ email: s.email, password: s.password }),
      poster.auth.login.mutate({ email: s.email, password: 'Wrong-pass-999' }),
    ]);
    expect(posts.sent).toHaveLength(1);
    expect(logins[0].status === 'fulfilled' && signedInOf(logins[0].value).user.id).toBe(s.userId);
    expect(((logins[1] as PromiseRejectedResult).reason as ClientError).data?.code).toBe('INVALID_CREDENTIALS');
  });

  it('httpBatchStreamLink works (the adapter streams the batch)', async () => {
    const link = httpBatchStreamLink({ url: `${app.url}/trpc`, headers: bearer });
    const client = createTRPCClient<AppRouter>({ links: [link] });
    const [me, search, wrong] = await Promise.allSettled([
      client.auth.me.query(),
      client.status.search.query(),
      client.workspaces.get.query({ workspaceId: 'not-a-uuid' }),
    ]);
    expect(me.status === 'fulfilled' && me.value.user.id).toBe(s.userId);
    expect(search.status === 'fulfilled' && search.value.enabled).toBe(true);
    expect(((wrong as PromiseRejectedResult).reason as TRPCClientError<AppRouter>).data?.code).toBe('BAD_REQUEST');
  });
});

describe('a call whose client goes away', () => {
  it('is aborted (its signal) and counted in flight until its procedure settles, for shutdowns', async () => {
    const inFlight = new InFlight();
    const deps = { ...app.deps, inFlight };
    const server = await mini(trpcHandler(oddRouter, deps), deps);
    try {
      slowSaw.started = false;
      slowSaw.aborted = false;
      const client = createTRPCClient<typeof oddRouter>({ links: [httpBatchLink({ url: `${server.url}/trpc` })] });
      const ac = new AbortController();
      const call = client.slow.query(undefined, { signal: ac.signal }).catch((e: unknown) => e);
      await expect.poll(() => slowSaw.started).toBe(true);
      ac.abort();
      const error = await call;
      expect(error).toBeInstanceOf(TRPCClientError);
      await expect.poll(() => slowSaw.aborted).toBe(true);
      // The client is gone; the procedure is not done yet.
      expect(inFlight.size).toBe(1);
      releaseSlow();
      await expect.poll(() => inFlight.size).toBe(0);
    } finally {
      releaseSlow();
      await server.close();
    }
  });
});
