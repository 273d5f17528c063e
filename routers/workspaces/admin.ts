// The platform admin's operations on workspaces: list and read with owners, create with an owner, rename,
// the state moves, safe delete and ownership transfer.
import type { Kysely } from 'kysely';
import { LIVE_SUBSCRIPTION_STATUSES, type Database, type WorkspaceStatus } from '../../db/schema.js';
import { escapeLike } from '../../db/text.js';
import type { Actor } from '../../server/platform/actor.js';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import { mapItems, paginate, type ListRequest } from '../../server/platform/pagination.js';
import { recordAudit } from '../audit/service.js';
import { handOver } from './members.js';
import {
  insertWorkspace,
  listMembers,
  loadWorkspace,
  notFound,
  toWorkspace,
  updateWorkspace,
  workspaceRows,
} from './service.js';

type Db = Kysely<Database>;
type Deps = Pick<AppDeps, 'db'>;

async function owners(db: Db, workspaceIds: string[]) {
  if (workspaceIds.length === 0) return new Map<string, Array<{ id: string; email: string; name: string }>>();
  const rows = await db
    .selectFrom('workspace_members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(['m.workspace_id', 'u.id', 'u.email', 'u.name'])
    .where('m.workspace_id', 'in', workspaceIds)
    .where('m.role', '=', 'OWNER')
    .orderBy('m.created_at')
    .execute();
  const byWorkspace = new Map<string, Array<{ id: string; email: string; name: string }>>();
  for (const { workspace_id, ...owner } of rows)
    byWorkspace.set(workspace_id, [...(byWorkspace.get(workspace_id) ?? []), owner]);
  return byWorkspace;
}

/** Newest first, by page or cursor, each with its owners; the total is exact without filters. */
export async function adminListWorkspaces(
  deps: Pick<AppDeps, 'db' | 'config'>,
  input: ListRequest & { search?: string; status?: WorkspaceStatus },
) {
  const { db } = deps;
  const { search, status, ...request } = input;
  const filters = { search, status };
  let query = workspaceRows(db);
  if (filters.search) query = query.where('w.name', 'ilike', `%${escapeLike(filters.search)}%`);
  if (filters.status) query = query.where('w.status', '=', filters.status);
  const page = await paginate(deps, query, {
    list: 'admin.workspaces',
    request,
    counters: filters.search || filters.status ? undefined : { scope: 'workspaces' },
    createdAt: 'w.created_at',
    id: 'w.id',
  });
  const ownersOf = await owners(
    db,
    page.items.map((r) => r.id),
  );
  return mapItems(page, (r) => ({ ...toWorkspace(r), owners: ownersOf.get(r.id) ?? [] }));
}

export async function adminGetWorkspace(deps: Deps, { workspaceId }: { workspaceId: string }) {
  const workspace = await loadWorkspace(deps.db, workspaceId);
  const [ownersOf, members] = await Promise.all([owners(deps.db, [workspaceId]), listMembers(deps, { workspaceId })]);
  return { ...workspace, owners: ownersOf.get(workspaceId) ?? [], members };
}

async function assertUserExists(db: Db, userId: string) {
  const user = await db.selectFrom('users').select('id').where('id', '=', userId).executeTakeFirst();
  if (!user) throw new AppError('NOT_FOUND', 'User not found.');
}

export async function adminCreateWorkspace(deps: Deps, actor: Actor, input: { name: string; ownerUserId: string }) {
  const { db } = deps;
  await assertUserExists(db, input.ownerUserId);
  const id = await db.transaction().execute(async (trx) => {
    const { id } = await insertWorkspace(trx, { name: input.name, ownerId: input.ownerUserId });
    await recordAudit(trx, actor, {
      action: 'workspace.created',
      targetType: 'workspace',
      targetId: id,
      workspaceId: id,
      metadata: { name: input.name, ownerUserId: input.ownerUserId },
    });
    return id;
  });
  return adminGetWorkspace(deps, { workspaceId: id });
}

export async function adminRenameWorkspace(deps: Deps, actor: Actor, input: { workspaceId: string; name: string }) {
  await updateWorkspace(deps, actor, input);
  return adminGetWorkspace(deps, input);
}

/** The admin's workspace state moves: the states each starts from, where it leads (409 INVALID_STATE otherwise). */
export const WORKSPACE_MOVES = {
  suspend: { from: ['ACTIVE'], to: 'SUSPENDED', action: 'workspace.suspended' },
  activate: { from: ['SUSPENDED'], to: 'ACTIVE', action: 'workspace.activated' },
  archive: { from: ['ACTIVE', 'SUSPENDED'], to: 'ARCHIVED', action: 'workspace.archived' },
  restore: { from: ['ARCHIVED'], to: 'ACTIVE', action: 'workspace.restored' },
} as const satisfies Record<string, { from: readonly WorkspaceStatus[]; to: WorkspaceStatus; action: string }>;

export type WorkspaceMove = keyof typeof WORKSPACE_MOVES;

export async function moveWorkspace(
  deps: Deps,
  actor: Actor,
  { workspaceId, move }: { workspaceId: string; move: WorkspaceMove },
) {
  const { db } = deps;
  const rule = WORKSPACE_MOVES[move];
  await db.transaction().execute(async (trx) => {
    const workspace = await trx
      .selectFrom('workspaces')
      .select('status')
      .where('id', '=', workspaceId)
      .where('deleted_at', 'is', null)
      .forUpdate()
      .executeTakeFirst();
    if (!workspace) throw notFound();
    if (!(rule.from as readonly WorkspaceStatus[]).includes(workspace.status)) {
      throw new AppError(
        'INVALID_STATE',
        `The workspace is ${workspace.status}; ${move} applies only to a workspace that is ${rule.from.join(' or ')}.`,
      );
    }
    await trx
      .updateTable('workspaces')
      .set({ status: rule.to, updated_at: new Date() })
      .where('id', '=', workspaceId)
      .execute();
    await recordAudit(trx, actor, {
      action: rule.action,
      targetType: 'workspace',
      targetId: workspaceId,
      workspaceId,
      metadata: { from: workspace.status, to: rule.to },
    });
  });
  return adminGetWorkspace(deps, { workspaceId });
}

/**
 * Safe delete: a soft delete that hides the workspace everywhere (lists, sign-in context, its routes),
 * refused while a paid subscription is live (cancel it first, or customers keep being charged).
 */
export async function deleteWorkspace({ db }: Deps, actor: Actor, { workspaceId }: { workspaceId: string }) {
  await db.transaction().execute(async (trx) => {
    const paid = await trx
      .selectFrom('subscriptions as s')
      .innerJoin('plans as p', 'p.id', 's.plan_id')
      .select('s.id')
      .where('s.workspace_id', '=', workspaceId)
      .where('s.status', 'in', [...LIVE_SUBSCRIPTION_STATUSES])
      .where('p.price_cents', '>', 0)
      .executeTakeFirst();
    if (paid) {
      throw new AppError(
        'SUBSCRIPTION_ACTIVE',
        'This workspace has an active paid subscription: cancel it before deleting the workspace.',
      );
    }
    const deleted = await trx
      .updateTable('workspaces')
      .set({ deleted_at: new Date(), updated_at: new Date() })
      .where('id', '=', workspaceId)
      .where('deleted_at', 'is', null)
      .returning('status')
      .executeTakeFirst();
    if (!deleted) throw notFound();
    await recordAudit(trx, actor, {
      action: 'workspace.deleted',
      targetType: 'workspace',
      targetId: workspaceId,
      workspaceId,
      metadata: { status: deleted.status },
    });
  });
  return { message: 'Workspace deleted.' };
}

/** Makes `newOwnerUserId` the OWNER, joining the workspace if needed; previous owners become ADMIN. */
export async function transferOwnership(
  deps: Deps,
  actor: Actor,
  input: { workspaceId: string; newOwnerUserId: string },
) {
  await assertUserExists(deps.db, input.newOwnerUserId);
  await deps.db.transaction().execute((trx) => handOver(trx, actor, { ...input, joinIfNeeded: true }));
  return adminGetWorkspace(deps, input);
}
