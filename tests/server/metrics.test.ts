import crypto from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { TEST_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, login, registerAndLogin, type RequestOptions, type Session } from '../helpers/http.js';
import { ledger } from '../helpers/secret-ledger.js';
import { Metrics, QUEUE_READ_TIMEOUT_MS, type QueueCounts } from '../../server/platform/metrics.js';
import { WEBHOOK_QUEUE } from '../../jobs/queue.js';

const hex = (bytes = 8) => crypto.randomBytes(bytes).toString('hex');
const METRICS_TOKEN = `metrics-canary-${hex(16)}`;

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition. */
function parse(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!m) throw new Error(`not an exposition line: ${line}`);
      const labels: Record<string, string> = {};
      for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2]!;
      return { name: m[1], labels, value: Number(m[3]) };
    });
}

/** Samples of `name` whose labels include `labels`. */
const find = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

const valueOf = (samples: Sample[], name: string, labels: Record<string, string> = {}) => {
  const found = find(samples, name, labels);
  if (found.length !== 1) throw new Error(`expected one ${name} ${JSON.stringify(labels)}, found ${found.length}`);
  return found[0].value;
};

async function scrape(app: TestApp) {
  const res = await app.api('GET', '/metrics', { token: METRICS_TOKEN });
  expect(res.status, res.text.slice(0, 300)).toBe(200);
  return { text: res.text, samples: parse(res.text), res };
}

describe('GET /metrics without METRICS_TOKEN', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ METRICS_TOKEN: undefined });
  });
  afterAll(() => app?.close());

  it('is an unknown route: 404 NOT_FOUND in the standard error body, with or without a bearer', async () => {
    expectError(await app.api('GET', '/metrics'), 404, 'NOT_FOUND');
    expectError(await app.api('GET', '/metrics', { token: METRICS_TOKEN }), 404, 'NOT_FOUND');
  });
});

