// The public API, authenticated by workspace API keys: X-API-Key or Authorization: Bearer; scopes;
// revoked, expired, unknown and malformed keys; keys and access tokens kept apart; suspended and archived
// workspaces; last_used_at written at most once a minute.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import type { Session } from '../helpers/http.js';
import { adminSession, apiKeyHeader, createKey, expectError, ownerOn, trackSecret } from './helpers.js';
import { clockAhead } from '../helpers/clock.js';

let app: TestApp;
let owner: Session;
beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
  owner = await ownerOn(app, 'enterprise', 'pub');
});
afterAll(() => app?.close());

const me = (headers: Record<string, string> = {}) => app.api('GET', '/public-api/me', { headers });
const workspace = (headers: Record<string, string> = {}) => app.api('GET', '/public-api/workspace', { headers });
/** Authorization: Bearer <key> (recorded in the ledger like every bearer value). */
const bearer = (rawKey: string) => {
  trackSecret(rawKey, 'an API key sent as a bearer token');
  return { authorization: `Bearer ${rawKey}` };
};
const base62 = (n: number) =>
  Array.from(
    { length: n },
    () => 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'[crypto.randomInt(62)],
  ).join('');

describe('GET /public-api/me', () => {
  it('answers the key and its workspace for X-API-Key', async () => {
    const key = await createKey(app, owner, { name: 'me by header', scopes: ['files:read'] });
    const res = await me(apiKeyHeader(key.rawKey));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      apiKey: { id: key.id, name: 'me by header', prefix: key.prefix, scopes: ['files:read'], expiresAt: null },
      workspace: { id: owner.workspaceId, name: expect.any(String) },
    });
    expect(res.text).not.toContain(key.rawKey);
  });

  it('answers the same for Authorization: Bearer <key>', async () => {
    const key = await createKey(app, owner, { name: 'me by bearer', scopes: ['read'] });
    const res = await me(bearer(key.rawKey));
    expect(res.status, res.text).toBe(200);
    expect(res.body.apiKey).toMatchObject({ id: key.id, name: 'me by bearer', prefix: key.prefix });
    expect(res.body.workspace.id).toBe(owner.workspaceId);
  });

  it('answers 401 UNAUTHORIZED without a key', async () => {
    expectError(await me(), 401, 'UNAUTHORIZED');
    expectError(await workspace(), 401, 'UNAUTHORIZED');
  });

  it('answers 401 UNAUTHORIZED for a well-formed key that does not exist', async () => {
    expectError(await me(apiKeyHeader(`wsk_${base62(40)}`)), 401, 'UNAUTHORIZED');
    expectError(await me(bearer(`wsk_${base62(40)}`)), 401, 'UNAUTHORIZED');
  });

  it.each([
    ['too short', () => `wsk_${base62(39)}`],
    ['too long', () => `wsk_${base62(41)}`],
    ['a wrong prefix', () => `wsx_${base62(40)}`],
    ['a character outside base62', () => `wsk_${base62(39)}-`],
    ['plain text', () => 'not-a-key-at-all'],
    ['a valid key with a suffix', () => `wsk_${base62(40)}\u00e9`],
  ])('answers 401 UNAUTHORIZED for a malformed key (%s)', async (_label, make) => {
    expectError(await me({ 'x-api-key': make() }), 401, 'UNAUTHORIZED');
  });

  it('refuses a malformed key before any database lookup of api_keys', async () => {
    const key = await createKey(app, owner);
    const spy = vi.spyOn(app.deps.db, 'executeQuery');
    const apiKeyQueries = () => spy.mock.calls.filter(([q]) => /api_keys/.test((q as { sql: string }).sql)).length;
    try {
      // Control: a well-formed key is looked up (so the spy sees the lookup when there is one).
      expect((await me(apiKeyHeader(key.rawKey))).status).toBe(200);
      expect(apiKeyQueries()).toBeGreaterThan(0);
      spy.mockClear();
      expectError(await me({ 'x-api-key': 'wsk_short' }), 401, 'UNAUTHORIZED');
      expectError(
        await me({ authorization: 'Bearer wsk_!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!' }),
        401,
        'UNAUTHORIZED',
      );
      expectError(await me({ 'x-api-key': `wsk_${base62(400)}` }), 401, 'UNAUTHORIZED');
      expect(apiKeyQueries()).toBe(0);
    } finally {
      spy.mockRestore();
    }
  });

  it('answers 401 UNAUTHORIZED for a revoked key', async () => {
    const key = await createKey(app, owner);
    expect((await me(apiKeyHeader(key.rawKey))).status).toBe(200);
    expect(
      (await app.api('DELETE', `/workspaces/${owner.workspaceId}/api-keys/${key.id}`, { token: owner.accessToken }))
        .status,
    ).toBe(200);
    expectError(await me(apiKeyHeader(key.rawKey)), 401, 'UNAUTHORIZED');
    expectError(await workspace(bearer(key.rawKey)), 401, 'UNAUTHORIZED');
  });

  it('answers 401 UNAUTHORIZED for a key past its expiry', async () => {
    const key = await createKey(app, owner, {
      scopes: ['read'],
      expiresAt: new Date(Date.now() + 1_500).toISOString(),
    });
    expect((await me(apiKeyHeader(key.rawKey))).status).toBe(200);
    // 1.7 s later by the app's clock (this process's Date, moved ahead): past the expiry.
    await clockAhead(1_700, async () => {
      expectError(await me(apiKeyHeader(key.rawKey)), 401, 'UNAUTHORIZED');
      expectError(await workspace(apiKeyHeader(key.rawKey)), 401, 'UNAUTHORIZED');
    });
  });
});

