// A user's place in workspaces: the memberships loaded with the user on every authenticated request
// (permission checks read them from ctx, no second query), and the sign-in context derived from them
// (the first ACTIVE workspace, or why there is none).
import type { ExpressionBuilder, Kysely } from 'kysely';
import { jsonArrayFrom } from 'kysely/helpers/postgres';
import type { Database } from '../../db/schema.js';
import type { WorkspaceAccess } from '../../server/platform/principal.js';

export type { WorkspaceAccess };
export {
  workspaceContext,
  type WorkspaceContext,
  type WorkspaceUnavailableReason,
} from '../../server/platform/access.js';

/**
 * For a select on `users`: that user's memberships of workspaces that are not deleted, in the order they
 * were joined, as a JSON array column.
 */
export const membershipsColumn = (eb: ExpressionBuilder<Database, 'users'>) =>
  jsonArrayFrom(
    eb
      .selectFrom('workspace_members as m')
      .innerJoin('workspaces as w', 'w.id', 'm.workspace_id')
      .select([
        'w.id',
        'w.name',
        'w.status',
        'w.edition',
        'w.limits',
        'm.role',
        'w.require_mfa',
        'm.status as membership_status',
        'w.require_sso',
      ])
      .whereRef('m.user_id', '=', 'users.id')
      .where('w.deleted_at', 'is', null)
      .orderBy('m.created_at')
      .orderBy('w.id'),
  ).as('memberships');

export async function membershipsOf(db: Kysely<Database>, userId: string): Promise<WorkspaceAccess[]> {
  const row = await db.selectFrom('users').select(membershipsColumn).where('id', '=', userId).executeTakeFirst();
  return row?.memberships ?? [];
}
