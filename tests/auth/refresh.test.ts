import crypto from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_JWT_REFRESH_SECRET, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, login, registerAndLogin } from '../helpers/http.js';

/** Default grace (10 s). */
let app: TestApp;
/** REFRESH_TOKEN_REUSE_GRACE_SECONDS=0: any second use of a rotated token is reuse. */
let strict: TestApp;
/** REFRESH_TOKEN_REUSE_GRACE_SECONDS=1. */
let shortGrace: TestApp;

beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
  strict = await startTestApp({ RATE_LIMIT_ENABLED: 'false', REFRESH_TOKEN_REUSE_GRACE_SECONDS: '0' });
  shortGrace = await startTestApp({ RATE_LIMIT_ENABLED: 'false', REFRESH_TOKEN_REUSE_GRACE_SECONDS: '1' });
});
afterAll(async () => {
  await Promise.all([app?.close(), strict?.close(), shortGrace?.close()]);
});

const refresh = (a: TestApp, refreshToken: unknown) => a.api('POST', '/auth/refresh', { body: { refreshToken } });
const logout = (a: TestApp, refreshToken: unknown) => a.api('POST', '/auth/logout', { body: { refreshToken } });

/** The stored row of a raw refresh token (the database keeps HMAC-SHA256(JWT_REFRESH_SECRET, token)). */
const rowOf = (a: TestApp, raw: string) =>
  a.deps.db
    .selectFrom('refresh_tokens')
    .selectAll()
    .where('token_hash', '=', crypto.createHmac('sha256', TEST_JWT_REFRESH_SECRET).update(raw).digest('hex'))
    .executeTakeFirstOrThrow();

const familyRows = (a: TestApp, familyId: string) =>
  a.deps.db.selectFrom('refresh_tokens').selectAll().where('family_id', '=', familyId).execute();

/**
 * 1.2 s pass for the session of `raw` on shortGrace, whose grace window is 1 s: every time of its family's
 * tokens moves 1.2 s into the past. The app compares them with its clock (`new Date()`), so this is what
 * waiting 1.2 s would do, without the wait.
 */
async function graceEnds(raw: string) {
  const { family_id } = await rowOf(shortGrace, raw);
  const columns = ['created_at', 'expires_at', 'rotated_at', 'superseded_at', 'revoked_at'];
  const back = sql.raw(columns.map((c) => `${c} = ${c} - interval '1200 milliseconds'`).join(', '));
  await sql`update refresh_tokens set ${back} where family_id = ${family_id}`.execute(shortGrace.deps.db);
}

describe('POST /auth/refresh: rotation', () => {
  it('answers a new token pair whose refresh token differs, and the new access token works', async () => {
    const s = await registerAndLogin(strict.api, { prefix: 'rot' });
    const res = await refresh(strict, s.refreshToken);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      accessToken: expect.any(String),
      refreshToken: expect.any(String),
      tokenType: 'Bearer',
      expiresIn: 900,
    });
    expect(res.body.refreshToken).not.toBe(s.refreshToken);
    expect(res.body.accessToken).not.toBe(s.accessToken);
    const me = await strict.api('GET', '/auth/me', { token: res.body.accessToken });
    expect(me.status).toBe(200);
    expect(me.body.user.id).toBe(s.userId);
  });

  it('refuses the rotated (old) refresh token with 401 UNAUTHORIZED', async () => {
    const s = await registerAndLogin(strict.api, { prefix: 'old' });
    expect((await refresh(strict, s.refreshToken)).status).toBe(200);
    expectError(await refresh(strict, s.refreshToken), 401, 'UNAUTHORIZED');
  });

  it('keeps the rotated tokens in the same family', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'fam' });
    const next = await refresh(app, s.refreshToken);
    expect(next.status).toBe(200);
    const [a, b] = [await rowOf(app, s.refreshToken), await rowOf(app, next.body.refreshToken)];
    expect(b.family_id).toBe(a.family_id);
    expect(b.user_id).toBe(s.userId);
  });
});

