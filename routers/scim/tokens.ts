// SCIM tokens of a workspace and the mappings of its directory's groups to roles. A token is `scim_` + 40
// base62 characters, shown once; only its SHA-256 and first 12 characters are stored. The token names the
// workspace: /scim/v2 acts on that workspace only. Every change is audited and mailed to the owners.
import crypto from 'node:crypto';
import { sql, type Kysely, type Selectable } from 'kysely';
import type { Database, ScimMappedRole, ScimTokensTable, WorkspaceRole } from '../../db/schema.js';
import type { Actor } from '../../server/platform/actor.js';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import { batchedLookup } from '../../db/batched.js';
import { compiledOnce } from '../../db/compiled.js';
import { recordAudit } from '../audit/service.js';
import { emitEvent } from '../events/emit.js';
import { mailOwners } from '../sso/owners.js';
import { touchLastUsed } from '../../db/last-used.js';
import { credentialDigest, knownCredentials } from '../../server/platform/known-credentials.js';

type Db = Kysely<Database>;
type Deps = Pick<AppDeps, 'db' | 'config' | 'mailer' | 'logger'>;

export const SCIM_TOKEN_PREFIX = 'scim_';
export const SCIM_TOKEN_FORMAT = /^scim_[A-Za-z0-9]{40}$/;
const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

const generateToken = () =>
  SCIM_TOKEN_PREFIX + Array.from({ length: 40 }, () => BASE62[crypto.randomInt(BASE62.length)]).join('');
export const hashScimToken = credentialDigest;

/**
 * Tokens this instance knows to be real (hash → token id): made here, or authenticated here. The rate
 * limiter counts /scim/v2 per token once the token is known (server/app.ts), so one directory cannot spend
 * another's budget behind a shared address, and made-up tokens are counted by address.
 */
const verifiedTokens = knownCredentials(SCIM_TOKEN_FORMAT);

/** The id of a SCIM token this instance knows, without a database lookup; else undefined. Never the token. */
export const verifiedScimTokenId = (raw: string): string | undefined => verifiedTokens.idOf(raw);

function toToken(t: Selectable<ScimTokensTable>) {
  return {
    id: t.id,
    name: t.name,
    prefix: t.prefix,
    createdAt: t.created_at.toISOString(),
    lastUsedAt: t.last_used_at?.toISOString() ?? null,
  };
}

const tokenEvent = (t: Selectable<ScimTokensTable>) => ({ scimTokenId: t.id, name: t.name, prefix: t.prefix });

