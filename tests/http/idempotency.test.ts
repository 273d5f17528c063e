// Idempotency keys on REST POST and PATCH (docs/api.md "Idempotency keys"): a retried request with the same
// key runs once, and its duplicates (even 20 at once) get the first answer back with
// `Idempotent-Replayed: true`; the same key with another request is 422, while the first still runs 409;
// keys are the caller's own; failures worth retrying (5xx, 429) leave the key free.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, registerAndLogin, type ApiResponse, type Session } from '../helpers/http.js';
import { upgradeWorkspace } from '../workspaces/helpers.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { waitFor } from '../helpers/wait.js';
import { cleanUpExpiredTokens } from '../../jobs/processors/maintenance.js';

const newKey = () => `retry-${crypto.randomUUID()}`;
const REPLAYED = 'idempotent-replayed';

let app: TestApp;
let providerApp: TestApp;
let limitedApp: TestApp;
let fake: FakeOpenAI;
const providerKey = `sk-test-idem-${crypto.randomBytes(8).toString('hex')}`;

beforeAll(async () => {
  fake = await startFakeOpenAI({ apiKey: providerKey });
  [app, providerApp, limitedApp] = await Promise.all([
    startTestApp({ WEBHOOK_DELIVERY_ENABLED: 'false', WEBHOOK_ALLOW_PRIVATE_URLS: 'true' }),
    startTestApp({
      AI_PROVIDER: 'PROVIDER_A',
      PROVIDER_A_API_KEY: providerKey,
      PROVIDER_A_BASE_URL: `${fake.url}/v1`,
      AI_PROVIDER_A_MODEL: 'fake-gpt-4o-test',
      AI_REQUEST_TIMEOUT_MS: '1500',
    }),
    startTestApp({ RATE_LIMIT_ENABLED: 'true', TRUST_PROXY: 'true', RATE_LIMIT_AUTH_MAX_REQUESTS: '2' }),
  ]);
});
afterAll(async () => {
  await Promise.all([app?.close(), providerApp?.close(), limitedApp?.close()]);
  await fake?.close();
});

/** `method path` as `s` with `key`, `count` times at once. */
function burst(a: TestApp, count: number, method: string, path: string, s: Session, key: string, body: unknown) {
  return Promise.all(
    Array.from({ length: count }, () =>
      a.api(method, path, { token: s.accessToken, body, headers: { 'idempotency-key': key } }),
    ),
  );
}

/**
 * Of concurrent duplicates, one ran: every answer is that one's (the same status and body), replayed to all
 * but one, or 409 IDEMPOTENCY_KEY_IN_USE with Retry-After: 1 while it ran. Answers the original.
 */
function expectOneRan(answers: ApiResponse[], status: number): ApiResponse {
  const done = answers.filter((r) => r.status !== 409);
  for (const r of answers.filter((r) => r.status === 409)) {
    expectError(r, 409, 'IDEMPOTENCY_KEY_IN_USE');
    expect(r.headers.get('retry-after')).toBe('1');
  }
  const originals = done.filter((r) => r.headers.get(REPLAYED) === null);
  expect(originals, 'exactly one answer is not a replay').toHaveLength(1);
  const [original] = originals;
  expect(original.status, original.text).toBe(status);
  for (const r of done) {
    expect(r.status).toBe(status);
    expect(r.text).toBe(original.text);
    if (r !== original) expect(r.headers.get(REPLAYED)).toBe('true');
  }
  return original;
}

/** Once all have settled, the same request again is a replay of the original. */
async function expectReplay(a: TestApp, method: string, path: string, s: Session, key: string, body: unknown) {
  const res = await a.api(method, path, { token: s.accessToken, body, headers: { 'idempotency-key': key } });
  expect(res.headers.get(REPLAYED)).toBe('true');
  return res;
}

