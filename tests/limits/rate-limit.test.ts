// Rate limiting (spec: Limits > Rate limiting; docs/decisions.md "Rate limiting and monitoring"): the six
// tiers and their answers, the skipped routes, who a request is counted against, /trpc, the master switch,
// and Redis (shared counts across instances; a dead or frozen Redis must not stall or fail requests).
//
// Every app here runs with tiny limits. Counts are per client, so each test speaks from a loopback address
// of its own (127.x.y.z, freshLoopback) or as a user / API key of its own, and never shares a count with
// another test. Redis tests use redis-server processes of their own, never the suite's shared Redis.
import crypto from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { clockAhead } from '../helpers/clock.js';
import { registerAndLogin, uniqueEmail, type Session } from '../helpers/http.js';
import { ledger } from '../helpers/secret-ledger.js';
import {
  RATE_LIMIT_MESSAGE,
  RedisServer,
  clientOf,
  expectCounted,
  expectNotLimited,
  expectRateLimited,
  freshLoopback,
  freshPublicAddress,
  multipart,
  send,
  type Answer,
  type Client,
} from './helpers.js';

const WINDOW = 3;
const LIMIT = { default: 3, auth: 2, contact: 3, upload: 2, publicApi: 4, webhook: 5 } as const;
type Tier = keyof typeof LIMIT;

/** Tiny limits; the contact tier has no setting of its own (it takes the default tier's value, 3). */
const LIMITED = {
  RATE_LIMIT_ENABLED: 'true',
  RATE_LIMIT_WINDOW_SECONDS: String(WINDOW),
  RATE_LIMIT_MAX_REQUESTS: String(LIMIT.default),
  RATE_LIMIT_AUTH_MAX_REQUESTS: String(LIMIT.auth),
  RATE_LIMIT_UPLOAD_MAX_REQUESTS: String(LIMIT.upload),
  RATE_LIMIT_PUBLIC_API_MAX_REQUESTS: String(LIMIT.publicApi),
  RATE_LIMIT_WEBHOOK_MAX_REQUESTS: String(LIMIT.webhook),
};

const PDF = Buffer.from(
  '%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n',
);
const WRONG_LOGIN = () => ({ email: uniqueEmail('rl-login'), password: 'Wrong-pass-999' });

const apps: TestApp[] = [];
async function startApp(settings: Record<string, string>): Promise<TestApp> {
  const app = await startTestApp(settings);
  apps.push(app);
  return app;
}

/** Runs `fn` against an app of its own, closed afterwards (and in afterAll should `fn` throw). */
async function withApp(settings: Record<string, string>, fn: (app: TestApp) => Promise<void>) {
  const app = await startApp(settings);
  try {
    await fn(app);
  } finally {
    await app.close();
  }
}

/** `app` with no limit at all: accounts, API keys and the RATE_LIMIT_ENABLED=false checks. */
let plain: TestApp;
/** The seven tiers, in memory, TRUST_PROXY=false: the client is the connection's address. */
let tiers: TestApp;
let apiKeyOwner: Session;
const agents: http.Agent[] = [];

beforeAll(async () => {
  [plain, tiers] = await Promise.all([
    startApp({ ...LIMITED, RATE_LIMIT_ENABLED: 'false' }),
    startApp({ ...LIMITED, TRUST_PROXY: 'false' }),
  ]);
  apiKeyOwner = await registerAndLogin(plain.api, { prefix: 'rl-keys' });
  const upgrade = await plain.api('POST', '/billing/checkout', {
    token: apiKeyOwner.accessToken,
    body: { workspaceId: apiKeyOwner.workspaceId, planCode: 'pro' },
  });
  if (upgrade.status !== 200) throw new Error(`upgrade to pro failed: ${upgrade.status} ${upgrade.text}`);
});

afterAll(async () => {
  for (const a of agents) a.destroy();
  // Dead Redis first, so that no app waits on a frozen one while closing.
  await RedisServer.stopAll();
  await Promise.allSettled(apps.map((a) => a.close()));
});

/** A signed-in account (created on the unlimited app, so no limited count is spent on it). */
const newUser = (prefix = 'rl-user') => registerAndLogin(plain.api, { prefix });

/** A fresh API key of a Pro workspace: a publicApi client with a count of its own. */
async function newApiKey(): Promise<string> {
  const res = await plain.api('POST', `/workspaces/${apiKeyOwner.workspaceId}/api-keys`, {
    token: apiKeyOwner.accessToken,
    body: { name: `rl ${crypto.randomBytes(3).toString('hex')}`, scopes: ['read'] },
  });
  if (res.status !== 201) throw new Error(`API key create failed: ${res.status} ${res.text}`);
  ledger.sent(res.body.rawKey, 'an API key');
  return res.body.rawKey as string;
}

/** Makes `app` verify `apiKey` once (from an address of its own), so later calls are counted by key. */
async function verifiedOn(app: TestApp, apiKey: string): Promise<string> {
  const res = await clientOf(app.url, { from: freshLoopback() })('GET', '/public-api/me', {
    headers: { 'x-api-key': apiKey },
  });
  if (res.status !== 200) throw new Error(`API key warm-up failed: ${res.status} ${res.text}`);
  return apiKey;
}

