// The audit log: who did what to which record, written in the same transaction as the change itself.
// Metadata holds facts about the change (ids, states, roles), never a secret; the credential that acted, when
// it was not a user's session (an API key, an OAuth grant and its client, a SCIM token), is named there by id.
import type { Kysely } from 'kysely';
import type { AuditMetadata, Database } from '../../db/schema.js';
import type { Actor } from '../../server/platform/actor.js';
import { mapItems, paginate, type ListRequest } from '../../server/platform/pagination.js';
import type { AppDeps } from '../../server/platform/context.js';

export type AuditAction =
  | 'auth.login_failed'
  | 'auth.password_reset'
  | 'auth.session_reuse_detected'
  | 'auth.oauth_login'
  | 'auth.oauth_login_failed'
  | 'auth.oauth_account_created'
  | 'auth.identity_linked'
  | 'auth.identity_link_failed'
  | 'auth.identity_unlinked'
  | 'auth.mfa_enabled'
  | 'auth.mfa_disabled'
  | 'auth.mfa_backup_codes_regenerated'
  | 'auth.mfa_failed'
  | 'auth.mfa_locked'
  | 'auth.password_changed'
  | 'auth.session_revoked'
  | 'auth.sessions_revoked'
  | 'auth.profile_updated'
  | 'auth.email_change_requested'
  | 'auth.email_changed'
  | 'auth.account_deleted'
  | 'auth.data_exported'
  | 'user.updated'
  | 'user.suspended'
  | 'user.activated'
  | 'user.mfa_reset'
  | 'workspace.created'
  | 'workspace.updated'
  | 'workspace.suspended'
  | 'workspace.activated'
  | 'workspace.archived'
  | 'workspace.restored'
  | 'workspace.deleted'
  | 'workspace.deletion_requested'
  | 'workspace.owner_transferred'
  | 'member.invited'
  | 'member.invitation_revoked'
  | 'member.invitation_resent'
  | 'member.left'
  | 'member.joined'
  | 'member.role_changed'
  | 'member.removed'
  | 'plan.created'
  | 'plan.updated'
  | 'plan.archived'
  | 'plan.restored'
  | 'plan.deleted'
  | 'billing.plan_changed'
  | 'billing.subscription_canceled'
  | 'api_key.created'
  | 'api_key.updated'
  | 'api_key.rotated'
  | 'api_key.revoked'
  | 'oauth_grant.revoked'
  | 'webhook.created'
  | 'webhook.updated'
  | 'webhook.deleted'
  | 'webhook.secret_rotated'
  | 'webhook.disabled'
  | 'webhook.delivery_retried'
  | 'demo.reset'
  | 'sso.domain_added'
  | 'sso.domain_verified'
  | 'sso.domain_removed'
  | 'sso.domain_unverified'
  | 'scim.token_created'
  | 'scim.token_revoked'
  | 'scim.role_mappings_updated'
  | 'scim.user_provisioned'
  | 'scim.user_updated'
  | 'scim.user_suspended'
  | 'scim.user_reactivated'
  | 'scim.user_deprovisioned'
  | 'scim.group_created'
  | 'scim.group_updated'
  | 'scim.group_deleted'
  | 'sso.connection_created'
  | 'sso.connection_updated'
  | 'sso.connection_deleted'
  | 'sso.sign_in'
  | 'sso.sign_in_failed'
  | 'sso.account_created'
  | 'sso.break_glass';

export interface AuditEntry {
  action: AuditAction;
  targetType?:
    | 'user'
    | 'workspace'
    | 'invitation'
    | 'member'
    | 'plan'
    | 'subscription'
    | 'api_key'
    | 'webhook'
    | 'domain'
    | 'scim_token'
    | 'scim_group'
    | 'sso_connection'
    | 'oauth_grant';
  targetId?: string;
  workspaceId?: string | null;
  metadata?: AuditMetadata;
}

const SECRET_KEY = /pass|token|secret|key|hash|authorization|cookie/i;

/** Drops keys that could hold a secret, whatever a caller passes. */
function safeMetadata(metadata: AuditMetadata = {}): AuditMetadata {
  return Object.fromEntries(Object.entries(metadata).filter(([k]) => !SECRET_KEY.test(k)));
}

/** The credential that acted, by id (ids are not secrets: they are added after safeMetadata's filter). */
function credentialOf(actor: Actor): AuditMetadata {
  const named: AuditMetadata = {};
  if (actor.apiKeyId) named.apiKeyId = actor.apiKeyId;
  if (actor.oauthGrantId) named.oauthGrantId = actor.oauthGrantId;
  if (actor.oauthClientId) named.oauthClientId = actor.oauthClientId;
  if (actor.scimTokenId) named.scimCredentialId = actor.scimTokenId;
  return named;
}

export async function recordAudit(db: Kysely<Database>, actor: Actor, entry: AuditEntry): Promise<void> {
  await db
    .insertInto('audit_logs')
    .values({
      actor_user_id: actor.userId,
      actor_email: actor.email,
      action: entry.action,
      target_type: entry.targetType ?? null,
      target_id: entry.targetId ?? null,
      workspace_id: entry.workspaceId ?? null,
      request_id: actor.requestId,
      ip: actor.ip,
      metadata: JSON.stringify({ ...safeMetadata(entry.metadata), ...credentialOf(actor) }),
    })
    .execute();
}

export interface AuditFilters {
  actorId?: string;
  action?: string;
  workspaceId?: string;
  from?: string;
  to?: string;
}

/**
 * Newest first, filtered, by page or cursor. The total is exact for the whole log and for one workspace's
 * (list_counters), counted up to 10,000 with any other filter.
 */
export async function listAudit(deps: Pick<AppDeps, 'db' | 'config'>, input: ListRequest & AuditFilters) {
  const { actorId, action, workspaceId, from, to, ...request } = input;
  const filters = { actorId, action, workspaceId, from, to };
  let query = deps.db.selectFrom('audit_logs');
  if (filters.actorId) query = query.where('actor_user_id', '=', filters.actorId);
  if (filters.action) query = query.where('action', '=', filters.action);
  if (filters.workspaceId) query = query.where('workspace_id', '=', filters.workspaceId);
  if (filters.from) query = query.where('created_at', '>=', new Date(filters.from));
  if (filters.to) query = query.where('created_at', '<', new Date(filters.to));
  const filtered = Boolean(filters.actorId || filters.action || filters.from || filters.to);
  const counters = filtered
    ? undefined
    : filters.workspaceId
      ? { scope: 'audit_logs.workspace', id: filters.workspaceId }
      : { scope: 'audit_logs' };
  const page = await paginate(deps, query.selectAll(), { list: 'audit', request, counters });
  return mapItems(page, (r) => ({
    id: r.id,
    action: r.action,
    actor: r.actor_user_id || r.actor_email ? { id: r.actor_user_id, email: r.actor_email } : null,
    targetType: r.target_type,
    targetId: r.target_id,
    workspaceId: r.workspace_id,
    requestId: r.request_id,
    ip: r.ip,
    metadata: r.metadata,
    createdAt: r.created_at.toISOString(),
  }));
}
