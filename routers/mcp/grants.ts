// The apps people connected over OAuth (oauth_grants): listed and revoked per workspace (api_keys.manage),
// and revoked for a user whose password is reset, who is suspended or whose account is deleted. A revoked
// grant's tokens are deleted, and /mcp reads the grant on every call, so revocation applies at once.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { AppDeps } from '../../server/platform/context.js';
import type { Actor } from '../../server/platform/actor.js';
import { AppError } from '../../server/platform/errors.js';
import { recordAudit } from '../audit/service.js';

export async function listGrants({ db }: Pick<AppDeps, 'db'>, { workspaceId }: { workspaceId: string }) {
  const rows = await db
    .selectFrom('oauth_grants as g')
    .innerJoin('users as u', 'u.id', 'g.user_id')
    .select([
      'g.id',
      'g.client_id',
      'g.client_name',
      'g.scopes',
      'g.created_at',
      'g.last_used_at',
      'g.user_id',
      'u.email as user_email',
    ])
    .where('g.workspace_id', '=', workspaceId)
    .where('g.revoked_at', 'is', null)
    .orderBy('g.created_at', 'desc')
    .orderBy('g.id')
    .limit(500)
    .execute();
  return {
    items: rows.map((g) => ({
      id: g.id,
      clientId: g.client_id,
      clientName: g.client_name,
      scopes: g.scopes,
      user: { id: g.user_id, email: g.user_email },
      createdAt: g.created_at.toISOString(),
      lastUsedAt: g.last_used_at?.toISOString() ?? null,
    })),
  };
}

/** Revokes one grant of the workspace: its tokens stop at once. */
export async function revokeGrant(
  deps: Pick<AppDeps, 'db'>,
  actor: Actor,
  { workspaceId, grantId }: { workspaceId: string; grantId: string },
) {
  await deps.db.transaction().execute(async (trx) => {
    const revoked = await trx
      .updateTable('oauth_grants')
      .set({ revoked_at: new Date() })
      .where('id', '=', grantId)
      .where('workspace_id', '=', workspaceId)
      .where('revoked_at', 'is', null)
      .returning(['id', 'client_id'])
      .executeTakeFirst();
    if (!revoked) throw new AppError('NOT_FOUND', 'OAuth grant not found.');
    await deleteTokens(trx, [grantId]);
    await recordAudit(trx, actor, {
      action: 'oauth_grant.revoked',
      targetType: 'oauth_grant',
      targetId: grantId,
      workspaceId,
      metadata: { clientId: revoked.client_id },
    });
  });
  return { message: 'The app is disconnected: its tokens no longer work.' };
}

/** Every live grant of a user, revoked (password reset, suspension, deletion); in the caller's transaction. */
export async function revokeUserGrants(trx: Kysely<Database>, userId: string) {
  const revoked = await trx
    .updateTable('oauth_grants')
    .set({ revoked_at: new Date() })
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .returning('id')
    .execute();
  await deleteTokens(
    trx,
    revoked.map((g) => g.id),
  );
}

async function deleteTokens(trx: Kysely<Database>, grantIds: string[]) {
  if (!grantIds.length) return;
  await trx.deleteFrom('oauth_payloads').where('grant_id', 'in', grantIds).execute();
  await trx.deleteFrom('oauth_payloads').where('model', '=', 'Grant').where('id', 'in', grantIds).execute();
}