/** One request of each tier, from `c`, answering with the status a request within the limit gets. */
interface TierCase {
  tier: Tier;
  route: string;
  ok: number;
  /** Makes the identity this case is counted against (a fresh one per call). */
  identity(): Promise<{ from: string; token?: string; apiKey?: string }>;
  request(c: Client, id: { token?: string; apiKey?: string }): Promise<Answer>;
}

const byAddress = async () => ({ from: freshLoopback() });

const TIER_CASES: TierCase[] = [
  {
    tier: 'default',
    route: 'GET /demo/status',
    ok: 200,
    identity: byAddress,
    request: (c) => c('GET', '/demo/status'),
  },
  {
    tier: 'auth',
    route: 'POST /auth/forgot-password',
    ok: 200,
    identity: byAddress,
    request: (c) => c('POST', '/auth/forgot-password', { body: { email: uniqueEmail('rl-forgot') } }),
  },
  {
    tier: 'contact',
    route: 'POST /contact/messages',
    ok: 201,
    identity: byAddress,
    request: (c) =>
      c('POST', '/contact/messages', {
        body: { name: 'Rita Limit', email: uniqueEmail('rl-contact'), message: 'Hello, a question about plans.' },
      }),
  },
  {
    tier: 'upload',
    route: 'POST /storage/upload',
    ok: 201,
    identity: async () => ({ from: freshLoopback(), token: (await newUser('rl-upload')).accessToken }),
    request: (c, id) =>
      c('POST', '/storage/upload', { token: id.token, ...multipart('file', 'report.pdf', 'application/pdf', PDF) }),
  },
  {
    tier: 'publicApi',
    route: 'GET /public-api/me',
    ok: 200,
    // A key is counted as itself once the instance has verified it (its first call counts by address).
    identity: async () => ({ from: freshLoopback(), apiKey: await verifiedOn(tiers, await newApiKey()) }),
    request: (c, id) => c('GET', '/public-api/me', { headers: { 'x-api-key': id.apiKey! } }),
  },
  {
    tier: 'webhook',
    route: 'POST /billing/webhooks/mock',
    ok: 200,
    identity: byAddress,
    request: (c) =>
      c('POST', '/billing/webhooks/mock', {
        body: { id: `rl_evt_${crypto.randomBytes(6).toString('hex')}`, type: 'rl.test' },
      }),
  },
];

/** Sends `limit` requests of the case (each counted, `remaining` going down to 0), then one more (429). */
async function exhaust(app: TestApp, tc: TierCase, id: Awaited<ReturnType<TierCase['identity']>>) {
  const c = clientOf(app.url, { from: id.from });
  const limit = LIMIT[tc.tier];
  for (let i = 0; i < limit; i++) {
    const res = await tc.request(c, id);
    expect(res.status, `${tc.route} #${i + 1}: ${res.text.slice(0, 300)}`).toBe(tc.ok);
    expectCounted(res, limit, WINDOW, limit - 1 - i);
  }
  const over = await tc.request(c, id);
  return { c, retryAfter: expectRateLimited(over, limit, WINDOW) };
}

/** The 400 of a path the app will not read (dot segments, backslashes, an odd /trpc path): nothing was run. */
function expectPathRefused(res: Answer, envelope: 'rest' | 'trpc') {
  const ctx = `${res.status} ${res.text.slice(0, 300)}`;
  expect(res.status, ctx).toBe(400);
  const requestId = res.headers['x-request-id'];
  if (envelope === 'rest')
    expect(res.body, ctx).toEqual({ code: 'BAD_REQUEST', message: expect.any(String), requestId });
  else expect(res.body, ctx).toMatchObject({ error: { data: { code: 'BAD_REQUEST', httpStatus: 400, requestId } } });
}

