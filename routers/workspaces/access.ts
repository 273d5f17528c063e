// A user's place in workspaces: the memberships loaded with the user on every authenticated request
// (permission checks read them from ctx, no second query), and the sign-in context derived from them
// (the first ACTIVE workspace, or why there is none).
import type { ExpressionBuilder, Kysely } from 'kysely';
import { jsonArrayFrom } from 'kysely/helpers/postgres';
import type { Database, Edition, PlanLimits, WorkspaceRole, WorkspaceStatus } from '../../db/schema.js';

export interface WorkspaceAccess {
  id: string;
  name: string;
  status: WorkspaceStatus;
  edition: Edition;
  /** The workspace's copy of its plan limits (AI generations, API keys, ...). */
  limits: PlanLimits;
  role: WorkspaceRole;
}

/**
 * For a select on `users`: that user's memberships of workspaces that are not deleted, in the order they
 * were joined, as a JSON array column.
 */
export const membershipsColumn = (eb: ExpressionBuilder<Database, 'users'>) =>
  jsonArrayFrom(
    eb
      .selectFrom('workspace_members as m')
      .innerJoin('workspaces as w', 'w.id', 'm.workspace_id')
      .select(['w.id', 'w.name', 'w.status', 'w.edition', 'w.limits', 'm.role'])
      .whereRef('m.user_id', '=', 'users.id')
      .where('w.deleted_at', 'is', null)
      .orderBy('m.created_at')
      .orderBy('w.id'),
  ).as('memberships');

export async function membershipsOf(db: Kysely<Database>, userId: string): Promise<WorkspaceAccess[]> {
  const row = await db.selectFrom('users').select(membershipsColumn).where('id', '=', userId).executeTakeFirst();
  return row?.memberships ?? [];
}

export type WorkspaceUnavailableReason = 'WORKSPACE_SUSPENDED' | 'WORKSPACE_ARCHIVED' | 'NO_WORKSPACE';

export interface WorkspaceContext {
  activeWorkspace: WorkspaceAccess | null;
  hasActiveWorkspace: boolean;
  workspaceUnavailableReason?: WorkspaceUnavailableReason;
}

/**
 * The workspace context of login and GET /auth/me: the first ACTIVE workspace the user joined; without
 * one, the reason (the state of the first membership, or NO_WORKSPACE).
 */
export function workspaceContext(memberships: WorkspaceAccess[]): WorkspaceContext {
  const active = memberships.find((m) => m.status === 'ACTIVE');
  if (active) return { activeWorkspace: active, hasActiveWorkspace: true };
  const first = memberships[0];
  return {
    activeWorkspace: null,
    hasActiveWorkspace: false,
    workspaceUnavailableReason: first ? (`WORKSPACE_${first.status}` as WorkspaceUnavailableReason) : 'NO_WORKSPACE',
  };
}
