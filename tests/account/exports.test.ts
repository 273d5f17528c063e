// POST /auth/me/exports, GET /auth/me/exports/{exportId}, GET .../download: an export of one's data, built
// in the API process at once (queues off), READY with a 24-hour download window, mailed about, one in
// progress at a time, its owner's only, and free of secrets. Every secret this file sent or was handed
// (passwords, refresh tokens, the TOTP secret, backup codes, the API key) is in the secret ledger, which
// sees the archive's body too (tests/helpers/secret-ledger-check.ts); the test also looks for them itself.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, registerAndLogin, type Session } from '../helpers/http.js';
import { mailsTo } from '../helpers/mail.js';
import { enableMfa } from '../helpers/mfa.js';
import { ledger } from '../helpers/secret-ledger.js';
import { generateOk, uniquePrompt } from '../ai/helpers.js';
import { createKey } from '../developer/helpers.js';
import { createWorkspace, inviteAndJoin, upgradeWorkspace } from '../workspaces/helpers.js';
import { runDataExports } from '../../routers/account/exports.js';
import { waitFor } from './helpers.js';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ARCHIVE_KEYS = ['auditEntries', 'exportedAt', 'generations', 'identities', 'memberships', 'sessions', 'user'];

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ WEBHOOK_DELIVERY_ENABLED: 'false' });
});
afterAll(() => app?.close());

const db = () => app.deps.db;
const requestExport = (s: Pick<Session, 'accessToken'>) =>
  app.api('POST', '/auth/me/exports', { token: s.accessToken });
const exportOf = (s: Pick<Session, 'accessToken'>, id: string) =>
  app.api('GET', `/auth/me/exports/${id}`, { token: s.accessToken });
const download = (s: Pick<Session, 'accessToken'>, id: string) =>
  app.api('GET', `/auth/me/exports/${id}/download`, { token: s.accessToken });
const exportRow = (id: string) =>
  db().selectFrom('user_exports').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

/** Asks for an export and waits until it is READY; answers its id and status answer. */
async function readyExport(s: Session) {
  const res = await requestExport(s);
  expect(res.status, res.text).toBe(201);
  const ready = await waitFor(
    async () => {
      const r = await exportOf(s, res.body.id);
      expect(r.status, r.text).toBe(200);
      expect(r.body.status).not.toBe('FAILED');
      return r.body.status === 'READY' ? r.body : undefined;
    },
    { message: `export ${res.body.id} READY` },
  );
  return { id: res.body.id as string, created: res.body, ready };
}

/** A PENDING export of the user that no builder can take while `during` runs (its row is locked). */
async function whileExportPending(userId: string, during: (exportId: string) => Promise<void>) {
  for (;;) {
    const { id } = await db()
      .insertInto('user_exports')
      .values({ user_id: userId })
      .returning('id')
      .executeTakeFirstOrThrow();
    const held = await db()
      .transaction()
      .execute(async (trx) => {
        // Builders claim with SKIP LOCKED: once this lock is held, the row stays PENDING.
        const row = await trx
          .selectFrom('user_exports')
          .select('id')
          .where('id', '=', id)
          .where('status', '=', 'PENDING')
          .forUpdate()
          .executeTakeFirst();
        if (!row) return false;
        await during(id);
        await trx.deleteFrom('user_exports').where('id', '=', id).execute();
        return true;
      });
    if (held) return;
    // A builder took it between the insert and the lock: another one.
  }
}

