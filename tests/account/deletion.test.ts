// POST /auth/me/delete: re-authentication (the password; the second factor when 2FA is on; without a
// password a recent sign-in), the ownership guard (409 OWNERSHIP_TRANSFER_REQUIRED naming the workspaces),
// then the person erased at once: tokens dead, the address free to register again, the workspaces only they
// belonged to PENDING_DELETION and purged, the shared ones kept (their generations keep the user id) and told
// (user.deleted), the confirmation mail logged under the tombstone, and one erasure under two requests.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STRONG_PASSWORD, expectError, login, registerAndLogin, type Session } from '../helpers/http.js';
import { TEST_DEMO_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { mailsTo } from '../helpers/mail.js';
import { codeAt, enableMfa, forgetUsedSteps } from '../helpers/mfa.js';
import { purgeDeletedWorkspaces } from '../../routers/workspaces/lifecycle.js';
import { createWorkspace, inviteAndJoin, registerAs, roleIn, upgradeWorkspace } from '../workspaces/helpers.js';
import { createWebhook } from '../developer/helpers.js';
import { generateOk, uniquePrompt } from '../ai/helpers.js';
import { subscriptionsOf } from '../billing/helpers.js';
import {
  DELETED_NAME,
  ageSessions,
  auditOn,
  deleteMe,
  hex,
  me,
  tombstoneOf,
  userRow,
  waitFor,
  handOver,
} from './helpers.js';

const DEMO_EMAIL = `demo-delete-${hex()}@tests.local`;
const DELETED_MAIL = 'account-deleted';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ WEBHOOK_DELIVERY_ENABLED: 'false', AI_DEMO_RESTRICTED_EMAILS: DEMO_EMAIL });
});
afterAll(() => app?.close());

const db = () => app.deps.db;
const refresh = (refreshToken: string) => app.api('POST', '/auth/refresh', { body: { refreshToken } });
const workspaceRow = (id: string) =>
  db().selectFrom('workspaces').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const membersOf = (workspaceId: string) =>
  db().selectFrom('workspace_members').selectAll().where('workspace_id', '=', workspaceId).execute();

/** The account is still whole: its address, name, sessions and sign-in. */
async function expectIntact(s: Session) {
  const row = await userRow(app, s.userId);
  expect(row.email).toBe(s.email);
  expect(row.deleted_at).toBeNull();
  expect((await me(app, s.accessToken)).status).toBe(200);
}

/** The account is erased, and the tombstone is all that is left of the person on the user row. */
async function expectErased(userId: string) {
  const row = await userRow(app, userId);
  expect(row).toMatchObject({
    email: tombstoneOf(userId),
    name: DELETED_NAME,
    password_hash: null,
    mfa_enabled: false,
    email_verified_at: null,
    last_login_at: null,
  });
  expect(row.deleted_at).toBeInstanceOf(Date);
  for (const table of ['sessions', 'refresh_tokens', 'user_totp', 'mfa_backup_codes', 'user_identities'] as const) {
    const left = await db().selectFrom(table).select('user_id').where('user_id', '=', userId).execute();
    expect(left, table).toEqual([]);
  }
}