describe('tiers', () => {
  it.each(TIER_CASES)(
    '$tier ($route): the limit passes, one more is 429 RATE_LIMITED with Retry-After and RateLimit headers',
    async (tc) => {
      const id = await tc.identity();
      const { c } = await exhaust(tiers, tc, id);
      // Still limited: the refused request did not reset anything.
      expectRateLimited(await tc.request(c, id), LIMIT[tc.tier], WINDOW);
    },
  );

  it('a limited contact message is not stored', async () => {
    const c = clientOf(tiers.url, { from: freshLoopback() });
    const emails = Array.from({ length: LIMIT.contact + 1 }, () => uniqueEmail('rl-stored'));
    const answers: Answer[] = [];
    for (const email of emails)
      answers.push(
        await c('POST', '/contact/messages', {
          body: { name: 'Stored Or Not', email, message: 'Please call me back.' },
        }),
      );
    expect(answers.map((a) => a.status)).toEqual([201, 201, 201, 429]);
    const rows = await plain.deps.db
      .selectFrom('contact_messages')
      .select('email')
      .where('email', 'in', emails)
      .execute();
    expect(rows.map((r) => r.email).sort()).toEqual(emails.slice(0, LIMIT.contact).sort());
  });

  it.each([
    ['a docs-like prefix and a dot segment', '/docsx/../auth/login'],
    ['a docs-like prefix and an encoded dot segment', '/docsx/%2e%2e/auth/login'],
    ['the docs mount and a dot segment', '/docs/../auth/login'],
    ['a dot segment', '/x/../auth/login'],
    ['an encoded dot segment', '/x/%2E%2e/auth/login'],
    ['a single-dot segment', '/auth/./login'],
    ['a backslash', '/auth\\login'],
  ])(
    'a sign-in sent by a path that resolves to POST /auth/login (%s: %s) is refused before the limiter and the login',
    async (_what, path) => {
      // trpc-to-openapi resolves such a path (WHATWG URL) and served it as /auth/login, while the limiter
      // read it as written: the default tier or, behind /docs, no limit at all.
      const c = clientOf(tiers.url, { from: freshLoopback() });
      for (let i = 0; i < LIMIT.auth + 2; i++)
        expectPathRefused(await c('POST', path, { body: WRONG_LOGIN(), asIs: true }), 'rest');
      // Refused without work or charge: the client's first real sign-in has the whole auth count.
      const login = await c('POST', '/auth/login', { body: WRONG_LOGIN() });
      expect(login.status).toBe(401);
      expectCounted(login, LIMIT.auth, WINDOW, LIMIT.auth - 1);
    },
  );

  it('counts each tier separately: a client limited on one tier still gets its full count on the others', async () => {
    const c = clientOf(tiers.url, { from: freshLoopback() });
    for (let i = 0; i < LIMIT.default; i++) expect((await c('GET', '/demo/status')).status).toBe(200);
    expectRateLimited(await c('GET', '/demo/status'), LIMIT.default, WINDOW);

    const forgot = await c('POST', '/auth/forgot-password', { body: { email: uniqueEmail('rl-sep') } });
    expect(forgot.status).toBe(200);
    expectCounted(forgot, LIMIT.auth, WINDOW, LIMIT.auth - 1);
    // Same limit value as the default tier, but a count of its own.
    const contact = await c('POST', '/contact/messages', {
      body: { name: 'Sep', email: uniqueEmail('rl-sep'), message: 'Separate counts?' },
    });
    expect(contact.status).toBe(201);
    expectCounted(contact, LIMIT.contact, WINDOW, LIMIT.contact - 1);
    // And the default tier is still limited.
    expectRateLimited(await c('GET', '/demo/status'), LIMIT.default, WINDOW);
  });

  it(`every tier lets the client in again once the window (${WINDOW} s) has passed, and limits it again after the limit`, async () => {
    const runs = await Promise.all(
      TIER_CASES.map(async (tc) => {
        const id = await tc.identity();
        return { tc, id, ...(await exhaust(tiers, tc, id)) };
      }),
    );
    const wait = Math.max(...runs.map((r) => r.retryAfter));
    expect(wait).toBeLessThanOrEqual(WINDOW);
    // Past the window by the limiter's clock (in memory, in this process: Date moved ahead).
    await clockAhead(wait * 1000 + 300, () =>
      Promise.all(
        runs.map(async ({ tc, id, c }) => {
          const limit = LIMIT[tc.tier];
          for (let i = 0; i < limit; i++) {
            const res = await tc.request(c, id);
            expect(res.status, `${tc.tier} after the window: ${res.text.slice(0, 300)}`).toBe(tc.ok);
            expectCounted(res, limit, WINDOW, limit - 1 - i);
          }
          expectRateLimited(await tc.request(c, id), limit, WINDOW);
        }),
      ),
    );
  });
});

describe('many requests of one client at once (in memory)', () => {
  it('serve exactly the limit, each with its own remaining count, and refuse the rest', async () => {
    const u = await newUser('rl-burst-memory');
    const answers = await Promise.all(
      Array.from({ length: 12 }, () =>
        send(tiers.url, 'GET', '/auth/me', { token: u.accessToken, from: freshLoopback() }),
      ),
    );
    const served = answers.filter((r) => r.status === 200);
    expect(served).toHaveLength(LIMIT.default);
    for (const r of answers.filter((x) => x.status !== 200)) expectRateLimited(r, LIMIT.default, WINDOW);
    const remaining = served
      .map((r) => Number(/remaining=(\d+)/.exec(String(r.headers.ratelimit))![1]))
      .sort((x, y) => x - y);
    expect(remaining).toEqual([0, 1, 2]);
  });
});

