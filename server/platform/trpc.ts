// The one place that owns tRPC: the instance, the error shape of /trpc, and the fixed set of procedure
// builders every router uses. Authentication and permission checks happen here and nowhere else.
import { initTRPC } from '@trpc/server';
import type { Request, RequestHandler } from 'express';
import type { AppDeps, Context } from './context.js';
import type { Meta } from './route-meta.js';

export type { Meta };
import { AppError, toApiError, trpcErrorNumber, trpcErrorShape, type ErrorCode } from './errors.js';
import { TRPC_ERROR_CODES_BY_KEY } from '@trpc/server/rpc';
import {
  platformRoleHas,
  platformRolesWith,
  workspaceRolesWith,
  type PlatformPermission,
  type WorkspacePermission,
} from './permissions.js';
import { API_KEY_PREFIX, type ApiKeyPrincipal, type McpCredential, type Principal } from './principal.js';
import type { ApiKeyScope } from '../../db/schema.js';
import { resolveWorkspaceAccess, type AccessOptions } from './access.js';
import { bearerToken } from './security/jwt.js';
import { noteRequest } from './monitoring.js';
import { actorOf } from './actor.js';

/**
 * The request id of errors tRPC raises before it has made the context (a batch too large, a missing
 * Content-Type): the `/trpc` handler's onError, which tRPC calls first, notes it for the errorFormatter.
 */
export const requestIdOfError = new WeakMap<Error, string>();

const t = initTRPC
  .context<Context>()
  .meta<Meta>()
  .create({
    isDev: false,
    // /trpc clients get the same code, message and issues as REST clients, inside tRPC's envelope, with the
    // JSON-RPC number of the answer's HTTP status (tRPC's would be -32603 for every domain error).
    errorFormatter: ({ shape, error, ctx }) => {
      const api = toApiError(error);
      const code = shape.code === TRPC_ERROR_CODES_BY_KEY.PARSE_ERROR ? shape.code : trpcErrorNumber(api.status);
      return trpcErrorShape(api, code, ctx?.requestId ?? requestIdOfError.get(error), shape.data.path);
    },
  });

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;

/**
 * Every procedure. Its success status (meta.successStatus) is applied by the REST handler (server/platform/http.ts),
 * which also counts it in flight until it settles: no per-procedure middleware, as each one costs two
 * copies of the call's options on every request.
 */
export const publicProcedure = t.procedure;

/**
 * Authentication started as soon as a request arrives (server/app.ts mounts this before the rate limiter),
 * so its lookup runs while the limiter asks Redis and the body is parsed; the procedures take the answer.
 * Only for credentials that can be known without the database: an access token whose signature verifies
 * (authenticate() refuses anything else before its lookup), an API key this instance has verified before.
 * A request that is then refused (429) or whose procedure is public simply never reads it.
 */
const principals = new WeakMap<Request, Promise<Principal>>();
const apiKeys = new WeakMap<Request, Promise<ApiKeyPrincipal>>();
const quietly = <T>(p: Promise<T>) => (p.catch(() => undefined), p);

export function startAuthentication({ auth }: Pick<AppDeps, 'auth'>): RequestHandler {
  return (req, _res, next) => {
    const key = apiKeyOf(req);
    if (key !== undefined) {
      if (auth.knownApiKeyId(key)) apiKeys.set(req, quietly(auth.apiKey(key)));
    } else if (req.headers.authorization) {
      principals.set(req, quietly(auth.user(req.headers.authorization)));
    }
    next();
  };
}

/** The principal behind a request's access token: the authentication started on arrival, else a new one. */
export function authenticateRequest({ auth }: Pick<AppDeps, 'auth'>, req: Request): Promise<Principal> {
  return principals.get(req) ?? auth.user(req.headers.authorization);
}

/** The key behind a request's API key: the lookup started on arrival, else a new one. */
function authenticateApiKeyRequest({ auth }: Pick<AppDeps, 'auth'>, req: Request): Promise<ApiKeyPrincipal> {
  return apiKeys.get(req) ?? auth.apiKey(apiKeyOf(req));
}

/**
 * The lookup of the API key `raw` that startAuthentication began for this request, when it began one for
 * that very key (/mcp reads its credential itself, and takes this rather than look the key up twice).
 */
export function startedApiKeyLookup(req: Request, raw: string): Promise<ApiKeyPrincipal> | undefined {
  return apiKeyOf(req) === raw ? apiKeys.get(req) : undefined;
}

