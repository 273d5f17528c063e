// Clean-up run by the maintenance scheduler (MAINTENANCE_SCHEDULER_ENABLED): rows that can no longer be
// used, kept a week for the record before they go.
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';

const KEEP_MS = 7 * 86_400_000;

export async function cleanUpExpiredTokens(db: Kysely<Database>) {
  const before = new Date(Date.now() - KEEP_MS);
  const [refresh, userTokens, invitations] = await Promise.all([
    db.deleteFrom('refresh_tokens').where((eb) => eb.or([eb('expires_at', '<', before), eb('revoked_at', '<', before)])).executeTakeFirst(),
    db.deleteFrom('user_tokens').where((eb) => eb.or([eb('expires_at', '<', before), eb('used_at', '<', before)])).executeTakeFirst(),
    db
      .deleteFrom('workspace_invitations')
      .where('accepted_at', 'is', null)
      .where((eb) => eb.or([eb('expires_at', '<', before), eb('revoked_at', '<', before)]))
      .executeTakeFirst(),
  ]);
  return {
    refreshTokens: Number(refresh.numDeletedRows),
    userTokens: Number(userTokens.numDeletedRows),
    invitations: Number(invitations.numDeletedRows),
  };
}