describe('skipped routes', () => {
  const SKIPPED: Array<[string, string, Record<string, string>?]> = [
    ['GET', '/health'],
    ['GET', '/search/status'],
    ['GET', '/security/status'],
    ['OPTIONS', '/auth/login'],
    ['OPTIONS', '/demo/status'],
    // Shaped like a CORS preflight (no CORS origin is configured, so it reaches the limiter).
    ['OPTIONS', '/auth/login', { origin: 'http://app.tests.local', 'access-control-request-method': 'POST' }],
  ];

  it('GET /health, /search/status, /security/status and OPTIONS are never counted nor limited', async () => {
    const c = clientOf(tiers.url, { from: freshLoopback() });
    for (let round = 0; round < LIMIT.default + 3; round++) {
      for (const [method, path, headers] of SKIPPED) expectNotLimited(await c(method, path, { headers }));
    }
    // None of them was counted: the client's first counted request still has the whole default count.
    const first = await c('GET', '/demo/status');
    expect(first.status).toBe(200);
    expectCounted(first, LIMIT.default, WINDOW, LIMIT.default - 1);
    const login = await c('POST', '/auth/login', { body: WRONG_LOGIN() });
    expect(login.status).toBe(401);
    expectCounted(login, LIMIT.auth, WINDOW, LIMIT.auth - 1);
  });

  it('skips only the docs UI itself: a path that merely starts with /docs is counted in the default tier', async () => {
    const c = clientOf(tiers.url, { from: freshLoopback() });
    for (let round = 0; round <= LIMIT.default; round++) expectNotLimited(await c('GET', '/docs/'));
    for (let i = 0; i < LIMIT.default; i++)
      expectCounted(await c('GET', '/docsx'), LIMIT.default, WINDOW, LIMIT.default - 1 - i);
    expectRateLimited(await c('GET', '/docsx/anything'), LIMIT.default, WINDOW);
  });

  it('answers them normally to a client that is limited on every tier it used', async () => {
    const c = clientOf(tiers.url, { from: freshLoopback() });
    for (let i = 0; i <= LIMIT.default; i++) await c('GET', '/demo/status');
    for (let i = 0; i <= LIMIT.auth; i++) await c('POST', '/auth/login', { body: WRONG_LOGIN() });
    expectRateLimited(await c('GET', '/demo/status'), LIMIT.default, WINDOW);
    expectRateLimited(await c('POST', '/auth/login', { body: WRONG_LOGIN() }), LIMIT.auth, WINDOW);

    const health = await c('GET', '/health');
    expectNotLimited(health);
    expect(health.status).toBe(200);
    expect(health.body.status).toBe('ok');
    for (const path of ['/search/status', '/security/status']) {
      const res = await c('GET', path);
      expectNotLimited(res);
      expect(res.status).toBe(200);
    }
  });
});

