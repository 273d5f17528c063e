// Platform administration of users: search, read, rename and platform role, suspend and activate.
import type { PlatformRole, User, UserStatus } from '../../db/schema.js';
import { AppError } from '../../server/platform/errors.js';
import { mapItems, paginate, type ListRequest } from '../../server/platform/pagination.js';
import type { Actor } from '../../server/platform/actor.js';
import { recordAudit } from '../audit/service.js';
import { toUserOutput } from '../auth/schemas.js';
import { membershipsOf } from '../workspaces/access.js';
import { adminResetMfa } from '../auth/mfa.js';
import type { AppDeps } from '../../server/platform/context.js';
import { escapeLike } from '../../db/text.js';
import { revokeUserGrants } from '../mcp/grants.js';

type Deps = Pick<AppDeps, 'db'>;

const COLUMNS = [
  'id',
  'email',
  'name',
  'status',
  'platform_role',
  'email_verified_at',
  'mfa_enabled',
  'last_login_at',
  'created_at',
  'updated_at',
] as const;
type AdminUserRow = Pick<User, (typeof COLUMNS)[number]>;

function toAdminUser(u: AdminUserRow) {
  return {
    ...toUserOutput(u),
    lastLoginAt: u.last_login_at?.toISOString() ?? null,
    updatedAt: u.updated_at.toISOString(),
  };
}

const notFound = () => new AppError('NOT_FOUND', 'User not found.');

/** Newest first, by page or cursor; the total is exact without filters, capped with them. */
export async function listUsers(
  deps: Pick<AppDeps, 'db' | 'config'>,
  input: ListRequest & { search?: string; status?: UserStatus; platformRole?: PlatformRole },
) {
  const { search, status, platformRole, ...request } = input;
  const filters = { search, status, platformRole };
  let query = deps.db.selectFrom('users');
  if (filters.search) {
    const pattern = `%${escapeLike(filters.search)}%`;
    query = query.where((eb) => eb.or([eb('email', 'ilike', pattern), eb('name', 'ilike', pattern)]));
  }
  if (filters.status) query = query.where('status', '=', filters.status);
  if (filters.platformRole) query = query.where('platform_role', '=', filters.platformRole);
  const filtered = Boolean(filters.search || filters.status || filters.platformRole);
  const page = await paginate(deps, query.select(COLUMNS), {
    list: 'admin.users',
    request,
    counters: filtered ? undefined : { scope: 'users' },
  });
  return mapItems(page, toAdminUser);
}

export async function getUser({ db }: Deps, { userId }: { userId: string }) {
  const [user, memberships] = await Promise.all([
    db.selectFrom('users').select(COLUMNS).where('id', '=', userId).executeTakeFirst(),
    membershipsOf(db, userId),
  ]);
  if (!user) throw notFound();
  return { ...toAdminUser(user), memberships };
}

export async function updateUser(
  deps: Deps,
  actor: Actor,
  input: { userId: string; name?: string; platformRole?: PlatformRole },
) {
  const { userId, ...changes } = input;
  await deps.db.transaction().execute(async (trx) => {
    const user = await trx
      .selectFrom('users')
      .select(['name', 'platform_role'])
      .where('id', '=', userId)
      .forUpdate()
      .executeTakeFirst();
    if (!user) throw notFound();
    if (changes.platformRole && changes.platformRole !== user.platform_role && userId === actor.userId) {
      throw new AppError('CONFLICT', 'You cannot change your own platform role; ask another admin.');
    }
    await trx
      .updateTable('users')
      .set({
        ...(changes.name !== undefined ? { name: changes.name } : {}),
        ...(changes.platformRole !== undefined ? { platform_role: changes.platformRole } : {}),
        updated_at: new Date(),
      })
      .where('id', '=', userId)
      .execute();
    await recordAudit(trx, actor, {
      action: 'user.updated',
      targetType: 'user',
      targetId: userId,
      metadata: {
        ...(changes.name !== undefined ? { name: changes.name } : {}),
        ...(changes.platformRole !== undefined
          ? { platformRoleFrom: user.platform_role, platformRoleTo: changes.platformRole }
          : {}),
      },
    });
  });
  return getUser(deps, { userId });
}

const USER_MOVES = {
  suspend: { from: 'ACTIVE', to: 'SUSPENDED', action: 'user.suspended' },
  activate: { from: 'SUSPENDED', to: 'ACTIVE', action: 'user.activated' },
} as const;

/**
 * Suspend or activate. A suspension applies to the very next request of any token the user holds, since
 * authentication reads the status on every request; sessions are kept, so activation restores them.
 */
export async function moveUser(
  deps: Deps,
  actor: Actor,
  { userId, move }: { userId: string; move: keyof typeof USER_MOVES },
) {
  const rule = USER_MOVES[move];
  if (userId === actor.userId) throw new AppError('CONFLICT', `You cannot ${move} your own account.`);
  await deps.db.transaction().execute(async (trx) => {
    const user = await trx.selectFrom('users').select('status').where('id', '=', userId).forUpdate().executeTakeFirst();
    if (!user) throw notFound();
    if (user.status !== rule.from) {
      throw new AppError(
        'INVALID_STATE',
        `The user is ${user.status}; ${move} applies only to a user who is ${rule.from}.`,
      );
    }
    await trx.updateTable('users').set({ status: rule.to, updated_at: new Date() }).where('id', '=', userId).execute();
    // Sessions are kept for an activation, but apps connected over OAuth must be connected again.
    if (move === 'suspend') await revokeUserGrants(trx, userId);
    await recordAudit(trx, actor, {
      action: rule.action,
      targetType: 'user',
      targetId: userId,
      metadata: { from: user.status, to: rule.to },
    });
  });
  return getUser(deps, { userId });
}

/** Turns the user's two-factor sign-in off (auth/mfa.ts: audited, the user told by mail); answers the user. */
export async function resetUserMfa(
  deps: Pick<AppDeps, 'config' | 'db' | 'logger' | 'mailer'>,
  actor: Actor,
  { userId }: { userId: string },
) {
  await adminResetMfa(deps, actor, userId);
  return getUser(deps, { userId });
}