describe('POST /auth/refresh: reuse detection', () => {
  it('revokes the whole family when a rotated token comes back: the newest token is refused too (revoked_reason "reuse")', async () => {
    const s = await registerAndLogin(strict.api, { prefix: 'reuse' });
    const second = await refresh(strict, s.refreshToken);
    expect(second.status).toBe(200);
    const third = await refresh(strict, second.body.refreshToken);
    expect(third.status).toBe(200);

    expectError(await refresh(strict, s.refreshToken), 401, 'UNAUTHORIZED');
    expectError(await refresh(strict, third.body.refreshToken), 401, 'UNAUTHORIZED');

    const { family_id } = await rowOf(strict, s.refreshToken);
    const rows = await familyRows(strict, family_id);
    expect(rows).toHaveLength(3);
    for (const row of rows) {
      expect(row.revoked_at).not.toBeNull();
      expect(row.revoked_reason).toBe('reuse');
    }
  });

  it("leaves the user's other sessions (other families) working after reuse in one family", async () => {
    const s = await registerAndLogin(strict.api, { prefix: 'other' });
    const other = await login(strict.api, s.email, s.password);
    expect((await refresh(strict, s.refreshToken)).status).toBe(200);
    expectError(await refresh(strict, s.refreshToken), 401, 'UNAUTHORIZED');
    expect((await refresh(strict, other.refreshToken)).status).toBe(200);
  });

  it('with the default 10 s grace, answers two PARALLEL refreshes of one token both 200 with different tokens, and both keep working', async () => {
    expect(app.config.REFRESH_TOKEN_REUSE_GRACE_SECONDS).toBe(10);
    const s = await registerAndLogin(app.api, { prefix: 'tabs' });
    const [a, b] = await Promise.all([refresh(app, s.refreshToken), refresh(app, s.refreshToken)]);
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(a.body.refreshToken).not.toBe(b.body.refreshToken);
    expect(a.body.refreshToken).not.toBe(s.refreshToken);
    expect(b.body.refreshToken).not.toBe(s.refreshToken);

    const [a2, b2] = [await refresh(app, a.body.refreshToken), await refresh(app, b.body.refreshToken)];
    expect(a2.status).toBe(200);
    expect(b2.status).toBe(200);
    const { family_id } = await rowOf(app, s.refreshToken);
    const rows = await familyRows(app, family_id);
    expect(rows.every((r) => r.revoked_at === null)).toBe(true);
    expect((await rowOf(app, b2.body.refreshToken)).family_id).toBe(family_id);
  });

  it('with a 1 s grace, treats the rotated token presented after 1.2 s as reuse: 401 and the family is revoked', async () => {
    const s = await registerAndLogin(shortGrace.api, { prefix: 'late' });
    const next = await refresh(shortGrace, s.refreshToken);
    expect(next.status).toBe(200);
    await graceEnds(s.refreshToken);
    expectError(await refresh(shortGrace, s.refreshToken), 401, 'UNAUTHORIZED');
    expectError(await refresh(shortGrace, next.body.refreshToken), 401, 'UNAUTHORIZED');
    const { family_id } = await rowOf(shortGrace, s.refreshToken);
    const rows = await familyRows(shortGrace, family_id);
    expect(rows.every((r) => r.revoked_at !== null && r.revoked_reason === 'reuse')).toBe(true);
  });

  it('with a 1 s grace, still answers the just-rotated token again within the grace (no revocation)', async () => {
    const s = await registerAndLogin(shortGrace.api, { prefix: 'quick' });
    const first = await refresh(shortGrace, s.refreshToken);
    const again = await refresh(shortGrace, s.refreshToken);
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect((await refresh(shortGrace, first.body.refreshToken)).status).toBe(200);
  });

  it('treats a token older than the just-rotated one as reuse even within the grace period', async () => {
    // The rule: the grace covers the just-rotated token; "with any older token, it is reuse".
    const s = await registerAndLogin(app.api, { prefix: 'older' });
    const second = await refresh(app, s.refreshToken);
    expect(second.status).toBe(200);
    const third = await refresh(app, second.body.refreshToken);
    expect(third.status).toBe(200);
    // s.refreshToken is now two rotations old.
    expectError(await refresh(app, s.refreshToken), 401, 'UNAUTHORIZED');
    expectError(await refresh(app, third.body.refreshToken), 401, 'UNAUTHORIZED');
  });

  it('revokes the successor too when a rotated token comes back while the current one is being refreshed (20 trials)', async () => {
    const s = await registerAndLogin(strict.api, { prefix: 'reuse-race' });
    for (let i = 0; i < 20; i++) {
      const session = await login(strict.api, s.email, s.password);
      const current = await refresh(strict, session.refreshToken);
      expect(current.status).toBe(200);
      const [next, reused] = await Promise.all([
        refresh(strict, current.body.refreshToken),
        refresh(strict, session.refreshToken),
      ]);
      expectError(reused, 401, 'UNAUTHORIZED');
      if (next.status === 200) expectError(await refresh(strict, next.body.refreshToken), 401, 'UNAUTHORIZED');
    }
  });
});

