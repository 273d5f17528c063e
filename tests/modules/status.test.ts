// Public status checks (spec: "Other named routes"; Limits > Rate limiting): GET /search/status and
// GET /security/status answer anyone, describe the settings the app was started with (rate limiting and
// its tiers, proxy trust, captcha, password policy, token lifetimes), are never rate limited, and never
// carry a secret of the configuration.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import {
  TEST_ADMIN,
  TEST_DEMO_ADMIN,
  TEST_JWT_ACCESS_SECRET,
  TEST_JWT_REFRESH_SECRET,
  startTestApp,
  type TestApp,
} from '../helpers/app.js';
import { expectError, registerAndLogin } from '../helpers/http.js';
import { ledger } from '../helpers/secret-ledger.js';

const hex = () => crypto.randomBytes(4).toString('hex');

/** Secrets of the configurations below: none may appear in any answer or log line. */
const SECRETS = {
  WEBHOOK_SECRET_ENCRYPTION_KEY: 'test-webhook-encryption-key-0123456789abcdef',
  METRICS_TOKEN: `metrics-${crypto.randomBytes(16).toString('hex')}`,
  PROVIDER_A_API_KEY: `sk-test-${crypto.randomBytes(16).toString('hex')}`,
  PROCESSOR_A_SECRET_KEY: `sk_test_${crypto.randomBytes(16).toString('hex')}`,
  PROCESSOR_A_WEBHOOK_SECRET: `whsec_${crypto.randomBytes(16).toString('hex')}`,
  LICENSE_KEY: `lic-${crypto.randomBytes(16).toString('hex')}`,
  S3_SECRET_ACCESS_KEY: `s3-${crypto.randomBytes(16).toString('hex')}`,
};
const ALL_SECRETS: Record<string, string> = {
  ...SECRETS,
  JWT_ACCESS_SECRET: TEST_JWT_ACCESS_SECRET,
  JWT_REFRESH_SECRET: TEST_JWT_REFRESH_SECRET,
  SEED_ADMIN_PASSWORD: TEST_ADMIN.password,
  SEED_DEMO_ADMIN_PASSWORD: TEST_DEMO_ADMIN.password,
};

/** Defaults of the test environment: rate limiting off, TRUST_PROXY unset (true: one hop). */
let plain: TestApp;
/** Rate limiting on with custom tiers, a hop count, custom token lifetimes, and every secret set. */
let tuned: TestApp;
/** A list of proxy addresses. */
let listed: TestApp;
/** TRUST_PROXY=false. */
let untrusting: TestApp;
/** REDIS_URL set: counters shared in Redis. */
let redis: TestApp;

beforeAll(async () => {
  for (const [name, value] of Object.entries(ALL_SECRETS)) ledger.sent(value, name);
  [plain, tuned, listed, untrusting, redis] = await Promise.all([
    startTestApp({ TRUST_PROXY: undefined }),
    startTestApp({
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_WINDOW_SECONDS: '30',
      RATE_LIMIT_MAX_REQUESTS: '3',
      RATE_LIMIT_AUTH_MAX_REQUESTS: '7',
      RATE_LIMIT_UPLOAD_MAX_REQUESTS: '9',
      RATE_LIMIT_PUBLIC_API_MAX_REQUESTS: '301',
      RATE_LIMIT_WEBHOOK_MAX_REQUESTS: '61',
      TRUST_PROXY: '1',
      JWT_ACCESS_TTL: '10m',
      JWT_REFRESH_TTL: '7d',
      REFRESH_TOKEN_REUSE_GRACE_SECONDS: '0',
      AI_PROVIDER: 'PROVIDER_A',
      BILLING_PROVIDER: 'PROCESSOR_A',
      STORAGE_PROVIDER: 'S3',
      S3_BUCKET: 'status-test-bucket',
      S3_ACCESS_KEY_ID: 'status-test-access-key-id',
      ...SECRETS,
    }),
    startTestApp({ TRUST_PROXY: '10.0.0.0/8, loopback' }),
    startTestApp({
      TRUST_PROXY: 'false',
      JWT_ACCESS_TTL: '900',
      JWT_REFRESH_TTL: '12h',
      REFRESH_TOKEN_REUSE_GRACE_SECONDS: '25',
    }),
    startTestApp({ REDIS_URL: inject('redisUrl'), RATE_LIMIT_ENABLED: 'true' }),
  ]);
});
afterAll(async () => {
  await Promise.all([plain, tuned, listed, untrusting, redis].map((a) => a?.close()));
});

