// An owner deletes a workspace: it waits in PENDING_DELETION for WORKSPACE_DELETION_GRACE_DAYS, during which
// only restore is open, then a maintenance task purges its content in small batches (purgeDeletedWorkspaces).
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { Actor } from '../../server/platform/actor.js';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import { recordAudit } from '../audit/service.js';
import { emitEvent } from '../events/emit.js';
import type { WorkspaceAccess } from './access.js';
import { getWorkspace, notFound } from './service.js';

type Db = Kysely<Database>;
type Deps = Pick<AppDeps, 'db' | 'config'>;

/**
 * What ends a workspace's subscription at its processor when the workspace is deleted (the billing domain's
 * cancel, handed in by the router), so it is not charged again.
 */
export type EndSubscription = (workspaceId: string) => Promise<void>;

/**
 * Schedules the deletion of a workspace: PENDING_DELETION with its purge time. `confirmName` must be the
 * workspace's name, typed back. Its subscription is canceled at the processor first: when the processor
 * cannot be reached, nothing changes and the request answers that error (try again later).
 */
export async function requestDeletion(
  deps: Deps & { endSubscription: EndSubscription },
  actor: Actor,
  input: { workspaceId: string; confirmName: string },
) {
  const { db, config } = deps;
  const { workspaceId } = input;
  const purgeAt = new Date(Date.now() + config.WORKSPACE_DELETION_GRACE_DAYS * 86_400_000);
  await assertDeletable(db, input);
  await deps.endSubscription(workspaceId);
  await db.transaction().execute(async (trx) => {
    const workspace = await trx
      .selectFrom('workspaces')
      .select(['name', 'status'])
      .where('id', '=', workspaceId)
      .where('deleted_at', 'is', null)
      .forUpdate()
      .executeTakeFirst();
    if (!workspace) throw notFound();
    // Checked again under the lock: a rename or a state move may have come in between.
    if (input.confirmName !== workspace.name)
      throw new AppError('CONFLICT', 'The workspace changed meanwhile: look at it again before deleting it.');
    if (workspace.status !== 'ACTIVE')
      throw new AppError('INVALID_STATE', `The workspace is ${workspace.status}; only an ACTIVE one can be deleted.`);
    await trx
      .updateTable('workspaces')
      .set({ status: 'PENDING_DELETION', deletion_requested_at: new Date(), purge_at: purgeAt, updated_at: new Date() })
      .where('id', '=', workspaceId)
      .execute();
    await emitEvent(trx, workspaceId, 'workspace.deleted', { purgeAt: purgeAt.toISOString() });
    await recordAudit(trx, actor, {
      action: 'workspace.deletion_requested',
      targetType: 'workspace',
      targetId: workspaceId,
      workspaceId,
      metadata: { purgeAt: purgeAt.toISOString() },
    });
  });
  return {
    message: `The workspace will be purged at ${purgeAt.toISOString()}; until then an owner can restore it.`,
    status: 'PENDING_DELETION' as const,
    purgeAt: purgeAt.toISOString(),
  };
}

/** The checks of a deletion, before anything is canceled: the name typed back, an ACTIVE workspace. */
async function assertDeletable(db: Db, { workspaceId, confirmName }: { workspaceId: string; confirmName: string }) {
  const workspace = await db
    .selectFrom('workspaces')
    .select(['name', 'status'])
    .where('id', '=', workspaceId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!workspace) throw notFound();
  if (confirmName !== workspace.name) {
    throw new AppError('BAD_REQUEST', 'Type the workspace name exactly as it is to confirm the deletion.', [
      { path: 'confirmName', message: 'Does not match the workspace name.', code: 'custom' },
    ]);
  }
  if (workspace.status !== 'ACTIVE')
    throw new AppError('INVALID_STATE', `The workspace is ${workspace.status}; only an ACTIVE one can be deleted.`);
}

