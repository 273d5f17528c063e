// The two browser redirects of a sign-in through an identity provider, as plain Express routes (a tRPC
// procedure answers JSON, not a 302), documented in /openapi.json through oauthOpenApiPaths:
//   GET /auth/oauth/{provider}/start     302 to the provider (state, PKCE S256, nonce kept server-side)
//   GET /auth/oauth/{provider}/callback  302 to APP_URL/auth/callback?code=... (or ?error=CODE)
// A sign-in is bound to the browser that started it by a cookie (`oauth_binding`, HttpOnly, SameSite=Lax,
// 10 minutes, path /auth/oauth/): a callback URL someone else's browser completed cannot sign this one in
// (login CSRF). What happens in a flow is the service's (service.ts).
import { Router, type Request, type RequestHandler, type Response } from 'express';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import { actorOf } from '../../server/platform/actor.js';
import type { AppDeps } from '../../server/platform/context.js';
import { requestMeta } from '../../server/platform/context.js';
import { randomToken } from '../../server/platform/security/tokens.js';
import { errorResponse } from '../../server/platform/error-response.js';
import { REQUEST_HEAD_MAX_BYTES } from '../../server/platform/request-body.js';
import { finishFlow, startFlow } from './flows.js';
import { FLOW_TTL_MS, callbackUrl, enabledProvider } from './service.js';

type Deps = Pick<AppDeps, 'config' | 'db' | 'logger' | 'mailer' | 'identityProviders'>;

export const BINDING_COOKIE = 'oauth_binding';
/** A binding value as this API makes them (randomToken(32)); anything else in the cookie is ignored. */
const BINDING_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/** The base URL of the request as the client reached it (`https://api.example.com`), TRUST_PROXY applied. */
export const requestBase = (req: Request) => `${req.protocol}://${req.host}`;

/** The binding cookie's value, when the request carries one of ours. */
function bindingOf(req: Request): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [name, value] = part.trim().split('=', 2);
    if (name === BINDING_COOKIE && value && BINDING_SHAPE.test(value)) return value;
  }
  return undefined;
}

const asyncRoute =
  (fn: (req: Request, res: Response) => Promise<void>): RequestHandler =>
  (req, res, next) =>
    void fn(req, res).catch(next);

export function oauthRedirectRoutes(deps: Deps): Router {
  const routes = Router();

  routes.get(
    '/auth/oauth/:provider/start',
    asyncRoute(async (req, res) => {
      const provider = enabledProvider(deps, { provider: String(req.params.provider) });
      // One binding per browser: flows started in two tabs share it.
      const binding = bindingOf(req) ?? randomToken(32);
      const base = requestBase(req);
      // Anyone's sign-in: the actor of a request without credentials.
      const location = await startFlow(deps, actorOf(requestMeta(req)), {
        provider: provider.id,
        purpose: 'SIGN_IN',
        browserBinding: binding,
        redirectTo: req.query.redirectTo,
        requestBase: base,
      });
      const callback = new URL(callbackUrl(deps.config, base, provider.id));
      res.cookie(BINDING_COOKIE, binding, {
        httpOnly: true,
        // Sent on the provider's redirect back (a top-level GET), not on other sites' requests.
        sameSite: 'lax',
        secure: callback.protocol === 'https:',
        path: callback.pathname.replace(/[^/]+\/callback$/, ''),
        maxAge: FLOW_TTL_MS,
      });
      res.setHeader('Cache-Control', 'no-store');
      res.redirect(302, location);
    }),
  );

  routes.get(
    '/auth/oauth/:provider/callback',
    asyncRoute(async (req, res) => {
      const query = new URLSearchParams(req.originalUrl.split('?')[1] ?? '');
      const location = await finishFlow(deps, actorOf(requestMeta(req)), {
        provider: String(req.params.provider),
        query,
        browserBinding: bindingOf(req),
      });
      res.setHeader('Cache-Control', 'no-store');
      res.redirect(302, location);
    }),
  );

  return routes;
}