export async function listTokens({ db }: Pick<AppDeps, 'db'>, { workspaceId }: { workspaceId: string }) {
  const rows = await db
    .selectFrom('scim_tokens')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('revoked_at', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  return { items: rows.map(toToken) };
}

export async function createToken(deps: Deps, actor: Actor, input: { workspaceId: string; name: string }) {
  const rawToken = generateToken();
  const row = await deps.db.transaction().execute(async (trx) => {
    const created = await trx
      .insertInto('scim_tokens')
      .values({
        workspace_id: input.workspaceId,
        name: input.name,
        prefix: rawToken.slice(0, 12),
        token_hash: hashScimToken(rawToken),
        created_by: actor.userId,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordAudit(trx, actor, {
      action: 'scim.token_created',
      targetType: 'scim_token',
      targetId: created.id,
      workspaceId: input.workspaceId,
      metadata: { name: created.name, prefix: created.prefix },
    });
    await emitEvent(trx, input.workspaceId, 'scim_token.created', tokenEvent(created));
    return created;
  });
  verifiedTokens.remember(row.token_hash, row.id);
  await mailOwners(deps, input.workspaceId, `A directory sync (SCIM) token "${row.name}" was created`);
  return { ...toToken(row), rawToken };
}

export async function revokeToken(deps: Deps, actor: Actor, input: { workspaceId: string; tokenId: string }) {
  const row = await deps.db.transaction().execute(async (trx) => {
    const revoked = await trx
      .updateTable('scim_tokens')
      .set({ revoked_at: new Date() })
      .where('id', '=', input.tokenId)
      .where('workspace_id', '=', input.workspaceId)
      .where('revoked_at', 'is', null)
      .returningAll()
      .executeTakeFirst();
    if (!revoked) throw new AppError('NOT_FOUND', 'No such SCIM token in this workspace.');
    await recordAudit(trx, actor, {
      action: 'scim.token_revoked',
      targetType: 'scim_token',
      targetId: revoked.id,
      workspaceId: input.workspaceId,
      metadata: { prefix: revoked.prefix },
    });
    await emitEvent(trx, input.workspaceId, 'scim_token.revoked', tokenEvent(revoked));
    return revoked;
  });
  await mailOwners(deps, input.workspaceId, `The directory sync (SCIM) token "${row.name}" was revoked`);
  return { message: 'SCIM token revoked: the directory can no longer call with it.' };
}

// ---------------------------------------------------------------- role mappings

export async function getRoleMappings({ db }: Pick<AppDeps, 'db'>, { workspaceId }: { workspaceId: string }) {
  const rows = await db
    .selectFrom('scim_role_mappings')
    .select(['group_name', 'role'])
    .where('workspace_id', '=', workspaceId)
    .orderBy('group_name')
    .execute();
  return { mappings: rows.map((r) => ({ group: r.group_name, role: r.role })) };
}

/** Replaces the mappings; the roles of the members the directory manages follow at once. */
export async function putRoleMappings(
  deps: Deps,
  actor: Actor,
  input: { workspaceId: string; mappings: Array<{ group: string; role: ScimMappedRole }> },
) {
  const { workspaceId, mappings } = input;
  await deps.db.transaction().execute(async (trx) => {
    await trx.selectFrom('workspaces').select('id').where('id', '=', workspaceId).forUpdate().executeTakeFirstOrThrow();
    await trx.deleteFrom('scim_role_mappings').where('workspace_id', '=', workspaceId).execute();
    if (mappings.length)
      await trx
        .insertInto('scim_role_mappings')
        .values(mappings.map((m) => ({ workspace_id: workspaceId, group_name: m.group, role: m.role })))
        .execute();
    await recordAudit(trx, actor, {
      action: 'scim.role_mappings_updated',
      targetType: 'workspace',
      targetId: workspaceId,
      workspaceId,
      metadata: { mappings: mappings.map((m) => `${m.group}=${m.role}`) },
    });
    await emitEvent(trx, workspaceId, 'scim.role_mappings_updated', { mappings });
    await applyGroupRoles(trx, actor, workspaceId);
  });
  await mailOwners(deps, workspaceId, 'The roles given to directory (SCIM) groups were changed');
  return getRoleMappings(deps, { workspaceId });
}

/** The order of roles from the highest: the highest role of a member's mapped groups wins. */
const ROLE_RANK = sql<number>`case r.role when 'ADMIN' then 1 when 'MEMBER' then 2 else 3 end`;

/**
 * Sets the role of the directory's members (all of the workspace's, or `memberIds`) to the highest role
 * their groups map to, MEMBER when none does. Owners keep their role: the directory never makes or unmakes
 * an owner. Each change is audited.
 */
export async function applyGroupRoles(trx: Db, actor: Actor, workspaceId: string, memberIds?: string[]) {
  if (memberIds && memberIds.length === 0) return;
  const only = memberIds ? sql`and m.id = any(${memberIds}::uuid[])` : sql``;
  const { rows } = await sql<{ id: string; user_id: string; role: WorkspaceRole; previous: WorkspaceRole }>`
    with wanted as (
      select m.id, m.role as previous, coalesce((
        select r.role from scim_role_mappings r
        join scim_groups g on g.workspace_id = r.workspace_id and g.display_name = r.group_name
        join scim_group_members gm on gm.group_id = g.id
        where r.workspace_id = m.workspace_id and gm.member_id = m.id
        order by ${ROLE_RANK} limit 1
      ), 'MEMBER') as role
      from workspace_members m
      where m.workspace_id = ${workspaceId} and m.scim_managed and m.role <> 'OWNER' ${only}
    )
    update workspace_members m set role = w.role, updated_at = now()
    from wanted w where m.id = w.id and m.role <> w.role
    returning m.id, m.user_id, m.role, w.previous`.execute(trx);
  for (const r of rows)
    await recordAudit(trx, actor, {
      action: 'member.role_changed',
      targetType: 'member',
      targetId: r.user_id,
      workspaceId,
      metadata: { from: r.previous, to: r.role, by: 'scim_group_mapping' },
    });
}

// ---------------------------------------------------------------- authentication

export interface ScimPrincipal {
  id: string;
  name: string;
  workspaceId: string;
}

/** By token hash: the token and its workspace's state. */
const tokenQuery = compiledOnce((db, hashes: string[]) =>
  db
    .selectFrom('scim_tokens as t')
    .innerJoin('workspaces as w', 'w.id', 't.workspace_id')
    .select([
      't.id',
      't.name',
      't.workspace_id',
      't.token_hash',
      't.revoked_at',
      'w.status as workspace_status',
      'w.deleted_at as workspace_deleted_at',
    ])
    .where(sql<boolean>`t.token_hash = any(${hashes})`),
);

/** The token lookup of every /scim/v2 request, batched under load (db/batched.ts), as API keys are. */
const tokenLookup = batchedLookup(tokenQuery, (row) => row.token_hash);

/**
 * The live token behind a bearer value, with its ACTIVE workspace; undefined for anything else (an unknown,
 * revoked or malformed token, a workspace that is not ACTIVE). A malformed value costs no lookup.
 */
export async function authenticateScimToken(
  { db }: Pick<AppDeps, 'db'>,
  raw: string | undefined,
): Promise<ScimPrincipal | undefined> {
  if (!raw || !SCIM_TOKEN_FORMAT.test(raw)) return undefined;
  const row = await tokenLookup(db, hashScimToken(raw));
  if (!row || row.revoked_at || row.workspace_status !== 'ACTIVE' || row.workspace_deleted_at) return undefined;
  await touchLastUsed(db, 'scim_tokens', row.id);
  verifiedTokens.remember(row.token_hash, row.id);
  return { id: row.id, name: row.name, workspaceId: row.workspace_id };
}