/** Who a request comes from, as far as its credentials tell: for idempotency keys (server/platform/idempotency.ts). */
export type Caller =
  | { kind: 'user' | 'api-key'; id: string }
  /** No credentials at all. */
  | { kind: 'anonymous' }
  /** Credentials that do not authenticate: the procedure will refuse them (or, if public, ignore them). */
  | { kind: 'unknown' };

/**
 * The caller of a request, authenticated as the procedure builders will do it: the lookup is kept for the
 * request, so its procedure does not repeat it. Only for requests past the rate limiter.
 */
export async function callerOfRequest({ auth }: Pick<AppDeps, 'auth'>, req: Request): Promise<Caller> {
  const key = apiKeyOf(req);
  if (key !== undefined) {
    let lookup = apiKeys.get(req);
    if (!lookup) apiKeys.set(req, (lookup = quietly(auth.apiKey(key))));
    return lookup.then(
      (apiKey) => ({ kind: 'api-key', id: apiKey.id }),
      () => ({ kind: 'unknown' }),
    );
  }
  if (!req.headers.authorization) return { kind: 'anonymous' };
  let lookup = principals.get(req);
  if (!lookup) principals.set(req, (lookup = quietly(auth.user(req.headers.authorization))));
  return lookup.then(
    ({ user }) => ({ kind: 'user', id: user.id }),
    () => ({ kind: 'unknown' }),
  );
}

/**
 * The errors of each builder's access check, for /openapi.json (`accessErrors`). tRPC merges meta one
 * level deep, so a builder's list repeats its parent's: each is built from the one before.
 */
const SIGNED_IN_ERRORS = ['UNAUTHORIZED', 'USER_SUSPENDED'] as const satisfies readonly ErrorCode[];
const ADMIN_ERRORS = [...SIGNED_IN_ERRORS, 'FORBIDDEN'] as const;

/** A signed-in ACTIVE user (suspension takes effect on the next request of any token). */
export const authedProcedure = publicProcedure
  .use(async ({ ctx, meta, next }) => {
    if (ctx.mcp) {
      const { user, memberships } = mcpPrincipal(ctx.mcp, meta);
      noteRequest(ctx.req, { userId: user.id, workspaceId: ctx.mcp.workspaceId });
      const apiKey = ctx.mcp.kind === 'api-key' ? { id: ctx.mcp.id } : undefined;
      return next({ ctx: { user, memberships, sessionId: null, apiKey } });
    }
    const { user, memberships, sessionId } = await authenticateRequest(ctx, ctx.req);
    noteRequest(ctx.req, { userId: user.id });
    return next({ ctx: { user, memberships, sessionId: sessionId, apiKey: undefined } });
  })
  .meta({ accessErrors: SIGNED_IN_ERRORS, caller: 'Any signed-in user (an access token of an ACTIVE account).' });

const requirePlatform = (permission: PlatformPermission) =>
  authedProcedure
    .use(({ ctx, next }) => {
      if (!platformRoleHas(ctx.user.platform_role, permission)) {
        throw new AppError('FORBIDDEN', 'This route is for platform administrators.');
      }
      return next();
    })
    .meta({
      accessErrors: ADMIN_ERRORS,
      caller: `A platform role with ${permission}: ${platformRolesWith(permission)}.`,
    });

/** Platform admin reads; the demo admin passes. */
export const adminProcedure = requirePlatform('admin.read');

/** A platform admin permission other than plain reads (e.g. 'admin.ai_usage.view'). */
export const platformProcedure = requirePlatform;

/** Every admin write goes through here: the demo admin is refused with DEMO_READ_ONLY. */
export const adminWriteProcedure = adminProcedure
  .use(({ ctx, next }) => {
    if (!platformRoleHas(ctx.user.platform_role, 'admin.write')) {
      throw new AppError('DEMO_READ_ONLY', 'Demo admin is read-only.');
    }
    return next();
  })
  .meta({
    accessErrors: [...ADMIN_ERRORS, 'DEMO_READ_ONLY'],
    caller: 'A platform ADMIN (the read-only DEMO_ADMIN is refused with DEMO_READ_ONLY).',
  });

/**
 * The permission a call needs, by its input as sent (before validation): inviting an OWNER takes
 * ownership.manage where other invitations take members.manage.
 */
type PermissionOfInput = (input: { readonly [field: string]: unknown }) => WorkspacePermission;

/**
 * A member of the workspace named by `workspaceId` (path, query or body) holding `permission`, decided by
 * resolveWorkspaceAccess (server/platform/access.ts). The membership comes from authentication (loaded with the
 * user) and is handed on as ctx.workspace. With `orActiveWorkspace`, a request that names no workspace acts
 * on the caller's active workspace (the first ACTIVE one they joined), as the spec allows for the AI and
 * billing routes; `refuseDemoAccounts` is the one guard of demo accounts on key and webhook changes.
 */
