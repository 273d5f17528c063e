// Who calls /mcp: a workspace API key (the public API's authentication), acting for the user who created
// it. A user's own access token is not an MCP credential: agents get a key, or an OAuth grant.
import { sql } from 'kysely';
import type { AppDeps } from '../../server/platform/context.js';
import { compiledOnce } from '../../db/compiled.js';
import { batchedLookup } from '../../db/batched.js';
import { AppError } from '../../server/platform/errors.js';
import { API_KEY_PREFIX, type McpCredential } from '../../server/platform/principal.js';
import { bearerToken } from '../../server/platform/security/jwt.js';
import { USER_COLUMNS } from '../auth/schemas.js';
import { membershipsColumn } from '../workspaces/access.js';

type Deps = Pick<AppDeps, 'db' | 'auth'>;

export const noCredential = () =>
  new AppError('UNAUTHORIZED', 'Send a workspace API key or an OAuth access token as Authorization: Bearer.');

/** The raw credential of a request: the Bearer value, else X-API-Key. */
export function credentialOf(headers: { authorization?: string; 'x-api-key'?: string | string[] }) {
  const bearer = bearerToken(headers.authorization);
  if (bearer) return bearer;
  const key = headers['x-api-key'];
  return typeof key === 'string' && key.trim() ? key.trim() : undefined;
}

/** By key id: the key's creator (not deleted) and their memberships, as a prepared statement. */
const creatorQuery = compiledOnce((db, keyIds: string[]) =>
  db
    .selectFrom('api_keys')
    .innerJoin('users', 'users.id', 'api_keys.created_by')
    .select((eb) => [
      'api_keys.id as key_id',
      ...USER_COLUMNS.map((c) => `users.${c}` as const),
      membershipsColumn(eb as unknown as Parameters<typeof membershipsColumn>[0]),
    ])
    .where(sql<boolean>`api_keys.id = any(${keyIds})`)
    .where('users.deleted_at', 'is', null),
);

/** The creator lookup of every /mcp call with a key, batched under load (db/batched.ts). */
const creatorOf = batchedLookup(creatorQuery, (row) => row.key_id);

const withoutMemberships = <T extends { memberships: unknown; key_id: string }>({
  memberships: _,
  key_id: __,
  ...user
}: T) => user;

/** The ACTIVE user `userId`, with their memberships; undefined when there is none. */
export async function activeUser(db: Deps['db'], userId: string) {
  const row = await db
    .selectFrom('users')
    .select((eb) => [...USER_COLUMNS, membershipsColumn(eb)])
    .where('id', '=', userId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!row || row.status !== 'ACTIVE') return undefined;
  const { memberships, ...user } = row;
  return { user, memberships };
}

/**
 * The credential behind a raw value: a live API key of a workspace whose plan allows keys, whose creator
 * is still an ACTIVE member of it (their role bounds what the key may do, its scopes what it may ask).
 * `started` answers the key's lookup when one is already under way for the request.
 */
export async function mcpCredential(
  deps: Deps,
  raw: string | undefined,
  oauth: (token: string) => Promise<McpCredential>,
  started?: (raw: string) => ReturnType<Deps['auth']['apiKey']> | undefined,
): Promise<McpCredential> {
  if (!raw) throw noCredential();
  // Anything else is an OAuth access token or nothing: a user's own access token is not one.
  if (!raw.startsWith(API_KEY_PREFIX)) return oauth(raw);
  // The creator of a key this instance has verified before is looked up beside the key itself (the
  // answer is used only if the key still checks out, as that very key).
  const knownId = deps.auth.knownApiKeyId(raw);
  const early = knownId === undefined ? undefined : creatorOf(deps.db, knownId);
  early?.catch(() => undefined);
  // The lookup the request's arrival started (server/platform/trpc.ts), else one of our own.
  const key = await (started?.(raw) ?? deps.auth.apiKey(raw));
  const row = await (key.id === knownId && early ? early : creatorOf(deps.db, key.id));
  const principal =
    row?.status === 'ACTIVE' ? { user: withoutMemberships(row), memberships: row.memberships } : undefined;
  if (!principal?.memberships.some((m) => m.id === key.workspace_id)) {
    throw new AppError(
      'UNAUTHORIZED',
      'The user who created this API key is no longer an active member of its workspace: create a new key.',
    );
  }
  return { kind: 'api-key', id: key.id, workspaceId: key.workspace_id, scopes: key.scopes, principal };
}
