// OAuth 2.1 for MCP clients, on oidc-provider: the protected resource's metadata (RFC 9728), the
// authorization server's (RFC 8414), dynamic client registration, authorization code with PKCE S256 only,
// the `resource` (RFC 8707) required and bound into the token, opaque access tokens of an hour and rotating
// refresh tokens. The server-rendered pages sign the user in (password and second factor, in the
// provider's own cookie session: the API stays bearer-only) and ask for consent: one workspace where the
// user holds api_keys.manage and whose plan allows API keys, and the scopes.
import crypto from 'node:crypto';
import express, { type Request, type RequestHandler, type Response } from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { API_KEY_SCOPES, type ApiKeyScope } from '../../db/schema.js';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError, toApiError } from '../../server/platform/errors.js';
import type { Attempt } from '../../server/platform/rate-limit.js';
import { roleHas } from '../../server/platform/permissions.js';
import type { McpCredential } from '../../server/platform/principal.js';
import { normalizeEmail } from '../auth/service.js';
import { acceptSecondFactor } from '../auth/mfa.js';
import { keysAllowed } from '../api-keys/service.js';
import { membershipsOf } from '../workspaces/access.js';
import { postgresAdapter } from './oauth-adapter.js';
import { activeUser } from './credentials.js';
import { credentialDigest, knownCredentials } from '../../server/platform/known-credentials.js';

export const PROTECTED_RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';
export const AUTHORIZATION_SERVER_METADATA_PATH = '/.well-known/oauth-authorization-server';
const OAUTH_PREFIX = '/oauth';
const ACCESS_TOKEN_TTL_SECONDS = 3600;
const REFRESH_TOKEN_TTL_SECONDS = 30 * 24 * 3600;

type Deps = Pick<AppDeps, 'config' | 'db' | 'passwords' | 'secrets' | 'logger' | 'failedSignIns'>;

/** The public base URL of this API: API_URL, else the request's own. */
export function apiBase(config: AppDeps['config'], req: IncomingMessage & { protocol?: string }) {
  const host = req.headers.host ?? 'localhost';
  return (config.API_URL ?? `${req.protocol ?? 'http'}://${host}`).replace(/\/+$/, '');
}

/** The resource MCP access tokens are issued for. */
export const mcpResource = (base: string) => `${base}/mcp`;

/** Access tokens this instance has verified (the provider's opaque tokens), by digest → grant id. */
const verifiedGrantTokens = knownCredentials(/^[A-Za-z0-9_-]{32,128}$/);

/** The grant of an access token verified here before, without a lookup (the rate limiter's); else undefined. */
export const verifiedGrantId = (raw: string): string | undefined => verifiedGrantTokens.idOf(raw);

