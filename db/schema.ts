// The typed view of the tables created by db/migrations. Hand-written: update it with every migration.
import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type UpdatedAt = ColumnType<Date, Date | string | undefined, Date | string>;
type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export const USER_STATUSES = ['ACTIVE', 'SUSPENDED'] as const;
export type UserStatus = (typeof USER_STATUSES)[number];
export const PLATFORM_ROLES = ['USER', 'ADMIN', 'DEMO_ADMIN'] as const;
export type PlatformRole = (typeof PLATFORM_ROLES)[number];
export const WORKSPACE_STATUSES = ['ACTIVE', 'SUSPENDED', 'ARCHIVED', 'PENDING_DELETION'] as const;
export type WorkspaceStatus = (typeof WORKSPACE_STATUSES)[number];
export const EDITIONS = ['LITE', 'PRO', 'ENTERPRISE', 'CUSTOM'] as const;
export type Edition = (typeof EDITIONS)[number];
export const WORKSPACE_ROLES = ['OWNER', 'ADMIN', 'MEMBER', 'VIEWER'] as const;
export type WorkspaceRole = (typeof WORKSPACE_ROLES)[number];
export type UserTokenKind = 'PASSWORD_RESET' | 'EMAIL_VERIFICATION';
export const PLAN_STATUSES = ['DRAFT', 'PUBLISHED', 'ARCHIVED'] as const;
export type PlanStatus = (typeof PLAN_STATUSES)[number];
export const PLAN_INTERVALS = ['ONE_TIME', 'MONTHLY', 'YEARLY'] as const;
export type PlanInterval = (typeof PLAN_INTERVALS)[number];
export const BILLING_PROVIDERS = ['MOCK', 'PROCESSOR_A', 'PROCESSOR_B'] as const;
export type BillingProvider = (typeof BILLING_PROVIDERS)[number];
export const SUBSCRIPTION_STATUSES = ['ACTIVE', 'TRIALING', 'PAST_DUE', 'CANCELED', 'INCOMPLETE'] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];
/** Statuses of the one live subscription a workspace may have. */
export const LIVE_SUBSCRIPTION_STATUSES = [
  'ACTIVE',
  'TRIALING',
  'PAST_DUE',
] as const satisfies readonly SubscriptionStatus[];
export const PAYMENT_STATUSES = ['SUCCEEDED', 'FAILED', 'REFUNDED', 'PENDING'] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];
export const PRICING_MODELS = ['FLAT', 'PER_SEAT'] as const;
export type PricingModel = (typeof PRICING_MODELS)[number];

/** Numeric limits of a plan; a missing key means the built-in default of the edition. */
export interface PlanLimits {
  apiKeys?: number;
  aiMonthlyGenerations?: number;
  members?: number;
  [key: string]: number | undefined;
}

type Json<T> = ColumnType<T, string | undefined, string>;

