// Workspace API keys for the public API. A key is `wsk_` + 40 base62 characters, shown once; only its
// SHA-256 and its first 12 characters are stored. The plan's `limits.apiKeys` is checked under a lock of
// the workspace row, so concurrent creations cannot pass it.
import { API_KEY_PREFIX, type ApiKeyPrincipal } from '../../server/platform/principal.js';
import crypto from 'node:crypto';
import { sql, type Kysely, type Selectable } from 'kysely';
import type { ApiKeysTable, ApiKeyScope, Database, Edition, PlanLimits } from '../../db/schema.js';
import { compiledOnce } from '../../db/compiled.js';
import { batchedLookup } from '../../db/batched.js';
import { AppError } from '../../server/platform/errors.js';
import type { Actor } from '../../server/platform/actor.js';
import type { AppDeps } from '../../server/platform/context.js';
import { recordAudit } from '../audit/service.js';
import { emitEvent } from '../events/emit.js';
import { touchLastUsed } from '../../db/last-used.js';
import { credentialDigest, knownCredentials } from '../../server/platform/known-credentials.js';

type Db = Kysely<Database>;
type Deps = Pick<AppDeps, 'db'>;

export const API_KEY_FORMAT = /^wsk_[A-Za-z0-9]{40}$/;
const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Keys allowed per edition when the workspace's plan limits do not say (spec: Lite 0, Pro 5, Enterprise 50). */
const EDITION_KEYS: Record<Edition, number> = { LITE: 0, PRO: 5, ENTERPRISE: 50, CUSTOM: 0 };

export function generateApiKey(): string {
  // crypto.randomInt draws without modulo bias.
  return API_KEY_PREFIX + Array.from({ length: 40 }, () => BASE62[crypto.randomInt(BASE62.length)]).join('');
}

const hashKey = credentialDigest;

/** Keys this instance has verified (server/platform/known-credentials.ts): the limiter counts by key. */
const verifiedKeys = knownCredentials(API_KEY_FORMAT);

/** The id of a key this instance has verified before, without a database lookup; else undefined. */
export const verifiedApiKeyId = (raw: string): string | undefined => verifiedKeys.idOf(raw);

export function toApiKey(k: Selectable<ApiKeysTable>) {
  const now = Date.now();
  return {
    id: k.id,
    workspaceId: k.workspace_id,
    name: k.name,
    prefix: k.prefix,
    scopes: k.scopes,
    status: k.revoked_at
      ? ('REVOKED' as const)
      : k.expires_at && k.expires_at.getTime() <= now
        ? ('EXPIRED' as const)
        : ('ACTIVE' as const),
    expiresAt: k.expires_at?.toISOString() ?? null,
    lastUsedAt: k.last_used_at?.toISOString() ?? null,
    createdAt: k.created_at.toISOString(),
    updatedAt: k.updated_at.toISOString(),
  };
}

const notFound = () => new AppError('NOT_FOUND', 'API key not found.');

