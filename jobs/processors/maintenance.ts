// Processors of the maintenance queue's sweep and clean-up jobs (MAINTENANCE_SCHEDULER_ENABLED; their
// schedules are in jobs/queue.ts). A job a scheduler queued before its setting was switched off does nothing.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { Config } from '../../server/platform/config.js';
import type { WebhookRunner } from '../../routers/webhooks/runner.js';

type MaintenanceConfig = Pick<Config, 'MAINTENANCE_SCHEDULER_ENABLED'>;
type Sweeper = Pick<WebhookRunner, 'dispatchPending' | 'sweep'>;

/**
 * The delivery sweep: dispatches the domain events no API instance picked up, and re-queues the deliveries
 * that never reached the queue (Redis was away).
 */
export function sweepDeliveries(deps: { config: MaintenanceConfig; runner: Sweeper }) {
  return async () => {
    if (!deps.config.MAINTENANCE_SCHEDULER_ENABLED) return undefined;
    return { dispatched: await deps.runner.dispatchPending(), swept: await deps.runner.sweep() };
  };
}

/** The daily clean-up of rows that can no longer be used. */
export function cleanUpTokens(deps: { config: MaintenanceConfig; db: Kysely<Database> }) {
  return async () => (deps.config.MAINTENANCE_SCHEDULER_ENABLED ? cleanUpExpiredTokens(deps.db) : undefined);
}

/** Rows that can no longer be used, kept a week for the record before they go. */
const KEEP_MS = 7 * 86_400_000;

export async function cleanUpExpiredTokens(db: Kysely<Database>) {
  const before = new Date(Date.now() - KEEP_MS);
  const [refresh, userTokens, invitations, oauthStates, oauthCodes, mfaChallenges, idempotencyKeys] = await Promise.all(
    [
      db
        .deleteFrom('refresh_tokens')
        .where((eb) => eb.or([eb('expires_at', '<', before), eb('revoked_at', '<', before)]))
        .executeTakeFirst(),
      db
        .deleteFrom('user_tokens')
        .where((eb) => eb.or([eb('expires_at', '<', before), eb('used_at', '<', before)]))
        .executeTakeFirst(),
      db
        .deleteFrom('workspace_invitations')
        .where('accepted_at', 'is', null)
        .where((eb) => eb.or([eb('expires_at', '<', before), eb('revoked_at', '<', before)]))
        .executeTakeFirst(),
      // Sign-in flows and their one-time codes (routers/oauth): minutes of life each.
      db.deleteFrom('oauth_states').where('expires_at', '<', before).executeTakeFirst(),
      db.deleteFrom('oauth_exchange_codes').where('expires_at', '<', before).executeTakeFirst(),
      // The second sign-in step's tokens (routers/auth/mfa.ts): minutes of life each.
      db.deleteFrom('mfa_challenges').where('expires_at', '<', before).executeTakeFirst(),
      // Idempotency keys and their stored answers (server/platform/idempotency.ts): gone once expired, as
      // an expired key no longer replays anything and its answer may carry a secret.
      db.deleteFrom('idempotency_keys').where('expires_at', '<=', new Date()).executeTakeFirst(),
    ],
  );
  // Single sign-on requests (routers/sso): 10 minutes of life; assertion ids kept for replay until their
  // own expiry.
  const [ssoRequests, ssoAssertions] = await Promise.all([
    db.deleteFrom('sso_requests').where('expires_at', '<', before).executeTakeFirst(),
    db.deleteFrom('sso_assertions').where('expires_at', '<', new Date()).executeTakeFirst(),
  ]);
  // Sessions over for a week, once their refresh tokens are gone (a session's tokens reference it).
  const sessions = await db
    .deleteFrom('sessions')
    .where((eb) => eb.or([eb('expires_at', '<', before), eb('revoked_at', '<', before)]))
    .where((eb) =>
      eb.not(
        eb.exists(eb.selectFrom('refresh_tokens as t').select('t.id').whereRef('t.family_id', '=', 'sessions.id')),
      ),
    )
    .executeTakeFirst();
  return {
    refreshTokens: Number(refresh.numDeletedRows),
    userTokens: Number(userTokens.numDeletedRows),
    invitations: Number(invitations.numDeletedRows),
    oauthStates: Number(oauthStates.numDeletedRows),
    oauthExchangeCodes: Number(oauthCodes.numDeletedRows),
    mfaChallenges: Number(mfaChallenges.numDeletedRows),
    sessions: Number(sessions.numDeletedRows),
    idempotencyKeys: Number(idempotencyKeys.numDeletedRows),
    ssoRequests: Number(ssoRequests.numDeletedRows),
    ssoAssertions: Number(ssoAssertions.numDeletedRows),
  };
}
