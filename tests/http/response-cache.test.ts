import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { login } from '../helpers/http.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
});
afterAll(() => app.close());

describe('the HTTP cache of GET /billing/plans', () => {
  it('answers the same body again with an ETag, a Cache-Control and a request id of its own', async () => {
    const first = await app.api('GET', '/billing/plans');
    const second = await app.api('GET', '/billing/plans');
    expect(second.text).toBe(first.text);
    expect(second.headers.get('etag')).toBe(first.headers.get('etag'));
    expect(second.headers.get('etag')).toMatch(/^"[\w-]+"$/);
    expect(second.headers.get('cache-control')).toMatch(/^public, max-age=\d+$/);
    expect(second.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'));
    expect(second.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('answers 304 with no body to a matching If-None-Match', async () => {
    const first = await app.api('GET', '/billing/plans');
    const again = await app.api('GET', '/billing/plans', { headers: { 'if-none-match': first.headers.get('etag')! } });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    const stale = await app.api('GET', '/billing/plans', { headers: { 'if-none-match': '"something-else"' } });
    expect(stale.status).toBe(200);
  });

  it('serves a new answer as soon as an admin changes a plan', async () => {
    const before = await app.api('GET', '/billing/plans');
    const admin = await login(app.api, TEST_ADMIN.email, TEST_ADMIN.password);
    const slug = `cache-${Date.now().toString(36)}`;
    const created = await app.api('POST', '/admin/billing/plans', {
      token: admin.accessToken,
      body: { name: 'Cache test', slug, edition: 'CUSTOM', priceCents: 100, status: 'PUBLISHED', sortOrder: 9999 },
    });
    expect(created.status).toBe(201);
    const after = await app.api('GET', '/billing/plans');
    expect(after.headers.get('etag')).not.toBe(before.headers.get('etag'));
    expect(after.body.items.map((p: { slug: string }) => p.slug)).toContain(slug);
    await app.api('DELETE', `/admin/billing/plans/${created.body.id}`, { token: admin.accessToken });
    expect((await app.api('GET', '/billing/plans')).body.items.map((p: { slug: string }) => p.slug)).not.toContain(
      slug,
    );
  });

  it('ignores the query string, so random queries cannot grow the cache, and answers non-GET methods normally', async () => {
    const plain = await app.api('GET', '/billing/plans');
    const withQuery = await app.api('GET', `/billing/plans?nonce=${Math.random()}`);
    expect(withQuery.headers.get('etag')).toBe(plain.headers.get('etag'));
    expect((await app.api('POST', '/billing/plans', { body: {} })).status).toBe(404);
  });
});
