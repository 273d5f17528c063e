// Who may do what: workspace roles to permissions, and platform roles to admin rights. The only table of
// its kind: procedures ask for a permission by name (workspaceProcedure('ai.generate')), never for a role.
import type { PlatformRole, WorkspaceRole } from '../../db/schema.js';

export const WORKSPACE_PERMISSIONS = [
  'workspace.read',
  'workspace.update',
  'members.manage',
  'billing.view',
  'billing.manage',
  'ai.generate',
  'ai.view',
  'ai.view_usage',
  'api_keys.manage',
  'webhooks.manage',
  'branding.manage',
  'audit.view',
  'files.read',
  'files.write',
  /** Hand the workspace to someone else, make or unmake owners. */
  'ownership.manage',
] as const;

export type WorkspacePermission = (typeof WORKSPACE_PERMISSIONS)[number];

const all = WORKSPACE_PERMISSIONS;

export const ROLE_PERMISSIONS: Record<WorkspaceRole, ReadonlySet<WorkspacePermission>> = {
  OWNER: new Set(all),
  ADMIN: new Set(all.filter((p) => p !== 'ownership.manage')),
  MEMBER: new Set([
    'workspace.read',
    'ai.generate',
    'ai.view',
    'ai.view_usage',
    'billing.view',
    'files.read',
    'files.write',
  ]),
  VIEWER: new Set(['workspace.read', 'ai.view', 'files.read']),
};

export const roleHas = (role: WorkspaceRole, permission: WorkspacePermission) => ROLE_PERMISSIONS[role].has(permission);

export const PLATFORM_PERMISSIONS = ['admin.read', 'admin.write', 'admin.ai_usage.view'] as const;
export type PlatformPermission = (typeof PLATFORM_PERMISSIONS)[number];

export const PLATFORM_ROLE_PERMISSIONS: Record<PlatformRole, ReadonlySet<PlatformPermission>> = {
  USER: new Set(),
  ADMIN: new Set(PLATFORM_PERMISSIONS),
  // The demo admin reads everything an admin reads and writes nothing.
  DEMO_ADMIN: new Set(['admin.read', 'admin.ai_usage.view']),
};

export const platformRoleHas = (role: PlatformRole, permission: PlatformPermission) =>
  PLATFORM_ROLE_PERMISSIONS[role].has(permission);

/** The workspace roles holding `permission`, as a list for a sentence ("OWNER, ADMIN or MEMBER"). */
export const workspaceRolesWith = (permission: WorkspacePermission) =>
  orList(Object.entries(ROLE_PERMISSIONS).flatMap(([role, set]) => (set.has(permission) ? [role] : [])));

/** The platform roles holding `permission`, as a list for a sentence. */
export const platformRolesWith = (permission: PlatformPermission) =>
  orList(Object.entries(PLATFORM_ROLE_PERMISSIONS).flatMap(([role, set]) => (set.has(permission) ? [role] : [])));

const orList = (items: string[]) =>
  items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`;