export async function listKeys({ db }: Deps, { workspaceId }: { workspaceId: string }) {
  const rows = await db
    .selectFrom('api_keys')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('revoked_at', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  return { items: rows.map(toApiKey) };
}

const emit = (
  db: Db,
  workspaceId: string,
  event: 'api_key.created' | 'api_key.revoked',
  key: Selectable<ApiKeysTable>,
) => emitEvent(db, workspaceId, event, { apiKeyId: key.id, name: key.name, prefix: key.prefix, scopes: key.scopes });

async function insertKey(
  db: Db,
  workspaceId: string,
  fields: { name: string; scopes: ApiKeyScope[]; expiresAt: Date | null; createdBy: string | null },
) {
  const rawKey = generateApiKey();
  const row = await db
    .insertInto('api_keys')
    .values({
      workspace_id: workspaceId,
      name: fields.name,
      prefix: rawKey.slice(0, 12),
      key_hash: hashKey(rawKey),
      scopes: JSON.stringify(fields.scopes),
      created_by: fields.createdBy,
      expires_at: fields.expiresAt,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return { row, rawKey };
}

/** The keys a workspace's plan allows: its limits, else its edition's (0: no API access). */
export const keysAllowed = (workspace: { edition: Edition; limits: unknown }) =>
  (workspace.limits as PlanLimits).apiKeys ?? EDITION_KEYS[workspace.edition];

const notInPlan = () =>
  new AppError(
    'API_KEYS_NOT_IN_PLAN',
    'API keys are not part of this workspace\u2019s plan. Upgrade to Pro or Enterprise to use the public API.',
  );

/**
 * The keys the workspace's plan allows; a plan without API access is refused. With `lock`, the workspace
 * row is locked: key creations of a workspace run one at a time, so the limit holds under concurrency.
 */
async function planAllowance(trx: Db, workspaceId: string, opts: { lock: boolean }): Promise<number> {
  const select = trx.selectFrom('workspaces').select(['edition', 'limits']).where('id', '=', workspaceId);
  const limit = keysAllowed(await (opts.lock ? select.forUpdate() : select).executeTakeFirstOrThrow());
  if (limit <= 0) throw notInPlan();
  return limit;
}

export async function createKey(
  { db }: Deps,
  actor: Actor,
  input: { workspaceId: string; name: string; scopes: ApiKeyScope[]; expiresAt?: string },
) {
  const { workspaceId } = input;
  return db.transaction().execute(async (trx) => {
    const limit = await planAllowance(trx, workspaceId, { lock: true });
    const active = await trx
      .selectFrom('api_keys')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('workspace_id', '=', workspaceId)
      .where('revoked_at', 'is', null)
      // A rotated key in its grace period is counted as its replacement.
      .where('replaced_by', 'is', null)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', new Date())]))
      .executeTakeFirstOrThrow();
    if (Number(active.n) >= limit) {
      throw new AppError(
        'API_KEY_LIMIT_REACHED',
        `This workspace\u2019s plan allows ${limit} API keys. Revoke one, or upgrade the plan.`,
      );
    }
    const { row, rawKey } = await insertKey(trx, workspaceId, {
      name: input.name,
      scopes: input.scopes,
      expiresAt: input.expiresAt ? new Date(input.expiresAt) : null,
      createdBy: actor.userId,
    });
    await recordAudit(trx, actor, {
      action: 'api_key.created',
      targetType: 'api_key',
      targetId: row.id,
      workspaceId,
      metadata: { name: row.name, prefix: row.prefix, scopes: row.scopes },
    });
    await emit(trx, workspaceId, 'api_key.created', row);
    return { ...toApiKey(row), rawKey };
  });
}

/** A live (not revoked) key of the workspace, locked for the change. */
async function lockKey(db: Db, workspaceId: string, keyId: string) {
  const key = await db
    .selectFrom('api_keys')
    .selectAll()
    .where('id', '=', keyId)
    .where('workspace_id', '=', workspaceId)
    .where('revoked_at', 'is', null)
    .forUpdate()
    .executeTakeFirst();
  if (!key) throw notFound();
  return key;
}

export async function updateKey(
  { db }: Deps,
  actor: Actor,
  input: { workspaceId: string; apiKeyId: string; name?: string; scopes?: ApiKeyScope[] },
) {
  const { workspaceId, apiKeyId: keyId, name, scopes } = input;
  const changes = { name, scopes };
  return db.transaction().execute(async (trx) => {
    await lockKey(trx, workspaceId, keyId);
    const row = await trx
      .updateTable('api_keys')
      .set({
        ...(changes.name !== undefined && { name: changes.name }),
        ...(changes.scopes !== undefined && { scopes: JSON.stringify(changes.scopes) }),
        updated_at: new Date(),
      })
      .where('id', '=', keyId)
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordAudit(trx, actor, {
      action: 'api_key.updated',
      targetType: 'api_key',
      targetId: keyId,
      workspaceId,
      metadata: { fields: Object.keys(changes) },
    });
    return toApiKey(row);
  });
}

export async function revokeKey(
  { db }: Deps,
  actor: Actor,
  { workspaceId, apiKeyId: keyId }: { workspaceId: string; apiKeyId: string },
) {
  await db.transaction().execute(async (trx) => {
    await lockKey(trx, workspaceId, keyId);
    const row = await trx
      .updateTable('api_keys')
      .set({ revoked_at: new Date(), updated_at: new Date() })
      .where('id', '=', keyId)
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordAudit(trx, actor, {
      action: 'api_key.revoked',
      targetType: 'api_key',
      targetId: keyId,
      workspaceId,
      metadata: { prefix: row.prefix },
    });
    await emit(trx, workspaceId, 'api_key.revoked', row);
  });
  return { message: 'API key revoked.' };
}

/**
 * A new raw key for the same name, scopes and expiry. The old key keeps working for `gracePeriodSeconds`
 * (0: it stops at once), so clients can switch without downtime. Not counted against the plan limit: it
 * replaces a key, and the old one, which names its replacement, counts no more. A key is rotated once (its
 * replacement may be rotated in turn, which ends the grace period of the key before it), so a key of the
 * plan has at most two working values: rotations cannot mint keys past the limit. An expired key cannot be
 * rotated (nothing to replace); a plan without API access rotates nothing.
 */
export async function rotateKey(
  { db }: Deps,
  actor: Actor,
  input: { workspaceId: string; apiKeyId: string; gracePeriodSeconds: number },
) {
  const { workspaceId, apiKeyId: keyId, gracePeriodSeconds } = input;
  return db.transaction().execute(async (trx) => {
    // The key row first, as revocations and updates lock it; the plan is only read (a rotation leaves the
    // count as it is), so no workspace lock is taken before it, which would deadlock with them.
    const old = await lockKey(trx, workspaceId, keyId);
    await planAllowance(trx, workspaceId, { lock: false });
    const now = new Date();
    if (old.replaced_by)
      throw new AppError('INVALID_STATE', 'This key was already rotated: rotate its replacement instead.');
    if (old.expires_at && old.expires_at <= now)
      throw new AppError('INVALID_STATE', 'This key has expired: create a new key instead.');
    // The key this one replaced stops now, if its grace period is still running.
    await trx
      .updateTable('api_keys')
      .set({ expires_at: now, updated_at: now })
      .where('replaced_by', '=', keyId)
      .where('revoked_at', 'is', null)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
      .execute();
    const graceEnd = new Date(now.getTime() + gracePeriodSeconds * 1000);
    const { row, rawKey } = await insertKey(trx, workspaceId, {
      name: old.name,
      scopes: old.scopes,
      expiresAt: old.expires_at,
      createdBy: actor.userId,
    });
    const retired = await trx
      .updateTable('api_keys')
      .set(
        gracePeriodSeconds === 0
          ? { replaced_by: row.id, revoked_at: now, updated_at: now }
          : {
              replaced_by: row.id,
              expires_at: old.expires_at && old.expires_at < graceEnd ? old.expires_at : graceEnd,
              updated_at: now,
            },
      )
      .where('id', '=', keyId)
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordAudit(trx, actor, {
      action: 'api_key.rotated',
      targetType: 'api_key',
      targetId: row.id,
      workspaceId,
      metadata: { replacedKeyId: keyId, oldPrefix: old.prefix, newPrefix: row.prefix, gracePeriodSeconds },
    });
    // Subscribers hear of the new key, and of the old one's end when it ends now (a grace period lets it
    // lapse like an expiry, which has no event either).
    await emit(trx, workspaceId, 'api_key.created', row);
    if (retired.revoked_at) await emit(trx, workspaceId, 'api_key.revoked', retired);
    return { ...toApiKey(row), rawKey };
  });
}

// ---------------------------------------------------------------- authentication

const keyQuery = compiledOnce((db, keyHashes: string[]) =>
  db
    .selectFrom('api_keys as k')
    .innerJoin('workspaces as w', 'w.id', 'k.workspace_id')
    .select([
      'k.id',
      'k.workspace_id',
      'k.name',
      'k.prefix',
      'k.scopes',
      'k.expires_at',
      'k.revoked_at',
      'k.last_used_at',
      'k.created_at',
      'k.updated_at',
      'k.key_hash',
      'k.created_by',
      'w.name as workspace_name',
      'w.status as workspace_status',
      'w.deleted_at as workspace_deleted_at',
      'w.edition',
      'w.limits',
    ])
    .where(sql<boolean>`k.key_hash = any(${keyHashes})`),
);

/** The key lookup of every public-API request, batched under load (db/batched.ts). */
const keyLookup = batchedLookup(keyQuery, (row) => row.key_hash);

/**
 * The live key behind a raw value, with its workspace. A value that is not a well-formed key is refused
 * before any database lookup.
 */
export async function authenticateApiKey(
  { db }: Deps,
  { key: raw }: { key: string | undefined },
): Promise<ApiKeyPrincipal> {
  // Made when thrown: an error's stack costs more than the lookup of a cached key.
  const unauthorized = () =>
    new AppError('UNAUTHORIZED', 'Send a valid API key in X-API-Key (or Authorization: Bearer).');
  if (!raw || !API_KEY_FORMAT.test(raw)) throw unauthorized();
  const hash = hashKey(raw);
  const key = await keyLookup(db, hash);
  const now = Date.now();
  if (!key || key.revoked_at || (key.expires_at && key.expires_at.getTime() <= now) || key.workspace_deleted_at)
    throw unauthorized();
  if (key.workspace_status !== 'ACTIVE') {
    throw new AppError('WORKSPACE_UNAVAILABLE', `The workspace of this key is ${key.workspace_status.toLowerCase()}.`);
  }
  // A workspace moved to a plan without API access keeps its keys (an upgrade brings them back) but cannot
  // use them.
  if (keysAllowed(key) <= 0) throw notInPlan();
  verifiedKeys.remember(hash, key.id);
  await touchLastUsed(db, 'api_keys', key.id, now);
  return key;
}
