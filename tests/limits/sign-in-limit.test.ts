// Sign-in limits that a client cannot step around (docs/decisions.md "Rate limiting and monitoring"):
// the client address is the right-most X-Forwarded-For entry (what the nearest proxy saw, TRUST_PROXY=true
// trusting one hop), never one the client wrote; and failed sign-ins are counted per account as well, so
// an attacker who does change address (many clients, a botnet) still gets RATE_LIMIT_AUTH_MAX_REQUESTS
// guesses per account and window, on REST and /trpc alike.
//
// Every app here has its own counts; each test uses accounts and addresses of its own. Redis tests use
// redis-server processes of their own, never the suite's shared Redis.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { clockAhead } from '../helpers/clock.js';
import { STRONG_PASSWORD, registerAndLogin, uniqueEmail, type Session } from '../helpers/http.js';
import {
  RATE_LIMIT_MESSAGE,
  RedisServer,
  expectCounted,
  expectNotLimited,
  expectRateLimited,
  freshLoopback,
  freshPublicAddress,
  send,
  type Answer,
} from './helpers.js';

const WRONG = 'Wrong-pass-999';

const apps: TestApp[] = [];
async function startApp(settings: Record<string, string | undefined>): Promise<TestApp> {
  const app = await startTestApp(settings);
  apps.push(app);
  return app;
}

/** No limits: accounts are registered here (every app of the file shares the run's database). */
let plain: TestApp;
beforeAll(async () => {
  plain = await startApp({ RATE_LIMIT_ENABLED: 'false' });
});

afterAll(async () => {
  await RedisServer.stopAll();
  await Promise.allSettled(apps.map((a) => a.close()));
});

/** A new account (password STRONG_PASSWORD), registered without spending any limited count. */
const account = (prefix: string): Promise<Session> => registerAndLogin(plain.api, { prefix });

type Via = 'rest' | 'trpc';
/** A sign-in through REST or /trpc from `from`, with X-Forwarded-For `xff` (when given). */
function signIn(app: TestApp, how: Via, email: string, password: string, opts: { from?: string; xff?: string } = {}) {
  const headers = opts.xff ? { 'x-forwarded-for': opts.xff } : undefined;
  const path = how === 'rest' ? '/auth/login' : '/trpc/auth.login';
  return send(app.url, 'POST', path, { from: opts.from, headers, body: { email, password } });
}

/** The 429 of /trpc: tRPC's envelope with RATE_LIMITED, and the same Retry-After and RateLimit headers as REST. */
function expectTrpcRateLimited(res: Answer, limit: number, windowSeconds: number) {
  const ctx = `${res.status} ${res.text.slice(0, 300)}`;
  expect(res.status, ctx).toBe(429);
  expect(res.body, ctx).toEqual({
    error: {
      message: RATE_LIMIT_MESSAGE,
      code: -32029,
      data: { code: 'RATE_LIMITED', httpStatus: 429, requestId: res.headers['x-request-id'], path: 'auth.login' },
    },
  });
  const seconds = Number(res.headers['retry-after']);
  expect(seconds).toBeGreaterThanOrEqual(1);
  expect(seconds).toBeLessThanOrEqual(windowSeconds);
  expect(res.headers['ratelimit-policy']).toBe(`${limit};w=${windowSeconds}`);
  expect(res.headers.ratelimit).toBe(`limit=${limit}, remaining=0, reset=${seconds}`);
}

const statusesOf = (answers: Answer[]) => answers.map((a) => a.status);

