// Workspace API keys (api_keys.manage): create, list, update, revoke, rotate; what is stored; plan limits
// (counted atomically); permissions; demo accounts; audit.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import type { Session } from '../helpers/http.js';
import { invite, inviteAndJoin, upgradeWorkspace } from '../workspaces/helpers.js';
import {
  API_KEY_FORMAT,
  apiKeyHeader,
  auditActions,
  createKey,
  demoEmail,
  expectError,
  hex,
  ownerOn,
  registerAndLogin,
  registerDemo,
  sha256Hex,
} from './helpers.js';
import { clockAhead } from '../helpers/clock.js';

const DEMO_EMAIL = demoEmail('keys');
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false', AI_DEMO_RESTRICTED_EMAILS: DEMO_EMAIL });
});
afterAll(() => app?.close());

const keysPath = (workspaceId: string, keyId?: string) =>
  `/workspaces/${workspaceId}/api-keys${keyId ? `/${keyId}` : ''}`;
const keyRow = (id: string) => app.deps.db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
const liveKeyCount = async (workspaceId: string) =>
  (
    await app.deps.db
      .selectFrom('api_keys')
      .select('id')
      .where('workspace_id', '=', workspaceId)
      .where('revoked_at', 'is', null)
      .execute()
  ).length;
const list = async (s: Session, workspaceId = s.workspaceId) => {
  const res = await app.api('GET', keysPath(workspaceId), { token: s.accessToken });
  expect(res.status, res.text).toBe(200);
  return res;
};
/** The public API as the key: 200 while it works, 401 once it does not. */
const meStatus = async (rawKey: string) =>
  (await app.api('GET', '/public-api/me', { headers: apiKeyHeader(rawKey) })).status;
const rotate = (s: Session, keyId: string, body: Record<string, unknown> = {}) =>
  app.api('POST', `${keysPath(s.workspaceId, keyId)}/rotate`, { token: s.accessToken, body });

const KEY_FIELDS = [
  'createdAt',
  'expiresAt',
  'id',
  'lastUsedAt',
  'name',
  'prefix',
  'scopes',
  'status',
  'updatedAt',
  'workspaceId',
];

describe('POST /workspaces/:workspaceId/api-keys', () => {
  it('answers 201 with the record and a wsk_ rawKey of 40 base62 characters, shown this once', async () => {
    const s = await ownerOn(app, 'pro', 'key-create');
    const res = await app.api('POST', keysPath(s.workspaceId), {
      token: s.accessToken,
      body: { name: 'CI deploys', scopes: ['workspace:read', 'files:read'] },
    });
    expect(res.status, res.text).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual([...KEY_FIELDS, 'rawKey'].sort());
    expect(res.body).toMatchObject({
      workspaceId: s.workspaceId,
      name: 'CI deploys',
      scopes: ['workspace:read', 'files:read'],
      status: 'ACTIVE',
      expiresAt: null,
      lastUsedAt: null,
    });
    expect(res.body.rawKey).toMatch(API_KEY_FORMAT);
    expect(res.body.prefix).toBe(res.body.rawKey.slice(0, 12));
  });

  it('stores only the SHA-256 hex of the key and its first 12 characters, never the key itself', async () => {
    const s = await ownerOn(app, 'pro', 'key-store');
    const key = await createKey(app, s, { scopes: ['read'] });
    const row = await keyRow(key.id);
    expect(row).toBeDefined();
    expect(row!.key_hash).toBe(sha256Hex(key.rawKey));
    expect(row!.prefix).toBe(key.rawKey.slice(0, 12));
    expect(row!.prefix).toHaveLength(12);
    expect(JSON.stringify(row)).not.toContain(key.rawKey);
    expect(JSON.stringify(row)).not.toContain(key.rawKey.slice(12));
  });

  it('gives every key a different value', async () => {
    const s = await ownerOn(app, 'pro', 'key-unique');
    const a = await createKey(app, s);
    const b = await createKey(app, s);
    expect(a.rawKey).not.toBe(b.rawKey);
    expect(a.id).not.toBe(b.id);
  });

  it('accepts an expiry in the future and answers it', async () => {
    const s = await ownerOn(app, 'pro', 'key-expiry');
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const key = await createKey(app, s, { expiresAt });
    expect(new Date(key.expiresAt!).getTime()).toBe(new Date(expiresAt).getTime());
    expect(key.status).toBe('ACTIVE');
  });

  it('refuses an expiry in the past with 400 BAD_REQUEST and creates nothing', async () => {
    const s = await ownerOn(app, 'pro', 'key-past');
    const res = await app.api('POST', keysPath(s.workspaceId), {
      token: s.accessToken,
      body: { name: 'old', scopes: ['read'], expiresAt: new Date(Date.now() - 60_000).toISOString() },
    });
    const err = expectError(res, 400, 'BAD_REQUEST');
    expect(err.issues?.map((i) => i.path)).toContain('expiresAt');
    expect(await liveKeyCount(s.workspaceId)).toBe(0);
  });

  it.each([
    ['no name', { scopes: ['read'] }],
    ['a blank name', { name: '   ', scopes: ['read'] }],
    ['no scopes', { name: 'k' }],
    ['an empty scope list', { name: 'k', scopes: [] }],
    ['an unknown scope', { name: 'k', scopes: ['admin:everything'] }],
    ['a repeated scope', { name: 'k', scopes: ['read', 'read'] }],
  ])('refuses %s with 400 BAD_REQUEST', async (_label, body) => {
    const s = await ownerOn(app, 'pro', 'key-bad');
    expectError(await app.api('POST', keysPath(s.workspaceId), { token: s.accessToken, body }), 400, 'BAD_REQUEST');
    expect(await liveKeyCount(s.workspaceId)).toBe(0);
  });
});

