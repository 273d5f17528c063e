// Workspaces as their members see them: reading, creating and changing one. Members and invitations are in
// members.ts, the platform admin's operations in admin.ts. Every change is audited in its own transaction.
import { checkRequireSso } from '../sso/policy.js';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { signedInUser, type Actor } from '../../server/platform/actor.js';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import { recordAudit } from '../audit/service.js';
import type { WorkspaceAccess } from './access.js';

type Db = Kysely<Database>;
type Deps = Pick<AppDeps, 'db'>;

export const notFound = () => new AppError('NOT_FOUND', 'Workspace not found.');

/** Workspace rows as clients see them, with their member count; deleted ones never. */
export function workspaceRows(db: Db) {
  return db
    .selectFrom('workspaces as w')
    .select((eb) => [
      'w.id',
      'w.name',
      'w.status',
      'w.edition',
      'w.is_personal',
      'w.require_mfa',
      'w.require_sso',
      'w.created_at',
      'w.updated_at',
      eb
        .selectFrom('workspace_members as m')
        .select((e) => e.fn.countAll<string>().as('n'))
        .whereRef('m.workspace_id', '=', 'w.id')
        .where('m.status', '=', 'ACTIVE')
        .as('member_count'),
    ])
    .where('w.deleted_at', 'is', null);
}

export type WorkspaceRow = Awaited<ReturnType<ReturnType<typeof workspaceRows>['executeTakeFirstOrThrow']>>;

export function toWorkspace(w: WorkspaceRow) {
  return {
    id: w.id,
    name: w.name,
    status: w.status,
    edition: w.edition,
    isPersonal: w.is_personal,
    requireMfa: w.require_mfa,
    requireSso: w.require_sso,
    memberCount: Number(w.member_count ?? 0),
    createdAt: w.created_at.toISOString(),
    updatedAt: w.updated_at.toISOString(),
  };
}

/** A workspace that is not deleted, as clients see it (with its member count). */
export async function loadWorkspace(db: Db, workspaceId: string) {
  const row = await workspaceRows(db).where('w.id', '=', workspaceId).executeTakeFirst();
  if (!row) throw notFound();
  return toWorkspace(row);
}

/** The caller's workspaces, every state but deleted, in the order they joined them. */
export async function listMyWorkspaces({ db }: Deps, { memberships }: { memberships: WorkspaceAccess[] }) {
  if (memberships.length === 0) return { items: [] };
  const rows = await workspaceRows(db)
    .where(
      'w.id',
      'in',
      memberships.map((m) => m.id),
    )
    .execute();
  const byId = new Map(rows.map((r) => [r.id, toWorkspace(r)]));
  return {
    items: memberships.flatMap((m) => {
      const w = byId.get(m.id);
      return w ? [{ ...w, role: m.role }] : [];
    }),
  };
}

export async function getWorkspace({ db }: Deps, { workspace }: { workspace: Pick<WorkspaceAccess, 'id' | 'role'> }) {
  return { ...(await loadWorkspace(db, workspace.id)), role: workspace.role };
}

export async function listMembers({ db }: Deps, { workspaceId }: { workspaceId: string }) {
  const rows = await db
    .selectFrom('workspace_members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(['u.id', 'u.email', 'u.name', 'm.role', 'm.status', 'm.created_at'])
    .where('m.workspace_id', '=', workspaceId)
    .orderBy('m.created_at')
    .orderBy('u.id')
    .execute();
  return rows.map((r) => ({
    userId: r.id,
    email: r.email,
    name: r.name,
    role: r.role,
    status: r.status,
    joinedAt: r.created_at.toISOString(),
  }));
}

/** A new workspace owned by `ownerId`, on the default plan (its edition and limits). */
export async function insertWorkspace(
  db: Db,
  opts: { name: string; ownerId: string; isPersonal?: boolean },
): Promise<WorkspaceAccess> {
  const plan = await db
    .selectFrom('plans')
    .select(['id', 'edition', 'limits'])
    .where('is_default', '=', true)
    .executeTakeFirst();
  const workspace = await db
    .insertInto('workspaces')
    .values({
      name: opts.name,
      is_personal: opts.isPersonal ?? false,
      plan_id: plan?.id ?? null,
      edition: plan?.edition ?? 'LITE',
      limits: JSON.stringify(plan?.limits ?? {}),
    })
    .returning(['id', 'name', 'status', 'edition', 'limits', 'require_mfa', 'require_sso'])
    .executeTakeFirstOrThrow();
  await db
    .insertInto('workspace_members')
    .values({ workspace_id: workspace.id, user_id: opts.ownerId, role: 'OWNER' })
    .execute();
  return { ...workspace, role: 'OWNER', membership_status: 'ACTIVE' };
}

export async function createWorkspace({ db }: Deps, actor: Actor, input: { name: string }) {
  const { id: ownerId } = signedInUser(actor);
  const id = await db.transaction().execute(async (trx) => {
    const { id } = await insertWorkspace(trx, { name: input.name, ownerId });
    await recordAudit(trx, actor, {
      action: 'workspace.created',
      targetType: 'workspace',
      targetId: id,
      workspaceId: id,
      metadata: { name: input.name },
    });
    return id;
  });
  return { ...(await loadWorkspace(db, id)), role: 'OWNER' as const };
}

/**
 * A member's change of a workspace: its name, and whether members need two-factor sign-in. Requiring it
 * takes a caller who has it (`callerMfaEnabled`), so no one locks themselves out by mistake.
 */
export async function updateWorkspace(
  { db }: Deps,
  actor: Actor,
  input: { workspaceId: string; name?: string; requireMfa?: boolean; requireSso?: boolean; callerMfaEnabled?: boolean },
) {
  const { workspaceId, callerMfaEnabled = true, ...changes } = input;
  if (changes.requireSso) await checkRequireSso({ db }, workspaceId);
  if (changes.requireMfa && !callerMfaEnabled)
    throw new AppError(
      'MFA_REQUIRED',
      'Turn on two-factor sign-in for your own account before requiring it of the members.',
    );
  await db.transaction().execute(async (trx) => {
    const updated = await trx
      .updateTable('workspaces')
      .set({
        ...(changes.name !== undefined ? { name: changes.name } : {}),
        ...(changes.requireMfa !== undefined ? { require_mfa: changes.requireMfa } : {}),
        ...(changes.requireSso !== undefined ? { require_sso: changes.requireSso } : {}),
        updated_at: new Date(),
      })
      .where('id', '=', workspaceId)
      .where('deleted_at', 'is', null)
      .returning('id')
      .executeTakeFirst();
    if (!updated) throw notFound();
    await recordAudit(trx, actor, {
      action: 'workspace.updated',
      targetType: 'workspace',
      targetId: workspaceId,
      workspaceId,
      metadata: {
        ...(changes.name !== undefined ? { name: changes.name } : {}),
        ...(changes.requireMfa !== undefined ? { requireMfa: changes.requireMfa } : {}),
        ...(changes.requireSso !== undefined ? { requireSso: changes.requireSso } : {}),
      },
    });
  });
  return loadWorkspace(db, workspaceId);
}