describe('who is counted', () => {
  it('without a trusted proxy (TRUST_PROXY=false), X-Forwarded-For values sent on one connection share one count', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    agents.push(agent);
    const c = clientOf(tiers.url, { from: freshLoopback(), agent });
    for (let i = 0; i < LIMIT.default; i++) {
      const res = await c('GET', '/demo/status', { headers: { 'x-forwarded-for': freshPublicAddress() } });
      expectCounted(res, LIMIT.default, WINDOW, LIMIT.default - 1 - i);
    }
    expectRateLimited(
      await c('GET', '/demo/status', { headers: { 'x-forwarded-for': freshPublicAddress() } }),
      LIMIT.default,
      WINDOW,
    );
    expectRateLimited(
      await c('GET', '/demo/status', {
        headers: { 'x-forwarded-for': `${freshPublicAddress()}, ${freshPublicAddress()}` },
      }),
      LIMIT.default,
      WINDOW,
    );
  });

  it('counts two connection addresses separately (a limit per client, not per server)', async () => {
    const a = clientOf(tiers.url, { from: freshLoopback() });
    const b = clientOf(tiers.url, { from: freshLoopback() });
    for (let i = 0; i < LIMIT.auth; i++) await a('POST', '/auth/login', { body: WRONG_LOGIN() });
    expectRateLimited(await a('POST', '/auth/login', { body: WRONG_LOGIN() }), LIMIT.auth, WINDOW);
    const other = await b('POST', '/auth/login', { body: WRONG_LOGIN() });
    expect(other.status).toBe(401);
    expectCounted(other, LIMIT.auth, WINDOW, LIMIT.auth - 1);
  });

  it('a bearer token that is not valid does not open a count of its own: the request is counted by address', async () => {
    const c = clientOf(tiers.url, { from: freshLoopback() });
    const forged = () => {
      const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
      return `${part({ alg: 'HS256', typ: 'JWT' })}.${part({ sub: crypto.randomUUID(), typ: 'access' })}.${crypto.randomBytes(32).toString('base64url')}`;
    };
    for (let i = 0; i < LIMIT.default; i++)
      expectCounted(await c('GET', '/demo/status', { token: forged() }), LIMIT.default, WINDOW, LIMIT.default - 1 - i);
    expectRateLimited(await c('GET', '/demo/status', { token: forged() }), LIMIT.default, WINDOW);
    expectRateLimited(await c('GET', '/demo/status'), LIMIT.default, WINDOW);
  });

  it('made-up API keys do not open counts of their own: sign-in attempts carrying them are still counted by address', async () => {
    const c = clientOf(tiers.url, { from: freshLoopback() });
    const madeUpKey = () =>
      `wsk_${crypto
        .randomBytes(30)
        .toString('base64')
        .replace(/[^A-Za-z0-9]/g, '')
        .slice(0, 40)
        .padEnd(40, 'x')}`;
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT.auth + 3; i++)
      statuses.push(
        (await c('POST', '/auth/login', { body: WRONG_LOGIN(), headers: { 'x-api-key': madeUpKey() } })).status,
      );
    // Otherwise anyone can try passwords without limit by sending a new random "key" with each attempt.
    expect(statuses).toEqual([...Array(LIMIT.auth).fill(401), ...Array(3).fill(429)]);
  });

  it('made-up API keys on the public API are counted by address: a new random key per call is still limited', async () => {
    const c = clientOf(tiers.url, { from: freshLoopback() });
    const madeUpKey = () =>
      `wsk_${crypto
        .randomBytes(30)
        .toString('base64')
        .replace(/[^A-Za-z0-9]/g, '')
        .slice(0, 40)
        .padEnd(40, 'x')}`;
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT.publicApi + 2; i++)
      statuses.push((await c('GET', '/public-api/me', { headers: { 'x-api-key': madeUpKey() } })).status);
    expect(statuses).toEqual([...Array(LIMIT.publicApi).fill(401), ...Array(2).fill(429)]);
  });

  it('counts signed-in users by user: two users from one address have separate counts', async () => {
    const [u1, u2] = await Promise.all([newUser('rl-u1'), newUser('rl-u2')]);
    const c = clientOf(tiers.url, { from: freshLoopback() });
    for (let i = 0; i < LIMIT.default; i++) {
      const res = await c('GET', '/auth/me', { token: u1.accessToken });
      expect(res.status).toBe(200);
      expectCounted(res, LIMIT.default, WINDOW, LIMIT.default - 1 - i);
    }
    expectRateLimited(await c('GET', '/auth/me', { token: u1.accessToken }), LIMIT.default, WINDOW);

    const other = await c('GET', '/auth/me', { token: u2.accessToken });
    expect(other.status).toBe(200);
    expect(other.body.user.id).toBe(u2.userId);
    expectCounted(other, LIMIT.default, WINDOW, LIMIT.default - 1);
    // Nor did the user's requests spend the address's own count.
    expectCounted(await c('GET', '/demo/status'), LIMIT.default, WINDOW, LIMIT.default - 1);
  });

  it('counts one signed-in user from two addresses as one client', async () => {
    const u = await newUser('rl-roaming');
    const here = clientOf(tiers.url, { from: freshLoopback() });
    const there = clientOf(tiers.url, { from: freshLoopback() });
    const sequence = [here, there, here];
    for (const [i, c] of sequence.entries()) {
      const res = await c('GET', '/auth/me', { token: u.accessToken });
      expect(res.status).toBe(200);
      expectCounted(res, LIMIT.default, WINDOW, LIMIT.default - 1 - i);
    }
    expectRateLimited(await there('GET', '/auth/me', { token: u.accessToken }), LIMIT.default, WINDOW);
    expectRateLimited(await here('GET', '/auth/me', { token: u.accessToken }), LIMIT.default, WINDOW);
    // Each address on its own (anonymous) still has its full count.
    expectCounted(await there('GET', '/demo/status'), LIMIT.default, WINDOW, LIMIT.default - 1);
  });

  describe('behind a proxy (TRUST_PROXY)', () => {
    const PROXY_LIMIT = 2;
    const proxySettings = (trustProxy: string) => ({
      ...LIMITED,
      RATE_LIMIT_MAX_REQUESTS: String(PROXY_LIMIT),
      TRUST_PROXY: trustProxy,
    });
    /** Requests of the default tier from the test's own loopback address (the "proxy"), with this X-Forwarded-For. */
    const viaProxy = (app: TestApp, from: string) => (xff: string) =>
      send(app.url, 'GET', '/demo/status', { from, headers: { 'x-forwarded-for': xff } });

    it('TRUST_PROXY=true: two X-Forwarded-For clients behind one proxy are counted separately', async () => {
      await withApp(proxySettings('true'), async (app) => {
        const proxy = viaProxy(app, freshLoopback());
        const [alice, bob] = [freshPublicAddress(), freshPublicAddress()];
        for (let i = 0; i < PROXY_LIMIT; i++)
          expectCounted(await proxy(alice), PROXY_LIMIT, WINDOW, PROXY_LIMIT - 1 - i);
        expectRateLimited(await proxy(alice), PROXY_LIMIT, WINDOW);
        expectCounted(await proxy(bob), PROXY_LIMIT, WINDOW, PROXY_LIMIT - 1);
        expectRateLimited(await proxy(alice), PROXY_LIMIT, WINDOW);
      });
    });

    it.each([
      ['a hop count (1)', '1'],
      ['an address list naming the proxy (loopback)', 'loopback'],
    ])(
      'TRUST_PROXY as %s: clients are told apart by the address the proxy appended; a spoofed address in front does not help',
      async (_what, trustProxy) => {
        await withApp(proxySettings(trustProxy), async (app) => {
          const proxy = viaProxy(app, freshLoopback());
          const [alice, bob] = [freshPublicAddress(), freshPublicAddress()];
          // Alice sends her own X-Forwarded-For with a new made-up address each time; the proxy appends hers.
          for (let i = 0; i < PROXY_LIMIT; i++)
            expectCounted(await proxy(`${freshPublicAddress()}, ${alice}`), PROXY_LIMIT, WINDOW, PROXY_LIMIT - 1 - i);
          expectRateLimited(await proxy(`${freshPublicAddress()}, ${alice}`), PROXY_LIMIT, WINDOW);
          expectRateLimited(await proxy(alice), PROXY_LIMIT, WINDOW);
          expectCounted(await proxy(bob), PROXY_LIMIT, WINDOW, PROXY_LIMIT - 1);
          expectCounted(await proxy(`${alice}, ${bob}`), PROXY_LIMIT, WINDOW, PROXY_LIMIT - 2);
        });
      },
    );

    it('TRUST_PROXY as an address list that does not name the connection: X-Forwarded-For is ignored', async () => {
      await withApp(proxySettings('10.0.0.0/8, 192.168.0.1'), async (app) => {
        const from = freshLoopback();
        const proxy = viaProxy(app, from);
        for (let i = 0; i < PROXY_LIMIT; i++)
          expectCounted(await proxy(freshPublicAddress()), PROXY_LIMIT, WINDOW, PROXY_LIMIT - 1 - i);
        expectRateLimited(await proxy(freshPublicAddress()), PROXY_LIMIT, WINDOW);
        // While another connection address is a client of its own.
        expectCounted(await viaProxy(app, freshLoopback())(freshPublicAddress()), PROXY_LIMIT, WINDOW, PROXY_LIMIT - 1);
      });
    });
  });
});

