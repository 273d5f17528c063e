// Which workspace a request acts on, and whether the caller may: used by workspaceProcedure (server/platform/trpc.ts)
// and by the plain Express routes (uploads), so both decide alike.
import { z } from 'zod';
import type { Config } from './config.js';
import { AppError } from './errors.js';
import { roleHas, type WorkspacePermission } from './permissions.js';
import { isDemoAccount } from './accounts.js';
import type { WorkspaceAccess } from './principal.js';

const workspaceIdSchema = z.uuid();

export interface AccessOptions {
  /** Without a workspaceId, act on the caller's active workspace (AI, billing, uploads). */
  orActiveWorkspace?: boolean;
  /** Refuse demo accounts (AI_DEMO_RESTRICTED_EMAILS) with DEMO_READ_ONLY: API key and webhook changes. */
  refuseDemoAccounts?: boolean;
  /** Let the request through while the workspace waits for its purge (restoring it, the one route open then). */
  whilePendingDeletion?: boolean;
}

/**
 * The caller's membership of the workspace named by `candidate` (or their active one), checked: the
 * workspace is ACTIVE, the caller has two-factor sign-in if the workspace requires it, and the role holds
 * `permission`. Non-members get 404, so ids cannot be probed.
 */
export function resolveWorkspaceAccess(
  caller: { email: string; mfaEnabled: boolean; memberships: WorkspaceAccess[] },
  candidate: unknown,
  permission: WorkspacePermission,
  opts: AccessOptions & { config: Pick<Config, 'AI_DEMO_RESTRICTED_EMAILS'> },
): WorkspaceAccess {
  let access: WorkspaceAccess | undefined;
  if ((candidate === undefined || candidate === '') && opts.orActiveWorkspace) {
    access = workspaceContext(caller.memberships).activeWorkspace ?? undefined;
    if (!access)
      throw new AppError(
        'WORKSPACE_UNAVAILABLE',
        'You have no active workspace. Name one with workspaceId, or contact support.',
      );
  } else {
    const parsed = workspaceIdSchema.safeParse(candidate);
    if (!parsed.success) {
      throw new AppError('BAD_REQUEST', 'Invalid input: workspaceId: a workspace id (UUID) is required.', [
        { path: 'workspaceId', message: 'Expected a UUID', code: 'invalid_format' },
      ]);
    }
    access = caller.memberships.find((m) => m.id === parsed.data);
  }
  if (!access) throw new AppError('NOT_FOUND', 'Workspace not found.');
  if (access.membership_status === 'SUSPENDED')
    throw new AppError(
      'MEMBERSHIP_SUSPENDED',
      "Your access to this workspace is suspended by its directory (SCIM). Ask the workspace's administrators.",
    );
  if (access.status !== 'ACTIVE' && !(opts.whilePendingDeletion && access.status === 'PENDING_DELETION')) {
    throw new AppError(
      'WORKSPACE_UNAVAILABLE',
      access.status === 'PENDING_DELETION'
        ? 'This workspace is deleted and waits for its purge; an owner can restore it until then.'
        : `This workspace is ${access.status.toLowerCase()}. Contact support to restore access.`,
    );
  }
  // Before the role: a member without 2FA may do nothing here, whatever their role allows.
  if (access.require_mfa && !caller.mfaEnabled) {
    throw new AppError(
      'MFA_REQUIRED',
      'This workspace requires two-factor sign-in: turn it on for your account (POST /auth/mfa/totp/setup).',
    );
  }
  if (!roleHas(access.role, permission)) {
    throw new AppError('PERMISSION_DENIED', `Your role (${access.role}) does not allow this (needs ${permission}).`);
  }
  if (opts.refuseDemoAccounts && isDemoAccount(opts.config, caller.email)) {
    throw new AppError('DEMO_READ_ONLY', 'Demo accounts cannot change API keys or webhooks.');
  }
  // Restoring: the route is open only while the workspace waits for its purge.
  if (opts.whilePendingDeletion && access.status !== 'PENDING_DELETION')
    throw new AppError('INVALID_STATE', `The workspace is ${access.status}: there is no deletion to undo.`);
  return access;
}

export type WorkspaceUnavailableReason =
  'WORKSPACE_SUSPENDED' | 'WORKSPACE_ARCHIVED' | 'WORKSPACE_PENDING_DELETION' | 'MEMBERSHIP_SUSPENDED' | 'NO_WORKSPACE';

export interface WorkspaceContext {
  activeWorkspace: WorkspaceAccess | null;
  hasActiveWorkspace: boolean;
  workspaceUnavailableReason?: WorkspaceUnavailableReason;
}

/**
 * The workspace context of login and GET /auth/me, and the workspace of requests that name none: the first
 * ACTIVE workspace the user joined; without one, the reason (the state of the first membership, or
 * NO_WORKSPACE).
 */
export function workspaceContext(memberships: WorkspaceAccess[]): WorkspaceContext {
  const active = memberships.find((m) => m.status === 'ACTIVE' && m.membership_status === 'ACTIVE');
  if (active) return { activeWorkspace: active, hasActiveWorkspace: true };
  const first = memberships[0];
  return {
    activeWorkspace: null,
    hasActiveWorkspace: false,
    workspaceUnavailableReason: !first
      ? 'NO_WORKSPACE'
      : first.status === 'ACTIVE'
        ? 'MEMBERSHIP_SUSPENDED'
        : (`WORKSPACE_${first.status}` as WorkspaceUnavailableReason),
  };
}