describe('GET /metrics with METRICS_TOKEN', () => {
  let app: TestApp;
  let admin: Session;
  let user: Session;
  beforeAll(async () => {
    app = await startTestApp({ METRICS_TOKEN });
    admin = await login(app.api, TEST_ADMIN.email, TEST_ADMIN.password);
    user = await registerAndLogin(app.api, { prefix: 'metrics' });
  });
  afterAll(() => app?.close());

  it('answers 401 UNAUTHORIZED in the standard error body without a bearer, with a wrong one, or another scheme', async () => {
    const attempts: RequestOptions[] = [
      {},
      { headers: { authorization: `Bearer wrong-${hex()}` } },
      { headers: { authorization: `Bearer ${METRICS_TOKEN}x` } },
      { headers: { authorization: `Bearer ${METRICS_TOKEN.slice(0, -1)}` } },
      { headers: { authorization: `Basic ${Buffer.from(`metrics:${METRICS_TOKEN}`).toString('base64')}` } },
      { headers: { 'x-api-key': METRICS_TOKEN } },
      { token: user.accessToken },
    ];
    for (const opts of attempts) {
      const res = await app.api('GET', '/metrics', opts);
      const body = expectError(res, 401, 'UNAUTHORIZED');
      expect(body.message).toMatch(/metrics token/);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(res.text).not.toContain('http_requests_total');
    }
  });

  it('answers 200 in the Prometheus text format with the right bearer', async () => {
    const { res, text, samples } = await scrape(app);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(text).toContain('# TYPE http_requests_total counter');
    expect(text).toContain('# TYPE http_request_duration_seconds histogram');
    expect(text).toContain('# TYPE rate_limit_rejections_total counter');
    // Node's process metrics come along.
    expect(find(samples, 'process_cpu_user_seconds_total')).toHaveLength(1);
    expect(find(samples, 'nodejs_heap_size_used_bytes')).toHaveLength(1);
  });

  it('counts requests by route template, method and status, never by raw id', async () => {
    const own = await app.api('GET', `/workspaces/${user.workspaceId}`, { token: user.accessToken });
    expect(own.status).toBe(200);
    const otherId = crypto.randomUUID();
    const other = await app.api('GET', `/workspaces/${otherId}`, { token: user.accessToken });
    expect(other.status).toBeGreaterThanOrEqual(400);
    for (let i = 0; i < 2; i++)
      expect((await app.api('GET', '/auth/me', { token: user.accessToken })).status).toBe(200);

    const { text, samples } = await scrape(app);
    const route = '/workspaces/{workspaceId}';
    expect(valueOf(samples, 'http_requests_total', { method: 'GET', route, status: '200' })).toBe(1);
    expect(valueOf(samples, 'http_requests_total', { method: 'GET', route, status: String(other.status) })).toBe(1);
    expect(valueOf(samples, 'http_requests_total', { method: 'GET', route: '/auth/me', status: '200' })).toBe(2);
    // The registration and login of beforeAll, by their templates too.
    expect(
      valueOf(samples, 'http_requests_total', { method: 'POST', route: '/auth/register', status: '201' }),
    ).toBeGreaterThanOrEqual(1);
    for (const raw of [user.workspaceId, otherId, user.userId, user.email]) expect(text).not.toContain(raw);
    // Every route label is a template, a /trpc procedure or "(unmatched)".
    for (const s of find(samples, 'http_requests_total'))
      expect(s.labels.route).toMatch(/^(\/[a-z0-9\-./{}]*|\(unmatched\))$/i);
  });

  it('measures durations in a histogram with buckets, sum and count per route', async () => {
    await app.api('GET', `/workspaces/${user.workspaceId}/members`, { token: user.accessToken });
    const { samples } = await scrape(app);
    const labels = { method: 'GET', route: '/workspaces/{workspaceId}/members', status: '200' };
    expect(valueOf(samples, 'http_request_duration_seconds_count', labels)).toBe(1);
    const sum = valueOf(samples, 'http_request_duration_seconds_sum', labels);
    expect(sum).toBeGreaterThan(0);
    expect(sum).toBeLessThan(10);
    const buckets = find(samples, 'http_request_duration_seconds_bucket', labels);
    expect(buckets.map((b) => b.labels.le)).toEqual([
      '0.005',
      '0.01',
      '0.025',
      '0.05',
      '0.1',
      '0.25',
      '0.5',
      '1',
      '2.5',
      '5',
      '10',
      '+Inf',
    ]);
    expect(buckets.at(-1)!.value).toBe(1);
  });

  it('labels unknown paths "(unmatched)" and /trpc calls by procedure, so no path segment reaches a label', async () => {
    const segment = `tok${hex(12)}`;
    const shortId = hex(3);
    expectError(await app.api('GET', `/no-such-route/${segment}/${shortId}`), 404, 'NOT_FOUND');
    expect((await app.api('GET', '/trpc/health.health')).status).toBe(200);
    const { text, samples } = await scrape(app);
    expect(
      valueOf(samples, 'http_requests_total', { method: 'GET', route: '(unmatched)', status: '404' }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      valueOf(samples, 'http_requests_total', { method: 'GET', route: '/trpc/health.health', status: '200' }),
    ).toBe(1);
    expect(text).not.toContain(segment);
    expect(text).not.toContain(shortId);
    expect(text).not.toContain('no-such-route');
  });

  it('never puts a secret in the output: bearer tokens, API keys, passwords, query tokens, cookies, the metrics token', async () => {
    const queryToken = `query-canary-${hex(16)}`;
    const cookie = `cookie-canary-${hex(16)}`;
    const apiKey = `wsk_${crypto.randomBytes(30).toString('base64url').replace(/[-_]/g, 'a').slice(0, 40)}`;
    ledger.sent(queryToken, 'a ?token= query value');
    ledger.sent(cookie, 'a cookie');
    ledger.sent(apiKey, 'an API key');
    await app.api('GET', `/auth/me?token=${queryToken}`, {
      token: user.accessToken,
      headers: { cookie: `session=${cookie}` },
    });
    await app.api('GET', '/public-api/me', { headers: { 'x-api-key': apiKey } });
    await app.api('POST', '/auth/login', { body: { email: user.email, password: `${user.password}-wrong` } });
    await app.api('GET', '/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}-guess` } });

    const { text } = await scrape(app);
    const canaries = [
      METRICS_TOKEN,
      user.accessToken,
      user.refreshToken,
      user.password,
      queryToken,
      cookie,
      apiKey,
      apiKey.slice(0, 12),
      admin.accessToken,
    ];
    for (const secret of canaries) expect(text).not.toContain(secret);
    expect(text).not.toMatch(/token=|session=|@tests\.local/);
  });

  it('is not recorded in the monitoring buffer and not counted as traffic', async () => {
    for (let i = 0; i < 3; i++) await scrape(app);
    await app.api('GET', '/metrics', { headers: { authorization: 'Bearer nope-nope-nope' } });
    const asAdmin = (path: string) => app.api('GET', path, { token: admin.accessToken });
    const requests = await asAdmin('/admin/monitoring/requests?pathPrefix=/metrics&limit=100');
    expect(requests.status).toBe(200);
    expect(requests.body.total).toBe(0);
    const errors = await asAdmin('/admin/monitoring/errors?pathPrefix=/metrics&limit=100');
    expect(errors.status).toBe(200);
    expect(errors.body.total).toBe(0);
    // The buffer does hold the other traffic of this file.
    expect((await asAdmin('/admin/monitoring/requests?pathPrefix=/workspaces&limit=100')).body.total).toBeGreaterThan(
      0,
    );

    const { samples } = await scrape(app);
    expect(find(samples, 'http_requests_total').filter((s) => /metrics/.test(s.labels.route))).toEqual([]);
  });

  it('answers only at exactly GET /metrics: other spellings and methods are unknown routes', async () => {
    for (const path of ['/METRICS', '/metrics/', '/metrics/extra'])
      expectError(await app.api('GET', path, { token: METRICS_TOKEN }), 404, 'NOT_FOUND');
    expectError(await app.api('POST', '/metrics', { token: METRICS_TOKEN }), 404, 'NOT_FOUND');
  });

  it('is documented in /openapi.json with a bearer requirement', async () => {
    const op = (await app.api('GET', '/openapi.json')).body.paths['/metrics']?.get;
    expect(op).toMatchObject({ tags: ['Monitoring'], security: [{ bearerAuth: [] }] });
    expect(op.summary).toMatch(/Prometheus/);
    // Never rate limited (no 429); its errors are its own token's and the switch's, and the generic ones.
    expect(Object.keys(op.responses).sort()).toEqual(['200', '400', '401', '404', '500', '503']);
    expect(op.responses['401'].content['application/json'].schema.allOf[1].properties.code.enum).toEqual([
      'UNAUTHORIZED',
    ]);
  });

  it('has no queue gauges when the webhook queue is off', async () => {
    const { text } = await scrape(app);
    expect(text).not.toContain('webhook_queue_jobs');
    expect(text).not.toContain('webhook_queue_up');
  });
});

describe('GET /metrics with rate limiting on', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({
      METRICS_TOKEN,
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_MAX_REQUESTS: '2',
      RATE_LIMIT_AUTH_MAX_REQUESTS: '1',
    });
  });
  afterAll(() => app?.close());

  it('counts 429 answers by tier, starting every tier at 0', async () => {
    const before = await scrape(app);
    for (const tier of ['default', 'auth', 'contact', 'upload', 'publicApi', 'webhook']) {
      expect(valueOf(before.samples, 'rate_limit_rejections_total', { tier })).toBe(0);
    }

    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await app.api('GET', '/billing/plans')).status);
    expect(statuses).toEqual([200, 200, 429, 429]);
    const logins: number[] = [];
    for (let i = 0; i < 2; i++)
      logins.push(
        (await app.api('POST', '/auth/login', { body: { email: 'nobody@tests.local', password: 'Wrong-pass-1' } }))
          .status,
      );
    expect(logins).toEqual([401, 429]);

    const { samples } = await scrape(app);
    expect(valueOf(samples, 'rate_limit_rejections_total', { tier: 'default' })).toBe(2);
    expect(valueOf(samples, 'rate_limit_rejections_total', { tier: 'auth' })).toBe(1);
    expect(valueOf(samples, 'rate_limit_rejections_total', { tier: 'upload' })).toBe(0);
    expect(valueOf(samples, 'http_requests_total', { method: 'GET', route: '/billing/plans', status: '429' })).toBe(2);
  });

  it('is never rate limited itself, not even failed attempts', async () => {
    for (let i = 0; i < 5; i++) {
      const { res } = await scrape(app);
      expect(res.headers.get('ratelimit')).toBeNull();
    }
    for (let i = 0; i < 3; i++)
      expectError(
        await app.api('GET', '/metrics', { headers: { authorization: 'Bearer wrong-wrong-wrong' } }),
        401,
        'UNAUTHORIZED',
      );
  });
});