describe('plan limits', () => {
  it('refuses a Lite workspace with 403 API_KEYS_NOT_IN_PLAN', async () => {
    const s = await ownerOn(app, 'lite', 'key-lite');
    const res = await app.api('POST', keysPath(s.workspaceId), {
      token: s.accessToken,
      body: { name: 'k', scopes: ['read'] },
    });
    expectError(res, 403, 'API_KEYS_NOT_IN_PLAN');
    expect(await liveKeyCount(s.workspaceId)).toBe(0);
  });

  it('allows five keys on Pro, then refuses the sixth with 403 API_KEY_LIMIT_REACHED', async () => {
    const s = await ownerOn(app, 'pro', 'key-pro5');
    for (let i = 0; i < 5; i++) await createKey(app, s, { name: `k${i}` });
    const res = await app.api('POST', keysPath(s.workspaceId), {
      token: s.accessToken,
      body: { name: 'k6', scopes: ['read'] },
    });
    expectError(res, 403, 'API_KEY_LIMIT_REACHED');
    expect(await liveKeyCount(s.workspaceId)).toBe(5);
  });

  it('does not count revoked keys: after a revocation a fifth key can be created again', async () => {
    const s = await ownerOn(app, 'pro', 'key-revcount');
    const keys = [];
    for (let i = 0; i < 5; i++) keys.push(await createKey(app, s, { name: `k${i}` }));
    const revoked = await app.api('DELETE', keysPath(s.workspaceId, keys[0].id), { token: s.accessToken });
    expect(revoked.status, revoked.text).toBe(200);
    await createKey(app, s, { name: 'replacement' });
    expectError(
      await app.api('POST', keysPath(s.workspaceId), {
        token: s.accessToken,
        body: { name: 'one too many', scopes: ['read'] },
      }),
      403,
      'API_KEY_LIMIT_REACHED',
    );
  });

  it('allows more than five keys on Enterprise', async () => {
    const s = await ownerOn(app, 'enterprise', 'key-ent');
    for (let i = 0; i < 7; i++) await createKey(app, s, { name: `k${i}` });
    expect(await liveKeyCount(s.workspaceId)).toBe(7);
    expect((await list(s)).body.items).toHaveLength(7);
  });

  it('leaves exactly five keys when ten creations race on Pro', async () => {
    const s = await ownerOn(app, 'pro', 'key-race');
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        app.api('POST', keysPath(s.workspaceId), {
          token: s.accessToken,
          body: { name: `race ${i}`, scopes: ['read'] },
        }),
      ),
    );
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses.filter((st) => st === 201)).toHaveLength(5);
    for (const refused of answers.filter((r) => r.status !== 201)) expectError(refused, 403, 'API_KEY_LIMIT_REACHED');
    expect(await liveKeyCount(s.workspaceId)).toBe(5);
  });
});