describe('POST /auth/me/exports, then GET /auth/me/exports/{exportId}', () => {
  it('answers 201 PENDING, becomes READY with 24 hours to download it, and a mail says so', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'export' });
    const started = Date.now();
    const { id, created, ready } = await readyExport(s);
    expect(created).toEqual({
      id: expect.stringMatching(UUID_RE),
      status: 'PENDING',
      createdAt: expect.any(String),
      expiresAt: null,
    });
    expect(Math.abs(Date.parse(created.createdAt) - started)).toBeLessThan(60_000);
    expect(ready).toEqual({ id, status: 'READY', createdAt: created.createdAt, expiresAt: expect.any(String) });
    const row = await exportRow(id);
    const window = Date.parse(ready.expiresAt) - row.ready_at!.getTime();
    expect(window).toBe(24 * 3_600_000);

    const mail = await waitFor(
      async () => (await mailsTo(app, s.email)).find((m) => m.template === 'data-export-ready'),
      { message: 'the export mail' },
    );
    expect(mail.link).toContain(id);
    const audit = await db()
      .selectFrom('audit_logs')
      .select('action')
      .where('actor_user_id', '=', s.userId)
      .where('action', '=', 'auth.data_exported')
      .execute();
    expect(audit).toHaveLength(1);
  });

  it('one at a time: 409 EXPORT_IN_PROGRESS while one is PENDING (and it cannot be downloaded yet)', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'export-busy' });
    await whileExportPending(s.userId, async (pendingId) => {
      expectError(await requestExport(s), 409, 'EXPORT_IN_PROGRESS');
      const status = await exportOf(s, pendingId);
      expect(status.body).toMatchObject({ id: pendingId, status: 'PENDING', expiresAt: null });
      expectError(await download(s, pendingId), 404, 'NOT_FOUND');
    });
    // Once nothing is in progress, a new one is taken.
    const next = await readyExport(s);
    expect(next.ready.status).toBe('READY');
    // A READY one does not block the next request.
    const again = await requestExport(s);
    expect(again.status, again.text).toBe(201);
  });

  it('no bearer: 401; an unknown id: 404; not a uuid: 400', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'export-bad' });
    expectError(await app.api('POST', '/auth/me/exports'), 401, 'UNAUTHORIZED');
    expectError(await app.api('GET', `/auth/me/exports/${crypto.randomUUID()}`), 401, 'UNAUTHORIZED');
    expectError(await exportOf(s, crypto.randomUUID()), 404, 'NOT_FOUND');
    expectError(await download(s, crypto.randomUUID()), 404, 'NOT_FOUND');
    expectError(await exportOf(s, 'not-a-uuid'), 400, 'BAD_REQUEST');
  });
});