// The parts of oidc-provider used here (the package ships no types).
interface Interaction {
  uid: string;
  params: Record<string, unknown> & { client_id: string; redirect_uri?: string; scope?: string };
  prompt: { name: string; details: Record<string, unknown> };
  session?: { accountId?: string };
  grantId?: string;
}
interface AccessToken {
  accountId: string;
  clientId: string;
  grantId: string;
  aud?: string | string[];
  scope?: string;
  isExpired: boolean;
}
interface Provider {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<Interaction>;
  interactionFinished(
    req: IncomingMessage,
    res: ServerResponse,
    result: Record<string, unknown>,
    options?: { mergeWithLastSubmission?: boolean },
  ): Promise<void>;
  Grant: new (properties: { accountId: string; clientId: string }) => {
    addResourceScope(resource: string, scope: string): void;
    addOIDCScope(scope: string): void;
    save(): Promise<string>;
  };
  Client: { find(id: string): Promise<{ clientName?: string; clientId: string } | undefined> };
  AccessToken: { find(value: string): Promise<AccessToken | undefined> };
  proxy: boolean;
}
interface OidcModule {
  default: new (issuer: string, configuration: Record<string, unknown>) => Provider;
  errors: { InvalidTarget: new (description?: string) => Error };
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function page(res: Response, title: string, body: string, formTarget?: string) {
  // The form posts here, and its answer redirects to the client's registered redirect URI.
  const formAction = ["'self'", formTarget].filter(Boolean).join(' ');
  res.setHeader(
    'Content-Security-Policy',
    `default-src 'none'; style-src 'unsafe-inline'; form-action ${formAction}; frame-ancestors 'none'`,
  );
  res.setHeader('Cache-Control', 'no-store');
  res
    .type('html')
    .send(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>` +
        '<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}' +
        'label{display:block;margin:.75rem 0}input,select{width:100%;padding:.4rem}button{margin-top:1rem;padding:.5rem 1rem}' +
        '.scope input{width:auto}.error{color:#b00020}</style></head><body>' +
        `<h1>${escapeHtml(title)}</h1>${body}</body></html>`,
    );
}

/** The workspaces a user may connect an app to: api_keys.manage, ACTIVE, a plan with API keys. */
async function connectableWorkspaces(deps: Pick<Deps, 'db'>, userId: string) {
  return (await membershipsOf(deps.db, userId)).filter(
    (m) => m.status === 'ACTIVE' && roleHas(m.role, 'api_keys.manage') && keysAllowed(m) > 0,
  );
}

/** Keys made for a process without OAUTH_SIGNING_KEY: one, on first use. */
let processKey: crypto.KeyObject | undefined;

/**
 * The keys the provider signs with (ID tokens; access tokens are opaque): OAUTH_SIGNING_KEY, else an RSA
 * key made for this process, never oidc-provider's development keys (published with the package). Served
 * public at /oauth/jwks.
 */
export function signingKeys(deps: Pick<Deps, 'config' | 'logger'>) {
  const pem = deps.config.OAUTH_SIGNING_KEY;
  let key: crypto.KeyObject;
  if (pem) key = crypto.createPrivateKey(pem);
  else {
    if (!processKey) {
      processKey = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
      if (deps.config.NODE_ENV === 'production') {
        deps.logger.warn(
          'OAUTH_SIGNING_KEY is unset: /oauth signs ID tokens with a key of this process only (set it to share one)',
        );
      }
    }
    key = processKey;
  }
  const jwk = key.export({ format: 'jwk' });
  const kid = crypto.createHash('sha256').update(String(jwk.n)).digest('base64url').slice(0, 16);
  return { keys: [{ ...jwk, kid, use: 'sig', alg: 'RS256' }] };
}

/** The OAuth authorization server and its pages, mounted before the JSON parser (the provider reads its own bodies). */
export function oauthRoutes(deps: Deps): {
  routes: RequestHandler;
  verify: (base: string, token: string) => Promise<McpCredential>;
} {
  const providers = new Map<string, Promise<Provider>>();
  const cookieKey = crypto
    .createHmac('sha256', deps.config.JWT_ACCESS_SECRET)
    .update('mcp-oauth-cookies')
    .digest('hex');

  /** The provider of an issuer (API_URL, else the request's base), made on first use. */
  function providerFor(issuer: string): Promise<Provider> {
    let provider = providers.get(issuer);
    if (!provider) {
      provider = (import('oidc-provider') as Promise<unknown> as Promise<OidcModule>).then((oidc) =>
        createProvider(oidc, issuer),
      );
      providers.set(issuer, provider);
    }
    return provider;
  }

  function createProvider(oidc: OidcModule, issuer: string): Provider {
    const resource = mcpResource(issuer);
    const provider = new oidc.default(issuer, {
      adapter: postgresAdapter(deps.db),
      clients: [],
      cookies: { keys: [cookieKey] },
      jwks: signingKeys(deps),
      // Listed so clients may register and ask for them; the token's are the MCP resource's.
      scopes: ['openid', 'offline_access', ...API_KEY_SCOPES],
      claims: { openid: ['sub'] },
      clientDefaults: {
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      },
      features: {
        devInteractions: { enabled: false },
        registration: { enabled: true },
        revocation: { enabled: true },
        userinfo: { enabled: false },
        resourceIndicators: {
          enabled: true,
          // No resource: refused (a token must name the MCP endpoint it is for).
          defaultResource: () => {
            throw new oidc.errors.InvalidTarget('resource is required: the URL of the MCP endpoint');
          },
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx: unknown, indicator: string) => {
            if (indicator !== resource)
              throw new oidc.errors.InvalidTarget(`this server issues tokens for ${resource} only`);
            return {
              scope: API_KEY_SCOPES.join(' '),
              audience: resource,
              accessTokenTTL: ACCESS_TOKEN_TTL_SECONDS,
              accessTokenFormat: 'opaque',
            };
          },
        },
      },
      pkce: { required: () => true, methods: ['S256'] },
      rotateRefreshToken: true,
      issueRefreshToken: (_ctx: unknown, client: { grantTypeAllowed(type: string): boolean }) =>
        client.grantTypeAllowed('refresh_token'),
      ttl: {
        AccessToken: ACCESS_TOKEN_TTL_SECONDS,
        AuthorizationCode: 60,
        RefreshToken: REFRESH_TOKEN_TTL_SECONDS,
        Interaction: 600,
        Session: 3600,
        Grant: REFRESH_TOKEN_TTL_SECONDS,
      },
      findAccount: (_ctx: unknown, id: string) => ({ accountId: id, claims: () => ({ sub: id }) }),
      interactions: {
        url: (_ctx: unknown, interaction: { uid: string }) => `${OAUTH_PREFIX}/interaction/${interaction.uid}`,
      },
      routes: {
        authorization: `${OAUTH_PREFIX}/authorize`,
        token: `${OAUTH_PREFIX}/token`,
        registration: `${OAUTH_PREFIX}/register`,
        revocation: `${OAUTH_PREFIX}/revoke`,
        jwks: `${OAUTH_PREFIX}/jwks`,
        end_session: `${OAUTH_PREFIX}/logout`,
        userinfo: `${OAUTH_PREFIX}/userinfo`,
        introspection: `${OAUTH_PREFIX}/introspect`,
        code_verification: `${OAUTH_PREFIX}/device`,
        device_authorization: `${OAUTH_PREFIX}/device/auth`,
        pushed_authorization_request: `${OAUTH_PREFIX}/par`,
        backchannel_authentication: `${OAUTH_PREFIX}/backchannel`,
      },
    });
    provider.proxy = deps.config.TRUST_PROXY !== false;
    return provider;
  }

  const base = (req: Request) => apiBase(deps.config, req);
  const router = express.Router();
  const form = express.urlencoded({ extended: false, limit: '16kb' });

  const protectedResource: RequestHandler = (req, res) => {
    res.json({
      resource: mcpResource(base(req)),
      authorization_servers: [base(req)],
      scopes_supported: API_KEY_SCOPES,
      bearer_methods_supported: ['header'],
      resource_name: 'MCP endpoint',
    });
  };
  router.get(PROTECTED_RESOURCE_METADATA_PATH, protectedResource);
  router.get(`${PROTECTED_RESOURCE_METADATA_PATH}/mcp`, protectedResource);

  // RFC 8414: the provider's discovery document, which holds the same fields.
  router.get(AUTHORIZATION_SERVER_METADATA_PATH, (req, res, next) => {
    void providerFor(base(req))
      .then((provider) => {
        req.url = '/.well-known/openid-configuration';
        provider.callback()(req, res);
      })
      .catch(next);
  });

  router.get(`${OAUTH_PREFIX}/interaction/:uid`, (req, res, next) => {
    void (async () => {
      const provider = await providerFor(base(req));
      const details = await provider.interactionDetails(req, res);
      const target =
        typeof details.params.redirect_uri === 'string' ? new URL(details.params.redirect_uri).origin : undefined;
      if (details.prompt.name === 'login') return loginPage(res, details.uid, undefined, target);
      return consentPage(deps, res, provider, details, base(req), undefined, target);
    })().catch(next);
  });

  router.post(`${OAUTH_PREFIX}/interaction/:uid/login`, form, (req, res, next) => {
    void (async () => {
      const provider = await providerFor(base(req));
      const details = await provider.interactionDetails(req, res);
      const target =
        typeof details.params.redirect_uri === 'string' ? new URL(details.params.redirect_uri).origin : undefined;
      const body = req.body as Record<string, string | undefined>;
      let userId: string;
      // Counted with the REST sign-ins of the account: this page is no way around their limit.
      const email = normalizeEmail(body.email ?? '');
      let attempt: Attempt | undefined;
      try {
        attempt = await deps.failedSignIns?.begin(res, `login:${email}`);
        userId = await signIn(deps, email, body.password ?? '', body.code ?? '');
        attempt?.settle(false);
      } catch (err) {
        const api = toApiError(err);
        attempt?.settle(api.code === 'INVALID_CREDENTIALS' || api.code === 'INVALID_MFA_CODE');
        if (api.status >= 500) throw err;
        res.status(api.status);
        return loginPage(res, details.uid, api.message, target);
      }
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId: userId } },
        { mergeWithLastSubmission: false },
      );
    })().catch(next);
  });

  router.post(`${OAUTH_PREFIX}/interaction/:uid/consent`, form, (req, res, next) => {
    void (async () => {
      const issuer = base(req);
      const provider = await providerFor(issuer);
      const details = await provider.interactionDetails(req, res);
      const target =
        typeof details.params.redirect_uri === 'string' ? new URL(details.params.redirect_uri).origin : undefined;
      const accountId = details.session?.accountId;
      if (!accountId) throw new AppError('UNAUTHORIZED', 'Sign in first.');
      const body = req.body as Record<string, string | string[] | undefined>;
      if (body.deny !== undefined) {
        return provider.interactionFinished(
          req,
          res,
          { error: 'access_denied', error_description: 'The user refused.' },
          { mergeWithLastSubmission: false },
        );
      }
      const picked = [body.scope ?? []]
        .flat()
        .filter((s): s is ApiKeyScope => API_KEY_SCOPES.includes(s as ApiKeyScope));
      const workspace = (await connectableWorkspaces(deps, accountId)).find((w) => w.id === body.workspaceId);
      if (!workspace || picked.length === 0) {
        res.status(400);
        return consentPage(deps, res, provider, details, issuer, 'Pick a workspace and at least one scope.', target);
      }
      const resource = mcpResource(issuer);
      const grant = new provider.Grant({ accountId, clientId: details.params.client_id });
      // The grant covers what the client asked for, so the provider's prompt is satisfied; what the token
      // may do is what the user picked (oauth_grants.scopes, checked at /mcp).
      const { missingOIDCScope, missingResourceScopes } = details.prompt.details as {
        missingOIDCScope?: string[];
        missingResourceScopes?: Record<string, string[]>;
      };
      if (missingOIDCScope?.length) grant.addOIDCScope(missingOIDCScope.join(' '));
      const asked = missingResourceScopes?.[resource] ?? [];
      grant.addResourceScope(resource, [...new Set([...asked, ...picked])].join(' '));
      const grantId = await grant.save();
      const client = await provider.Client.find(details.params.client_id);
      await deps.db
        .insertInto('oauth_grants')
        .values({
          id: grantId,
          workspace_id: workspace.id,
          user_id: accountId,
          client_id: details.params.client_id,
          client_name: client?.clientName?.slice(0, 200) ?? null,
          scopes: JSON.stringify(picked),
          resource,
        })
        .execute();
      await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
    })().catch(next);
  });

  // Everything else under /oauth is the provider's: authorize, token, register, revoke, jwks.
  // Not mounted at the prefix: the provider takes the Express mount path (baseUrl) for its own.
  router.use((req, res, next) => {
    if (!req.path.startsWith(`${OAUTH_PREFIX}/`)) return next();
    void providerFor(base(req))
      .then((provider) => provider.callback()(req, res))
      .catch(next);
  });

  /** The credential of an OAuth access token: live, for this server's MCP resource, of a grant not revoked. */
  async function verify(issuer: string, value: string): Promise<McpCredential> {
    const digest = credentialDigest(value);
    const invalid = new AppError(
      'UNAUTHORIZED',
      'This access token is not valid here (expired, revoked or for another resource).',
    );
    const provider = await providerFor(issuer);
    const token = await provider.AccessToken.find(value).catch(() => undefined);
    if (!token || token.isExpired) throw invalid;
    const audiences = [token.aud ?? []].flat();
    if (!audiences.includes(mcpResource(issuer))) throw invalid;
    const grant = await deps.db
      .selectFrom('oauth_grants')
      .selectAll()
      .where('id', '=', token.grantId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    if (!grant || grant.user_id !== token.accountId) throw invalid;
    const principal = await activeUser(deps.db, grant.user_id);
    if (!principal?.memberships.some((m) => m.id === grant.workspace_id)) throw invalid;
    // About once a minute per grant, as API keys' last use.
    if (!grant.last_used_at || Date.now() - grant.last_used_at.getTime() >= 60_000) {
      await deps.db
        .updateTable('oauth_grants')
        .set({ last_used_at: new Date() })
        .where('id', '=', grant.id)
        .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', new Date(Date.now() - 60_000))]))
        .execute();
    }
    verifiedGrantTokens.remember(digest, grant.id);
    const tokenScopes = (token.scope ?? '').split(' ').filter(Boolean);
    const granted = grant.scopes;
    const scopes = tokenScopes.length ? granted.filter((s) => tokenScopes.includes(s)) : granted;
    return {
      kind: 'oauth',
      id: grant.id,
      clientId: grant.client_id,
      workspaceId: grant.workspace_id,
      scopes,
      principal,
    };
  }

  return { routes: router, verify };
}

/** Password, then the second factor when the account has one: the user's id, or INVALID_CREDENTIALS. */
async function signIn(deps: Deps, email: string, password: string, code: string): Promise<string> {
  const user = await deps.db
    .selectFrom('users')
    .select(['id', 'status', 'password_hash', 'mfa_enabled'])
    .where('email', '=', normalizeEmail(email))
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  const ok = await deps.passwords.verify(password, user?.password_hash ?? undefined);
  if (!user?.password_hash || !ok) throw new AppError('INVALID_CREDENTIALS', 'Invalid e-mail or password.');
  if (user.status !== 'ACTIVE') throw new AppError('USER_SUSPENDED', 'This account is suspended.');
  if (user.mfa_enabled) {
    if (!code.trim())
      throw new AppError('INVALID_MFA_CODE', 'Enter the code of your authenticator app (or a backup code).');
    const accepted = await deps.db.transaction().execute((trx) => acceptSecondFactor(deps, trx, user.id, code.trim()));
    if (!accepted) throw new AppError('INVALID_MFA_CODE', 'That code is not valid.');
  }
  return user.id;
}

function loginPage(res: Response, uid: string, error: string | undefined, target: string | undefined) {
  page(
    res,
    'Sign in to connect an app',
    `${error ? `<p class="error">${escapeHtml(error)}</p>` : ''}` +
      `<form method="post" action="${OAUTH_PREFIX}/interaction/${escapeHtml(uid)}/login">` +
      '<label>E-mail <input type="email" name="email" autocomplete="username" required></label>' +
      '<label>Password <input type="password" name="password" autocomplete="current-password" required></label>' +
      '<label>Two-factor code (if you use one) <input type="text" name="code" autocomplete="one-time-code"></label>' +
      '<button type="submit">Sign in</button></form>',
    target,
  );
}

async function consentPage(
  deps: Deps,
  res: Response,
  provider: Provider,
  details: Interaction,
  issuer: string,
  error: string | undefined,
  target: string | undefined,
) {
  const accountId = details.session?.accountId;
  const workspaces = accountId ? await connectableWorkspaces(deps, accountId) : [];
  const client = await provider.Client.find(details.params.client_id);
  const requested = String(details.params.scope ?? '').split(' ');
  const name = escapeHtml(client?.clientName ?? details.params.client_id);
  const action = `${OAUTH_PREFIX}/interaction/${escapeHtml(details.uid)}/consent`;
  if (!workspaces.length) {
    return page(
      res,
      'No workspace to connect',
      `<p>${name} asks for access to ${escapeHtml(mcpResource(issuer))}, but you manage API keys in no workspace whose plan includes them.</p>` +
        `<form method="post" action="${action}"><button name="deny" value="1">Back to the app</button></form>`,
      target,
    );
  }
  page(
    res,
    `Connect ${name}`,
    `${error ? `<p class="error">${escapeHtml(error)}</p>` : ''}` +
      `<p><strong>${name}</strong> asks to use this service's MCP tools for you.</p>` +
      `<form method="post" action="${action}">` +
      `<label>Workspace <select name="workspaceId">${workspaces
        .map((w) => `<option value="${w.id}">${escapeHtml(w.name)}</option>`)
        .join('')}</select></label><fieldset><legend>Scopes</legend>` +
      API_KEY_SCOPES.map(
        (s) =>
          `<label class="scope"><input type="checkbox" name="scope" value="${s}"${requested.includes(s) ? ' checked' : ''}> ${s}</label>`,
      ).join('') +
      '</fieldset><button type="submit" name="allow" value="1">Allow</button> ' +
      '<button type="submit" name="deny" value="1">Deny</button></form>',
    target,
  );
}
