// The browser routes of single sign-on, as plain Express routes (a 302, an HTML form post, XML), documented
// in /openapi.json through ssoOpenApiPaths:
//   GET  /auth/sso/start?email=&redirectTo=      302 to the identity provider of the address's workspace
//   POST /auth/sso/saml/{connectionId}/acs       the SAML answer (HTTP-POST): 302 to the web app
//   GET  /auth/sso/oidc/{connectionId}/callback  the OIDC answer: 302 to the web app
//   GET  /auth/sso/saml/{connectionId}/metadata  the service provider's metadata XML
// A sign-in is bound to the browser that started it by the `sso_binding` cookie. The SAML answer comes back
// as a cross-site POST, which a SameSite=Lax cookie would not ride on: the cookie is SameSite=None; Secure
// over https (HttpOnly, 10 minutes, path /auth/sso/). Over plain http (local development) browsers refuse
// SameSite=None without Secure, so it is Lax there (docs/decisions.md).
import express, { Router, type Request, type RequestHandler, type Response } from 'express';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import { actorOf } from '../../server/platform/actor.js';
import type { AppDeps } from '../../server/platform/context.js';
import { requestMeta } from '../../server/platform/context.js';
import { errorResponse } from '../../server/platform/error-response.js';
import { AppError } from '../../server/platform/errors.js';
import { randomToken } from '../../server/platform/security/tokens.js';
import { FLOW_TTL_MS } from '../oauth/service.js';
import { requestBase } from '../oauth/redirects.js';
import { apiBase } from './connections.js';
import { spMetadata } from './saml.js';
import { connectionById, finishOidc, finishSaml, startSignIn } from './signin.js';

type Deps = Pick<AppDeps, 'config' | 'db' | 'logger' | 'mailer' | 'secrets'>;

export const SSO_BINDING_COOKIE = 'sso_binding';
const BINDING_SHAPE = /^[A-Za-z0-9_-]{43}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function bindingOf(req: Request): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [name, value] = part.trim().split('=', 2);
    if (name === SSO_BINDING_COOKIE && value && BINDING_SHAPE.test(value)) return value;
  }
  return undefined;
}

const asyncRoute =
  (fn: (req: Request, res: Response) => Promise<void>): RequestHandler =>
  (req, res, next) =>
    void fn(req, res).catch(next);

const noConnection = () => new AppError('NOT_FOUND', 'No such single sign-on connection.');

/** The connection id of the path (a 404 in the error shape when it is not one). */
function connectionIdOf(req: Request): string {
  const id = String(req.params.connectionId);
  if (!UUID.test(id)) throw noConnection();
  return id;
}

export function ssoRedirectRoutes(deps: Deps): Router {
  const routes = Router();

  routes.get(
    '/auth/sso/start',
    asyncRoute(async (req, res) => {
      const binding = bindingOf(req) ?? randomToken(32);
      const base = apiBase(deps.config, requestBase(req));
      const location = await startSignIn(deps, {
        email: typeof req.query.email === 'string' ? req.query.email : '',
        redirectTo: req.query.redirectTo,
        browserBinding: binding,
        base,
        purpose: 'SIGN_IN',
      });
      const secure = base.startsWith('https:');
      res.cookie(SSO_BINDING_COOKIE, binding, {
        httpOnly: true,
        sameSite: secure ? 'none' : 'lax',
        secure,
        path: '/auth/sso/',
        maxAge: FLOW_TTL_MS,
      });
      res.setHeader('Cache-Control', 'no-store');
      res.redirect(302, location);
    }),
  );

  routes.post(
    '/auth/sso/saml/:connectionId/acs',
    express.urlencoded({ extended: false, limit: '1mb', parameterLimit: 10 }),
    asyncRoute(async (req, res) => {
      const connectionId = connectionIdOf(req);
      const body = (req.body ?? {}) as Record<string, unknown>;
      const location = await finishSaml(deps, actorOf(requestMeta(req)), {
        connectionId,
        base: apiBase(deps.config, requestBase(req)),
        browserBinding: bindingOf(req),
        samlResponse: body.SAMLResponse,
      });
      res.setHeader('Cache-Control', 'no-store');
      res.redirect(302, location);
    }),
  );

  routes.get(
    '/auth/sso/oidc/:connectionId/callback',
    asyncRoute(async (req, res) => {
      const connectionId = connectionIdOf(req);
      const location = await finishOidc(deps, actorOf(requestMeta(req)), {
        connectionId,
        base: apiBase(deps.config, requestBase(req)),
        browserBinding: bindingOf(req),
        query: new URLSearchParams(req.originalUrl.split('?')[1] ?? ''),
      });
      res.setHeader('Cache-Control', 'no-store');
      res.redirect(302, location);
    }),
  );

  routes.get(
    '/auth/sso/saml/:connectionId/metadata',
    asyncRoute(async (req, res) => {
      const connectionId = connectionIdOf(req);
      const connection = await connectionById(deps.db, connectionId);
      if (!connection || connection.type !== 'SAML') throw noConnection();
      res.type('application/samlmetadata+xml').send(spMetadata(apiBase(deps.config, requestBase(req)), connectionId));
    }),
  );

  return routes;
}