describe('scopes: GET /public-api/workspace', () => {
  it.each([['workspace:read'], ['read']])('answers the workspace to a key with scope %s', async (scope) => {
    const key = await createKey(app, owner, { scopes: [scope] });
    const res = await workspace(apiKeyHeader(key.rawKey));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: owner.workspaceId, status: 'ACTIVE', edition: 'ENTERPRISE', memberCount: 1 });
    expect(typeof res.body.name).toBe('string');
    expect(new Date(res.body.createdAt).toISOString()).toBe(res.body.createdAt);
  });

  it('refuses a key without workspace:read or read with 403 PERMISSION_DENIED (it still reaches /public-api/me)', async () => {
    const key = await createKey(app, owner, {
      scopes: ['files:read', 'write', 'webhooks:send', 'ai:generate', 'files:write'],
    });
    expectError(await workspace(apiKeyHeader(key.rawKey)), 403, 'PERMISSION_DENIED');
    expectError(await workspace(bearer(key.rawKey)), 403, 'PERMISSION_DENIED');
    expect((await me(apiKeyHeader(key.rawKey))).status).toBe(200);
  });
});

describe('keys and access tokens are not interchangeable', () => {
  it('answers 401 to an access token on /public-api/me and /public-api/workspace', async () => {
    expectError(await app.api('GET', '/public-api/me', { token: owner.accessToken }), 401, 'UNAUTHORIZED');
    expectError(await app.api('GET', '/public-api/workspace', { token: owner.accessToken }), 401, 'UNAUTHORIZED');
  });

  it('answers 401 to an API key on /auth/me and on a workspace route', async () => {
    const key = await createKey(app, owner, { scopes: ['read', 'write'] });
    expect((await me(bearer(key.rawKey))).status).toBe(200);
    expectError(await app.api('GET', '/auth/me', { headers: bearer(key.rawKey) }), 401, 'UNAUTHORIZED');
    expectError(
      await app.api('GET', `/workspaces/${owner.workspaceId}/api-keys`, { headers: bearer(key.rawKey) }),
      401,
      'UNAUTHORIZED',
    );
  });
});