const providerParameter = {
  in: 'path' as const,
  name: 'provider',
  required: true,
  description: 'An enabled provider: `github`, `google` or `oidc` (GET /auth/providers).',
  schema: { type: 'string' as const, maxLength: 64, examples: ['github'] },
};
const notEnabled = errorResponse('Unknown provider, or one whose settings are not present', [
  'OAUTH_PROVIDER_NOT_ENABLED',
]);
const location = (description: string) => ({
  description,
  headers: {
    Location: { description, schema: { type: 'string' as const, format: 'uri', maxLength: REQUEST_HEAD_MAX_BYTES } },
  },
});

export const oauthOpenApiPaths: ZodOpenApiPathsObject = {
  '/auth/oauth/{provider}/start': {
    get: {
      'x-rate-limit-tier': 'auth',
      operationId: 'auth-oauth-start',
      summary: 'Sign in with an identity provider: redirect the browser there',
      description:
        'Navigate the browser here (a link or `location.assign`, not `fetch`). Answers 302 to the provider with ' +
        '`state`, PKCE (S256) and, for OpenID Connect, a `nonce`, all kept server-side for 10 minutes and good ' +
        'once, and sets the `oauth_binding` cookie that ties the sign-in to this browser. The provider sends the ' +
        'browser back to `GET /auth/oauth/{provider}/callback`.',
      tags: ['Auth'],
      security: [],
      parameters: [
        providerParameter,
        {
          in: 'query',
          name: 'redirectTo',
          required: false,
          description: 'A path of the web app to land on after signing in; anything else: /dashboard.',
          schema: { type: 'string', maxLength: REQUEST_HEAD_MAX_BYTES, examples: ['/settings/security'] },
        },
      ],
      responses: {
        302: {
          ...location("The provider's authorization URL"),
          headers: {
            ...location("The provider's authorization URL").headers,
            'Set-Cookie': {
              description: '`oauth_binding`: HttpOnly, SameSite=Lax, 10 minutes, path /auth/oauth/',
              schema: { type: 'string', maxLength: 4096 },
            },
          },
        },
        404: notEnabled,
        502: errorResponse('The provider could not be reached (its discovery document, for OpenID Connect)', [
          'OAUTH_PROVIDER_ERROR',
        ]),
      },
    },
  },
  '/auth/oauth/{provider}/callback': {
    get: {
      'x-rate-limit-tier': 'auth',
      operationId: 'auth-oauth-callback',
      summary: "The identity provider's redirect back: on to the web app with a one-time code",
      description:
        'Register this URL at the provider (`{API_URL}/auth/oauth/{provider}/callback`). It checks `state` (known, ' +
        'unused, at most 10 minutes old, of this browser), redeems the code with the PKCE verifier, validates the ' +
        'ID token (signature, issuer, audience, expiry, nonce), finds, links or creates the account, and answers ' +
        '302 to `APP_URL/auth/callback?code=...&redirectTo=/path`; exchange the code with ' +
        '`POST /auth/oauth/exchange` ' +
        'within 60 seconds. Once the state is known, a refusal is also a 302, to `APP_URL/auth/callback?error=CODE` ' +
        'with one of: OAUTH_ACCESS_DENIED (cancelled at the provider), OAUTH_SIGN_IN_FAILED (the answer did not ' +
        'verify), OAUTH_PROVIDER_ERROR, OAUTH_EMAIL_REQUIRED (no address for a new account), ACCOUNT_LINK_REQUIRED ' +
        '(an account has this address: sign in to it and link from the settings), IDENTITY_ALREADY_LINKED, ' +
        'USER_SUSPENDED. Nothing is created on a refusal.',
      tags: ['Auth'],
      security: [],
      parameters: [
        providerParameter,
        ...['code', 'state', 'iss', 'error'].map((name) => ({
          in: 'query' as const,
          name,
          required: false,
          description: 'Set by the provider.',
          schema: { type: 'string' as const, maxLength: REQUEST_HEAD_MAX_BYTES },
        })),
      ],
      responses: {
        302: location('The web app: APP_URL/auth/callback?code=... or ?error=CODE'),
        400: errorResponse('No such sign-in in progress: unknown, used, expired, or started in another browser', [
          'OAUTH_STATE_INVALID',
        ]),
        404: notEnabled,
      },
    },
  },
};