describe('POST /auth/refresh: after the grace window, only the newest token of a family is valid', () => {
  // REFRESH_TOKEN_REUSE_GRACE_SECONDS=1 (shortGrace); "after the window" is 1.2 s later (graceEnds).
  type Answer = Awaited<ReturnType<typeof refresh>>;
  /** Sends the refreshes at once and lists the answers in the order they arrived (a browser keeps the last). */
  const arrivalOrder = async (requests: Array<Promise<Answer>>) => {
    const arrived: Answer[] = [];
    await Promise.all(requests.map((r) => r.then((res) => arrived.push(res))));
    return arrived;
  };
  const expectFamilyRevoked = async (a: TestApp, raw: string) => {
    const rows = await familyRows(a, (await rowOf(a, raw)).family_id);
    expect(rows.map((r) => [r.revoked_at !== null, r.revoked_reason])).toEqual(rows.map(() => [true, 'reuse']));
  };

  /** A sign-in whose token a replayer also refreshed within the window; both branches rotated once since. */
  async function forkedSession(prefix: string) {
    const s = await registerAndLogin(shortGrace.api, { prefix });
    const legit = await refresh(shortGrace, s.refreshToken);
    const replayed = await refresh(shortGrace, s.refreshToken);
    expect([legit.status, replayed.status]).toEqual([200, 200]);
    // Within the window each branch may rotate on: the other's refresh may be a second tab's.
    const legit2 = await refresh(shortGrace, legit.body.refreshToken);
    const replayed2 = await refresh(shortGrace, replayed.body.refreshToken);
    expect([legit2.status, replayed2.status]).toEqual([200, 200]);
    // The replayer's rotation came last: his token is the newest.
    return { older: legit2.body.refreshToken as string, newest: replayed2.body.refreshToken as string };
  }

  it('refuses the older branch of a forked family after the window (401): the session ends for both', async () => {
    const { older, newest } = await forkedSession('fork-old');
    await graceEnds(older);
    expectError(await refresh(shortGrace, older), 401, 'UNAUTHORIZED');
    expectError(await refresh(shortGrace, newest), 401, 'UNAUTHORIZED');
    await expectFamilyRevoked(shortGrace, older);
  });

  it('lets the newest branch rotate after the window; the older one is then refused, ending the session', async () => {
    const { older, newest } = await forkedSession('fork-new');
    await graceEnds(older);
    const next = await refresh(shortGrace, newest);
    expect(next.status).toBe(200);
    expectError(await refresh(shortGrace, older), 401, 'UNAUTHORIZED');
    expectError(await refresh(shortGrace, next.body.refreshToken), 401, 'UNAUTHORIZED');
    await expectFamilyRevoked(shortGrace, older);
  });

  it("refuses, after the window, a sibling never presented (the replayer's), once the client rotated", async () => {
    const s = await registerAndLogin(shortGrace.api, { prefix: 'fork-sib' });
    const replayed = await refresh(shortGrace, s.refreshToken);
    const legit = await refresh(shortGrace, s.refreshToken);
    expect([replayed.status, legit.status]).toEqual([200, 200]);
    await graceEnds(s.refreshToken);
    const legit2 = await refresh(shortGrace, legit.body.refreshToken);
    expect(legit2.status).toBe(200);
    expectError(await refresh(shortGrace, replayed.body.refreshToken), 401, 'UNAUTHORIZED');
    expectError(await refresh(shortGrace, legit2.body.refreshToken), 401, 'UNAUTHORIZED');
    await expectFamilyRevoked(shortGrace, s.refreshToken);
  });

  it('answers two tabs refreshing one token at once 200; the token stored last works after the window', async () => {
    const s = await registerAndLogin(shortGrace.api, { prefix: 'two-tabs' });
    const both = [refresh(shortGrace, s.refreshToken), refresh(shortGrace, s.refreshToken)];
    const [first, last] = await arrivalOrder(both);
    expect([first.status, last.status]).toEqual([200, 200]);
    expect(first.body.refreshToken).not.toBe(last.body.refreshToken);
    await graceEnds(s.refreshToken);
    const next = await refresh(shortGrace, last.body.refreshToken);
    expect(next.status).toBe(200);
    await graceEnds(s.refreshToken);
    expect((await refresh(shortGrace, next.body.refreshToken)).status).toBe(200);
    const rows = await familyRows(shortGrace, (await rowOf(shortGrace, s.refreshToken)).family_id);
    expect(rows.every((r) => r.revoked_at === null)).toBe(true);
  });

  it('refuses, after the window, the token of the tab answered first (not the newest): session ends', async () => {
    const s = await registerAndLogin(shortGrace.api, { prefix: 'tab-late' });
    const both = [refresh(shortGrace, s.refreshToken), refresh(shortGrace, s.refreshToken)];
    const [first, last] = await arrivalOrder(both);
    expect([first.status, last.status]).toEqual([200, 200]);
    await graceEnds(s.refreshToken);
    expectError(await refresh(shortGrace, first.body.refreshToken), 401, 'UNAUTHORIZED');
    expectError(await refresh(shortGrace, last.body.refreshToken), 401, 'UNAUTHORIZED');
    await expectFamilyRevoked(shortGrace, s.refreshToken);
  });

  it('answers three tabs refreshing one token at once 200; within the window each may rotate its token', async () => {
    const s = await registerAndLogin(shortGrace.api, { prefix: 'three-tabs' });
    const tabs = await Promise.all([1, 2, 3].map(() => refresh(shortGrace, s.refreshToken)));
    expect(tabs.map((t) => t.status)).toEqual([200, 200, 200]);
    expect(new Set(tabs.map((t) => t.body.refreshToken)).size).toBe(3);
    const again = await Promise.all(tabs.map((t) => refresh(shortGrace, t.body.refreshToken)));
    expect(again.map((t) => t.status)).toEqual([200, 200, 200]);
  });
});