export interface UsersTable {
  id: Generated<string>;
  email: string;
  name: string;
  /** Null for an account that signs in only through identity providers. */
  password_hash: string | null;
  status: ColumnType<UserStatus, UserStatus | undefined, UserStatus>;
  platform_role: ColumnType<PlatformRole, PlatformRole | undefined, PlatformRole>;
  email_verified_at: NullableTimestamp;
  tokens_valid_after: NullableTimestamp;
  last_login_at: NullableTimestamp;
  avatar_key: string | null;
  avatar_updated_at: NullableTimestamp;
  /** Two-factor sign-in is on (a confirmed row in user_totp). */
  mfa_enabled: ColumnType<boolean, boolean | undefined, boolean>;
  /** Erased by its owner: the address is a tombstone (`deleted+<id>@invalid`), the name `Deleted user`. */
  deleted_at: NullableTimestamp;
  /** The workspace whose directory (SCIM) or single sign-on created the account; null for everyone else. */
  provisioned_by_workspace_id: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface WorkspacesTable {
  id: Generated<string>;
  name: string;
  status: ColumnType<WorkspaceStatus, WorkspaceStatus | undefined, WorkspaceStatus>;
  edition: ColumnType<Edition, Edition | undefined, Edition>;
  is_personal: ColumnType<boolean, boolean | undefined, boolean>;
  plan_id: string | null;
  limits: Json<PlanLimits>;
  processor_a_customer_id: string | null;
  branding_display_name: string | null;
  branding_primary_color: string | null;
  branding_accent_color: string | null;
  logo_file_id: string | null;
  /** Members without two-factor sign-in are refused on the workspace's routes (MFA_REQUIRED). */
  require_mfa: ColumnType<boolean, boolean | undefined, boolean>;
  /** Members on its verified domains must sign in through its SSO connection (owners: break-glass). */
  require_sso: ColumnType<boolean, boolean | undefined, boolean>;
  deleted_at: NullableTimestamp;
  /** An owner's deletion (status PENDING_DELETION): when it was asked, and when the purge may run. */
  deletion_requested_at: NullableTimestamp;
  purge_at: NullableTimestamp;
  /** The purge removed its content; the row stays for its payments and audit entries. */
  purged_at: NullableTimestamp;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export const MEMBERSHIP_STATUSES = ['ACTIVE', 'SUSPENDED'] as const;
export type MembershipStatus = (typeof MEMBERSHIP_STATUSES)[number];

export interface WorkspaceMembersTable {
  /** The membership's own id: its SCIM User id. */
  id: Generated<string>;
  workspace_id: string;
  user_id: string;
  role: WorkspaceRole;
  /** SUSPENDED by the workspace's directory (`active: false`): refused on its routes, not counted as a seat. */
  status: ColumnType<MembershipStatus, MembershipStatus | undefined, MembershipStatus>;
  /** The directory's id of the person (SCIM externalId), unique within the workspace. */
  external_id: string | null;
  given_name: string | null;
  family_name: string | null;
  /** Written by the workspace's directory at least once: its role follows the group role mappings. */
  scim_managed: ColumnType<boolean, boolean | undefined, boolean>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface RefreshTokensTable {
  id: Generated<string>;
  user_id: string;
  family_id: string;
  parent_id: string | null;
  token_hash: string;
  expires_at: Timestamp;
  /** When the token was first presented for a refresh. */
  rotated_at: NullableTimestamp;
  /** When a newer token of the family was issued; null for the family's newest token. */
  superseded_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
  revoked_reason: string | null;
  created_ip: string | null;
  user_agent: string | null;
  created_at: CreatedAt;
}

/** A sign-in: one refresh-token family (its id is the family id), named by access tokens (`sid`). */
export interface SessionsTable {
  id: string;
  user_id: string;
  user_agent: string | null;
  ip_address: string | null;
  created_at: CreatedAt;
  /** The sign-in, or the last refresh. */
  last_used_at: Timestamp;
  /** The expiry of the family's newest refresh token. */
  expires_at: Timestamp;
  revoked_at: NullableTimestamp;
  revoked_reason: string | null;
  /** How the session signed in: `sso` through a workspace's connection; null for the other methods. */
  method: ColumnType<string | null, string | null | undefined, string | null>;
  sso_connection_id: ColumnType<string | null, string | null | undefined, string | null>;
}

/** A user's TOTP secret, sealed (SecretBox); pending until confirmed_at. */
export interface UserTotpTable {
  user_id: string;
  secret_encrypted: string;
  confirmed_at: NullableTimestamp;
  /** The time step of the last code accepted (bigint, read as a string). */
  last_used_step: ColumnType<string | null, string | number | null | undefined, string | number | null>;
  created_at: CreatedAt;
}

export interface MfaBackupCodesTable {
  id: Generated<string>;
  user_id: string;
  code_hash: string;
  used_at: NullableTimestamp;
  created_at: CreatedAt;
}

/** The token between the two steps of a sign-in with two factors. */
export interface MfaChallengesTable {
  id: Generated<string>;
  token_hash: string;
  user_id: string;
  attempts: ColumnType<number, number | undefined, number>;
  expires_at: Timestamp;
  used_at: NullableTimestamp;
  created_at: CreatedAt;
}

/** Failed second-factor checks of an account in its current window (routers/auth/second-factor-cap.ts). */
export interface SecondFactorFailuresTable {
  user_id: string;
  window_started_at: ColumnType<Date, Date | string | undefined, Date | string>;
  failures: ColumnType<number, number | undefined, number>;
}

export interface UserTokensTable {
  id: Generated<string>;
  user_id: string;
  kind: UserTokenKind;
  token_hash: string;
  expires_at: Timestamp;
  used_at: NullableTimestamp;
  created_at: CreatedAt;
}

export const IDENTITY_PROVIDER_IDS = ['github', 'google', 'oidc'] as const;
export type IdentityProviderId = (typeof IDENTITY_PROVIDER_IDS)[number];
/** What an identity-provider flow is for: signing in (or up), or linking an identity to the signed-in account. */
export type OAuthPurpose = 'SIGN_IN' | 'LINK';

export interface UserIdentitiesTable {
  id: Generated<string>;
  user_id: string;
  provider: IdentityProviderId;
  /** The provider's stable id of the person (OpenID Connect `sub`, GitHub's numeric user id). */
  subject: string;
  email: string | null;
  email_verified: ColumnType<boolean, boolean | undefined, boolean>;
  created_at: CreatedAt;
  last_used_at: NullableTimestamp;
}

export interface OAuthStatesTable {
  id: Generated<string>;
  state_hash: string;
  provider: IdentityProviderId;
  purpose: OAuthPurpose;
  user_id: string | null;
  /** SHA-256 of the browser binding cookie of a sign-in flow. */
  browser_hash: string | null;
  code_verifier: string;
  nonce: string | null;
  redirect_uri: string;
  redirect_to: string;
  expires_at: Timestamp;
  used_at: NullableTimestamp;
  created_at: CreatedAt;
}

export interface OAuthExchangeCodesTable {
  id: Generated<string>;
  code_hash: string;
  kind: OAuthPurpose;
  user_id: string;
  provider: IdentityProviderId | 'sso';
  subject: string;
  email: string | null;
  email_verified: ColumnType<boolean, boolean | undefined, boolean>;
  /** The SSO connection of an SSO sign-in's code (`provider` is then 'sso'). */
  sso_connection_id: ColumnType<string | null, string | null | undefined, string | null>;
  expires_at: Timestamp;
  used_at: NullableTimestamp;
  created_at: CreatedAt;
}

export interface EmailLogsTable {
  id: Generated<string>;
  to: string;
  subject: string;
  template: string;
  text: string;
  html: string | null;
  link: string | null;
  created_at: CreatedAt;
}

export interface WorkspaceInvitationsTable {
  id: Generated<string>;
  workspace_id: string;
  email: string;
  role: WorkspaceRole;
  token_hash: string;
  invited_by: string | null;
  expires_at: Timestamp;
  accepted_at: NullableTimestamp;
  accepted_by: string | null;
  revoked_at: NullableTimestamp;
  created_at: CreatedAt;
}

/** JSON object stored in audit_logs.metadata: facts about the change, never a secret. */
export type AuditMetadata = Record<string, string | number | boolean | null | string[]>;

export interface AuditLogsTable {
  id: Generated<string>;
  actor_user_id: string | null;
  actor_email: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  workspace_id: string | null;
  request_id: string | null;
  ip: string | null;
  metadata: ColumnType<AuditMetadata, string | undefined, never>;
  created_at: CreatedAt;
}

export interface PlansTable {
  id: Generated<string>;
  slug: string;
  name: string;
  description: ColumnType<string, string | undefined, string>;
  edition: Edition;
  price_cents: number;
  currency: ColumnType<string, string | undefined, string>;
  interval: ColumnType<PlanInterval, PlanInterval | undefined, PlanInterval>;
  status: ColumnType<PlanStatus, PlanStatus | undefined, PlanStatus>;
  status_before_archive: 'DRAFT' | 'PUBLISHED' | null;
  badge_text: ColumnType<string, string | undefined, string>;
  is_popular: ColumnType<boolean, boolean | undefined, boolean>;
  is_default: ColumnType<boolean, boolean | undefined, boolean>;
  sort_order: ColumnType<number, number | undefined, number>;
  features: Json<string[]>;
  limits: Json<PlanLimits>;
  processor_a_price_id: string | null;
  processor_b_variant_id: string | null;
  pricing_model: ColumnType<PricingModel, PricingModel | undefined, PricingModel>;
  included_seats: ColumnType<number, number | undefined, number>;
  trial_days: ColumnType<number, number | undefined, number>;
  metered_overage: ColumnType<boolean, boolean | undefined, boolean>;
  processor_a_seat_price_id: string | null;
  processor_a_meter_event_name: string | null;
  processor_b_seat_variant_id: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface SubscriptionsTable {
  id: Generated<string>;
  workspace_id: string;
  plan_id: string;
  provider: BillingProvider;
  provider_subscription_id: string | null;
  provider_customer_id: string | null;
  status: SubscriptionStatus;
  current_period_start: NullableTimestamp;
  current_period_end: NullableTimestamp;
  cancel_at_period_end: ColumnType<boolean, boolean | undefined, boolean>;
  canceled_at: NullableTimestamp;
  last_event_at: NullableTimestamp;
  trial_ends_at: NullableTimestamp;
  trial_reminder_sent_at: NullableTimestamp;
  /** Since when a failed invoice has left it PAST_DUE (the grace period counts from here). */
  past_due_since: NullableTimestamp;
  /** The seat quantity the processor last acknowledged, and when. */
  seats_reported: number | null;
  seats_reported_at: NullableTimestamp;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export const BILLING_COMMAND_KINDS = ['SEAT_QUANTITY', 'METER_EVENT'] as const;
export type BillingCommandKind = (typeof BILLING_COMMAND_KINDS)[number];

/** The outbox of calls to the payment processor: a row stays until the processor acknowledged it. */
export interface BillingCommandsTable {
  id: Generated<string>;
  workspace_id: string;
  kind: BillingCommandKind;
  /** METER_EVENT: the generation id (Stripe's `identifier`); SEAT_QUANTITY: the workspace id. */
  identifier: string;
  /** The calendar month (UTC, YYYY-MM-01, as the AI counters) the command belongs to. */
  period: string;
  not_before: ColumnType<Date, Date | string | undefined, Date | string>;
  /** A worker's lease: another may claim the row once it has passed. */
  locked_until: NullableTimestamp;
  attempts: ColumnType<number, number | undefined, number>;
  last_error: string | null;
  acked_at: NullableTimestamp;
  /** SENT: the processor acknowledged it; SKIPPED: nothing to send (no subscription at a processor). */
  result: 'SENT' | 'SKIPPED' | null;
  created_at: CreatedAt;
}

export const INVOICE_STATUSES = ['OPEN', 'PAID', 'FAILED', 'VOID'] as const;
export type InvoiceStatus = (typeof INVOICE_STATUSES)[number];

export interface InvoicesTable {
  id: Generated<string>;
  workspace_id: string;
  provider: BillingProvider;
  provider_invoice_id: string;
  number: string | null;
  amount_cents: number;
  currency: string;
  status: InvoiceStatus;
  period_start: NullableTimestamp;
  period_end: NullableTimestamp;
  hosted_url: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface PaymentsTable {
  id: Generated<string>;
  workspace_id: string;
  subscription_id: string | null;
  plan_id: string | null;
  provider: BillingProvider;
  provider_payment_id: string | null;
  amount_cents: number;
  currency: string;
  status: PaymentStatus;
  description: ColumnType<string, string | undefined, string>;
  receipt_url: string | null;
  invoice_url: string | null;
  created_at: CreatedAt;
}

export interface BillingEventsTable {
  id: Generated<string>;
  provider: string;
  event_id: string;
  event_type: string;
  workspace_id: string | null;
  outcome: string;
  received_at: CreatedAt;
}

export interface DomainEventsTable {
  id: Generated<string>;
  workspace_id: string;
  type: string;
  payload: Json<Record<string, unknown>>;
  created_at: CreatedAt;
  dispatched_at: NullableTimestamp;
}

export const AI_PROVIDERS = ['MOCK', 'PROVIDER_A', 'PROVIDER_B'] as const;
export type AiProvider = (typeof AI_PROVIDERS)[number];

export interface AiTemplatesTable {
  id: Generated<string>;
  slug: string;
  name: string;
  description: string;
  category: string;
  body: string;
  variables: Json<string[]>;
  is_active: ColumnType<boolean, boolean | undefined, boolean>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface AiGenerationsTable {
  id: Generated<string>;
  workspace_id: string;
  user_id: string | null;
  template_id: string | null;
  provider: AiProvider;
  model: string;
  prompt: string;
  system_prompt: string | null;
  temperature: number | null;
  output: ColumnType<string, string | undefined, string>;
  /** RUNNING while a stream is open; CANCELED when its client went away (partial output, counted). */
  status: AiGenerationStatus;
  error_code: string | null;
  prompt_tokens: ColumnType<number, number | undefined, number>;
  completion_tokens: ColumnType<number, number | undefined, number>;
  duration_ms: ColumnType<number, number | undefined, number>;
  is_sample: ColumnType<boolean, boolean | undefined, boolean>;
  created_at: CreatedAt;
  /** Renewed while a RUNNING generation streams; the sweep closes those whose heartbeat stopped. */
  heartbeat_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export const AI_GENERATION_STATUSES = ['SUCCEEDED', 'FAILED', 'RUNNING', 'CANCELED'] as const;
export type AiGenerationStatus = (typeof AI_GENERATION_STATUSES)[number];

export interface AiUsageCountersTable {
  workspace_id: string;
  /** First day of the calendar month (UTC), as YYYY-MM-DD. */
  period: ColumnType<string, string, string>;
  generations: ColumnType<number, number | undefined, number>;
}

export interface AiUserUsageCountersTable {
  user_id: string;
  period: ColumnType<string, string, string>;
  generations: ColumnType<number, number | undefined, number>;
}

export const API_KEY_SCOPES = [
  'read',
  'write',
  'workspace:read',
  'files:read',
  'files:write',
  'webhooks:send',
  'ai:generate',
] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

/** oidc-provider's models (routers/mcp/oauth-adapter.ts): one row per model instance, its payload as JSON. */
export interface OAuthPayloadsTable {
  model: string;
  id: string;
  payload: Json<Record<string, unknown>>;
  grant_id: string | null;
  uid: string | null;
  user_code: string | null;
  expires_at: NullableTimestamp;
  consumed_at: NullableTimestamp;
}

/** A user's consent to an MCP client (OAuth), for one workspace and its scopes; `id` is the provider's grant id. */
export interface OAuthGrantsTable {
  id: string;
  workspace_id: string;
  user_id: string;
  client_id: string;
  client_name: string | null;
  scopes: Json<ApiKeyScope[]>;
  resource: string;
  created_at: CreatedAt;
  last_used_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
}

export interface ApiKeysTable {
  id: Generated<string>;
  workspace_id: string;
  name: string;
  prefix: string;
  key_hash: string;
  scopes: Json<ApiKeyScope[]>;
  created_by: string | null;
  expires_at: NullableTimestamp;
  last_used_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
  /** The key that replaced this one by a rotation (it works until its grace period ends). */
  replaced_by: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface WebhooksTable {
  id: Generated<string>;
  workspace_id: string;
  name: string;
  url: string;
  /** Names of the event catalogue (routers/events/catalog.ts). */
  events: Json<string[]>;
  secret_encrypted: string;
  previous_secret_encrypted: string | null;
  previous_secret_expires_at: NullableTimestamp;
  is_active: ColumnType<boolean, boolean | undefined, boolean>;
  disabled_reason: string | null;
  consecutive_failures: ColumnType<number, number | undefined, number>;
  failing_since: NullableTimestamp;
  created_by: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export const DELIVERY_STATUSES = ['pending', 'retrying', 'success', 'failed', 'disabled'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface WebhookDeliveriesTable {
  id: Generated<string>;
  webhook_id: string;
  workspace_id: string;
  event: string;
  domain_event_id: string | null;
  payload: Json<Record<string, unknown>>;
  status: DeliveryStatus;
  attempts: ColumnType<number, number | undefined, number>;
  request_headers: ColumnType<Record<string, string> | null, string | null | undefined, string | null>;
  response_status: number | null;
  response_preview: string | null;
  duration_ms: number | null;
  next_retry_at: NullableTimestamp;
  last_error: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface FilesTable {
  id: Generated<string>;
  workspace_id: string;
  uploaded_by: string | null;
  kind: 'upload' | 'logo';
  storage_key: string;
  content_type: string;
  size_bytes: number;
  original_name: string | null;
  created_at: CreatedAt;
}

export interface AnalyticsEventsTable {
  id: Generated<string>;
  name: string;
  properties: Json<Record<string, string | number | boolean | null>>;
  user_id: string | null;
  workspace_id: string | null;
  created_at: CreatedAt;
}

export interface ContactMessagesTable {
  id: Generated<string>;
  name: string;
  email: string;
  subject: ColumnType<string, string | undefined, string>;
  message: string;
  topic: string | null;
  created_at: CreatedAt;
}

export const TICKET_PRIORITIES = ['LOW', 'NORMAL', 'HIGH', 'URGENT'] as const;
export interface SupportTicketsTable {
  id: Generated<string>;
  user_id: string | null;
  workspace_id: string | null;
  subject: string;
  message: string;
  priority: ColumnType<
    (typeof TICKET_PRIORITIES)[number],
    (typeof TICKET_PRIORITIES)[number] | undefined,
    (typeof TICKET_PRIORITIES)[number]
  >;
  status: ColumnType<
    'OPEN' | 'PENDING' | 'CLOSED',
    'OPEN' | 'PENDING' | 'CLOSED' | undefined,
    'OPEN' | 'PENDING' | 'CLOSED'
  >;
  created_at: CreatedAt;
}

/** A caller's idempotency key and, once its first request is answered, that answer (server/platform/idempotency.ts). */
export interface IdempotencyKeysTable {
  scope: string;
  key: string;
  fingerprint: string;
  /** Null while the first request runs. */
  status: number | null;
  /** Sealed (SecretBox): the answer may carry a secret shown once. */
  body: string | null;
  content_type: string | null;
  /** When the current claim began: reset when an expired or abandoned key is claimed again. */
  created_at: ColumnType<Date, Date | string | undefined, Date | string>;
  expires_at: Date;
}

/** The exact size of each list that grows (db/migrations/0013_list_scale.ts): the sum of a scope's shards. */
export interface ListCountersTable {
  scope: string;
  /** A workspace id, or '' for the platform. */
  scope_id: string;
  shard: number;
  n: ColumnType<string, number | string, number | string>;
  /** Rows inserted and deleted in the scope, ever: moves with every change of the list (0014). */
  changes: ColumnType<string, number | string | undefined, number | string>;
}

/** A change of address waiting for its confirmation link (sent to the new address). */
export interface EmailChangesTable {
  id: Generated<string>;
  user_id: string;
  new_email: string;
  token_hash: string;
  expires_at: Timestamp;
  used_at: NullableTimestamp;
  created_at: CreatedAt;
}

export const EXPORT_STATUSES = ['PENDING', 'READY', 'FAILED'] as const;
export type ExportStatus = (typeof EXPORT_STATUSES)[number];

/** A user's export of their data: built in the background, kept in storage until `expires_at`. */
export interface UserExportsTable {
  id: Generated<string>;
  user_id: string;
  status: ColumnType<ExportStatus, ExportStatus | undefined, ExportStatus>;
  storage_key: string | null;
  size_bytes: number | null;
  created_at: CreatedAt;
  ready_at: NullableTimestamp;
  expires_at: NullableTimestamp;
}

export const DOMAIN_STATUSES = ['PENDING', 'VERIFIED'] as const;
export type DomainStatus = (typeof DOMAIN_STATUSES)[number];

/** A domain a workspace claims; VERIFIED by one workspace at most, through a TXT record. */
export interface WorkspaceDomainsTable {
  id: Generated<string>;
  workspace_id: string;
  domain: string;
  status: ColumnType<DomainStatus, DomainStatus | undefined, DomainStatus>;
  verification_token: string;
  created_at: CreatedAt;
  verified_at: NullableTimestamp;
  /** The last re-check of a VERIFIED domain's record. */
  checked_at: NullableTimestamp;
  /** Since when the record of a VERIFIED domain has been missing (back to PENDING after 7 days). */
  missing_since: NullableTimestamp;
}

/** A workspace's SCIM bearer token (`scim_...`): only its SHA-256 and first characters are stored. */
export interface ScimTokensTable {
  id: Generated<string>;
  workspace_id: string;
  name: string;
  prefix: string;
  token_hash: string;
  created_by: string | null;
  created_at: CreatedAt;
  last_used_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
}

/** A group of the workspace's directory (SCIM Group). */
export interface ScimGroupsTable {
  id: Generated<string>;
  workspace_id: string;
  display_name: string;
  external_id: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface ScimGroupMembersTable {
  group_id: string;
  /** workspace_members.id */
  member_id: string;
}

export const SCIM_MAPPED_ROLES = ['ADMIN', 'MEMBER', 'VIEWER'] as const;
export type ScimMappedRole = (typeof SCIM_MAPPED_ROLES)[number];

/** A directory group's name and the role its members get (the highest of their groups wins). */
export interface ScimRoleMappingsTable {
  workspace_id: string;
  group_name: string;
  role: ScimMappedRole;
}

export const SSO_CONNECTION_TYPES = ['SAML', 'OIDC'] as const;
export type SsoConnectionType = (typeof SSO_CONNECTION_TYPES)[number];
export const SSO_CONNECTION_STATUSES = ['ACTIVE', 'INACTIVE'] as const;
export type SsoConnectionStatus = (typeof SSO_CONNECTION_STATUSES)[number];
/** The roles a connection may give (never OWNER). */
export const SSO_DEFAULT_ROLES = ['ADMIN', 'MEMBER', 'VIEWER'] as const;
export type SsoDefaultRole = (typeof SSO_DEFAULT_ROLES)[number];

/** A workspace's SAML or OpenID Connect identity provider. */
export interface SsoConnectionsTable {
  id: Generated<string>;
  workspace_id: string;
  type: SsoConnectionType;
  name: string;
  status: ColumnType<SsoConnectionStatus, SsoConnectionStatus | undefined, SsoConnectionStatus>;
  default_role: ColumnType<SsoDefaultRole, SsoDefaultRole | undefined, SsoDefaultRole>;
  allow_idp_initiated: ColumnType<boolean, boolean | undefined, boolean>;
  idp_entity_id: string | null;
  idp_sso_url: string | null;
  /** PEM bodies of the IdP's signing certificates (two during a roll-over). */
  idp_certificates: ColumnType<string[], string[] | undefined, string[]>;
  issuer: string | null;
  client_id: string | null;
  /** SecretBox-sealed; never answered. */
  client_secret_encrypted: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

/** A request sent to a connection's identity provider (SAML AuthnRequest ID, or SHA-256 of an OIDC state). */
export interface SsoRequestsTable {
  id: string;
  connection_id: string;
  purpose: OAuthPurpose;
  user_id: string | null;
  browser_hash: string | null;
  code_verifier: string | null;
  nonce: string | null;
  redirect_to: string;
  expires_at: Timestamp;
  used_at: NullableTimestamp;
  created_at: CreatedAt;
}

export interface SsoAssertionsTable {
  connection_id: string;
  assertion_id: string;
  expires_at: Timestamp;
}

export interface SsoIdentitiesTable {
  id: Generated<string>;
  connection_id: string;
  workspace_id: string;
  user_id: string;
  subject: string;
  created_account: ColumnType<boolean, boolean | undefined, boolean>;
  created_at: CreatedAt;
  last_used_at: NullableTimestamp;
}

export interface Database {
  users: UsersTable;
  workspaces: WorkspacesTable;
  workspace_members: WorkspaceMembersTable;
  refresh_tokens: RefreshTokensTable;
  sessions: SessionsTable;
  user_totp: UserTotpTable;
  mfa_backup_codes: MfaBackupCodesTable;
  mfa_challenges: MfaChallengesTable;
  second_factor_failures: SecondFactorFailuresTable;
  user_tokens: UserTokensTable;
  email_logs: EmailLogsTable;
  workspace_invitations: WorkspaceInvitationsTable;
  audit_logs: AuditLogsTable;
  plans: PlansTable;
  subscriptions: SubscriptionsTable;
  payments: PaymentsTable;
  billing_events: BillingEventsTable;
  domain_events: DomainEventsTable;
  ai_templates: AiTemplatesTable;
  ai_generations: AiGenerationsTable;
  ai_usage_counters: AiUsageCountersTable;
  ai_user_usage_counters: AiUserUsageCountersTable;
  api_keys: ApiKeysTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  files: FilesTable;
  analytics_events: AnalyticsEventsTable;
  contact_messages: ContactMessagesTable;
  support_tickets: SupportTicketsTable;
  user_identities: UserIdentitiesTable;
  oauth_states: OAuthStatesTable;
  oauth_exchange_codes: OAuthExchangeCodesTable;
  idempotency_keys: IdempotencyKeysTable;
  list_counters: ListCountersTable;
  email_changes: EmailChangesTable;
  user_exports: UserExportsTable;
  workspace_domains: WorkspaceDomainsTable;
  billing_commands: BillingCommandsTable;
  invoices: InvoicesTable;
  scim_tokens: ScimTokensTable;
  scim_groups: ScimGroupsTable;
  scim_group_members: ScimGroupMembersTable;
  scim_role_mappings: ScimRoleMappingsTable;
  sso_connections: SsoConnectionsTable;
  sso_requests: SsoRequestsTable;
  sso_assertions: SsoAssertionsTable;
  sso_identities: SsoIdentitiesTable;
  oauth_payloads: OAuthPayloadsTable;
  oauth_grants: OAuthGrantsTable;
}

export type Plan = Selectable<PlansTable>;
export type Subscription = Selectable<SubscriptionsTable>;

export type User = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type UserUpdate = Updateable<UsersTable>;
export type Workspace = Selectable<WorkspacesTable>;
export type EmailLog = Selectable<EmailLogsTable>;