describe('GET /workspaces/:workspaceId/api-keys', () => {
  it('lists the keys, newest first, with prefix and never the raw key or its hash', async () => {
    const s = await ownerOn(app, 'pro', 'key-list');
    const a = await createKey(app, s, { name: 'first' });
    const b = await createKey(app, s, { name: 'second', scopes: ['workspace:read'] });
    const res = await list(s);
    expect(Object.keys(res.body)).toEqual(['items']);
    expect(res.body.items.map((k: { id: string }) => k.id)).toEqual([b.id, a.id]);
    for (const item of res.body.items) expect(Object.keys(item).sort()).toEqual(KEY_FIELDS);
    expect(res.body.items[0]).toMatchObject({
      name: 'second',
      prefix: b.prefix,
      scopes: ['workspace:read'],
      status: 'ACTIVE',
    });
    for (const secret of [a.rawKey, b.rawKey, sha256Hex(a.rawKey), sha256Hex(b.rawKey)])
      expect(res.text).not.toContain(secret);
  });
});

describe('PATCH /workspaces/:workspaceId/api-keys/:apiKeyId', () => {
  it('changes name and scopes, answers the record without the raw key, and the key keeps working with the new scopes', async () => {
    const s = await ownerOn(app, 'pro', 'key-update');
    const key = await createKey(app, s, { name: 'before', scopes: ['files:read'] });
    expect((await app.api('GET', '/public-api/workspace', { headers: apiKeyHeader(key.rawKey) })).status).toBe(403);

    const res = await app.api('PATCH', keysPath(s.workspaceId, key.id), {
      token: s.accessToken,
      body: { name: 'after', scopes: ['workspace:read'] },
    });
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(KEY_FIELDS);
    expect(res.body).toMatchObject({ id: key.id, name: 'after', scopes: ['workspace:read'], prefix: key.prefix });
    expect(res.text).not.toContain(key.rawKey);

    const row = await keyRow(key.id);
    expect(row).toMatchObject({ name: 'after', scopes: ['workspace:read'], key_hash: sha256Hex(key.rawKey) });
    expect((await app.api('GET', '/public-api/workspace', { headers: apiKeyHeader(key.rawKey) })).status).toBe(200);
  });

  it('changes only the name when only the name is sent', async () => {
    const s = await ownerOn(app, 'pro', 'key-rename');
    const key = await createKey(app, s, { name: 'a', scopes: ['read', 'write'] });
    const res = await app.api('PATCH', keysPath(s.workspaceId, key.id), { token: s.accessToken, body: { name: 'b' } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ name: 'b', scopes: ['read', 'write'] });
  });

  it('refuses an empty change and an unknown scope with 400 BAD_REQUEST', async () => {
    const s = await ownerOn(app, 'pro', 'key-badupdate');
    const key = await createKey(app, s);
    expectError(
      await app.api('PATCH', keysPath(s.workspaceId, key.id), { token: s.accessToken, body: {} }),
      400,
      'BAD_REQUEST',
    );
    expectError(
      await app.api('PATCH', keysPath(s.workspaceId, key.id), { token: s.accessToken, body: { scopes: ['root'] } }),
      400,
      'BAD_REQUEST',
    );
  });

  it('answers 404 NOT_FOUND for an unknown key, a revoked key and a key of another workspace', async () => {
    const s = await ownerOn(app, 'pro', 'key-404');
    const other = await ownerOn(app, 'pro', 'key-404-other');
    const theirs = await createKey(app, other);
    const mine = await createKey(app, s);
    await app.api('DELETE', keysPath(s.workspaceId, mine.id), { token: s.accessToken });
    for (const id of [crypto.randomUUID(), mine.id, theirs.id]) {
      expectError(
        await app.api('PATCH', keysPath(s.workspaceId, id), { token: s.accessToken, body: { name: 'x' } }),
        404,
        'NOT_FOUND',
      );
      expectError(await app.api('DELETE', keysPath(s.workspaceId, id), { token: s.accessToken }), 404, 'NOT_FOUND');
      expectError(await rotate(s, id), 404, 'NOT_FOUND');
    }
    expect((await keyRow(theirs.id))?.revoked_at).toBeNull();
  });
});