describe('re-authentication', () => {
  it('a wrong password: 401 INVALID_CREDENTIALS; none: 403 REAUTHENTICATION_REQUIRED; nothing erased, no mail', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'del-pw' });
    expectError(await deleteMe(app, s, { password: 'Wrong-pass-1234' }), 401, 'INVALID_CREDENTIALS');
    expectError(await deleteMe(app, s), 403, 'REAUTHENTICATION_REQUIRED');
    expectError(await deleteMe(app, s, { code: '123456' }), 403, 'REAUTHENTICATION_REQUIRED');
    await expectIntact(s);
    expect((await mailsTo(app, s.email)).map((m) => m.template)).not.toContain(DELETED_MAIL);
  });

  it('with 2FA on: no code 403, a wrong code 400 INVALID_MFA_CODE, the right one 200', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'del-mfa' });
    const { secret } = await enableMfa(app.api, s.accessToken);
    expectError(await deleteMe(app, s, { password: s.password }), 403, 'REAUTHENTICATION_REQUIRED');
    // Five steps away: a real code, never accepted now.
    expectError(await deleteMe(app, s, { password: s.password, code: codeAt(secret, 5) }), 400, 'INVALID_MFA_CODE');
    expectError(await deleteMe(app, s, { password: s.password, code: 'ABCD-EFGH' }), 400, 'INVALID_MFA_CODE');
    // A good code with a wrong password is still refused.
    await forgetUsedSteps(app, s.userId);
    expectError(
      await deleteMe(app, s, { password: 'Wrong-pass-1234', code: codeAt(secret) }),
      401,
      'INVALID_CREDENTIALS',
    );
    await expectIntact(s);

    await forgetUsedSteps(app, s.userId);
    const res = await deleteMe(app, s, { password: s.password, code: codeAt(secret) });
    expect(res.status, res.text).toBe(200);
    await expectErased(s.userId);
  });

  it('with 2FA on, a backup code does too', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'del-backup' });
    const { backupCodes } = await enableMfa(app.api, s.accessToken);
    const res = await deleteMe(app, s, { password: s.password, code: backupCodes[0] });
    expect(res.status, res.text).toBe(200);
    await expectErased(s.userId);
  });

  it('an account without a password: a sign-in older than 10 minutes 403, a recent one 200', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'del-nopw' });
    await db().updateTable('users').set({ password_hash: null }).where('id', '=', s.userId).execute();
    await ageSessions(app, s.userId, 11);
    expectError(await deleteMe(app, s), 403, 'REAUTHENTICATION_REQUIRED');
    await expectIntact(s);
    await ageSessions(app, s.userId, 9);
    const res = await deleteMe(app, s);
    expect(res.status, res.text).toBe(200);
    await expectErased(s.userId);
  });

  it('no bearer: 401', async () => {
    expectError(await app.api('POST', '/auth/me/delete', { body: { password: STRONG_PASSWORD } }), 401, 'UNAUTHORIZED');
  });
});

describe('demo accounts', () => {
  it('an address of AI_DEMO_RESTRICTED_EMAILS may not be deleted: 403 DEMO_READ_ONLY, intact', async () => {
    const demo = await registerAs(app, DEMO_EMAIL, 'Demo Person');
    expectError(await deleteMe(app, demo, { password: STRONG_PASSWORD }), 403, 'DEMO_READ_ONLY');
    await expectIntact(demo);
  });

  it('nor the demo admin (asked with a wrong password: the refusal comes first)', async () => {
    const demoAdmin = await login(app.api, TEST_DEMO_ADMIN.email, TEST_DEMO_ADMIN.password);
    expectError(await deleteMe(app, demoAdmin, { password: 'Wrong-pass-1234' }), 403, 'DEMO_READ_ONLY');
    expect((await userRow(app, demoAdmin.userId)).deleted_at).toBeNull();
  });
});

