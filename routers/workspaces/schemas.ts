// Inputs and outputs of the workspace, member, invitation and admin workspace routes.
import { z } from 'zod';
import { EDITIONS, WORKSPACE_ROLES, WORKSPACE_STATUSES } from '../../db/schema.js';
import { listInput, listOutput as pagedListOutput } from '../../server/platform/pagination.js';
import { displayName } from '../../server/platform/validation.js';
import { emailSchema, workspaceSummaryOutput } from '../auth/schemas.js';

const isoDate = z.iso.datetime({ offset: true });
const workspaceName = displayName(100);

export const workspaceIdInput = z.object({ workspaceId: z.uuid() });
export const memberInput = workspaceIdInput.extend({ userId: z.uuid() });

export const createWorkspaceInput = z.object({ name: workspaceName });
export const updateWorkspaceInput = workspaceIdInput
  .extend({
    name: workspaceName.optional(),
    // Not z.boolean(): the REST adapter coerces plain booleans, so "false" would read as true.
    requireMfa: z
      .union([z.literal(true), z.literal(false)])
      .optional()
      .meta({ description: 'Members without two-factor sign-in are refused on this workspace (MFA_REQUIRED).' }),
    requireSso: z
      .union([z.literal(true), z.literal(false)])
      .optional()
      .meta({
        description:
          'OWNER only. Members on its verified domains must sign in through its SSO connection (SSO_REQUIRED); owners keep a break-glass sign-in, audited.',
      }),
  })
  .refine((i) => i.name !== undefined || i.requireMfa !== undefined || i.requireSso !== undefined, {
    error: 'Send name, requireMfa or requireSso.',
  });
export const inviteInput = workspaceIdInput.extend({ email: emailSchema, role: z.enum(WORKSPACE_ROLES) });
export const acceptInvitationInput = z.object({ token: z.string({ error: 'Expected a token string.' }).max(16_384) });
export const changeRoleInput = memberInput.extend({ role: z.enum(WORKSPACE_ROLES) });

export const workspaceOutput = z
  .object({
    id: z.uuid(),
    name: z.string(),
    status: z.enum(WORKSPACE_STATUSES),
    edition: z.enum(EDITIONS),
    isPersonal: z.boolean(),
    /** Members without two-factor sign-in are refused on its routes. */
    requireMfa: z.boolean(),
    /** Members on its verified domains must sign in through its SSO connection. */
    requireSso: z.boolean(),
    memberCount: z.number().int(),
    createdAt: isoDate,
    updatedAt: isoDate,
  })
  .meta({ id: 'Workspace' });

/** A workspace as one of its members sees it: with the caller's role. */
export const myWorkspaceOutput = workspaceOutput.extend({ role: z.enum(WORKSPACE_ROLES) }).meta({ id: 'MyWorkspace' });

export const memberOutput = z
  .object({
    userId: z.uuid(),
    email: z.string(),
    name: z.string(),
    role: z.enum(WORKSPACE_ROLES),
    status: z.enum(['ACTIVE', 'SUSPENDED']).meta({
      description:
        "SUSPENDED: the workspace's directory (SCIM) deactivated this membership: refused on the workspace's routes and not a seat, until the directory reactivates it.",
    }),
    joinedAt: isoDate,
  })
  .meta({ id: 'Member' });

export const invitationOutput = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    email: z.string(),
    role: z.enum(WORKSPACE_ROLES),
    expiresAt: isoDate,
    createdAt: isoDate,
  })
  .meta({ id: 'Invitation' });

/** A pending invitation as the workspace's managers see it: who sent it, too. */
export const pendingInvitationOutput = invitationOutput
  .extend({
    invitedBy: z
      .object({ id: z.uuid(), name: z.string() })
      .nullable()
      .meta({ description: 'Who sent it; null when their account is gone.' }),
  })
  .meta({ id: 'PendingInvitation' });
export const invitationIdInput = workspaceIdInput.extend({ invitationId: z.uuid() });
export const transferOwnershipInput = workspaceIdInput.extend({
  newOwnerUserId: z.uuid().meta({ description: 'A member of the workspace: its new OWNER.' }),
});
export const deleteWorkspaceInput = workspaceIdInput.extend({
  confirmName: z.string().max(200).meta({ description: "The workspace's name, typed back exactly, to confirm." }),
});
export const deletionOutput = z
  .object({
    message: z.string(),
    status: z.literal('PENDING_DELETION'),
    purgeAt: isoDate.meta({ description: 'When its content is purged; an owner can restore it until then.' }),
  })
  .meta({ id: 'WorkspaceDeletion' });

export const acceptedInvitationOutput = z.object({ workspace: workspaceSummaryOutput });
export const listOutput = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item) });

// ---- platform administration

export const adminWorkspaceListInput = listInput.extend({
  search: z.string().trim().max(100).optional().meta({ description: 'Part of the workspace name.' }),
  status: z.enum(WORKSPACE_STATUSES).optional(),
});

export const adminCreateWorkspaceInput = z.object({ name: workspaceName, ownerUserId: z.uuid() });
export const adminUpdateWorkspaceInput = workspaceIdInput.extend({ name: workspaceName });
export const transferOwnerInput = workspaceIdInput.extend({ newOwnerUserId: z.uuid() });

const ownerOutput = z.object({ id: z.uuid(), email: z.string(), name: z.string() }).meta({ id: 'WorkspaceOwner' });

export const adminWorkspaceOutput = workspaceOutput
  .extend({ owners: z.array(ownerOutput) })
  .meta({ id: 'AdminWorkspace' });
export const adminWorkspaceDetailOutput = adminWorkspaceOutput
  .extend({ members: z.array(memberOutput) })
  .meta({ id: 'AdminWorkspaceDetail' });
export const adminWorkspacePageOutput = pagedListOutput(adminWorkspaceOutput);
