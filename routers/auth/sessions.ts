// Sessions: access-token authentication, and refresh tokens kept server-side in families (one family is
// one sign-in, a row of `sessions` with the same id). Access tokens name their session (`sid`), and
// authentication reads the session with the user, so an ended session's access tokens stop at once.
// Refresh tokens are opaque; the database keeps HMAC-SHA256(JWT_REFRESH_SECRET, token), so changing the
// secret invalidates every refresh token, and a database leak yields no usable token.
import crypto from 'node:crypto';
import { sql, type ExpressionBuilder, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import { bearerToken, signAccessToken, verifyAccessToken } from '../../server/platform/security/jwt.js';
import { hmacSha256Hex, randomToken } from '../../server/platform/security/tokens.js';
import { compiledOnce } from '../../db/compiled.js';
import { batchedLookup } from '../../db/batched.js';
import { recordAudit } from '../audit/service.js';
import { membershipsColumn } from '../workspaces/access.js';
import type { Principal } from '../../server/platform/principal.js';

export type { Principal };
import { USER_COLUMNS } from './schemas.js';
import { actorOf, type Actor } from '../../server/platform/actor.js';

type Deps = Pick<AppDeps, 'config' | 'db'>;

export interface TokenPair {
  accessToken: string;
  refreshToken: string;
  tokenType: 'Bearer';
  expiresIn: number;
}

const unauthorized = () =>
  new AppError('UNAUTHORIZED', 'Authentication required: send a valid, unexpired access token.');
const suspended = () => new AppError('USER_SUSPENDED', 'This account is suspended. Contact support to restore access.');

/** By session id: the session's user and state, with the user's memberships. */
const principalQuery = compiledOnce((db, sessionIds: string[]) =>
  db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .select((eb) => [
      ...USER_COLUMNS.map((c) => `users.${c}` as const),
      'users.tokens_valid_after',
      'sessions.id as session_id',
      'sessions.revoked_at as session_revoked_at',
      membershipsColumn(eb as unknown as ExpressionBuilder<Database, 'users'>),
    ])
    .where(sql<boolean>`sessions.id = any(${sessionIds})`),
);

/** The principal lookup of every authenticated request, batched under load (db/batched.ts). */
const principalOf = batchedLookup(principalQuery, (row) => row.session_id);

/**
 * The ACTIVE user behind an `Authorization: Bearer` header, with their memberships and the state of the
 * token's session, in one query (shared with the requests that arrived meanwhile); or an UNAUTHORIZED /
 * USER_SUSPENDED error. Runs on every authenticated request, so a suspension, a password reset or an ended
 * session applies to the very next request of any token, on every instance.
 */
export async function authenticate(deps: Deps, authorization: string | undefined): Promise<Principal> {
  const token = bearerToken(authorization);
  const claims = token ? verifyAccessToken(deps.config, token) : null;
  if (!claims) throw unauthorized();
  const row = await principalOf(deps.db, claims.sessionId);
  if (!row || row.id !== claims.userId || row.session_revoked_at) throw unauthorized();
  if (row.tokens_valid_after && claims.issuedAt < Math.floor(row.tokens_valid_after.getTime() / 1000))
    throw unauthorized();
  if (row.status !== 'ACTIVE') throw suspended();
  const { tokens_valid_after: _, session_id, session_revoked_at: __, memberships, ...user } = row;
  return { user, memberships, sessionId: session_id };
}

const refreshDigest = (deps: Deps, token: string) => hmacSha256Hex(deps.config.JWT_REFRESH_SECRET, token);

/**
 * Issues an access token and a refresh token. Without `rotated`, the refresh token starts a new family (a
 * new sign-in: a new row of `sessions`); with it, the new token joins that token's family as its successor,
 * and the session's last use and expiry move on.
 */
export async function issueTokens(
  deps: Deps,
  db: Kysely<Database>,
  userId: string,
  actor: Pick<Actor, 'ip' | 'userAgent'>,
  rotated?: { id: string; family_id: string },
  sso?: { connectionId: string },
): Promise<TokenPair> {
  const refreshToken = `rt_${randomToken(32)}`;
  const now = new Date();
  const expiresAt = new Date(now.getTime() + deps.config.JWT_REFRESH_TTL * 1000);
  const sessionId = rotated?.family_id ?? crypto.randomUUID();
  if (rotated) {
    await db
      .updateTable('sessions')
      .set({ last_used_at: now, expires_at: expiresAt })
      .where('id', '=', sessionId)
      .execute();
  } else {
    await db
      .insertInto('sessions')
      .values({
        id: sessionId,
        user_id: userId,
        user_agent: actor.userAgent,
        ip_address: actor.ip,
        created_at: now,
        last_used_at: now,
        expires_at: expiresAt,
        ...(sso ? { method: 'sso', sso_connection_id: sso.connectionId } : {}),
      })
      .execute();
  }
  await db
    .insertInto('refresh_tokens')
    .values({
      user_id: userId,
      family_id: sessionId,
      parent_id: rotated?.id ?? null,
      token_hash: refreshDigest(deps, refreshToken),
      expires_at: expiresAt,
      created_ip: actor.ip,
      user_agent: actor.userAgent,
    })
    .execute();
  const access = signAccessToken(deps.config, userId, sessionId);
  return { accessToken: access.token, refreshToken, tokenType: 'Bearer', expiresIn: access.expiresIn };
}

/**
 * Whether a sign-in from `actor`'s device comes from a device this user has not signed in from before: no earlier
 * session with the same user agent and address. A first sign-in ever is no new device (nothing to compare).
 */
async function isNewDevice(db: Kysely<Database>, userId: string, actor: Pick<Actor, 'ip' | 'userAgent'>) {
  const rows = await db
    .selectFrom('sessions')
    .select((eb) => [
      eb.fn.countAll<string>().as('sessions'),
      eb.fn
        .count<string>('id')
        .filterWhere((f) =>
          f.and([
            f('ip_address', 'is not distinct from', actor.ip),
            f('user_agent', 'is not distinct from', actor.userAgent),
          ]),
        )
        .as('same'),
    ])
    .where('user_id', '=', userId)
    .executeTakeFirstOrThrow();
  return Number(rows.sessions) > 0 && Number(rows.same) === 0;
}

/**
 * A new session for a sign-in whose password was checked against `passwordHash`. Under the user's session
 * lock, the password must still be that one: a reset that committed while the (slow) check ran has ended
 * every session, and the old password must not open a new one. `passwordHash` undefined: a sign-in that
 * used no password (an identity provider), opened as it is.
 */
export async function openSession(
  deps: Deps,
  userId: string,
  passwordHash: string | undefined,
  actor: Pick<Actor, 'ip' | 'userAgent'>,
  sso?: { connectionId: string },
): Promise<{ tokens: TokenPair; newDevice: boolean } | undefined> {
  return deps.db.transaction().execute(async (trx) => {
    await lockSessionsOf(trx, userId);
    if (!(await passwordStill(trx, userId, passwordHash))) return undefined;
    const newDevice = await isNewDevice(trx, userId, actor);
    return { tokens: await issueTokens(deps, trx, userId, actor, undefined, sso), newDevice };
  });
}

/**
 * Whether the user's password is still `passwordHash` (undefined: a sign-in that used none). Called under
 * the user's session lock, which a password reset or change also takes.
 */
export async function passwordStill(trx: Transaction<Database>, userId: string, passwordHash: string | undefined) {
  if (passwordHash === undefined) return true;
  const user = await trx.selectFrom('users').select('password_hash').where('id', '=', userId).executeTakeFirst();
  return user?.password_hash === passwordHash;
}

type RotateOutcome =
  | { kind: 'ok'; tokens: TokenPair }
  | { kind: 'invalid' }
  | { kind: 'suspended' }
  | { kind: 'reuse'; userId: string; familyId: string };

/**
 * Serialises every change to one user's refresh tokens: rotation and each revocation take it before they
 * read or write a token. Without it, a revocation's UPDATE works from a snapshot that misses the successor a
 * concurrent rotation just committed, and that token outlives the logout, reset or reuse that should have
 * ended it. Taken first, before any token row lock, so that the order is the same everywhere. Held until
 * the transaction ends; taking it again in the same transaction does not wait.
 */
export async function lockSessionsOf(trx: Transaction<Database>, userId: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtext(${`sessions:${userId}`}))`.execute(trx);
}

/**
 * Whether a token that is no longer its family's newest may still be refreshed: within the grace of the
 * moment it was superseded, and only while no token issued from it has been presented (a token older than
 * the just-rotated one is reuse at any time).
 */
async function withinReuseGrace(
  deps: Deps,
  trx: Transaction<Database>,
  tokenId: string,
  supersededAt: Date,
  now: Date,
): Promise<boolean> {
  const graceMs = deps.config.REFRESH_TOKEN_REUSE_GRACE_SECONDS * 1000;
  if (graceMs <= 0 || now.getTime() - supersededAt.getTime() > graceMs) return false;
  const presentedChild = await trx
    .selectFrom('refresh_tokens')
    .select('id')
    .where('parent_id', '=', tokenId)
    .where('rotated_at', 'is not', null)
    .executeTakeFirst();
  return !presentedChild;
}

/**
 * Rotates a refresh token: a new pair of the same family is issued, and the new refresh token becomes the
 * family's newest. Only the newest token of a family may be refreshed, with one exception: the grace of
 * REFRESH_TOKEN_REUSE_GRACE_SECONDS after a token stopped being the newest, during which it may be
 * refreshed again as long as no token issued from it has been presented (two tabs refreshing at once: the
 * second gets a pair too, and then holds the newest token). Any other token is reuse, and revokes the whole
 * family. So a token replayed within the grace forks the session only until the grace ends: from then on
 * the first refresh of the branch that is not the newest ends the session for both. The user's session
 * lock serialises this with concurrent refreshes and revocations; the token is read again under it, so a
 * revocation or a rotation that ran meanwhile is seen.
 */
export async function rotateRefreshToken(
  deps: Deps & Pick<AppDeps, 'logger'>,
  actor: Actor,
  { refreshToken }: { refreshToken: string },
): Promise<TokenPair> {
  const digest = refreshDigest(deps, refreshToken);
  const outcome = await deps.db.transaction().execute(async (trx): Promise<RotateOutcome> => {
    const owner = await trx
      .selectFrom('refresh_tokens')
      .select('user_id')
      .where('token_hash', '=', digest)
      .executeTakeFirst();
    if (!owner) return { kind: 'invalid' };
    await lockSessionsOf(trx, owner.user_id);
    const row = await trx
      .selectFrom('refresh_tokens as t')
      .innerJoin('users as u', 'u.id', 't.user_id')
      .select(['t.id', 't.user_id', 't.family_id', 't.expires_at', 't.rotated_at', 't.superseded_at', 't.revoked_at'])
      .select('u.status')
      .where('t.token_hash', '=', digest)
      .executeTakeFirst();
    const now = new Date();
    if (!row || row.revoked_at || row.expires_at <= now) return { kind: 'invalid' };
    if (row.status !== 'ACTIVE') return { kind: 'suspended' };

    if (!row.superseded_at) {
      // The newest token: it is used, and superseded by the one issued below.
      await trx
        .updateTable('refresh_tokens')
        .set({ rotated_at: now, superseded_at: now })
        .where('id', '=', row.id)
        .execute();
    } else {
      if (!(await withinReuseGrace(deps, trx, row.id, row.superseded_at, now))) {
        await revokeFamily(trx, row.user_id, row.family_id, 'reuse');
        await recordAudit(trx, actorOf(actor, null), {
          action: 'auth.session_reuse_detected',
          targetType: 'user',
          targetId: row.user_id,
          metadata: { familyId: row.family_id },
        });
        return { kind: 'reuse', userId: row.user_id, familyId: row.family_id };
      }
      if (!row.rotated_at) {
        await trx.updateTable('refresh_tokens').set({ rotated_at: now }).where('id', '=', row.id).execute();
      }
      await trx
        .updateTable('refresh_tokens')
        .set({ superseded_at: now })
        .where('family_id', '=', row.family_id)
        .where('superseded_at', 'is', null)
        .execute();
    }
    return { kind: 'ok', tokens: await issueTokens(deps, trx, row.user_id, actor, row) };
  });

  switch (outcome.kind) {
    case 'ok':
      return outcome.tokens;
    case 'suspended':
      throw suspended();
    case 'reuse':
      deps.logger.warn(
        { userId: outcome.userId, familyId: outcome.familyId },
        'refresh token reuse: session family revoked',
      );
      throw new AppError(
        'UNAUTHORIZED',
        'This refresh token was already used or replaced by a newer one. Sign in again.',
      );
    case 'invalid':
      throw new AppError('UNAUTHORIZED', 'Invalid, expired or revoked refresh token. Sign in again.');
  }
}

/** Ends one session of the user: every token of the family, including one a refresh is issuing right now. */
export async function revokeFamily(
  trx: Transaction<Database>,
  userId: string,
  familyId: string,
  reason: string,
): Promise<void> {
  await lockSessionsOf(trx, userId);
  const now = new Date();
  await trx
    .updateTable('sessions')
    .set({ revoked_at: now, revoked_reason: reason })
    .where('id', '=', familyId)
    .where('revoked_at', 'is', null)
    .execute();
  await trx
    .updateTable('refresh_tokens')
    .set({ revoked_at: now, revoked_reason: reason })
    .where('family_id', '=', familyId)
    .where('revoked_at', 'is', null)
    .execute();
}

/** Ends the session the refresh token belongs to. Unknown tokens are ignored (logout is idempotent). */
export async function revokeSessionOf(deps: Deps, rawToken: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom('refresh_tokens')
      .select(['user_id', 'family_id'])
      .where('token_hash', '=', refreshDigest(deps, rawToken))
      .executeTakeFirst();
    if (row) await revokeFamily(trx, row.user_id, row.family_id, 'logout');
  });
}

/**
 * Ends every session of the user but `except` (the caller's own, when given), including one a refresh is
 * issuing right now. Once this returns, no refresh of the user runs until the transaction ends: access
 * tokens it issued are older than anything the caller writes afterwards (so `tokens_valid_after` set after
 * this call covers them). Answers how many sessions it ended.
 */
export async function revokeAllSessions(
  trx: Transaction<Database>,
  userId: string,
  reason: string,
  except?: string,
): Promise<number> {
  await lockSessionsOf(trx, userId);
  const now = new Date();
  let sessions = trx
    .updateTable('sessions')
    .set({ revoked_at: now, revoked_reason: reason })
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null);
  let tokens = trx
    .updateTable('refresh_tokens')
    .set({ revoked_at: now, revoked_reason: reason })
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null);
  if (except) {
    sessions = sessions.where('id', '!=', except);
    tokens = tokens.where('family_id', '!=', except);
  }
  const ended = await sessions.returning(['id', 'expires_at']).execute();
  await tokens.execute();
  // Sessions already past their refresh token's expiry were over: they do not count as ended now.
  return ended.filter((s) => s.expires_at > now).length;
}
