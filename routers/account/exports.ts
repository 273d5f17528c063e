// A user's export of their data (GDPR article 20): asked for by POST /auth/me/exports, built in the
// background (the periodic task `data-exports`: on the worker when queues are on, in the API process
// otherwise, which also starts it at once), stored through the storage provider as one JSON file, mailed
// about when ready, downloadable by its owner for EXPORT_TTL_HOURS, then deleted. Nothing secret goes in:
// no password hash, token, TOTP secret, backup code or API key (the archive's schema names every field).
import crypto from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import type { z } from 'zod';
import type { Database, UserExportsTable } from '../../db/schema.js';
import { signedInUser, type Actor } from '../../server/platform/actor.js';
import type { AppDeps } from '../../server/platform/context.js';
import { sendAfterCommit } from '../../server/platform/email/mailer.js';
import { dataExportReadyMail } from '../../server/platform/email/templates.js';
import { AppError } from '../../server/platform/errors.js';
import { isUniqueViolation } from '../../db/errors.js';
import { recordAudit } from '../audit/service.js';
import { USER_COLUMNS, toUserOutput } from '../auth/schemas.js';
import type { exportArchiveOutput } from './schemas.js';

type Db = Kysely<Database>;
type BuildDeps = Pick<AppDeps, 'db' | 'config' | 'storage' | 'mailer' | 'logger'>;
export type ExportArchive = z.infer<typeof exportArchiveOutput>;

/** How long a ready archive can be downloaded. */
export const EXPORT_TTL_HOURS = 24;

const notFound = () => new AppError('NOT_FOUND', 'No such export (or it has expired).');

function toExport(e: Selectable<UserExportsTable>) {
  return {
    id: e.id,
    status: e.status,
    createdAt: e.created_at.toISOString(),
    expiresAt: e.expires_at?.toISOString() ?? null,
  };
}

/**
 * Asks for an export; one may be in progress at a time (409 EXPORT_IN_PROGRESS). `build`: the process starts
 * building it now (queues off); otherwise the worker's next run of the task takes it.
 */
export async function requestExport(
  deps: BuildDeps & Pick<AppDeps, 'inFlight'>,
  actor: Actor,
  input: { buildNow: boolean },
) {
  const { id: userId } = signedInUser(actor);
  const row = await deps.db
    .transaction()
    .execute(async (trx) => {
      const created = await trx
        .insertInto('user_exports')
        .values({ user_id: userId })
        .returningAll()
        .executeTakeFirstOrThrow();
      await recordAudit(trx, actor, { action: 'auth.data_exported', targetType: 'user', targetId: userId });
      return created;
    })
    .catch((err: unknown) => {
      if (isUniqueViolation(err, 'user_exports_one_pending'))
        throw new AppError('EXPORT_IN_PROGRESS', 'An export of your data is already being prepared.');
      throw err;
    });
  if (input.buildNow) void deps.inFlight.run(() => buildPendingExports(deps)).catch(() => undefined);
  return toExport(row);
}

export async function getExport({ db }: Pick<AppDeps, 'db'>, actor: Actor, input: { exportId: string }) {
  const row = await ownExport(db, actor, input.exportId);
  return toExport(row);
}

/** The archive of a READY export of the caller, until it expires. */
export async function downloadExport(
  deps: Pick<AppDeps, 'db' | 'storage'>,
  actor: Actor,
  input: { exportId: string },
): Promise<ExportArchive> {
  const row = await ownExport(deps.db, actor, input.exportId);
  if (row.status !== 'READY' || !row.storage_key || !row.expires_at || row.expires_at <= new Date()) throw notFound();
  const bytes = await deps.storage.get(row.storage_key);
  if (!bytes) throw notFound();
  return JSON.parse(bytes.toString('utf8')) as ExportArchive;
}