export const workspaceProcedure = (permission: WorkspacePermission | PermissionOfInput, opts: AccessOptions = {}) =>
  authedProcedure
    .use(async ({ ctx, getRawInput, next }) => {
      const raw = (await getRawInput()) as { workspaceId?: unknown } | undefined;
      // An MCP call acts in its credential's workspace, whatever the arguments say.
      const candidate = ctx.mcp ? ctx.mcp.workspaceId : (raw?.workspaceId ?? ctx.req.query?.workspaceId);
      const needed = typeof permission === 'function' ? permission(Object(raw) as Record<string, unknown>) : permission;
      const access = resolveWorkspaceAccess(
        { email: ctx.user.email, mfaEnabled: ctx.user.mfa_enabled, memberships: ctx.memberships },
        candidate,
        needed,
        { ...opts, config: ctx.config },
      );
      noteRequest(ctx.req, { workspaceId: access.id });
      // Sessions only: an MCP call carries a workspace credential (a key or a grant), not a sign-in.
      if (access.require_sso && ctx.sessionId !== null)
        await ctx.auth.ssoPolicy(actorOf(ctx), { ...ctx, sessionId: ctx.sessionId }, access);
      return next({ ctx: { workspace: access } });
    })
    .meta({
      caller:
        typeof permission === 'function'
          ? 'A member of the workspace whose role grants what the request asks for (see the description).'
          : `A member of the ACTIVE workspace with ${permission}: ${workspaceRolesWith(permission)}.`,
      accessErrors: [
        ...SIGNED_IN_ERRORS,
        'NOT_FOUND',
        'WORKSPACE_UNAVAILABLE',
        'PERMISSION_DENIED',
        'MFA_REQUIRED',
        'MEMBERSHIP_SUSPENDED',
        'SSO_REQUIRED',
        ...(opts.refuseDemoAccounts ? (['DEMO_READ_ONLY'] as const) : []),
      ],
    });

/**
 * The user an MCP call acts for (routers/mcp), when the procedure is a tool (its meta's `mcp`) and the
 * credential holds one of the tool's scopes; the workspace checks then run as for the user. Only the
 * credential's workspace is among the memberships, so no other can be reached.
 */
function mcpPrincipal(credential: McpCredential, meta: Meta | undefined) {
  const tool = meta?.mcp;
  if (!tool) throw new AppError('NOT_FOUND', 'This procedure is not an MCP tool.');
  if (tool.scopes.length && !tool.scopes.some((s) => credential.scopes.includes(s))) {
    throw new AppError(
      'PERMISSION_DENIED',
      `This credential lacks the scope this tool needs (one of: ${tool.scopes.join(', ')}).`,
    );
  }
  const { user, memberships } = credential.principal;
  return { user, memberships: memberships.filter((m) => m.id === credential.workspaceId) };
}

/** The raw API key of a request: X-API-Key, else a Bearer value that looks like one. */
function apiKeyOf(req: Request): string | undefined {
  const header = req.headers['x-api-key'];
  if (typeof header === 'string') return header.trim();
  const bearer = bearerToken(req.headers.authorization);
  return bearer?.startsWith(API_KEY_PREFIX) ? bearer : undefined;
}

/**
 * A public-API call authenticated by a workspace API key holding one of `scopes` (any, when empty).
 * Keys and access tokens are not interchangeable: a JWT here is 401, like an API key on /auth/me.
 */
export const apiKeyProcedure = (scopes: ApiKeyScope[] = []) =>
  publicProcedure
    .use(async ({ ctx, next }) => {
      const apiKey = await authenticateApiKeyRequest(ctx, ctx.req);
      noteRequest(ctx.req, { workspaceId: apiKey.workspace_id });
      if (scopes.length && !scopes.some((s) => apiKey.scopes.includes(s))) {
        throw new AppError(
          'PERMISSION_DENIED',
          `This API key lacks the scope this route needs (one of: ${scopes.join(', ')}).`,
        );
      }
      return next({ ctx: { apiKey } });
    })
    .meta({
      caller: `A workspace API key${scopes.length ? ` with one of the scopes ${scopes.join(', ')}` : ''} (not an access token).`,
      accessErrors: [
        'UNAUTHORIZED',
        'WORKSPACE_UNAVAILABLE',
        'API_KEYS_NOT_IN_PLAN',
        ...(scopes.length ? (['PERMISSION_DENIED'] as const) : []),
      ],
    });