describe('POST /auth/refresh: invalid tokens', () => {
  it.each([
    ['an unknown token', `rt_${crypto.randomBytes(32).toString('base64url')}`],
    ['a garbage string', 'garbage-refresh-token'],
    ['an empty string', ''],
    ['a 10,000-character token', 'r'.repeat(10_000)],
  ])('refuses %s with 401 UNAUTHORIZED', async (_what, token) => {
    expectError(await refresh(app, token), 401, 'UNAUTHORIZED');
  });

  it('refuses an access token presented as a refresh token with 401 UNAUTHORIZED', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'acc' });
    expectError(await refresh(app, s.accessToken), 401, 'UNAUTHORIZED');
  });

  it.each([
    ['a missing refreshToken', {}],
    ['a numeric refreshToken', { refreshToken: 12345678 }],
    ['a null refreshToken', { refreshToken: null }],
    ['an object refreshToken', { refreshToken: { $gt: '' } }],
    ['an array refreshToken', { refreshToken: ['rt_a', 'rt_b'] }],
  ])('refuses %s with 400 BAD_REQUEST naming the field', async (_what, body) => {
    const err = expectError(await app.api('POST', '/auth/refresh', { body }), 400, 'BAD_REQUEST');
    expect(err.issues?.map((i) => i.path)).toContain('refreshToken');
  });

  it('refuses an expired refresh token with 401 UNAUTHORIZED', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'exp' });
    await app.deps.db
      .updateTable('refresh_tokens')
      .set({ expires_at: new Date(Date.now() - 60_000) })
      .where('user_id', '=', s.userId)
      .execute();
    expectError(await refresh(app, s.refreshToken), 401, 'UNAUTHORIZED');
  });

  it("refuses a suspended user's refresh token with 403 USER_SUSPENDED", async () => {
    const s = await registerAndLogin(app.api, { prefix: 'susp' });
    await app.deps.db.updateTable('users').set({ status: 'SUSPENDED' }).where('id', '=', s.userId).execute();
    const res = await refresh(app, s.refreshToken);
    expectError(res, 403, 'USER_SUSPENDED');
    expect(res.body.accessToken).toBeUndefined();
  });
});