async function securityOf(app: TestApp) {
  const res = await app.api('GET', '/security/status');
  expect(res.status, res.text).toBe(200);
  return res.body as Record<string, any>;
}

describe('GET /search/status', () => {
  it('answers anyone: enabled, the Postgres full-text engine and what it covers', async () => {
    const res = await plain.api('GET', '/search/status');
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ enabled: true, engine: 'postgres-full-text', sources: expect.any(Array) });
    expect([...res.body.sources].sort()).toEqual(['ai_generations', 'ai_templates', 'members']);
  });

  it('answers a caller with a stale or invalid token too (it is public)', async () => {
    for (const path of ['/search/status', '/security/status']) {
      const res = await plain.api('GET', path, { token: 'expired-or-garbage-token' });
      expect(res.status, `${path}: ${res.text}`).toBe(200);
    }
  });

  it('answers the same to a signed-in user', async () => {
    const u = await registerAndLogin(plain.api, { prefix: 'status-search' });
    const anon = await plain.api('GET', '/search/status');
    const signed = await plain.api('GET', '/search/status', { token: u.accessToken });
    expect(signed.status).toBe(200);
    expect(signed.body).toEqual(anon.body);
  });
});

describe('GET /security/status', () => {
  it('answers anyone, with rate limiting, proxy trust, captcha, password policy and token sections', async () => {
    const s = await securityOf(plain);
    expect(Object.keys(s).sort()).toEqual(['captcha', 'passwordPolicy', 'rateLimiting', 'tokens', 'trustProxy']);
  });

  it('with the test defaults: no rate limiting, in memory, the default tiers, TRUST_PROXY one hop', async () => {
    const s = await securityOf(plain);
    expect(s.rateLimiting).toEqual({
      enabled: false,
      windowSeconds: 60,
      store: 'memory',
      tiers: { default: 120, auth: 20, contact: 120, upload: 20, publicApi: 300, webhook: 60 },
    });
    // TRUST_PROXY unset is `true`, which trusts one hop: the right-most X-Forwarded-For entry.
    expect(s.trustProxy).toBe('1 hop(s)');
  });

  it('with the tuned settings: rate limiting on, its window and every tier as set (contact uses the default tier value)', async () => {
    const s = await securityOf(tuned);
    expect(s.rateLimiting).toEqual({
      enabled: true,
      windowSeconds: 30,
      store: 'memory',
      tiers: { default: 3, auth: 7, contact: 3, upload: 9, publicApi: 301, webhook: 61 },
    });
  });

  it('with REDIS_URL, says the counters are kept in Redis', async () => {
    const s = await securityOf(redis);
    expect(s.rateLimiting).toMatchObject({ enabled: true, store: 'redis' });
    expect(JSON.stringify(s)).not.toContain(inject('redisUrl'));
  });

  it.each([
    ['a hop count', () => tuned, '1 hop(s)'],
    ['a list of proxy addresses', () => listed, 'addresses: 10.0.0.0/8, loopback'],
    ['false', () => untrusting, 'false'],
  ])('describes TRUST_PROXY as %s', async (_label, app, expected) => {
    expect((await securityOf(app())).trustProxy).toBe(expected);
  });

  it('says no captcha is configured (the service has no captcha setting)', async () => {
    for (const app of [plain, tuned]) expect((await securityOf(app)).captcha).toEqual({ configured: false });
  });

  it('states the password policy that registration enforces: 8 characters to 72 bytes, a letter and a number', async () => {
    const s = await securityOf(plain);
    expect(s.passwordPolicy).toEqual({ minCharacters: 8, maxBytes: 72, requiresLetter: true, requiresNumber: true });
    // The policy it states is the one applied.
    const register = (password: string) =>
      plain.api('POST', '/auth/register', { body: { email: `policy-${hex()}@tests.local`, password, name: 'Policy' } });
    expectError(await register('Short-1'), 400, 'WEAK_PASSWORD');
    expectError(await register('no-digits-here'), 400, 'WEAK_PASSWORD');
    expectError(await register('1234567890'), 400, 'WEAK_PASSWORD');
    expectError(await register(`${'a'.repeat(72)}1`), 400, 'WEAK_PASSWORD');
    expect((await register('Eight-ch1')).status).toBe(201);
  });

  it('gives the token lifetimes of the settings, in seconds, with refresh rotation', async () => {
    expect((await securityOf(plain)).tokens).toEqual({
      accessTokenTtlSeconds: 900,
      refreshTokenTtlSeconds: 30 * 86_400,
      refreshRotation: true,
      reuseGraceSeconds: 10,
    });
    expect((await securityOf(tuned)).tokens).toEqual({
      accessTokenTtlSeconds: 600,
      refreshTokenTtlSeconds: 7 * 86_400,
      refreshRotation: true,
      reuseGraceSeconds: 0,
    });
    expect((await securityOf(untrusting)).tokens).toEqual({
      accessTokenTtlSeconds: 900,
      refreshTokenTtlSeconds: 12 * 3600,
      refreshRotation: true,
      reuseGraceSeconds: 25,
    });
  });

  it('states an access-token lifetime that the issued tokens really have', async () => {
    const u = await registerAndLogin(tuned.api, { prefix: 'status-ttl' });
    const claims = JSON.parse(Buffer.from(u.accessToken.split('.')[1], 'base64url').toString('utf8')) as {
      iat: number;
      exp: number;
    };
    expect(claims.exp - claims.iat).toBe((await securityOf(tuned)).tokens.accessTokenTtlSeconds);
  });
});