describe('with the default settings (TRUST_PROXY=true, 20 sign-ins a minute)', () => {
  const LIMIT = 20;
  const WINDOW = 60;
  let app: TestApp;
  beforeAll(async () => {
    app = await startApp({ RATE_LIMIT_ENABLED: 'true', TRUST_PROXY: undefined });
  });

  it('40 sign-ins of one account, each with another X-Forwarded-For, get 429 after the limit', async () => {
    const victim = await account('xff-victim');
    const from = freshLoopback();
    const answers: Answer[] = [];
    for (let i = 0; i < 40; i++) {
      const xff = freshPublicAddress();
      answers.push(await signIn(app, i % 2 ? 'trpc' : 'rest', victim.email, WRONG, { from, xff }));
    }
    expect(statusesOf(answers)).toEqual([...Array(LIMIT).fill(401), ...Array(40 - LIMIT).fill(429)]);
    for (const res of answers.slice(LIMIT)) {
      if (res.body?.error) expectTrpcRateLimited(res, LIMIT, WINDOW);
      else expectRateLimited(res, LIMIT, WINDOW);
    }
  });

  it('40 sign-ins of many accounts behind one proxy, the client writing its own X-Forwarded-For: limited', async () => {
    const proxy = freshLoopback();
    const client = freshPublicAddress();
    const answers: Answer[] = [];
    for (let i = 0; i < 40; i++) {
      // The client's own header, then what the proxy saw appended to it.
      const xff = `${freshPublicAddress()}, ${client}`;
      answers.push(await signIn(app, 'rest', uniqueEmail('xff-stuffing'), WRONG, { from: proxy, xff }));
    }
    expect(statusesOf(answers)).toEqual([...Array(LIMIT).fill(401), ...Array(40 - LIMIT).fill(429)]);
    for (const res of answers.slice(LIMIT)) expectRateLimited(res, LIMIT, WINDOW);
  });
});

describe('the client address is the right-most X-Forwarded-For entry (TRUST_PROXY=true trusts one hop)', () => {
  const LIMIT = 3;
  const WINDOW = 30;
  const settings = {
    RATE_LIMIT_ENABLED: 'true',
    RATE_LIMIT_AUTH_MAX_REQUESTS: String(LIMIT),
    RATE_LIMIT_WINDOW_SECONDS: String(WINDOW),
  };

  it.each([
    ['true', 'true'],
    ['unset (true)', undefined],
  ])('TRUST_PROXY %s: spoofed left-most entries change nothing; another right-most is another', async (_, trust) => {
    const app = await startApp({ ...settings, TRUST_PROXY: trust });
    const proxy = freshLoopback();
    const [alice, bob] = [freshPublicAddress(), freshPublicAddress()];
    const attempt = (xff: string) => signIn(app, 'rest', uniqueEmail('rightmost'), WRONG, { from: proxy, xff });
    for (let i = 0; i < LIMIT; i++) {
      const res = await attempt(`${freshPublicAddress()}, ${freshPublicAddress()}, ${alice}`);
      expect(res.status).toBe(401);
      expectCounted(res, LIMIT, WINDOW, LIMIT - 1 - i);
    }
    expectRateLimited(await attempt(`${freshPublicAddress()}, ${alice}`), LIMIT, WINDOW);
    expectRateLimited(await attempt(alice), LIMIT, WINDOW);
    // Bob's address written in front by Alice's client does not make her Bob; Bob is the one the proxy saw.
    expectRateLimited(await attempt(`${bob}, ${alice}`), LIMIT, WINDOW);
    const other = await attempt(`${alice}, ${bob}`);
    expect(other.status).toBe(401);
    expectCounted(other, LIMIT, WINDOW, LIMIT - 1);
  });

  it('the request log line and audit entry of a failed sign-in carry the right-most entry', async () => {
    const app = await startApp({ ...settings, TRUST_PROXY: undefined });
    const [spoofed, seen] = [freshPublicAddress(), freshPublicAddress()];
    const email = uniqueEmail('rightmost-audit');
    const res = await signIn(app, 'rest', email, WRONG, { from: freshLoopback(), xff: `${spoofed}, ${seen}` });
    expect(res.status).toBe(401);
    const requestId = res.headers['x-request-id'];
    const lines = app.logs.map((l) => JSON.parse(l) as Record<string, unknown>);
    const line = lines.find((l) => l.requestId === requestId && 'status' in l);
    expect(line?.ip).toBe(seen);
    const audit = await app.deps.db
      .selectFrom('audit_logs')
      .select(['ip', 'request_id'])
      .where('action', '=', 'auth.login_failed')
      .where('request_id', '=', String(requestId))
      .execute();
    expect(audit).toEqual([{ ip: seen, request_id: requestId }]);
  });

  it('GET /security/status describes TRUST_PROXY=true as the one hop it trusts', async () => {
    const app = await startApp({ TRUST_PROXY: 'true' });
    const res = await app.api('GET', '/security/status');
    expect(res.status).toBe(200);
    expect(res.body.trustProxy).toBe('1 hop(s)');
  });
});