describe('workspace state', () => {
  it('refuses keys of a suspended workspace with 403 WORKSPACE_UNAVAILABLE, and accepts them again after activation', async () => {
    const s = await ownerOn(app, 'pro', 'pub-susp');
    const key = await createKey(app, s, { scopes: ['read'] });
    const admin = await adminSession(app);
    expect((await me(apiKeyHeader(key.rawKey))).status).toBe(200);

    expect(
      (await app.api('POST', `/admin/workspaces/${s.workspaceId}/suspend`, { token: admin.accessToken })).status,
    ).toBe(200);
    expectError(await me(apiKeyHeader(key.rawKey)), 403, 'WORKSPACE_UNAVAILABLE');
    expectError(await workspace(apiKeyHeader(key.rawKey)), 403, 'WORKSPACE_UNAVAILABLE');

    expect(
      (await app.api('POST', `/admin/workspaces/${s.workspaceId}/activate`, { token: admin.accessToken })).status,
    ).toBe(200);
    expect((await me(apiKeyHeader(key.rawKey))).status).toBe(200);
  });

  it('refuses keys of an archived workspace with 403 WORKSPACE_UNAVAILABLE', async () => {
    const s = await ownerOn(app, 'pro', 'pub-arch');
    const key = await createKey(app, s, { scopes: ['read'] });
    const admin = await adminSession(app);
    expect(
      (await app.api('POST', `/admin/workspaces/${s.workspaceId}/archive`, { token: admin.accessToken })).status,
    ).toBe(200);
    expectError(await me(apiKeyHeader(key.rawKey)), 403, 'WORKSPACE_UNAVAILABLE');
    expectError(await workspace(bearer(key.rawKey)), 403, 'WORKSPACE_UNAVAILABLE');
  });

  it('answers 401 UNAUTHORIZED to the key of a deleted workspace', async () => {
    const s = await ownerOn(app, 'pro', 'pub-del');
    const key = await createKey(app, s, { scopes: ['read'] });
    await app.deps.db
      .updateTable('workspaces')
      .set({ deleted_at: new Date() })
      .where('id', '=', s.workspaceId)
      .execute();
    expectError(await me(apiKeyHeader(key.rawKey)), 401, 'UNAUTHORIZED');
  });
});

describe('last_used_at', () => {
  const row = (id: string) =>
    app.deps.db.selectFrom('api_keys').select(['last_used_at']).where('id', '=', id).executeTakeFirstOrThrow();

  it('is null until the key is used, then set to the time of the first call', async () => {
    const key = await createKey(app, owner);
    expect((await row(key.id)).last_used_at).toBeNull();
    const before = Date.now();
    expect((await me(apiKeyHeader(key.rawKey))).status).toBe(200);
    const after = Date.now();
    const used = (await row(key.id)).last_used_at;
    expect(used).toBeInstanceOf(Date);
    expect(used!.getTime()).toBeGreaterThanOrEqual(before - 1_000);
    expect(used!.getTime()).toBeLessThanOrEqual(after + 1_000);

    const listed = await app.api('GET', `/workspaces/${owner.workspaceId}/api-keys`, { token: owner.accessToken });
    expect(listed.body.items.find((k: { id: string }) => k.id === key.id).lastUsedAt).toBe(used!.toISOString());
  });

  it('is not rewritten by a second call within the minute', async () => {
    const key = await createKey(app, owner);
    expect((await me(apiKeyHeader(key.rawKey))).status).toBe(200);
    const first = (await row(key.id)).last_used_at;
    expect(first).toBeInstanceOf(Date);
    // A second later by the app's clock (this process's Date, moved ahead): a rewrite would show.
    await clockAhead(1_100, async () => {
      expect((await workspace(apiKeyHeader(key.rawKey))).status).toBe(200);
      expect((await me(bearer(key.rawKey))).status).toBe(200);
    });
    const second = (await row(key.id)).last_used_at;
    expect(second!.getTime()).toBe(first!.getTime());
  });

  it('is not written when a revoked key calls', async () => {
    const revoked = await createKey(app, owner);
    expect(
      (await app.api('DELETE', `/workspaces/${owner.workspaceId}/api-keys/${revoked.id}`, { token: owner.accessToken }))
        .status,
    ).toBe(200);
    expectError(await me(apiKeyHeader(revoked.rawKey)), 401, 'UNAUTHORIZED');
    expect((await row(revoked.id)).last_used_at).toBeNull();
  });
});