const count = async (
  a: TestApp,
  table: 'payments' | 'subscriptions' | 'api_keys' | 'webhooks' | 'ai_generations',
  workspaceId: string,
) =>
  Number(
    (
      await a.deps.db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('workspace_id', '=', workspaceId)
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('20 concurrent duplicates create exactly one record', () => {
  it('a checkout (MOCK billing): one subscription, one payment', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'idem-checkout' });
    const key = newKey();
    const body = { workspaceId: s.workspaceId, planCode: 'pro' };
    const before = await count(app, 'subscriptions', s.workspaceId);
    const answers = await burst(app, 20, 'POST', '/billing/checkout', s, key, body);
    const original = expectOneRan(answers, 200);
    expect(await count(app, 'payments', s.workspaceId)).toBe(1);
    expect(await count(app, 'subscriptions', s.workspaceId)).toBe(before + 1);
    const again = await expectReplay(app, 'POST', '/billing/checkout', s, key, body);
    expect(again.text).toBe(original.text);
    expect(await count(app, 'payments', s.workspaceId)).toBe(1);
  });

  it('an API key: one key, its raw key answered the same to every duplicate', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'idem-key' });
    await upgradeWorkspace(app, s.accessToken, s.workspaceId, 'pro');
    const key = newKey();
    const body = { name: 'CI', scopes: ['read'] };
    const path = `/workspaces/${s.workspaceId}/api-keys`;
    const original = expectOneRan(await burst(app, 20, 'POST', path, s, key, body), 201);
    expect(await count(app, 'api_keys', s.workspaceId)).toBe(1);
    expect(original.body.rawKey).toMatch(/^wsk_/);
    expect((await expectReplay(app, 'POST', path, s, key, body)).status).toBe(201);
  });

  it('a webhook: one webhook', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'idem-hook' });
    const key = newKey();
    const body = { name: 'Receiver', url: 'http://127.0.0.1:9/hooks', events: ['webhook.test'] };
    const path = `/workspaces/${s.workspaceId}/webhooks`;
    expectOneRan(await burst(app, 20, 'POST', path, s, key, body), 201);
    expect(await count(app, 'webhooks', s.workspaceId)).toBe(1);
  });

  it('an AI generation (MOCK provider): one generation, counted once', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'idem-ai' });
    const key = newKey();
    const body = { prompt: `A haiku about retries ${crypto.randomUUID()}` };
    const original = expectOneRan(await burst(app, 20, 'POST', '/ai/generate', s, key, body), 200);
    expect(await count(app, 'ai_generations', s.workspaceId)).toBe(1);
    const counter = await app.deps.db
      .selectFrom('ai_usage_counters')
      .select((eb) => eb.fn.sum<string>('generations').as('n'))
      .where('workspace_id', '=', s.workspaceId)
      .executeTakeFirstOrThrow();
    expect(Number(counter.n)).toBe(1);
    const again = await expectReplay(app, 'POST', '/ai/generate', s, key, body);
    expect(again.body).toEqual(original.body);
  });
});

