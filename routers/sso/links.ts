// The identities a workspace's connection signed in, and membership just in time: shared by the SSO sign-in
// (signin.ts) and the exchange of an SSO link code (routers/oauth/service.ts).
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Database, SsoConnectionsTable } from '../../db/schema.js';
import type { Actor } from '../../server/platform/actor.js';
import { AppError } from '../../server/platform/errors.js';
import { recordAudit } from '../audit/service.js';

type Connection = Selectable<SsoConnectionsTable>;

export const connectionById = (db: Kysely<Database>, id: string) =>
  db.selectFrom('sso_connections').selectAll().where('id', '=', id).executeTakeFirst();

export async function insertIdentity(
  trx: Transaction<Database>,
  connection: Connection,
  userId: string,
  subject: string,
  createdAccount: boolean,
) {
  await trx
    .insertInto('sso_identities')
    .values({
      connection_id: connection.id,
      workspace_id: connection.workspace_id,
      user_id: userId,
      subject,
      created_account: createdAccount,
      last_used_at: new Date(),
    })
    .execute();
}

/** Membership just in time, with the connection's defaultRole (never OWNER); an existing role is kept. */
export async function ensureMember(trx: Kysely<Database>, connection: Connection, userId: string) {
  await trx
    .insertInto('workspace_members')
    .values({ workspace_id: connection.workspace_id, user_id: userId, role: connection.default_role })
    .onConflict((oc) => oc.columns(['workspace_id', 'user_id']).doNothing())
    .execute();
}

/** At the exchange of a LINK code: the identity joins the account that started the link, and the workspace. */
export async function linkSsoIdentity(
  trx: Transaction<Database>,
  actor: Actor,
  code: { user_id: string; subject: string; sso_connection_id: string | null },
) {
  const connection = code.sso_connection_id ? await connectionById(trx, code.sso_connection_id) : undefined;
  if (!connection) throw new AppError('INVALID_TOKEN', 'This sign-in code is invalid, expired or already used.');
  const existing = await trx
    .selectFrom('sso_identities')
    .select('user_id')
    .where('connection_id', '=', connection.id)
    .where('subject', '=', code.subject)
    .executeTakeFirst();
  if (existing && existing.user_id !== code.user_id)
    throw new AppError('IDENTITY_ALREADY_LINKED', 'This single sign-on identity belongs to another account.');
  if (!existing) await insertIdentity(trx, connection, code.user_id, code.subject, false);
  await ensureMember(trx, connection, code.user_id);
  await recordAudit(trx, actor, {
    action: 'auth.identity_linked',
    targetType: 'user',
    targetId: code.user_id,
    workspaceId: connection.workspace_id,
    metadata: { provider: 'sso', connectionId: connection.id },
  });
}
