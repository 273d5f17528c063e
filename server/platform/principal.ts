// Who is calling: the principal behind an access token or an API key, as the procedure builders see it.
// The platform only states what it needs; the auth and API-key domains implement the Authenticator, and the
// composition root hands it in (AppDeps.auth), so the platform imports no domain.
import type { Actor } from './actor.js';
import type {
  ApiKeyScope,
  Edition,
  MembershipStatus,
  PlanLimits,
  User,
  WorkspaceRole,
  WorkspaceStatus,
} from '../../db/schema.js';

/** The user columns every authenticated request loads. */
export type UserRow = Pick<
  User,
  'id' | 'email' | 'name' | 'status' | 'platform_role' | 'email_verified_at' | 'mfa_enabled' | 'created_at'
>;

/** A membership of the caller, loaded with the user on every authenticated request. */
export interface WorkspaceAccess {
  id: string;
  name: string;
  status: WorkspaceStatus;
  edition: Edition;
  /** The workspace's copy of its plan limits (AI generations, API keys, ...). */
  limits: PlanLimits;
  role: WorkspaceRole;
  /** Members without two-factor sign-in are refused here (MFA_REQUIRED). */
  require_mfa: boolean;
  /** SUSPENDED by the workspace's directory: refused on its routes (MEMBERSHIP_SUSPENDED). */
  membership_status: MembershipStatus;
  /** Members on its verified domains must sign in through its SSO connection (SSO_REQUIRED). */
  require_sso: boolean;
}

export interface Principal {
  user: UserRow;
  /** The session the access token was issued for (GET /auth/sessions marks it `current`). */
  sessionId: string;
  /** Every workspace membership of the user (not deleted), in the order they were joined. */
  memberships: WorkspaceAccess[];
}

/** A live API key and its workspace. */
export interface ApiKeyPrincipal {
  id: string;
  name: string;
  prefix: string;
  scopes: ApiKeyScope[];
  expires_at: Date | null;
  workspace_id: string;
  workspace_name: string;
}

/** API keys are `wsk_` and 40 base62 characters; a bearer value with this prefix is a key, not a JWT. */
export const API_KEY_PREFIX = 'wsk_';

export interface Authenticator {
  /** The ACTIVE user behind an `Authorization: Bearer` access token; UNAUTHORIZED or USER_SUSPENDED otherwise. */
  user: (authorization: string | undefined) => Promise<Principal>;
  /** The live key behind a raw API key; UNAUTHORIZED, WORKSPACE_UNAVAILABLE or API_KEYS_NOT_IN_PLAN otherwise. */
  apiKey: (raw: string | undefined) => Promise<ApiKeyPrincipal>;
  /** The id of a key this process has verified before, without a lookup (the rate limiter's identity). */
  knownApiKeyId: (raw: string) => string | undefined;
  /** For a workspace with `require_sso`: SSO_REQUIRED unless the session came through its connection. */
  ssoPolicy: (actor: Actor, principal: Principal, access: WorkspaceAccess) => Promise<void>;
}

/**
 * The credential of a call from the MCP endpoint (/mcp): a workspace API key or an OAuth access token,
 * the user it acts for (a key's creator, a grant's user), its workspace and scopes. The procedure builders
 * take it instead of the request's own credentials, and let through only procedures marked for MCP.
 */
export interface McpCredential {
  kind: 'api-key' | 'oauth';
  /** The API key, or the OAuth grant, that the audit log and the rate limiter name. */
  id: string;
  /** The OAuth client, for an OAuth access token. */
  clientId?: string;
  workspaceId: string;
  scopes: readonly ApiKeyScope[];
  /** The user the credential acts for, with their memberships (a session-less principal). */
  principal: Omit<Principal, 'sessionId'>;
}
