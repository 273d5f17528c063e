// Who acts, and from where: the second argument of every service use case that acts for someone
// (docs/architecture.md, "Where things go"), and what the audit log records of them. Built by actorOf()
// only: from a procedure's context, or from a request's facts and the user a service has just found.
import { AppError } from './errors.js';

export interface Actor {
  /** The signed-in user; null when nobody is signed in (a failed sign-in, a public route, a job). */
  userId: string | null;
  email: string | null;
  /** The session of the caller's access token. */
  sessionId: string | null;
  /** The API key the request came with (on the public API, or to /mcp). */
  apiKeyId: string | null;
  /** The OAuth grant of an MCP call made with an OAuth access token, and the client it was granted to. */
  oauthGrantId: string | null;
  oauthClientId: string | null;
  /** The SCIM token of a directory's call (/scim/v2): the workspace's directory acts. */
  scimTokenId: string | null;
  requestId: string | null;
  ip: string | null;
  userAgent: string | null;
}

/**
 * What actorOf reads: a procedure's context (after its builder ran), a request's facts (RequestMeta), or
 * an actor of the same request.
 */
export interface ActorSource {
  requestId?: string | null;
  ip?: string | null;
  userAgent?: string | null;
  user?: { id: string; email?: string | null } | null;
  sessionId?: string | null;
  apiKey?: { id: string };
  scimToken?: { id: string };
  /** The credential of an MCP call (routers/mcp/credentials.ts): an API key or an OAuth grant. */
  mcp?: { kind: 'api-key' | 'oauth'; id: string; clientId?: string };
}

/**
 * The actor of a request: the user (or API key) its builder found; or, given `user`, the same request acting
 * as that user (a use case that has just established who it is: a sign-in, a token's owner; null for
 * nobody).
 */
export function actorOf(source: ActorSource, user: ActorSource['user'] = source.user): Actor {
  const grant = source.mcp?.kind === 'oauth' ? source.mcp : undefined;
  return {
    userId: user?.id ?? null,
    email: user?.email ?? null,
    sessionId: user && user.id === source.user?.id ? (source.sessionId ?? null) : null,
    apiKeyId: source.apiKey?.id ?? (source.mcp?.kind === 'api-key' ? source.mcp.id : null),
    oauthGrantId: grant?.id ?? null,
    oauthClientId: grant?.clientId ?? null,
    scimTokenId: source.scimToken?.id ?? null,
    requestId: source.requestId ?? null,
    ip: source.ip ?? null,
    userAgent: source.userAgent ?? null,
  };
}

/** Work that no request started: schedules, start-up seeding, the demo reset. */
export const SYSTEM_ACTOR: Actor = actorOf({});

/** The signed-in user an actor stands for; a use case that needs one refuses an actor without (401). */
export function signedInUser(actor: Actor): { id: string; email: string } {
  if (!actor.userId || !actor.email) throw new AppError('UNAUTHORIZED', 'Sign in first.');
  return { id: actor.userId, email: actor.email };
}