describe('failed sign-ins per account', () => {
  const LIMIT = 3;
  const WINDOW = 5;
  // TRUST_PROXY=1: every request comes from another address (a new right-most entry), so the address
  // count never refuses anything here; only the account's count can.
  const settings = {
    RATE_LIMIT_ENABLED: 'true',
    RATE_LIMIT_AUTH_MAX_REQUESTS: String(LIMIT),
    RATE_LIMIT_WINDOW_SECONDS: String(WINDOW),
    TRUST_PROXY: '1',
  };
  let app: TestApp;
  beforeAll(async () => {
    app = await startApp(settings);
  });
  /** A sign-in from a new address each time. */
  const fromAnywhere = (how: Via, email: string, password: string) =>
    signIn(app, how, email, password, { from: freshLoopback(), xff: freshPublicAddress() });

  it('past the limit of failures for one e-mail, each from another address: 429 for it, 401 for others', async () => {
    const [victim, bystander] = await Promise.all([account('acct-victim'), account('acct-bystander')]);
    // REST and /trpc count together; the address is normalised as sign-in reads it (case).
    const tries: Array<[Via, string]> = [
      ['rest', victim.email],
      ['trpc', victim.email.toUpperCase()],
      ['rest', victim.email],
    ];
    for (const [how, email] of tries) expect((await fromAnywhere(how, email, WRONG)).status).toBe(401);

    expectRateLimited(await fromAnywhere('rest', victim.email, WRONG), LIMIT, WINDOW);
    expectTrpcRateLimited(await fromAnywhere('trpc', victim.email, WRONG), LIMIT, WINDOW);
    // Held for the window, whoever tries and with whatever password: the right one too.
    const held = await fromAnywhere('rest', victim.email.toUpperCase(), STRONG_PASSWORD);
    expectRateLimited(held, LIMIT, WINDOW);
    expect(held.text).not.toContain('accessToken');

    const other = await fromAnywhere('rest', bystander.email, WRONG);
    expect(other.status, other.text).toBe(401);
    expect(other.body.code).toBe('INVALID_CREDENTIALS');
    expect((await fromAnywhere('trpc', bystander.email, STRONG_PASSWORD)).status).toBe(200);
  });

  it('counts an unknown e-mail the same way (no account is needed to be held, and none is revealed)', async () => {
    const nobody = uniqueEmail('acct-nobody');
    for (let i = 0; i < LIMIT; i++) expect((await fromAnywhere('rest', nobody, WRONG)).status).toBe(401);
    expectRateLimited(await fromAnywhere('rest', nobody, WRONG), LIMIT, WINDOW);
  });

  it('lets the account sign in again once the window has passed', async () => {
    const victim = await account('acct-window');
    for (let i = 0; i < LIMIT; i++) await fromAnywhere('rest', victim.email, WRONG);
    const retryAfter = expectRateLimited(await fromAnywhere('rest', victim.email, STRONG_PASSWORD), LIMIT, WINDOW);
    // Past the window by the limiter's clock (in memory, in this process: Date moved ahead).
    const res = await clockAhead(retryAfter * 1000 + 300, () => fromAnywhere('rest', victim.email, STRONG_PASSWORD));
    expect(res.status, res.text).toBe(200);
  });

  it('counts only failures, and a success does not clear them: the owner signing in gives no new guesses', async () => {
    const victim = await account('acct-success');
    for (let i = 0; i < LIMIT - 1; i++) expect((await fromAnywhere('rest', victim.email, WRONG)).status).toBe(401);
    // More successes than the limit: none is counted.
    for (let i = 0; i < LIMIT + 2; i++) {
      expect((await fromAnywhere(i % 2 ? 'trpc' : 'rest', victim.email, STRONG_PASSWORD)).status).toBe(200);
    }
    // The failures before them still count: one more failure reaches the limit.
    expect((await fromAnywhere('rest', victim.email, WRONG)).status).toBe(401);
    expectRateLimited(await fromAnywhere('rest', victim.email, WRONG), LIMIT, WINDOW);
  });

  it('many failures of one account at once, from many addresses: no more than the limit are tried', async () => {
    const victim = await account('acct-burst');
    const answers = await Promise.all(Array.from({ length: 15 }, () => fromAnywhere('rest', victim.email, WRONG)));
    expect(answers.filter((a) => a.status === 401)).toHaveLength(LIMIT);
    for (const res of answers.filter((a) => a.status !== 401)) expectRateLimited(res, LIMIT, WINDOW);
  });

  it('is off with RATE_LIMIT_ENABLED=false', async () => {
    const off = await startApp({ ...settings, RATE_LIMIT_ENABLED: 'false' });
    const victim = await account('acct-off');
    for (let i = 0; i < LIMIT + 5; i++) {
      const res = await signIn(off, 'rest', victim.email, WRONG, { from: freshLoopback() });
      expect(res.status).toBe(401);
      expectNotLimited(res);
    }
    expect((await signIn(off, 'rest', victim.email, STRONG_PASSWORD)).status).toBe(200);
  });
});