describe('refresh token storage and secrets', () => {
  it('stores only an HMAC digest: the raw token never appears in refresh_tokens', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'hmac' });
    const rows = await app.deps.db.selectFrom('refresh_tokens').selectAll().where('user_id', '=', s.userId).execute();
    expect(rows).toHaveLength(1);
    const dump = JSON.stringify(rows);
    expect(dump).not.toContain(s.refreshToken);
    expect(dump).not.toContain(s.refreshToken.replace(/^rt_/, ''));
    expect(rows[0].token_hash).toBe(
      crypto.createHmac('sha256', TEST_JWT_REFRESH_SECRET).update(s.refreshToken).digest('hex'),
    );
    expect(rows[0].token_hash).not.toBe(crypto.createHash('sha256').update(s.refreshToken).digest('hex'));
    const byRaw = await app.deps.db
      .selectFrom('refresh_tokens')
      .select('id')
      .where('token_hash', '=', s.refreshToken)
      .execute();
    expect(byRaw).toHaveLength(0);
  });

  it('refuses, after JWT_REFRESH_SECRET changed, a refresh token issued under the old secret with 401 UNAUTHORIZED', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'secret' });
    const rotatedSecret = await startTestApp({
      RATE_LIMIT_ENABLED: 'false',
      JWT_REFRESH_SECRET: 'another-refresh-secret-0123456789abcdef01234',
    });
    try {
      expectError(await refresh(rotatedSecret, s.refreshToken), 401, 'UNAUTHORIZED');
    } finally {
      await rotatedSecret.close();
    }
    // Control: the same token is fine under the secret it was issued with.
    expect((await refresh(app, s.refreshToken)).status).toBe(200);
  });
});

describe('POST /auth/logout', () => {
  it('answers 200 and the refresh token is refused afterwards with 401 UNAUTHORIZED', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'out' });
    const res = await logout(app, s.refreshToken);
    expect(res.status).toBe(200);
    expect(typeof res.body.message).toBe('string');
    expectError(await refresh(app, s.refreshToken), 401, 'UNAUTHORIZED');
  });

  it('also refuses a sibling token of the same family (from a grace refresh)', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'sibling' });
    const a = await refresh(app, s.refreshToken);
    const b = await refresh(app, s.refreshToken);
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect((await logout(app, a.body.refreshToken)).status).toBe(200);
    expectError(await refresh(app, b.body.refreshToken), 401, 'UNAUTHORIZED');
    expectError(await refresh(app, a.body.refreshToken), 401, 'UNAUTHORIZED');
  });

  it('ends only that session: another sign-in of the same user keeps refreshing', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'one' });
    const other = await login(app.api, s.email, s.password);
    expect((await logout(app, s.refreshToken)).status).toBe(200);
    expect((await refresh(app, other.refreshToken)).status).toBe(200);
  });

  it('also refuses the token a refresh of the same token issues while the logout runs (30 trials)', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'out-race' });
    for (let i = 0; i < 30; i++) {
      const session = await login(app.api, s.email, s.password);
      const [refreshed, out] = await Promise.all([
        refresh(app, session.refreshToken),
        logout(app, session.refreshToken),
      ]);
      expect(out.status).toBe(200);
      if (refreshed.status === 200) expectError(await refresh(app, refreshed.body.refreshToken), 401, 'UNAUTHORIZED');
      else expectError(refreshed, 401, 'UNAUTHORIZED');
    }
  });

  it('answers 200 for an unknown token too (idempotent, tells nothing)', async () => {
    const res = await logout(app, `rt_${crypto.randomBytes(32).toString('base64url')}`);
    expect(res.status).toBe(200);
    expect(typeof res.body.message).toBe('string');
  });

  it('answers 200 when logging out the same token twice', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'twice' });
    expect((await logout(app, s.refreshToken)).status).toBe(200);
    expect((await logout(app, s.refreshToken)).status).toBe(200);
  });

  it.each([
    ['a missing refreshToken', {}],
    ['a numeric refreshToken', { refreshToken: 42 }],
  ])('refuses %s with 400 BAD_REQUEST', async (_what, body) => {
    const err = expectError(await app.api('POST', '/auth/logout', { body }), 400, 'BAD_REQUEST');
    expect(err.issues?.map((i) => i.path)).toContain('refreshToken');
  });
});
