// Fixtures of the account self-service tests (routers/account): reads of the rows an account owns, the
// calls of the account routes, and a session made old (or an account made passwordless) in the database.
import crypto from 'node:crypto';
import { sql } from 'kysely';
import { expect } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { Session } from '../helpers/http.js';

export { waitFor } from '../helpers/wait.js';

export const hex = (bytes = 4) => crypto.randomBytes(bytes).toString('hex');

/** The tombstone address of an erased account (routers/account/erasure.ts). */
export const tombstoneOf = (userId: string) => `deleted+${userId}@invalid`;
export const DELETED_NAME = 'Deleted user';

/** GET /auth/me as `token`. */
export const me = (app: TestApp, token: string) => app.api('GET', '/auth/me', { token });

/** POST /auth/me/delete as `s` with `body` (the password, a code). */
export const deleteMe = (app: TestApp, s: Pick<Session, 'accessToken'>, body: Record<string, unknown> = {}) =>
  app.api('POST', '/auth/me/delete', { token: s.accessToken, body });

/** POST /auth/change-email as `s`. */
export const changeEmail = (app: TestApp, s: Pick<Session, 'accessToken'>, body: Record<string, unknown>) =>
  app.api('POST', '/auth/change-email', { token: s.accessToken, body });

export const confirmEmailChange = (app: TestApp, token: string) =>
  app.api('POST', '/auth/confirm-email-change', { body: { token } });

/** The stored user row (deleted or not). */
export const userRow = (app: TestApp, userId: string) =>
  app.deps.db.selectFrom('users').selectAll().where('id', '=', userId).executeTakeFirstOrThrow();

/** Moves the creation of every session of the user `minutes` into the past (a sign-in that long ago). */
export async function ageSessions(app: TestApp, userId: string, minutes: number) {
  await sql`update sessions set created_at = ${new Date(Date.now() - minutes * 60_000)} where user_id = ${userId}`.execute(
    app.deps.db,
  );
}

/** The audit entries on a user (target) of one action. */
export const auditOn = (app: TestApp, userId: string, action: string) =>
  app.deps.db
    .selectFrom('audit_logs')
    .selectAll()
    .where('target_id', '=', userId)
    .where('action', '=', action)
    .orderBy('created_at')
    .execute();

/** POST /workspaces/{id}/transfer-ownership, expecting 200. */
export async function handOver(app: TestApp, owner: Session, workspaceId: string, newOwnerUserId: string) {
  const res = await app.api('POST', `/workspaces/${workspaceId}/transfer-ownership`, {
    token: owner.accessToken,
    body: { newOwnerUserId },
  });
  expect(res.status, res.text).toBe(200);
}