describe('one key, one request', () => {
  it('the same key with another body is 422 IDEMPOTENCY_KEY_REUSED, and changes nothing', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'idem-reuse' });
    const key = newKey();
    const path = `/workspaces/${s.workspaceId}/webhooks`;
    const body = { name: 'First', url: 'http://127.0.0.1:9/a', events: ['webhook.test'] };
    const first = await app.api('POST', path, { token: s.accessToken, body, headers: { 'idempotency-key': key } });
    expect(first.status, first.text).toBe(201);
    const other = await app.api('POST', path, {
      token: s.accessToken,
      body: { ...body, name: 'Second' },
      headers: { 'idempotency-key': key },
    });
    expectError(other, 422, 'IDEMPOTENCY_KEY_REUSED');
    // Another route with the same key is another request too.
    const elsewhere = await app.api('POST', '/ai/generate', {
      token: s.accessToken,
      body: { prompt: 'x' },
      headers: { 'idempotency-key': key },
    });
    expectError(elsewhere, 422, 'IDEMPOTENCY_KEY_REUSED');
    expect(await count(app, 'webhooks', s.workspaceId)).toBe(1);
  });

  it('a key of another user is theirs alone: the same key runs again for them', async () => {
    const [ada, bob] = await Promise.all([
      registerAndLogin(app.api, { prefix: 'idem-ada' }),
      registerAndLogin(app.api, { prefix: 'idem-bob' }),
    ]);
    const key = newKey();
    const prompt = { prompt: `Shared key ${crypto.randomUUID()}` };
    const asAda = await app.api('POST', '/ai/generate', {
      token: ada.accessToken,
      body: prompt,
      headers: { 'idempotency-key': key },
    });
    const asBob = await app.api('POST', '/ai/generate', {
      token: bob.accessToken,
      body: prompt,
      headers: { 'idempotency-key': key },
    });
    expect(asAda.status).toBe(200);
    expect(asBob.status).toBe(200);
    expect(asBob.headers.get(REPLAYED)).toBeNull();
    expect(asBob.body.id).not.toBe(asAda.body.id);
    expect(await count(app, 'ai_generations', bob.workspaceId)).toBe(1);
  });

  it('keys work on PATCH: a replay, and 422 for another change', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'idem-patch' });
    const key = newKey();
    const path = `/workspaces/${s.workspaceId}`;
    const first = await app.api('PATCH', path, {
      token: s.accessToken,
      body: { name: 'Renamed once' },
      headers: { 'idempotency-key': key },
    });
    expect(first.status, first.text).toBe(200);
    // Renamed meanwhile by someone else: the replay is the first answer, not the workspace as it is now.
    await app.api('PATCH', path, { token: s.accessToken, body: { name: 'Renamed twice' } });
    const again = await app.api('PATCH', path, {
      token: s.accessToken,
      body: { name: 'Renamed once' },
      headers: { 'idempotency-key': key },
    });
    expect(again.headers.get(REPLAYED)).toBe('true');
    expect(again.text).toBe(first.text);
    const other = await app.api('PATCH', path, {
      token: s.accessToken,
      body: { name: 'Renamed thrice' },
      headers: { 'idempotency-key': key },
    });
    expectError(other, 422, 'IDEMPOTENCY_KEY_REUSED');
  });

  it('4xx answers of the procedure are kept and replayed', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'idem-4xx' });
    const key = newKey();
    const path = `/workspaces/${s.workspaceId}/api-keys`;
    const body = { name: 'Not in Lite', scopes: ['read'] };
    const first = await app.api('POST', path, { token: s.accessToken, body, headers: { 'idempotency-key': key } });
    expectError(first, 403, 'API_KEYS_NOT_IN_PLAN');
    const again = await app.api('POST', path, { token: s.accessToken, body, headers: { 'idempotency-key': key } });
    expect(again.status).toBe(403);
    expect(again.text).toBe(first.text);
    expect(again.headers.get(REPLAYED)).toBe('true');
  });

  it('anonymous routes: the key is scoped to the route and the client address', async () => {
    const key = newKey();
    const email = `idem-anon-${crypto.randomUUID()}@tests.local`;
    const body = { email, password: 'Strong-pass-123', name: 'Anon' };
    const first = await app.api('POST', '/auth/register', { body, headers: { 'idempotency-key': key } });
    expect(first.status, first.text).toBe(201);
    const again = await app.api('POST', '/auth/register', { body, headers: { 'idempotency-key': key } });
    expect(again.status).toBe(201);
    expect(again.headers.get(REPLAYED)).toBe('true');
    expect(again.text).toBe(first.text);
  });

  it('the stored answer is sealed at rest, and the maintenance job removes expired keys', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'idem-rest' });
    await upgradeWorkspace(app, s.accessToken, s.workspaceId, 'pro');
    const key = newKey();
    const created = await app.api('POST', `/workspaces/${s.workspaceId}/api-keys`, {
      token: s.accessToken,
      body: { name: 'Sealed', scopes: ['read'] },
      headers: { 'idempotency-key': key },
    });
    expect(created.status).toBe(201);
    const row = await app.deps.db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('key', '=', key)
      .executeTakeFirstOrThrow();
    expect(row.scope).toBe(`user:${s.userId}`);
    expect(row.status).toBe(201);
    expect(row.body).not.toContain(created.body.rawKey);
    expect(row.expires_at.getTime() - Date.now()).toBeGreaterThan(23.9 * 3_600_000);

    await app.deps.db
      .updateTable('idempotency_keys')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('key', '=', key)
      .execute();
    const removed = await cleanUpExpiredTokens(app.deps.db);
    expect(removed.idempotencyKeys).toBeGreaterThanOrEqual(1);
    expect(await app.deps.db.selectFrom('idempotency_keys').select('key').where('key', '=', key).execute()).toEqual([]);
  });
});