const connectionParameter = {
  in: 'path' as const,
  name: 'connectionId',
  required: true,
  schema: { type: 'string' as const, format: 'uuid' },
};
const toApp = {
  description: 'The web app: APP_URL/auth/callback?code=... (exchange at POST /auth/oauth/exchange) or ?error=CODE',
  headers: { Location: { schema: { type: 'string' as const, format: 'uri', maxLength: 4096 } } },
};
const errorsOnTheWay =
  'A refusal is a 302 to `APP_URL/auth/callback?error=CODE`: SSO_ASSERTION_INVALID (signature, algorithm, audience, ' +
  'recipient, time, replay, a request of another connection or browser), SSO_DOMAIN_MISMATCH (the address is not on a ' +
  'verified domain of the workspace), ACCOUNT_LINK_REQUIRED (an account of this address exists elsewhere: sign in to it ' +
  'and POST /auth/identities/sso/link/start), USER_SUSPENDED, SSO_NOT_CONFIGURED.';

export const ssoOpenApiPaths: ZodOpenApiPathsObject = {
  '/auth/sso/start': {
    get: {
      'x-rate-limit-tier': 'auth',
      operationId: 'auth-sso-start',
      summary: 'Sign in with single sign-on: redirect the browser to the identity provider of an address',
      description:
        'Navigate the browser here. Answers 302 to the identity provider of the ACTIVE connection of the workspace ' +
        "that verified the address's domain (SAML: an AuthnRequest by HTTP-Redirect; OIDC: code, PKCE S256 and a " +
        'nonce), and sets the `sso_binding` cookie that ties the sign-in to this browser.',
      tags: ['Single sign-on'],
      security: [],
      parameters: [
        { in: 'query', name: 'email', required: true, schema: { type: 'string', maxLength: 254 } },
        { in: 'query', name: 'redirectTo', required: false, schema: { type: 'string', maxLength: 2048 } },
      ],
      responses: {
        302: {
          description: "The identity provider's sign-in URL",
          headers: {
            Location: { schema: { type: 'string', format: 'uri', maxLength: 8192 } },
            'Set-Cookie': {
              description: '`sso_binding`: HttpOnly, SameSite=None; Secure (over https), 10 minutes, path /auth/sso/',
              schema: { type: 'string', maxLength: 4096 },
            },
          },
        },
        404: errorResponse('No ACTIVE connection for the domain of this address', ['SSO_NOT_CONFIGURED']),
        502: errorResponse('The OIDC provider could not be reached', ['OAUTH_PROVIDER_ERROR']),
      },
    },
  },
  '/auth/sso/saml/{connectionId}/acs': {
    post: {
      'x-rate-limit-tier': 'auth',
      operationId: 'auth-sso-saml-acs',
      summary: "The SAML assertion consumer service (the identity provider's HTTP-POST)",
      description:
        "Register as the ACS URL. Accepted only when signed by the connection's certificate (RSA-SHA256 or " +
        'stronger), for this audience and recipient, within its time conditions (2 minutes of skew), answering an ' +
        'unused request of this connection from this browser (unless `allowIdpInitiated`), never seen before. ' +
        errorsOnTheWay,
      tags: ['Single sign-on'],
      security: [],
      parameters: [connectionParameter],
      requestBody: {
        content: {
          'application/x-www-form-urlencoded': {
            schema: {
              type: 'object',
              properties: {
                SAMLResponse: { type: 'string', maxLength: 1_000_000 },
                RelayState: { type: 'string', maxLength: 1024 },
              },
            },
          },
        },
      },
      responses: { 302: toApp, 404: errorResponse('Not a connection id', ['NOT_FOUND']) },
    },
  },
  '/auth/sso/oidc/{connectionId}/callback': {
    get: {
      'x-rate-limit-tier': 'auth',
      operationId: 'auth-sso-oidc-callback',
      summary: "The OIDC connection's redirect URI",
      description: `Register as the redirect URI. Checks state, PKCE and nonce. ${errorsOnTheWay}`,
      tags: ['Single sign-on'],
      security: [],
      parameters: [
        connectionParameter,
        ...['code', 'state', 'iss', 'error'].map((name) => ({
          in: 'query' as const,
          name,
          required: false,
          schema: { type: 'string' as const, maxLength: 4096 },
        })),
      ],
      responses: { 302: toApp, 404: errorResponse('Not a connection id', ['NOT_FOUND']) },
    },
  },
  '/auth/sso/saml/{connectionId}/metadata': {
    get: {
      operationId: 'auth-sso-saml-metadata',
      summary: "The service provider's SAML metadata of a connection",
      description: 'Give this URL (or its content) to the identity provider: entity id, ACS URL, NameID format.',
      tags: ['Single sign-on'],
      security: [],
      parameters: [connectionParameter],
      responses: {
        200: {
          description: 'SAML metadata',
          content: { 'application/samlmetadata+xml': { schema: { type: 'string', maxLength: 100_000 } } },
        },
        404: errorResponse('No such SAML connection', ['NOT_FOUND']),
      },
    },
  },
};