/** Brings a workspace back from PENDING_DELETION before its purge: ACTIVE again, on the default plan. */
export async function restoreWorkspace(
  deps: Pick<AppDeps, 'db'>,
  actor: Actor,
  input: { workspace: Pick<WorkspaceAccess, 'id' | 'role'> },
) {
  const workspaceId = input.workspace.id;
  await deps.db.transaction().execute(async (trx) => {
    const workspace = await trx
      .selectFrom('workspaces')
      .select(['status', 'purge_at'])
      .where('id', '=', workspaceId)
      .where('deleted_at', 'is', null)
      .forUpdate()
      .executeTakeFirst();
    if (!workspace) throw notFound();
    if (workspace.status !== 'PENDING_DELETION')
      throw new AppError('INVALID_STATE', `The workspace is ${workspace.status}: there is no deletion to undo.`);
    if (!workspace.purge_at || workspace.purge_at <= new Date())
      throw new AppError('INVALID_STATE', 'The grace period is over: the workspace is being purged.');
    const plan = await trx
      .selectFrom('plans')
      .select(['id', 'edition', 'limits'])
      .where('is_default', '=', true)
      .executeTakeFirst();
    await trx
      .updateTable('workspaces')
      .set({
        status: 'ACTIVE',
        deletion_requested_at: null,
        purge_at: null,
        plan_id: plan?.id ?? null,
        edition: plan?.edition ?? 'LITE',
        limits: JSON.stringify(plan?.limits ?? {}),
        updated_at: new Date(),
      })
      .where('id', '=', workspaceId)
      .execute();
    await emitEvent(trx, workspaceId, 'workspace.restored', { planId: plan?.id ?? null });
    await recordAudit(trx, actor, {
      action: 'workspace.restored',
      targetType: 'workspace',
      targetId: workspaceId,
      workspaceId,
      metadata: { from: 'PENDING_DELETION' },
    });
  });
  return getWorkspace(deps, input);
}

/**
 * The tables a purge empties for a workspace, children before parents. What stays: the workspace row
 * itself (deleted, for the records below), its subscriptions, payments, billing events and audit entries,
 * which an operator keeps for its books (docs/decisions.md, "Workspaces and administration").
 */
const PURGED_TABLES = [
  'webhook_deliveries',
  'domain_events',
  'ai_generations',
  'ai_usage_counters',
  'webhooks',
  'api_keys',
  'workspace_invitations',
  'analytics_events',
  'workspace_members',
] as const;

export interface PurgeReport {
  workspaces: number;
  rows: number;
  files: number;
}

/**
 * Purges the workspaces whose grace period is over, each in batches of `PURGE_BATCH_SIZE` rows, one short
 * statement a batch (no long lock on the shared tables; other work goes on between batches). Stored files
 * are deleted from storage first, then their rows. Nothing holds a purge back: past `purge_at` a restore is
 * refused, and two runs at once only share the deletes. A purge cut short is taken up by the next run.
 */
export async function purgeDeletedWorkspaces(deps: Pick<AppDeps, 'db' | 'config' | 'storage' | 'logger'>) {
  const report: PurgeReport = { workspaces: 0, rows: 0, files: 0 };
  const due = await deps.db
    .selectFrom('workspaces')
    .select('id')
    .where('status', '=', 'PENDING_DELETION')
    .where('purged_at', 'is', null)
    .where('purge_at', '<=', new Date())
    .orderBy('purge_at')
    .execute();
  for (const { id } of due) {
    const counts = await purgeContent(deps, id);
    report.rows += counts.rows;
    report.files += counts.files;
    await deps.db
      .updateTable('workspaces')
      .set({ purged_at: new Date(), deleted_at: new Date(), updated_at: new Date() })
      .where('id', '=', id)
      .where('purged_at', 'is', null)
      .execute();
    report.workspaces += 1;
  }
  if (report.workspaces) deps.logger.info(report, 'deleted workspaces purged');
  return report;
}

async function purgeContent(deps: Pick<AppDeps, 'db' | 'config' | 'storage'>, workspaceId: string) {
  const { db, config, storage } = deps;
  const batch = config.PURGE_BATCH_SIZE;
  let rows = 0;
  let files = 0;
  for (;;) {
    const stored = await db
      .selectFrom('files')
      .select(['id', 'storage_key'])
      .where('workspace_id', '=', workspaceId)
      .limit(batch)
      .execute();
    if (stored.length === 0) break;
    for (const file of stored) await storage.delete(file.storage_key);
    await db.updateTable('workspaces').set({ logo_file_id: null }).where('id', '=', workspaceId).execute();
    await db
      .deleteFrom('files')
      .where(
        'id',
        'in',
        stored.map((f) => f.id),
      )
      .execute();
    files += stored.length;
  }
  for (const table of PURGED_TABLES) {
    for (;;) {
      const n = await deleteBatch(db, table, workspaceId, batch);
      rows += n;
      // Until a batch finds nothing, not merely fewer than `batch`: a row updated meanwhile (an event
      // marked dispatched, a delivery recorded) has a new ctid and is skipped by the batch that saw the
      // old one, and two runs at once share a batch. Once purged_at is set, no run comes back for it.
      if (n === 0) break;
      // Other statements get their turn between batches.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  return { rows, files };
}

/** Deletes up to `limit` rows of a workspace from `table`, in one statement of its own. */
async function deleteBatch(db: Db, table: (typeof PURGED_TABLES)[number], workspaceId: string, limit: number) {
  const result = await sql`delete from ${sql.table(table)} where ctid = any(array(
      select ctid from ${sql.table(table)} where workspace_id = ${workspaceId} limit ${limit}))`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}