describe('a successful deletion', () => {
  it('answers { message }; access and refresh tokens stop at once; the address registers again', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'del-ok' });
    const other = await app.api('POST', '/auth/login', { body: { email: s.email, password: s.password } });
    expect(other.status).toBe(200);

    const res = await deleteMe(app, s, { password: s.password });
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.body)).toEqual(['message']);

    for (const token of [s.accessToken, other.body.accessToken as string])
      expectError(await me(app, token), 401, 'UNAUTHORIZED');
    for (const token of [s.refreshToken, other.body.refreshToken as string])
      expectError(await refresh(token), 401, 'UNAUTHORIZED');
    expectError(
      await app.api('POST', '/auth/login', { body: { email: s.email, password: s.password } }),
      401,
      'INVALID_CREDENTIALS',
    );
    await expectErased(s.userId);
    expect(await auditOn(app, s.userId, 'auth.account_deleted')).toHaveLength(1);

    // The confirmation mail went to the address; its log row now names the tombstone.
    expect(await mailsTo(app, s.email)).toEqual([]);
    const logged = await mailsTo(app, tombstoneOf(s.userId));
    expect(logged.map((m) => m.template)).toContain(DELETED_MAIL);
    for (const m of logged) expect(`${m.subject} ${m.text} ${m.html ?? ''}`).not.toContain(s.email);

    // The address is free: a new account, with a new id.
    const again = await app.api('POST', '/auth/register', {
      body: { email: s.email, password: STRONG_PASSWORD, name: 'New Person' },
    });
    expect(again.status, again.text).toBe(201);
    expect(again.body.user.id).not.toBe(s.userId);
    const back = await login(app.api, s.email, STRONG_PASSWORD);
    expect(back.userId).toBe(again.body.user.id);
  });

  it('its workspaces of its own go too: PENDING_DELETION at once, subscription canceled, then purged', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'del-sole' });
    await upgradeWorkspace(app, s.accessToken, s.workspaceId, 'pro');
    const second = await createWorkspace(app, s.accessToken, `Second ${hex()}`);
    const generation = await generateOk(app, s.accessToken, { prompt: uniquePrompt(), workspaceId: second });
    expect((await subscriptionsOf(app, s.workspaceId)).map((x) => x.status)).toEqual(['ACTIVE']);

    const before = Date.now();
    const res = await deleteMe(app, s, { password: s.password });
    expect(res.status, res.text).toBe(200);
    for (const id of [s.workspaceId, second]) {
      const w = await workspaceRow(id);
      expect(w.status).toBe('PENDING_DELETION');
      expect(w.purge_at!.getTime()).toBeLessThanOrEqual(Date.now());
      expect(w.purge_at!.getTime()).toBeGreaterThanOrEqual(before - 1_000);
      expect(await membersOf(id)).toEqual([]);
    }
    expect((await subscriptionsOf(app, s.workspaceId)).map((x) => x.status)).toEqual(['CANCELED']);

    await purgeDeletedWorkspaces(app.deps);
    for (const id of [s.workspaceId, second]) {
      const w = await workspaceRow(id);
      expect(w.purged_at).toBeInstanceOf(Date);
      expect(w.deleted_at).toBeInstanceOf(Date);
    }
    expect(await db().selectFrom('ai_generations').select('id').where('id', '=', generation.id).execute()).toEqual([]);
  });

  it('refused (409 OWNERSHIP_TRANSFER_REQUIRED, issues naming them) while the only owner of shared workspaces', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'del-owner' });
    const sharedName = `Shared ${hex()}`;
    const shared = await createWorkspace(app, s.accessToken, sharedName);
    const member = await inviteAndJoin(app, s.accessToken, shared, 'ADMIN', 'del-owner-admin');
    // Another shared workspace with a second OWNER does not block; the personal one (alone) does not either.
    const coOwned = await createWorkspace(app, s.accessToken, `Co-owned ${hex()}`);
    const coOwner = await inviteAndJoin(app, s.accessToken, coOwned, 'OWNER', 'del-co-owner');
    const generation = await generateOk(app, s.accessToken, { prompt: uniquePrompt(), workspaceId: shared });
    const hook = await createWebhook(
      app,
      s,
      { url: `https://hooks-${hex()}.example.invalid/x`, events: ['user.deleted'] },
      shared,
    );

    const err = expectError(await deleteMe(app, s, { password: s.password }), 409, 'OWNERSHIP_TRANSFER_REQUIRED');
    expect(err.issues).toEqual([{ path: shared, message: sharedName, code: expect.any(String) }]);
    await expectIntact(s);
    expect(await roleIn(app, shared, s.userId)).toBe('OWNER');
    expect(await mailsTo(app, s.email).then((ms) => ms.map((m) => m.template))).not.toContain(DELETED_MAIL);

    await handOver(app, s, shared, member.userId);
    const res = await deleteMe(app, s, { password: s.password });
    expect(res.status, res.text).toBe(200);
    await expectErased(s.userId);

    // The shared workspaces stay, with their other members; the user is no longer in them.
    for (const [id, who] of [
      [shared, member],
      [coOwned, coOwner],
    ] as const) {
      expect((await workspaceRow(id)).status).toBe('ACTIVE');
      expect((await membersOf(id)).map((m) => m.user_id)).toEqual([who.userId]);
    }
    expect(await roleIn(app, shared, member.userId)).toBe('OWNER');
    // Their generations keep the user id, without the person.
    const kept = await db().selectFrom('ai_generations').selectAll().where('id', '=', generation.id).execute();
    expect(kept.map((g) => g.user_id)).toEqual([s.userId]);
    // They hear of it: user.deleted (the role the user had), delivered to the webhook that asked for it.
    const events = await db()
      .selectFrom('domain_events')
      .selectAll()
      .where('workspace_id', 'in', [shared, coOwned])
      .where('type', '=', 'user.deleted')
      .execute();
    expect(events.map((e) => [e.workspace_id, e.payload]).sort()).toEqual(
      [
        [shared, { userId: s.userId, role: 'ADMIN' }],
        [coOwned, { userId: s.userId, role: 'OWNER' }],
      ].sort(),
    );
    const delivery = await waitFor(
      () =>
        db()
          .selectFrom('webhook_deliveries')
          .selectAll()
          .where('webhook_id', '=', hook.id)
          .where('event', '=', 'user.deleted')
          .executeTakeFirst(),
      { message: 'the user.deleted delivery' },
    );
    expect(JSON.stringify(delivery.payload)).toContain(s.userId);
    expect(JSON.stringify(delivery.payload)).not.toContain(s.email);
    // The member still works in it.
    expect((await me(app, member.accessToken)).status).toBe(200);
    const still = await generateOk(app, member.accessToken, { prompt: uniquePrompt(), workspaceId: shared });
    expect(still.workspaceId).toBe(shared);
  });

  it('the last two members deleting their accounts at once: the workspace goes with them, not left empty', async () => {
    for (let i = 0; i < 3; i++) {
      const a = await registerAndLogin(app.api, { prefix: 'del-pair-a' });
      const shared = await createWorkspace(app, a.accessToken, `Pair ${hex()}`);
      const b = await inviteAndJoin(app, a.accessToken, shared, 'OWNER', 'del-pair-b');
      const answers = await Promise.all([
        deleteMe(app, a, { password: a.password }),
        deleteMe(app, b, { password: b.password }),
      ]);
      expect(answers.map((r) => r.status)).toEqual([200, 200]);
      // Whichever went second was its only member by then: the workspace is deleted, not ACTIVE and empty.
      expect(await membersOf(shared)).toEqual([]);
      expect((await workspaceRow(shared)).status).toBe('PENDING_DELETION');
    }
  });

  it('two deletions at once: one 200, the other refused; erased once', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'del-twice' });
    const answers = await Promise.all([
      deleteMe(app, s, { password: s.password }),
      deleteMe(app, s, { password: s.password }),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 401]);
    expectError(
      answers.find((a) => a.status !== 200)!,
      401,
      'UNAUTHORIZED',
    );
    await expectErased(s.userId);
    expect(await auditOn(app, s.userId, 'auth.account_deleted')).toHaveLength(1);
    const logged = await mailsTo(app, tombstoneOf(s.userId));
    expect(logged.filter((m) => m.template === DELETED_MAIL)).toHaveLength(1);
    expect(await mailsTo(app, s.email)).toEqual([]);
    expect((await workspaceRow(s.workspaceId)).status).toBe('PENDING_DELETION');
  });
});