describe('DELETE /workspaces/:workspaceId/api-keys/:apiKeyId', () => {
  it('revokes the key: 200, gone from the list, refused by the public API at once, row kept with revoked_at', async () => {
    const s = await ownerOn(app, 'pro', 'key-revoke');
    const key = await createKey(app, s);
    expect(await meStatus(key.rawKey)).toBe(200);
    const res = await app.api('DELETE', keysPath(s.workspaceId, key.id), { token: s.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(typeof res.body.message).toBe('string');
    expect((await list(s)).body.items.map((k: { id: string }) => k.id)).not.toContain(key.id);
    expect(await meStatus(key.rawKey)).toBe(401);
    expect((await keyRow(key.id))?.revoked_at).toBeInstanceOf(Date);
  });
});

describe('POST /workspaces/:workspaceId/api-keys/:apiKeyId/rotate', () => {
  it('answers a new raw key with the same name and scopes; with no grace period the old key stops at once', async () => {
    const s = await ownerOn(app, 'pro', 'key-rot0');
    const old = await createKey(app, s, { name: 'rotating', scopes: ['workspace:read', 'files:read'] });
    expect(await meStatus(old.rawKey)).toBe(200);

    const res = await rotate(s, old.id);
    expect(res.status, res.text).toBe(200);
    expect(res.body.rawKey).toMatch(API_KEY_FORMAT);
    expect(res.body.rawKey).not.toBe(old.rawKey);
    expect(res.body).toMatchObject({
      name: 'rotating',
      scopes: ['workspace:read', 'files:read'],
      prefix: res.body.rawKey.slice(0, 12),
      status: 'ACTIVE',
    });
    expect(res.body.id).not.toBe(old.id);

    expect(await meStatus(old.rawKey)).toBe(401);
    expect(await meStatus(res.body.rawKey)).toBe(200);
    const newRow = await keyRow(res.body.id);
    expect(newRow?.key_hash).toBe(sha256Hex(res.body.rawKey));
    expect(JSON.stringify(newRow)).not.toContain(res.body.rawKey);
  });

  it('keeps the old key working for the grace period given, then refuses it', async () => {
    const s = await ownerOn(app, 'pro', 'key-rotgrace');
    const old = await createKey(app, s);
    const res = await rotate(s, old.id, { gracePeriodSeconds: 2 });
    expect(res.status, res.text).toBe(200);
    const rotatedAt = Date.now();
    expect(await meStatus(old.rawKey)).toBe(200);
    expect(await meStatus(res.body.rawKey)).toBe(200);
    // 2.6 s after the rotation by the app's clock (this process's Date, moved ahead): past the 2 s grace.
    await clockAhead(Math.max(0, rotatedAt + 2_600 - Date.now()), async () => {
      expect(await meStatus(old.rawKey)).toBe(401);
      expect(await meStatus(res.body.rawKey)).toBe(200);
    });
  });

  it('does not count against the plan limit (a full Pro workspace can still rotate)', async () => {
    const s = await ownerOn(app, 'pro', 'key-rotfull');
    const keys = [];
    for (let i = 0; i < 5; i++) keys.push(await createKey(app, s, { name: `k${i}` }));
    const res = await rotate(s, keys[0].id, { gracePeriodSeconds: 60 });
    expect(res.status, res.text).toBe(200);
    expect(res.body.rawKey).toMatch(API_KEY_FORMAT);
  });

  it('rotates a key once: its replacement may be rotated, the key in its grace period may not (no working keys past the limit)', async () => {
    const s = await ownerOn(app, 'pro', 'key-rotonce');
    const keys = [];
    for (let i = 0; i < 5; i++) keys.push(await createKey(app, s, { name: `k${i}` }));
    const first = await rotate(s, keys[0].id, { gracePeriodSeconds: 3600 });
    expect(first.status, first.text).toBe(200);
    expectError(await rotate(s, keys[0].id, { gracePeriodSeconds: 3600 }), 409, 'INVALID_STATE');
    const second = await rotate(s, first.body.id, { gracePeriodSeconds: 3600 });
    expect(second.status, second.text).toBe(200);
    // Five keys of the plan, plus one in its grace period: creating a sixth is still refused.
    expectError(
      await app.api('POST', keysPath(s.workspaceId), {
        token: s.accessToken,
        body: { name: 'sixth', scopes: ['read'] },
      }),
      403,
      'API_KEY_LIMIT_REACHED',
    );
    const working = [];
    for (const raw of [keys[0].rawKey, first.body.rawKey, second.body.rawKey, ...keys.slice(1).map((k) => k.rawKey)])
      working.push(await meStatus(raw));
    // Rotating the replacement ended the grace period of the key before it: two working values at most.
    expect(working).toEqual([401, 200, 200, 200, 200, 200, 200]);
  });

  it('keeps at most two working values of a key however often its newest value is rotated', async () => {
    const s = await ownerOn(app, 'pro', 'key-rotchain');
    const values = [await createKey(app, s)];
    for (let i = 0; i < 5; i++) {
      const res = await rotate(s, values.at(-1)!.id, { gracePeriodSeconds: 604_800 });
      expect(res.status, res.text).toBe(200);
      values.push(res.body);
    }
    const statuses = [];
    for (const v of values) statuses.push(await meStatus(v.rawKey));
    expect(statuses).toEqual([401, 401, 401, 401, 200, 200]);
  });

  it('never deadlocks a rotation with a revocation or a rename of the same key (20 trials, no 5xx)', async () => {
    const s = await ownerOn(app, 'pro', 'key-rotrace');
    for (let i = 0; i < 20; i++) {
      const key = await createKey(app, s, { name: `race ${i}` });
      const other =
        i % 2 === 0
          ? app.api('DELETE', keysPath(s.workspaceId, key.id), { token: s.accessToken })
          : app.api('PATCH', keysPath(s.workspaceId, key.id), { token: s.accessToken, body: { name: `renamed ${i}` } });
      const answers = await Promise.all([rotate(s, key.id, { gracePeriodSeconds: 60 }), other]);
      for (const res of answers) expect([200, 404], res.text).toContain(res.status);
      // Clean up, so the plan's five keys are not used up.
      for (const id of [key.id, answers[0].body?.id].filter(Boolean))
        await app.api('DELETE', keysPath(s.workspaceId, id), { token: s.accessToken });
    }
  });

  it('counts a key in its grace period as its replacement: revoking the replacement frees a place', async () => {
    const s = await ownerOn(app, 'pro', 'key-rotcount');
    const keys = [];
    for (let i = 0; i < 5; i++) keys.push(await createKey(app, s, { name: `k${i}` }));
    const rotated = await rotate(s, keys[0].id, { gracePeriodSeconds: 3600 });
    expect(rotated.status, rotated.text).toBe(200);
    expect((await app.api('DELETE', keysPath(s.workspaceId, rotated.body.id), { token: s.accessToken })).status).toBe(
      200,
    );
    const res = await app.api('POST', keysPath(s.workspaceId), {
      token: s.accessToken,
      body: { name: 'fifth again', scopes: ['read'] },
    });
    expect(res.status, res.text).toBe(201);
  });

  it('refuses to rotate an expired key with 409 INVALID_STATE, minting nothing', async () => {
    const s = await ownerOn(app, 'pro', 'key-rotexp');
    const key = await createKey(app, s);
    await app.deps.db
      .updateTable('api_keys')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', key.id)
      .execute();
    expectError(await rotate(s, key.id), 409, 'INVALID_STATE');
    expect(await liveKeyCount(s.workspaceId)).toBe(1);
  });

  it('emits api_key.created for the replacement, and api_key.revoked for the old key when it stops at once', async () => {
    const s = await ownerOn(app, 'pro', 'key-rotevents');
    const graced = await createKey(app, s, { name: 'graced' });
    const stopped = await createKey(app, s, { name: 'stopped' });
    const a = await rotate(s, graced.id, { gracePeriodSeconds: 60 });
    const b = await rotate(s, stopped.id);
    expect([a.status, b.status]).toEqual([200, 200]);
    const events = await app.deps.db
      .selectFrom('domain_events')
      .select(['type', 'payload'])
      .where('workspace_id', '=', s.workspaceId)
      .where('type', 'like', 'api_key.%')
      .execute();
    const seen = events.map((e) => `${e.type} ${(e.payload as { apiKeyId: string }).apiKeyId}`).sort();
    expect(seen).toEqual(
      [
        `api_key.created ${graced.id}`,
        `api_key.created ${stopped.id}`,
        `api_key.created ${a.body.id}`,
        `api_key.created ${b.body.id}`,
        `api_key.revoked ${stopped.id}`,
      ].sort(),
    );
  });

  it('refuses a negative or non-integer grace period with 400 BAD_REQUEST', async () => {
    const s = await ownerOn(app, 'pro', 'key-rotbad');
    const key = await createKey(app, s);
    expectError(await rotate(s, key.id, { gracePeriodSeconds: -1 }), 400, 'BAD_REQUEST');
    expectError(await rotate(s, key.id, { gracePeriodSeconds: 1.5 }), 400, 'BAD_REQUEST');
    expect(await meStatus(key.rawKey)).toBe(200);
  });
});

describe('who may manage keys', () => {
  it('refuses a MEMBER with 403 PERMISSION_DENIED on every key route', async () => {
    const owner = await ownerOn(app, 'pro', 'key-perm');
    const key = await createKey(app, owner);
    const member = await inviteAndJoin(app, owner.accessToken, owner.workspaceId, 'MEMBER');
    const t = member.accessToken;
    expectError(await app.api('GET', keysPath(owner.workspaceId), { token: t }), 403, 'PERMISSION_DENIED');
    expectError(
      await app.api('POST', keysPath(owner.workspaceId), { token: t, body: { name: 'm', scopes: ['read'] } }),
      403,
      'PERMISSION_DENIED',
    );
    expectError(
      await app.api('PATCH', keysPath(owner.workspaceId, key.id), { token: t, body: { name: 'm' } }),
      403,
      'PERMISSION_DENIED',
    );
    expectError(await app.api('DELETE', keysPath(owner.workspaceId, key.id), { token: t }), 403, 'PERMISSION_DENIED');
    expectError(
      await app.api('POST', `${keysPath(owner.workspaceId, key.id)}/rotate`, { token: t, body: {} }),
      403,
      'PERMISSION_DENIED',
    );
    expect(await meStatus(key.rawKey)).toBe(200);
  });

  it('lets an ADMIN of the workspace manage keys', async () => {
    const owner = await ownerOn(app, 'pro', 'key-admin');
    const admin = await inviteAndJoin(app, owner.accessToken, owner.workspaceId, 'ADMIN');
    const key = await createKey(app, admin, { name: 'by admin' }, owner.workspaceId);
    expect(key.workspaceId).toBe(owner.workspaceId);
  });

  it('answers 404 NOT_FOUND to a caller who is not a member, and 401 without a token', async () => {
    const owner = await ownerOn(app, 'pro', 'key-outsider');
    const key = await createKey(app, owner);
    const outsider = await registerAndLogin(app.api, { prefix: 'outsider' });
    const t = outsider.accessToken;
    expectError(await app.api('GET', keysPath(owner.workspaceId), { token: t }), 404, 'NOT_FOUND');
    expectError(
      await app.api('POST', keysPath(owner.workspaceId), { token: t, body: { name: 'o', scopes: ['read'] } }),
      404,
      'NOT_FOUND',
    );
    expectError(await app.api('DELETE', keysPath(owner.workspaceId, key.id), { token: t }), 404, 'NOT_FOUND');
    expectError(await app.api('GET', keysPath(owner.workspaceId)), 401, 'UNAUTHORIZED');
    expect(await meStatus(key.rawKey)).toBe(200);
  });

  it('refuses a demo account with 403 DEMO_READ_ONLY on create, update, revoke and rotate, and changes nothing', async () => {
    const owner = await ownerOn(app, 'pro', 'key-demo-owner');
    const key = await createKey(app, owner, { name: 'untouched', scopes: ['read'] });
    const demo = await registerDemo(app, DEMO_EMAIL);
    // The demo account is an ADMIN of the workspace: it holds api_keys.manage, so only the demo rule refuses it.
    const { token } = await invite(app, owner.accessToken, owner.workspaceId, DEMO_EMAIL, 'ADMIN');
    expect((await app.api('POST', '/invitations/accept', { token: demo.accessToken, body: { token } })).status).toBe(
      200,
    );
    const t = demo.accessToken;

    expect((await app.api('GET', keysPath(owner.workspaceId), { token: t })).status).toBe(200);
    expectError(
      await app.api('POST', keysPath(owner.workspaceId), { token: t, body: { name: 'd', scopes: ['read'] } }),
      403,
      'DEMO_READ_ONLY',
    );
    expectError(
      await app.api('PATCH', keysPath(owner.workspaceId, key.id), { token: t, body: { name: 'changed' } }),
      403,
      'DEMO_READ_ONLY',
    );
    expectError(await app.api('DELETE', keysPath(owner.workspaceId, key.id), { token: t }), 403, 'DEMO_READ_ONLY');
    expectError(
      await app.api('POST', `${keysPath(owner.workspaceId, key.id)}/rotate`, { token: t, body: {} }),
      403,
      'DEMO_READ_ONLY',
    );

    expect(
      await app.deps.db.selectFrom('api_keys').select('id').where('workspace_id', '=', owner.workspaceId).execute(),
    ).toHaveLength(1);
    expect(await keyRow(key.id)).toMatchObject({ name: 'untouched', revoked_at: null });
    expect(await meStatus(key.rawKey)).toBe(200);
  });
});

describe('audit log', () => {
  it('records api_key.created, updated, rotated and revoked with the actor, and no key in the metadata', async () => {
    const s = await ownerOn(app, 'pro', 'key-audit');
    const key = await createKey(app, s, { name: `audited ${hex()}` });
    expect(
      (await app.api('PATCH', keysPath(s.workspaceId, key.id), { token: s.accessToken, body: { scopes: ['write'] } }))
        .status,
    ).toBe(200);
    const rotated = await rotate(s, key.id, { gracePeriodSeconds: 30 });
    expect(rotated.status, rotated.text).toBe(200);
    expect((await app.api('DELETE', keysPath(s.workspaceId, rotated.body.id), { token: s.accessToken })).status).toBe(
      200,
    );

    const rows = (await auditActions(app, s.workspaceId)).filter((r) => r.action.startsWith('api_key.'));
    expect(rows.map((r) => r.action)).toEqual([
      'api_key.created',
      'api_key.updated',
      'api_key.rotated',
      'api_key.revoked',
    ]);
    for (const r of rows) {
      expect(r.actor_user_id).toBe(s.userId);
      expect(r.target_type).toBe('api_key');
      const text = JSON.stringify(r);
      for (const raw of [key.rawKey, rotated.body.rawKey as string]) {
        expect(text).not.toContain(raw);
        expect(text).not.toContain(sha256Hex(raw));
      }
    }
    expect(rows[0].target_id).toBe(key.id);
    expect(rows[3].target_id).toBe(rotated.body.id);
  });

  it('writes no audit row for a refused creation', async () => {
    const s = await ownerOn(app, 'lite', 'key-audit-refused');
    expectError(
      await app.api('POST', keysPath(s.workspaceId), { token: s.accessToken, body: { name: 'k', scopes: ['read'] } }),
      403,
      'API_KEYS_NOT_IN_PLAN',
    );
    expect((await auditActions(app, s.workspaceId)).filter((r) => r.action.startsWith('api_key.'))).toEqual([]);
  });
});

describe('secrets in logs', () => {
  it('never writes a raw key created by this file into a log line', () => {
    const logs = app.logs.join('\n');
    expect(logs).not.toMatch(/wsk_[A-Za-z0-9]{40}/);
  });
});

describe('keys of a workspace whose plan has no API access', () => {
  it('are refused with 403 API_KEYS_NOT_IN_PLAN after a downgrade to Lite (public API, rotation), and work again after an upgrade', async () => {
    const s = await ownerOn(app, 'pro', 'key-downgrade');
    const key = await createKey(app, s);
    expect(await meStatus(key.rawKey)).toBe(200);
    const cancelled = await app.api('POST', '/billing/cancel', {
      token: s.accessToken,
      body: { workspaceId: s.workspaceId },
    });
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body.edition).toBe('LITE');

    for (const path of ['/public-api/me', '/public-api/workspace']) {
      expectError(await app.api('GET', path, { headers: apiKeyHeader(key.rawKey) }), 403, 'API_KEYS_NOT_IN_PLAN');
    }
    expectError(await rotate(s, key.id, { gracePeriodSeconds: 60 }), 403, 'API_KEYS_NOT_IN_PLAN');
    expect(await liveKeyCount(s.workspaceId)).toBe(1);
    // Listing and revoking stay possible: the owner can clean up.
    expect((await list(s)).body.items.map((k: { id: string }) => k.id)).toEqual([key.id]);

    await upgradeWorkspace(app, s.accessToken, s.workspaceId, 'pro');
    expect(await meStatus(key.rawKey)).toBe(200);
  });
});