async function ownExport(db: Db, actor: Actor, exportId: string) {
  const { id: userId } = signedInUser(actor);
  const row = await db
    .selectFrom('user_exports')
    .selectAll()
    .where('id', '=', exportId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  if (!row) throw notFound();
  return row;
}

/**
 * The periodic task: builds the exports waiting (each claimed with SKIP LOCKED, so instances share them),
 * and deletes the archives that have expired.
 */
export async function runDataExports(deps: BuildDeps) {
  const built = await buildPendingExports(deps);
  const expired = await deleteExpiredArchives(deps);
  return { built, expired };
}

async function buildPendingExports(deps: BuildDeps): Promise<number> {
  let built = 0;
  for (;;) {
    const claimed = await deps.db.transaction().execute(async (trx) => {
      const pending = await trx
        .selectFrom('user_exports')
        .selectAll()
        .where('status', '=', 'PENDING')
        .orderBy('created_at')
        .limit(1)
        .forUpdate()
        .skipLocked()
        .executeTakeFirst();
      if (!pending) return undefined;
      const key = `exports/${crypto.randomUUID()}.json`;
      try {
        const archive = await archiveOf(trx, pending.user_id);
        const bytes = Buffer.from(JSON.stringify(archive));
        await deps.storage.put(key, bytes, 'application/json');
        const now = new Date();
        await trx
          .updateTable('user_exports')
          .set({
            status: 'READY',
            storage_key: key,
            size_bytes: bytes.length,
            ready_at: now,
            expires_at: new Date(now.getTime() + EXPORT_TTL_HOURS * 3_600_000),
          })
          .where('id', '=', pending.id)
          .execute();
        return { id: pending.id, to: archive.user };
      } catch (err) {
        deps.logger.error({ err, exportId: pending.id }, 'data export failed');
        await trx.updateTable('user_exports').set({ status: 'FAILED' }).where('id', '=', pending.id).execute();
        return { id: pending.id };
      }
    });
    if (!claimed) return built;
    built += 1;
    if (claimed.to) {
      const { email, name } = claimed.to;
      const mail = { to: email, name, appUrl: deps.config.APP_URL, exportId: claimed.id, hours: EXPORT_TTL_HOURS };
      await sendAfterCommit(deps, dataExportReadyMail(mail));
    }
  }
}

async function deleteExpiredArchives(deps: Pick<AppDeps, 'db' | 'storage'>): Promise<number> {
  const expired = await deps.db
    .selectFrom('user_exports')
    .select(['id', 'storage_key'])
    .where('storage_key', 'is not', null)
    .where('expires_at', '<=', new Date())
    .execute();
  for (const row of expired) {
    await deps.storage.delete(row.storage_key!);
    await deps.db.updateTable('user_exports').set({ storage_key: null }).where('id', '=', row.id).execute();
  }
  return expired.length;
}

/** Everything kept about the person, field by field (the archive's schema is the list). */
async function archiveOf(db: Db, userId: string): Promise<ExportArchive> {
  const user = await db
    .selectFrom('users')
    .select([...USER_COLUMNS, 'last_login_at'])
    .where('id', '=', userId)
    .executeTakeFirstOrThrow();
  const [identities, sessions, memberships, generations, audit] = await Promise.all([
    db
      .selectFrom('user_identities')
      .select(['provider', 'email', 'created_at', 'last_used_at'])
      .where('user_id', '=', userId)
      .orderBy('created_at')
      .execute(),
    db
      .selectFrom('sessions')
      .select(['id', 'created_at', 'last_used_at', 'user_agent', 'ip_address', 'revoked_at'])
      .where('user_id', '=', userId)
      .orderBy('created_at')
      .execute(),
    db
      .selectFrom('workspace_members as m')
      .innerJoin('workspaces as w', 'w.id', 'm.workspace_id')
      .select(['w.id', 'w.name', 'w.status', 'm.role', 'm.created_at'])
      .where('m.user_id', '=', userId)
      .where('w.deleted_at', 'is', null)
      .orderBy('m.created_at')
      .execute(),
    db
      .selectFrom('ai_generations')
      .select(['id', 'workspace_id', 'model', 'prompt', 'output', 'status', 'created_at'])
      .where('user_id', '=', userId)
      .where('is_sample', '=', false)
      .orderBy('created_at')
      .execute(),
    db
      .selectFrom('audit_logs')
      .select(['action', 'target_type', 'target_id', 'workspace_id', 'ip', 'created_at'])
      .where('actor_user_id', '=', userId)
      .orderBy('created_at')
      .execute(),
  ]);
  return {
    exportedAt: new Date().toISOString(),
    user: { ...toUserOutput(user), lastLoginAt: user.last_login_at?.toISOString() ?? null },
    identities: identities.map((i) => ({
      provider: i.provider,
      email: i.email,
      createdAt: i.created_at.toISOString(),
      lastUsedAt: i.last_used_at?.toISOString() ?? null,
    })),
    sessions: sessions.map((s) => ({
      id: s.id,
      createdAt: s.created_at.toISOString(),
      lastUsedAt: s.last_used_at.toISOString(),
      userAgent: s.user_agent,
      ipAddress: s.ip_address,
      endedAt: s.revoked_at?.toISOString() ?? null,
    })),
    memberships: memberships.map((m) => ({
      workspaceId: m.id,
      workspaceName: m.name,
      workspaceStatus: m.status,
      role: m.role,
      joinedAt: m.created_at.toISOString(),
    })),
    generations: generations.map((g) => ({
      id: g.id,
      workspaceId: g.workspace_id,
      model: g.model,
      prompt: g.prompt,
      output: g.output,
      status: g.status,
      createdAt: g.created_at.toISOString(),
    })),
    auditEntries: audit.map((a) => ({
      action: a.action,
      targetType: a.target_type,
      targetId: a.target_id,
      workspaceId: a.workspace_id,
      ip: a.ip,
      createdAt: a.created_at.toISOString(),
    })),
  };
}