describe('rate limiting of the status routes', () => {
  it('never limits them, while an ordinary route of the same client is limited after RATE_LIMIT_MAX_REQUESTS', async () => {
    // TRUST_PROXY=1: the last X-Forwarded-For address is the client. A fresh one for this test.
    const client = {
      'x-forwarded-for': `203.0.113.${crypto.randomInt(1, 250)}, 198.51.100.${crypto.randomInt(1, 250)}`,
    };
    for (let i = 0; i < 6; i++) {
      const search = await tuned.api('GET', '/search/status', { headers: client });
      const security = await tuned.api('GET', '/security/status', { headers: client });
      expect([search.status, security.status], `round ${i + 1}`).toEqual([200, 200]);
      expect(search.headers.get('retry-after')).toBeNull();
    }
    const limited = [];
    for (let i = 0; i < 4; i++) limited.push((await tuned.api('GET', '/demo/status', { headers: client })).status);
    expect(limited).toEqual([200, 200, 200, 429]);
    // Still answered after the client was limited elsewhere.
    expect((await tuned.api('GET', '/security/status', { headers: client })).status).toBe(200);
  });
});

describe('no secret of the configuration in the answers', () => {
  it('neither status route carries a JWT secret, key, token, password or the database URL', async () => {
    for (const app of [plain, tuned, listed, untrusting, redis]) {
      for (const path of ['/search/status', '/security/status']) {
        const res = await app.api('GET', path);
        expect(res.status).toBe(200);
        for (const [name, value] of Object.entries(ALL_SECRETS))
          expect(res.text, `${name} in ${path}`).not.toContain(value);
        expect(res.text).not.toContain(app.config.DATABASE_URL ?? 'postgres://');
        expect(res.text).not.toMatch(/postgres:\/\/|redis:\/\//);
      }
    }
  });

  it('the tuned app started with every secret and wrote none of them to its log', async () => {
    const log = tuned.logs.join('\n');
    expect(tuned.logs.length).toBeGreaterThan(0);
    for (const [name, value] of Object.entries(ALL_SECRETS)) expect(log, name).not.toContain(value);
  });
});