describe('/trpc', () => {
  it('auth.login through /trpc counts in the auth tier, together with POST /auth/login', async () => {
    const c = clientOf(tiers.url, { from: freshLoopback() });
    const rest = await c('POST', '/auth/login', { body: WRONG_LOGIN() });
    expect(rest.status).toBe(401);
    expectCounted(rest, LIMIT.auth, WINDOW, 1);
    const viaTrpc = await c('POST', '/trpc/auth.login', { body: WRONG_LOGIN() });
    expect(viaTrpc.status).toBe(401);
    expect(viaTrpc.body.error.data.code).toBe('INVALID_CREDENTIALS');
    expectCounted(viaTrpc, LIMIT.auth, WINDOW, 0);

    const limited = await c('POST', '/trpc/auth.login', { body: WRONG_LOGIN() });
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toMatch(/^[1-3]$/);
    expect(limited.headers['ratelimit-policy']).toBe(`${LIMIT.auth};w=${WINDOW}`);
    expectRateLimited(await c('POST', '/auth/login', { body: WRONG_LOGIN() }), LIMIT.auth, WINDOW);
    // The default tier of the same client is untouched.
    expectCounted(await c('GET', '/trpc/demo.status'), LIMIT.default, WINDOW, LIMIT.default - 1);
  });

  it('a /trpc query counts in the tier of its REST route (demo.status and GET /demo/status share the default count)', async () => {
    const c = clientOf(tiers.url, { from: freshLoopback() });
    const answers = [
      await c('GET', '/trpc/demo.status'),
      await c('GET', '/demo/status'),
      await c('GET', '/trpc/demo.status'),
    ];
    answers.forEach((res, i) => {
      expect(res.status).toBe(200);
      expectCounted(res, LIMIT.default, WINDOW, LIMIT.default - 1 - i);
    });
    expect((await c('GET', '/trpc/demo.status')).status).toBe(429);
    expectRateLimited(await c('GET', '/demo/status'), LIMIT.default, WINDOW);
  });

  it('answers a limited /trpc call in the tRPC envelope (docs/decisions.md), so @trpc/client can read it', async () => {
    const c = clientOf(tiers.url, { from: freshLoopback() });
    for (let i = 0; i < LIMIT.auth; i++) await c('POST', '/trpc/auth.login', { body: WRONG_LOGIN() });
    const res = await c('POST', '/trpc/auth.login', { body: WRONG_LOGIN() });
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toMatch(/^[1-3]$/);
    expect(res.body, res.text).toMatchObject({
      error: {
        message: RATE_LIMIT_MESSAGE,
        data: { code: 'RATE_LIMITED', httpStatus: 429, requestId: res.headers['x-request-id'] },
      },
    });
  });

  it.each([
    ['sign-in attempts only', ['auth.login', 'auth.login', 'auth.login']],
    ['sign-in attempts behind a contact message', ['support.contact', 'auth.login', 'auth.login', 'auth.login']],
  ])('a /trpc batch of %s cannot make more sign-in attempts than the auth tier allows', async (_what, procedures) => {
    const c = clientOf(tiers.url, { from: freshLoopback() });
    const input = (p: string) =>
      p === 'auth.login' ? WRONG_LOGIN() : { name: 'Batch', email: uniqueEmail('rl-batch'), message: 'Hi there.' };
    const body = Object.fromEntries(procedures.map((p, i) => [String(i), input(p)]));
    const res = await c('POST', `/trpc/${procedures.join(',')}?batch=1`, { body });
    // Each sign-in that reached the password check answers INVALID_CREDENTIALS.
    const attempts = Array.isArray(res.body)
      ? res.body.filter((r: any) => r?.error?.data?.code === 'INVALID_CREDENTIALS').length
      : 0;
    expect(attempts, `${res.status} ${res.text.slice(0, 400)}`).toBeLessThanOrEqual(LIMIT.auth);
    // And the next sign-in of the client is refused: the batch spent (at least) the whole auth count.
    expectRateLimited(await c('POST', '/auth/login', { body: WRONG_LOGIN() }), LIMIT.auth, WINDOW);
  });

  it('serves a client whose URL ends in a slash (/trpc//auth.login), charging the auth tier as for /trpc/auth.login', async () => {
    const c = clientOf(tiers.url, { from: freshLoopback() });
    for (let i = 0; i < LIMIT.auth; i++) {
      const res = await c('POST', '/trpc//auth.login', { body: WRONG_LOGIN(), asIs: true });
      expect(res.body?.error?.data?.code, res.text).toBe('INVALID_CREDENTIALS');
      expectCounted(res, LIMIT.auth, WINDOW, LIMIT.auth - 1 - i);
    }
    expect((await c('POST', '/trpc//auth.login', { body: WRONG_LOGIN(), asIs: true })).status).toBe(429);
    expectRateLimited(await c('POST', '/auth/login', { body: WRONG_LOGIN() }), LIMIT.auth, WINDOW);
    expect((await c('GET', '/trpc//demo.status,demo.status?batch=1', { asIs: true })).status).toBe(200);
  });

  it.each([
    ['the prefix in capitals', '/TRPC/auth.login'],
    ['a segment before the procedure (tRPC takes the last one)', '/trpc/x/auth.login'],
    ['a percent-escape (tRPC decodes the name)', '/trpc/auth%2Elogin'],
  ])(
    'a sign-in sent to a /trpc path tRPC reads otherwise than the limiter (%s: %s) is refused before the limiter and the login',
    async (_what, path) => {
      const c = clientOf(tiers.url, { from: freshLoopback() });
      for (let i = 0; i < LIMIT.auth + 2; i++)
        expectPathRefused(await c('POST', path, { body: WRONG_LOGIN() }), 'trpc');
      const login = await c('POST', '/trpc/auth.login', { body: WRONG_LOGIN() });
      expect(login.body.error.data.code).toBe('INVALID_CREDENTIALS');
      expectCounted(login, LIMIT.auth, WINDOW, LIMIT.auth - 1);
    },
  );

  it('a batch of ten sign-ins whose commas are written %2C is refused, not run for one default point', async () => {
    const c = clientOf(tiers.url, { from: freshLoopback() });
    const calls = Array.from({ length: 10 }, () => 'auth.login');
    const body = Object.fromEntries(calls.map((_, i) => [String(i), WRONG_LOGIN()]));
    expectPathRefused(await c('POST', `/trpc/${calls.join('%2C')}?batch=1`, { body }), 'trpc');
    expectCounted(await c('POST', '/auth/login', { body: WRONG_LOGIN() }), LIMIT.auth, WINDOW, LIMIT.auth - 1);
  });
});