describe('GET /auth/me/exports/{exportId}/download', () => {
  it('is a JSON attachment with everything kept about the user, and no secret', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'export-full', name: 'Export Person' });
    ledger.sent(s.refreshToken, 'a refresh token');
    // A second sign-in, and the refresh token it gets (used once, so the refresh gives another).
    const second = await registerAndLogin(app.api, { prefix: 'export-other' });
    const refreshed = await app.api('POST', '/auth/refresh', { body: { refreshToken: s.refreshToken } });
    expect(refreshed.status, refreshed.text).toBe(200);
    ledger.sent(refreshed.body.refreshToken, 'a refresh token');
    await upgradeWorkspace(app, s.accessToken, s.workspaceId, 'pro');
    const key = await createKey(app, s);
    ledger.sent(key.rawKey, 'an API key');
    const shared = await createWorkspace(app, second.accessToken, `Their workspace ${Math.random()}`);
    const joined = await inviteAndJoin(app, second.accessToken, shared, 'MEMBER', 'export-joiner');
    const prompt = uniquePrompt('Export this');
    const generation = await generateOk(app, s.accessToken, { prompt, workspaceId: s.workspaceId });
    const { secret, backupCodes } = await enableMfa(app.api, s.accessToken);

    const { id } = await readyExport(s);
    const res = await download(s, id);
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="data-export-${id}.json"`);
    const archive = res.body;
    expect(Object.keys(archive).sort()).toEqual(ARCHIVE_KEYS);
    expect(archive.user).toMatchObject({ id: s.userId, email: s.email, name: 'Export Person', mfaEnabled: true });
    expect(archive.identities).toEqual([]);
    expect(archive.memberships).toEqual([
      expect.objectContaining({ workspaceId: s.workspaceId, role: 'OWNER', workspaceStatus: 'ACTIVE' }),
    ]);
    expect(archive.generations).toEqual([
      expect.objectContaining({ id: generation.id, workspaceId: s.workspaceId, prompt, output: generation.output }),
    ]);
    const sessions = await db().selectFrom('sessions').select('id').where('user_id', '=', s.userId).execute();
    expect(archive.sessions.map((x: { id: string }) => x.id).sort()).toEqual(sessions.map((x) => x.id).sort());
    const actions: string[] = archive.auditEntries.map((a: { action: string }) => a.action);
    expect(actions).toEqual(expect.arrayContaining(['auth.data_exported', 'api_key.created']));
    for (const entry of archive.auditEntries)
      expect(Object.keys(entry).sort()).toEqual(['action', 'createdAt', 'ip', 'targetId', 'targetType', 'workspaceId']);
    // Someone else's workspace and generations are not the user's data.
    expect(res.text).not.toContain(shared);
    expect(res.text).not.toContain(joined.userId);

    // No secret: no password, token, second factor or key, nor what the database keeps of them.
    const stored = async (table: 'refresh_tokens' | 'mfa_backup_codes' | 'user_totp', column: string) =>
      (
        await db()
          .selectFrom(table)
          .select(column as never)
          .where('user_id', '=', s.userId)
          .execute()
      ).map((r) => Object.values(r as Record<string, string>)[0]);
    const { password_hash } = await db()
      .selectFrom('users')
      .select('password_hash')
      .where('id', '=', s.userId)
      .executeTakeFirstOrThrow();
    const { key_hash } = await db()
      .selectFrom('api_keys')
      .select('key_hash')
      .where('id', '=', key.id)
      .executeTakeFirstOrThrow();
    const secrets = [
      s.password,
      password_hash!,
      s.accessToken,
      s.refreshToken,
      refreshed.body.refreshToken,
      refreshed.body.accessToken,
      secret,
      ...backupCodes,
      ...backupCodes.map((c) => c.replace(/-/g, '')),
      key.rawKey,
      key_hash,
      ...(await stored('refresh_tokens', 'token_hash')),
      ...(await stored('mfa_backup_codes', 'code_hash')),
      ...(await stored('user_totp', 'secret_encrypted')),
    ];
    expect(secrets.length).toBeGreaterThan(20);
    for (const value of secrets)
      expect(res.text.includes(value), `a secret in the archive: ${value.slice(0, 6)}…`).toBe(false);
    expect(res.text).not.toMatch(/\$2[aby]?\$/);
    expect(res.text).not.toMatch(/wsk_|rt_[A-Za-z0-9_-]{20}|otpauth:/);
  });

  it("is the owner's only: another user's status and download are 404", async () => {
    const [owner, stranger] = await Promise.all([
      registerAndLogin(app.api, { prefix: 'export-owner' }),
      registerAndLogin(app.api, { prefix: 'export-stranger' }),
    ]);
    const { id } = await readyExport(owner);
    expectError(await exportOf(stranger, id), 404, 'NOT_FOUND');
    expectError(await download(stranger, id), 404, 'NOT_FOUND');
    expect((await download(owner, id)).status).toBe(200);
  });

  it('after expiresAt: 404 NOT_FOUND, and the task deletes the archive from storage', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'export-expired' });
    const { id } = await readyExport(s);
    const { storage_key } = await exportRow(id);
    expect(await app.deps.storage.get(storage_key!)).toBeDefined();
    await db()
      .updateTable('user_exports')
      .set({ expires_at: new Date(Date.now() - 1_000) })
      .where('id', '=', id)
      .execute();
    expectError(await download(s, id), 404, 'NOT_FOUND');

    await runDataExports(app.deps);
    expect((await exportRow(id)).storage_key).toBeNull();
    expect(await app.deps.storage.get(storage_key!)).toBeUndefined();
    expectError(await download(s, id), 404, 'NOT_FOUND');
  });
});