describe('failed sign-ins per account, in Redis', () => {
  const LIMIT = 3;
  const WINDOW = 30;
  const settingsFor = (redis: RedisServer) => ({
    RATE_LIMIT_ENABLED: 'true',
    RATE_LIMIT_AUTH_MAX_REQUESTS: String(LIMIT),
    RATE_LIMIT_WINDOW_SECONDS: String(WINDOW),
    TRUST_PROXY: '1',
    REDIS_URL: redis.url,
  });

  it('two instances with the same REDIS_URL share the count of an account', async () => {
    const redis = await RedisServer.start();
    const [a, b] = await Promise.all([startApp(settingsFor(redis)), startApp(settingsFor(redis))]);
    const victim = await account('acct-redis');
    const on = (app: TestApp, how: Via, password: string) =>
      signIn(app, how, victim.email, password, { from: freshLoopback(), xff: freshPublicAddress() });
    const failures = [await on(a, 'rest', WRONG), await on(b, 'trpc', WRONG), await on(a, 'rest', WRONG)];
    expect(statusesOf(failures)).toEqual([401, 401, 401]);
    expectRateLimited(await on(b, 'rest', STRONG_PASSWORD), LIMIT, WINDOW);
    expectTrpcRateLimited(await on(a, 'trpc', WRONG), LIMIT, WINDOW);
    // Redis holds no e-mail address: the account's key is a digest of it.
    const keys = await redisKeys(redis);
    expect(keys.filter((k) => k.startsWith('rl:auth-account:'))).toHaveLength(1);
    expect(keys.join('\n')).not.toContain(victim.email);
  });

  it('with Redis frozen, sign-ins answer in well under a second and the in-memory insurance still counts', async () => {
    const redis = await RedisServer.start();
    const app = await startApp(settingsFor(redis));
    const victim = await account('acct-frozen');
    redis.freeze();
    const answers: Answer[] = [];
    for (let i = 0; i <= LIMIT; i++) {
      const from = { from: freshLoopback(), xff: freshPublicAddress() };
      answers.push(await signIn(app, 'rest', victim.email, WRONG, from));
    }
    expect(statusesOf(answers)).toEqual([...Array(LIMIT).fill(401), 429]);
    expectRateLimited(answers[LIMIT], LIMIT, WINDOW);
    for (const res of answers) expect(res.ms, `answered in ${res.ms.toFixed(0)} ms`).toBeLessThan(1000);
  });
});

/** Every key of a redis-server of ours. */
async function redisKeys(redis: RedisServer): Promise<string[]> {
  const { Redis } = await import('ioredis');
  const conn = new Redis(redis.url);
  try {
    return await conn.keys('*');
  } finally {
    conn.disconnect();
  }
}