describe('GET /metrics in queue mode', () => {
  const prefix = `test-metrics-${hex(6)}`;
  let app: TestApp;
  let redis: Redis;
  let queue: Queue;
  beforeAll(async () => {
    redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
    queue = new Queue(WEBHOOK_QUEUE, { connection: redis, prefix });
    app = await startTestApp({
      METRICS_TOKEN,
      REDIS_URL: inject('redisUrl'),
      QUEUES_ENABLED: 'true',
      WEBHOOK_QUEUE_ENABLED: 'true',
      QUEUE_PREFIX: prefix,
    });
    // Its runner would move other test files' outbox events into this queue (the database is shared).
    await app.deps.webhooks.stop();
  });
  afterAll(async () => {
    await app?.close();
    await queue?.close();
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  it('reports the webhook queue depth by state (no worker runs in the API, so jobs stay put)', async () => {
    const empty = await scrape(app);
    for (const state of ['waiting', 'active', 'delayed', 'failed'])
      expect(valueOf(empty.samples, 'webhook_queue_jobs', { state })).toBe(0);
    expect(valueOf(empty.samples, 'webhook_queue_up')).toBe(1);

    await queue.add('deliver_webhook', { deliveryId: crypto.randomUUID() });
    await queue.add('deliver_webhook', { deliveryId: crypto.randomUUID() });
    await queue.add('deliver_webhook', { deliveryId: crypto.randomUUID() }, { delay: 600_000 });
    const { samples, text } = await scrape(app);
    expect(valueOf(samples, 'webhook_queue_jobs', { state: 'waiting' })).toBe(2);
    expect(valueOf(samples, 'webhook_queue_jobs', { state: 'delayed' })).toBe(1);
    expect(valueOf(samples, 'webhook_queue_jobs', { state: 'active' })).toBe(0);
    expect(valueOf(samples, 'webhook_queue_jobs', { state: 'failed' })).toBe(0);
    expect(text).not.toContain(prefix);
  });

  it('still answers, quickly, when Redis goes away: the queue reads as down and its counts are left out', async () => {
    app.deps.redis!.commands.disconnect();
    const started = Date.now();
    const { samples } = await scrape(app);
    expect(Date.now() - started).toBeLessThan(1500);
    expect(valueOf(samples, 'webhook_queue_up')).toBe(0);
    expect(find(samples, 'webhook_queue_jobs')).toEqual([]);
    // The rest of the scrape is intact.
    expect(find(samples, 'rate_limit_rejections_total').length).toBe(7);
    expect(find(samples, 'process_cpu_user_seconds_total')).toHaveLength(1);
    // And again: a broken queue handle is replaced, not reused forever, and still fails soft.
    expect(valueOf((await scrape(app)).samples, 'webhook_queue_up')).toBe(0);
  });
});

describe('Metrics queue gauges (a Redis that hangs or fails)', () => {
  it('give up after the read timeout instead of holding the scrape', async () => {
    const metrics = new Metrics({
      processMetrics: false,
      queue: () => ({ getJobCounts: () => new Promise<never>(() => {}) }),
    });
    const started = performance.now();
    const samples = parse(await metrics.render());
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(QUEUE_READ_TIMEOUT_MS - 5);
    expect(elapsed).toBeLessThan(QUEUE_READ_TIMEOUT_MS + 800);
    expect(valueOf(samples, 'webhook_queue_up')).toBe(0);
    expect(find(samples, 'webhook_queue_jobs')).toEqual([]);
  });

  it('report the queue as down when it cannot even be opened', async () => {
    const metrics = new Metrics({
      processMetrics: false,
      queue: () => {
        throw new Error('BullMQ: ioredis does not support ioredis prefixes');
      },
    });
    const samples = parse(await metrics.render());
    expect(valueOf(samples, 'webhook_queue_up')).toBe(0);
    expect(find(samples, 'webhook_queue_jobs')).toEqual([]);
  });

  it('reopen the queue after a failed read, and report counts again once it answers', async () => {
    let opened = 0;
    let failing = true;
    const open = (): QueueCounts => {
      opened += 1;
      return {
        getJobCounts: async () => {
          if (failing) throw new Error('Connection is closed.');
          return { waiting: 4, active: 1, delayed: 0, failed: 2 };
        },
        close: async () => undefined,
      };
    };
    const metrics = new Metrics({ processMetrics: false, queue: open });
    expect(valueOf(parse(await metrics.render()), 'webhook_queue_up')).toBe(0);
    failing = false;
    const samples = parse(await metrics.render());
    expect(opened).toBe(2);
    expect(valueOf(samples, 'webhook_queue_up')).toBe(1);
    expect(valueOf(samples, 'webhook_queue_jobs', { state: 'waiting' })).toBe(4);
    expect(valueOf(samples, 'webhook_queue_jobs', { state: 'failed' })).toBe(2);
  });
});