describe('RATE_LIMIT_ENABLED=false', () => {
  it('never answers 429 nor sends rate-limit headers, on any tier, with the same tiny limits configured', async () => {
    const c = clientOf(plain.url, { from: freshLoopback() });
    for (let i = 0; i < 12; i++) {
      const answers = await Promise.all([
        c('POST', '/auth/login', { body: WRONG_LOGIN() }),
        c('GET', '/demo/status'),
        c('POST', '/billing/webhooks/mock', {
          body: { id: `rl_off_${crypto.randomBytes(6).toString('hex')}`, type: 'rl.test' },
        }),
      ]);
      expect(answers.map((a) => a.status)).toEqual([401, 200, 200]);
      answers.forEach(expectNotLimited);
    }
  });
});

describe('Redis', () => {
  it('two instances with the same REDIS_URL share one count', async () => {
    const redis = await RedisServer.start();
    const settings = { ...LIMITED, RATE_LIMIT_MAX_REQUESTS: '4', TRUST_PROXY: 'false', REDIS_URL: redis.url };
    const [a, b] = await Promise.all([startApp(settings), startApp(settings)]);
    const from = freshLoopback();
    const [onA, onB] = [clientOf(a.url, { from }), clientOf(b.url, { from })];
    const sequence = [onA, onB, onA, onB];
    for (const [i, c] of sequence.entries()) {
      const res = await c('GET', '/demo/status');
      expect(res.status).toBe(200);
      expectCounted(res, 4, WINDOW, 3 - i);
    }
    expectRateLimited(await onA('GET', '/demo/status'), 4, WINDOW);
    expectRateLimited(await onB('GET', '/demo/status'), 4, WINDOW);
    // A signed-in user is one client across instances too.
    const u = await newUser('rl-redis');
    for (const [i, c] of sequence.entries())
      expectCounted(await c('GET', '/auth/me', { token: u.accessToken }), 4, WINDOW, 3 - i);
    expectRateLimited(await onB('GET', '/auth/me', { token: u.accessToken }), 4, WINDOW);
    await Promise.all([a.close(), b.close()]);
    await redis.stop();
  });

  it('many requests of one client at once: exactly the limit is served across two instances, each with its own remaining count', async () => {
    // Concurrent charges of one key are sent to Redis together (server/platform/rate-limit.ts): the count must stay
    // exact, and every answer must carry its own place in it.
    const redis = await RedisServer.start();
    const limit = 25;
    const settings = {
      ...LIMITED,
      RATE_LIMIT_WINDOW_SECONDS: '30',
      RATE_LIMIT_MAX_REQUESTS: String(limit),
      TRUST_PROXY: 'false',
      REDIS_URL: redis.url,
    };
    const [a, b] = await Promise.all([startApp(settings), startApp(settings)]);
    try {
      const u = await newUser('rl-burst');
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          send(i % 2 ? b.url : a.url, 'GET', '/auth/me', { token: u.accessToken, from: freshLoopback() }),
        ),
      );
      const served = answers.filter((r) => r.status === 200);
      const refused = answers.filter((r) => r.status !== 200);
      expect(served).toHaveLength(limit);
      for (const r of refused) expectRateLimited(r, limit, 30);
      const remaining = served
        .map((r) => Number(/remaining=(\d+)/.exec(String(r.headers.ratelimit))![1]))
        .sort((x, y) => x - y);
      expect(remaining).toEqual(Array.from({ length: limit }, (_, i) => i));
      expectRateLimited(await send(a.url, 'GET', '/auth/me', { token: u.accessToken }), limit, 30);
    } finally {
      await Promise.all([a.close(), b.close()]);
      await redis.stop();
    }
  });

  /** Requests on an app whose Redis has failed: served, fast, and still limited by the in-memory insurance. */
  async function expectServedAndLimitedWithoutRedis(app: TestApp, limit: number, windowSeconds: number) {
    const c = clientOf(app.url, { from: freshLoopback() });
    const answers: Answer[] = [];
    for (let i = 0; i < limit; i++) answers.push(await c('GET', '/demo/status'));
    answers.push(await c('GET', '/demo/status'));
    const u = await newUser('rl-noredis');
    const me = await c('GET', '/auth/me', { token: u.accessToken });
    const health = await c('GET', '/health');
    answers.push(me, health);

    for (const res of answers) {
      expect(res.status, res.text.slice(0, 300)).toBeLessThan(500);
      expect(res.ms, `answered in ${res.ms.toFixed(0)} ms`).toBeLessThan(1000);
    }
    // The design gives up on Redis after ~100 ms (not the connection's command timeout, 1 s by default).
    const sorted = answers.map((a) => a.ms).sort((x, y) => x - y);
    expect(
      sorted[Math.floor(sorted.length / 2)],
      `median of ${sorted.map((ms) => ms.toFixed(0)).join(', ')} ms`,
    ).toBeLessThan(400);
    answers.slice(0, limit).forEach((res, i) => {
      expect(res.status).toBe(200);
      expectCounted(res, limit, windowSeconds, limit - 1 - i);
    });
    expectRateLimited(answers[limit], limit, windowSeconds);
    expect(me.status).toBe(200);
    expect(health.status).toBe(200);
  }

  it.each([
    ['stopped (killed)', 'kill'],
    ['frozen (SIGSTOP: connected, answers nothing)', 'freeze'],
  ] as const)(
    'with Redis %s mid-run, requests are served in well under a second and the in-memory insurance still answers 429',
    async (_what, how) => {
      const redis = await RedisServer.start();
      const windowSeconds = 30;
      const limit = 3;
      const app = await startApp({
        ...LIMITED,
        RATE_LIMIT_WINDOW_SECONDS: String(windowSeconds),
        RATE_LIMIT_MAX_REQUESTS: String(limit),
        TRUST_PROXY: 'false',
        REDIS_URL: redis.url,
      });
      try {
        // Redis is in use before the failure: the count is shared with a second instance.
        const from = freshLoopback();
        const twin = await startApp({
          ...LIMITED,
          RATE_LIMIT_WINDOW_SECONDS: String(windowSeconds),
          RATE_LIMIT_MAX_REQUESTS: String(limit),
          TRUST_PROXY: 'false',
          REDIS_URL: redis.url,
        });
        expectCounted(await send(app.url, 'GET', '/demo/status', { from }), limit, windowSeconds, limit - 1);
        expectCounted(await send(twin.url, 'GET', '/demo/status', { from }), limit, windowSeconds, limit - 2);
        await twin.close();

        if (how === 'kill') await redis.stop();
        else redis.freeze();
        await expectServedAndLimitedWithoutRedis(app, limit, windowSeconds);
      } finally {
        await redis.stop();
        await app.close();
      }
    },
  );
});
