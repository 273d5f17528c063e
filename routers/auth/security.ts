// The signed-in user's own security settings: a password change, and the list of their sessions with the
// ending of one or of all the others.
import { signedInUser, type Actor } from '../../server/platform/actor.js';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import { recordAudit } from '../audit/service.js';
import { endMfaChallenges } from './mfa.js';
import { lockSessionsOf, revokeAllSessions, revokeFamily } from './sessions.js';

type Deps = Pick<AppDeps, 'config' | 'db' | 'logger' | 'mailer' | 'passwords'>;

/**
 * Sets a new password, given the current one, and ends every other session of the user (the one asking
 * stays signed in). Sign-in steps under way with the old password are voided.
 */
export async function changePassword(
  deps: Deps,
  actor: Actor,
  input: { currentPassword: string; newPassword: string },
) {
  const { id: userId } = signedInUser(actor);
  const current = await deps.db.selectFrom('users').select('password_hash').where('id', '=', userId).executeTakeFirst();
  const ok = await deps.passwords.verify(input.currentPassword, current?.password_hash);
  if (!ok || !current?.password_hash) throw new AppError('INVALID_CREDENTIALS', 'The current password is not right.');
  const passwordHash = await deps.passwords.hash(input.newPassword);
  const ended = await deps.db.transaction().execute(async (trx) => {
    await lockSessionsOf(trx, userId);
    const now = new Date();
    const changed = await trx
      .updateTable('users')
      .set({ password_hash: passwordHash, updated_at: now })
      .where('id', '=', userId)
      .where('password_hash', '=', current.password_hash)
      .returning('id')
      .executeTakeFirst();
    // Changed meanwhile (a reset or another change): the password checked is no longer the password.
    if (!changed) throw new AppError('INVALID_CREDENTIALS', 'The current password is not right.');
    const n = await revokeAllSessions(trx, userId, 'password_changed', actor.sessionId ?? undefined);
    await endMfaChallenges(trx, userId);
    await recordAudit(trx, actor, {
      action: 'auth.password_changed',
      targetType: 'user',
      targetId: userId,
      metadata: { sessionsEnded: n },
    });
    return n;
  });
  return { message: 'Your password has been changed.', revoked: ended };
}

/** The user's sessions that are not over (not ended, refresh token not expired), newest first. */
export async function listSessions({ db }: Pick<Deps, 'db'>, actor: Actor) {
  const { id: userId } = signedInUser(actor);
  const rows = await db
    .selectFrom('sessions')
    .select(['id', 'created_at', 'last_used_at', 'user_agent', 'ip_address'])
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', new Date())
    .orderBy('last_used_at', 'desc')
    .orderBy('id')
    .limit(MAX_SESSIONS_LISTED)
    .execute();
  return {
    items: rows.map((r) => ({
      id: r.id,
      createdAt: r.created_at.toISOString(),
      lastUsedAt: r.last_used_at.toISOString(),
      userAgent: r.user_agent,
      ipAddress: r.ip_address,
      current: r.id === actor.sessionId,
    })),
  };
}

/** Sessions listed at most: a user with more has signed in that often within JWT_REFRESH_TTL. */
const MAX_SESSIONS_LISTED = 200;

/** Ends one of the user's sessions (its access tokens stop at their next request). NOT_FOUND when not theirs or over. */
export async function endSession(deps: Pick<Deps, 'db'>, actor: Actor, { sessionId }: { sessionId: string }) {
  const { id: userId } = signedInUser(actor);
  await deps.db.transaction().execute(async (trx) => {
    const session = await trx
      .selectFrom('sessions')
      .select('id')
      .where('id', '=', sessionId)
      .where('user_id', '=', userId)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', new Date())
      .executeTakeFirst();
    if (!session) throw new AppError('NOT_FOUND', 'Session not found.');
    await revokeFamily(trx, userId, sessionId, 'ended_by_user');
    await recordAudit(trx, actor, {
      action: 'auth.session_revoked',
      targetType: 'user',
      targetId: userId,
      metadata: { sessionId },
    });
  });
  return { message: 'The session has ended.' };
}

/** Ends every session of the user but the one asking; answers how many ended. */
export async function endOtherSessions(deps: Pick<Deps, 'db'>, actor: Actor) {
  const { id: userId } = signedInUser(actor);
  const revoked = await deps.db.transaction().execute(async (trx) => {
    const n = await revokeAllSessions(trx, userId, 'ended_by_user', actor.sessionId ?? undefined);
    await recordAudit(trx, actor, {
      action: 'auth.sessions_revoked',
      targetType: 'user',
      targetId: userId,
      metadata: { revoked: n },
    });
    return n;
  });
  return { revoked };
}