describe('keys that are refused or left free', () => {
  it.each([
    ['empty', ''],
    ['too long', 'k'.repeat(256)],
    ['not ASCII', 'clé-été'],
    ['with a control character', 'a\tb'],
  ])('an invalid key (%s) is 400 and nothing runs', async (_label, value) => {
    const s = await registerAndLogin(app.api, { prefix: 'idem-bad' });
    const res = await fetch(`${app.url}/workspaces/${s.workspaceId}/webhooks`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${s.accessToken}`,
        'content-type': 'application/json',
        'idempotency-key': Buffer.from(value, 'utf8').toString('latin1'),
      },
      body: JSON.stringify({ name: 'Never', url: 'http://127.0.0.1:9/x', events: ['webhook.test'] }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { code: string; message: string };
    expect(body.code).toBe('BAD_REQUEST');
    expect(body.message).toContain('Idempotency-Key');
    expect(await count(app, 'webhooks', s.workspaceId)).toBe(0);
  });

  it('a key of 255 printable characters is accepted', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'idem-long' });
    const key = `${newKey()} ~!`.padEnd(255, 'z');
    const res = await app.api('POST', '/ai/generate', {
      token: s.accessToken,
      body: { prompt: 'ok' },
      headers: { 'idempotency-key': key },
    });
    expect(res.status, res.text).toBe(200);
  });

  it('while the first request runs, the same key is 409 IDEMPOTENCY_KEY_IN_USE with Retry-After: 1', async () => {
    const s = await registerAndLogin(providerApp.api, { prefix: 'idem-busy' });
    const key = newKey();
    const body = { prompt: `Slow ${crypto.randomUUID()}` };
    fake.setMode('hang');
    try {
      const first = providerApp.api('POST', '/ai/generate', {
        token: s.accessToken,
        body,
        headers: { 'idempotency-key': key },
      });
      // The first has claimed the key once the provider has its request.
      await waitFor(() => fake.requests.some((r) => JSON.stringify(r.body).includes(body.prompt)), {
        timeout: 5_000,
        message: 'the provider to get the first request',
      });
      const second = await providerApp.api('POST', '/ai/generate', {
        token: s.accessToken,
        body,
        headers: { 'idempotency-key': key },
      });
      expectError(second, 409, 'IDEMPOTENCY_KEY_IN_USE');
      expect(second.headers.get('retry-after')).toBe('1');
      // The provider never answers: 502, which is not kept, so the key is free again.
      expectError(await first, 502, 'AI_PROVIDER_ERROR');
    } finally {
      fake.setMode('ok');
    }
    const retried = await providerApp.api('POST', '/ai/generate', {
      token: s.accessToken,
      body,
      headers: { 'idempotency-key': key },
    });
    expect(retried.status, retried.text).toBe(200);
    expect(retried.headers.get(REPLAYED)).toBeNull();
  });

  it('a 5xx is not kept: the retry with the same key runs', async () => {
    const s = await registerAndLogin(providerApp.api, { prefix: 'idem-5xx' });
    const key = newKey();
    const body = { prompt: `Failing ${crypto.randomUUID()}` };
    fake.setMode('error');
    try {
      const failed = await providerApp.api('POST', '/ai/generate', {
        token: s.accessToken,
        body,
        headers: { 'idempotency-key': key },
      });
      expectError(failed, 502, 'AI_PROVIDER_ERROR');
    } finally {
      fake.setMode('ok');
    }
    const retried = await providerApp.api('POST', '/ai/generate', {
      token: s.accessToken,
      body,
      headers: { 'idempotency-key': key },
    });
    expect(retried.status, retried.text).toBe(200);
    expect(retried.headers.get(REPLAYED)).toBeNull();
    // The failure is recorded as such, and the retry made the one generation that succeeded.
    const rows = await providerApp.deps.db
      .selectFrom('ai_generations')
      .select('status')
      .where('workspace_id', '=', s.workspaceId)
      .orderBy('created_at')
      .execute();
    expect(rows.map((r) => r.status)).toEqual(['FAILED', 'SUCCEEDED']);
  });

  it('a 429 of the procedure is not kept: the key stays free', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'idem-429' });
    let n = 0;
    const login = (password: string, key?: string, from = `198.51.100.${++n}`) =>
      limitedApp.api('POST', '/auth/login', {
        body: { email: s.email, password },
        headers: { 'x-forwarded-for': from, ...(key ? { 'idempotency-key': key } : {}) },
      });
    // Failed sign-ins of one account from many addresses, until the account's own limit answers.
    for (let i = 0; i < 5 && (await login('Wrong-pass-999')).status !== 429; i++);
    const key = newKey();
    const limited = await login('Wrong-pass-999', key, '203.0.113.7');
    expectError(limited, 429, 'RATE_LIMITED');
    expect(
      await limitedApp.deps.db.selectFrom('idempotency_keys').select('key').where('key', '=', key).execute(),
    ).toEqual([]);
    const again = await login('Wrong-pass-999', key, '203.0.113.7');
    expect(again.status).toBe(429);
    expect(again.headers.get(REPLAYED)).toBeNull();
  });

  it('a request refused before its caller is known (a bad token) leaves the key free', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'idem-401' });
    const key = newKey();
    const body = { prompt: `Who ${crypto.randomUUID()}` };
    const refused = await app.api('POST', '/ai/generate', {
      token: 'not-a-token',
      body,
      headers: { 'idempotency-key': key },
    });
    expectError(refused, 401, 'UNAUTHORIZED');
    const ok = await app.api('POST', '/ai/generate', {
      token: s.accessToken,
      body,
      headers: { 'idempotency-key': key },
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get(REPLAYED)).toBeNull();
  });

  it('/trpc ignores the header (REST only)', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'idem-trpc' });
    const res = await fetch(`${app.url}/trpc/ai.generate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.accessToken}`, 'content-type': 'application/json', 'idempotency-key': '' },
      body: JSON.stringify({ prompt: 'via trpc' }),
    });
    expect(res.status).toBe(200);
  });
});

describe('/openapi.json', () => {
  it('declares the Idempotency-Key header, its errors and the replay header on POST and PATCH', async () => {
    const doc = (await app.api('GET', '/openapi.json')).body;
    for (const [path, method, success] of [
      ['/billing/checkout', 'post', '200'],
      ['/workspaces/{workspaceId}/api-keys', 'post', '201'],
      ['/workspaces/{workspaceId}', 'patch', '200'],
    ] as const) {
      const op = doc.paths[path][method];
      expect(op.parameters.find((p: any) => p.in === 'header' && p.name === 'Idempotency-Key')).toMatchObject({
        required: false,
        schema: { maxLength: 255 },
      });
      expect(op.responses['409'].content['application/json'].schema.allOf[1].properties.code.enum).toContain(
        'IDEMPOTENCY_KEY_IN_USE',
      );
      expect(op.responses['409'].headers['Retry-After']).toBeDefined();
      expect(op.responses['422'].content['application/json'].schema.allOf[1].properties.code.enum).toEqual([
        'IDEMPOTENCY_KEY_REUSED',
      ]);
      expect(op.responses[success].headers['Idempotent-Replayed']).toBeDefined();
    }
    const get = doc.paths['/auth/me'].get;
    expect((get.parameters ?? []).some((p: any) => p.name === 'Idempotency-Key')).toBe(false);
  });
});
