// Builds the Express application from the shared services. Order of the mounts matters: request id and
// logging first, then headers, the refusal of ambiguous paths, docs, body parsing, /trpc, the REST
// surface, and last the 404 and errors.
import express from 'express';
import helmet from 'helmet';
import cors from 'cors';
import type { AppDeps } from './platform/context.js';
import {
  errorHandler,
  notFound,
  refuseAmbiguousPath,
  requestId,
  requestLogger,
  restHandler,
  trpcHandler,
} from './platform/http.js';
import { appRouter } from '../routers/index.js';
import { openApiRoutes, rootOpenApiPaths } from '../openapi/routes.js';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import {
  MOCK_WEBHOOK_PATH,
  billingWebhookOpenApiPaths,
  billingWebhookRoutes,
  mockWebhookEnabled,
} from '../routers/billing/webhooks.js';
import { responseCache } from './platform/response-cache.js';
import { FailureLimiter, isDocsPath, rateLimiter } from './platform/rate-limit.js';
import { TIERS, type Tier } from './platform/route-meta.js';
import { uploadOpenApiPaths, uploadRoutes } from '../routers/files/uploads.js';
import { webhookEventsOpenApi } from '../routers/webhooks/events.js';
import { oauthOpenApiPaths, oauthRedirectRoutes } from '../routers/oauth/redirects.js';
import { SCIM_BASE_PATH, scimRoutes } from '../routers/scim/protocol.js';
import { SCIM_TOKEN_PREFIX, verifiedScimTokenId } from '../routers/scim/tokens.js';
import { ssoOpenApiPaths, ssoRedirectRoutes } from '../routers/sso/redirects.js';
import { RouteTemplates, type RouteTemplate } from './platform/route-templates.js';
import { METRICS_PATH, Metrics, metricsRoute, queueCounts } from './platform/metrics.js';
import { WEBHOOK_QUEUE } from '../jobs/queue.js';
import { webhookQueueEnabled } from './platform/queue-mode.js';
import { startAuthentication } from './platform/trpc.js';
import { idempotencyKeys } from './platform/idempotency.js';
import { generationStreams } from '../routers/ai/stream-http.js';
import { MCP_PATH, mcpEndpoint } from '../routers/mcp/endpoint.js';
import { oauthRoutes, verifiedGrantId } from '../routers/mcp/oauth.js';
import { API_KEY_PREFIX } from './platform/principal.js';
import { refuseUnstorableText, refuseUnstorableUrl } from './platform/unstorable-text.js';
import {
  JSON_BODY_LIMIT_BYTES,
  closeUnreadBody,
  refuseJsonBodyHeaders,
  refuseTrailingBytes,
} from './platform/request-body.js';

/**
 * The plain Express routes (GET /, inbound provider webhooks, uploads, the browser redirects of identity-provider
 * sign-in), as their OpenAPI entries: documented in /openapi.json, and the list by which the app matches a
 * request to them (RouteTemplates).
 */
export const plainRoutePaths: ZodOpenApiPathsObject = {
  ...rootOpenApiPaths,
  ...billingWebhookOpenApiPaths,
  ...uploadOpenApiPaths,
  ...oauthOpenApiPaths,
  ...ssoOpenApiPaths,
};

export function createApp(deps: AppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  // req.ip, and so the limiter's client, the audit log and the request log: the X-Forwarded-For entry the
  // trusted proxies name (config.ts maps TRUST_PROXY=true to one hop), never one the client chose.
  app.set('trust proxy', deps.config.TRUST_PROXY);

  // The MOCK webhook, when it does not exist here, is an unknown route to every layer (labels, tiers).
  const { [MOCK_WEBHOOK_PATH]: _mockWebhook, ...otherPlainRoutes } = plainRoutePaths;
  const routes = new RouteTemplates(appRouter, mockWebhookEnabled(deps.config) ? plainRoutePaths : otherPlainRoutes);
  // Prometheus metrics only when METRICS_TOKEN is set: otherwise /metrics is an unknown route (404).
  const { config, redis } = deps;
  const metricsToken = config.METRICS_TOKEN;
  const metrics = metricsToken
    ? new Metrics({
        tiers: TIERS,
        queue:
          webhookQueueEnabled(config) && redis
            ? queueCounts(redis.commands, config.QUEUE_PREFIX, WEBHOOK_QUEUE)
            : undefined,
      })
    : undefined;

  app.use(requestId);
  app.use(deps.monitor.middleware(routes, metrics));
  app.use(requestLogger(deps.logger, routes));
  app.use(closeUnreadBody);
  // Helmet's strict defaults; over plain HTTP without `upgrade-insecure-requests`, which would send the
  // docs UI's own scripts and styles to an https:// origin that does not exist (a blank /docs).
  const overHttps = helmet();
  const overPlainHttp = helmet({ contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } } });
  app.use((req, res, next) => (req.secure ? overHttps : overPlainHttp)(req, res, next));
  if (deps.config.CORS_ORIGINS.length) {
    app.use(
      cors({
        origin: deps.config.CORS_ORIGINS,
        exposedHeaders: ['X-Request-Id', 'Retry-After', 'Idempotent-Replayed'],
        maxAge: 600,
      }),
    );
  }
  // Before the limiter and the routers read the path: past this, they all read the same route from it.
  app.use(refuseAmbiguousPath);
  // A body the JSON parser would refuse by its headers (an encoding it does not decode, a declared length
  // over 1 MiB) is refused now, before anything reads it or waits on Redis for it. The plain routes have
  // limits and encodings of their own, and check them themselves.
  app.use(only((req) => takesBody(req) && !isPlainRoute(routes.matchRequest(req)), refuseJsonBodyHeaders));

  if (metricsToken && metrics) app.get(METRICS_PATH, metricsRoute(metricsToken, metrics));
  app.use(startAuthentication(deps));
  const onRejected = metrics && ((tier: Tier) => metrics.rateLimited(tier));
  // The procedures' deps: with rate limiting on, sign-ins are also counted per account (routers/auth).
  let procedureDeps = deps;
  if (deps.config.RATE_LIMIT_ENABLED) {
    app.use(
      rateLimiter({
        ...deps,
        redis: deps.redis?.commands,
        routes,
        knownCredential: (raw) => knownCredentialOf(deps, raw),
        onRejected,
        otherPaths: { [MCP_PATH]: 'publicApi' },
      }),
    );
    const failedSignIns = new FailureLimiter(
      { ...deps, redis: deps.redis?.commands, onRejected },
      { name: 'auth-account', tier: 'auth', limit: deps.config.RATE_LIMIT_AUTH_MAX_REQUESTS },
    );
    procedureDeps = { ...deps, failedSignIns };
  }
  app.use(refuseUnstorableUrl);
  const docs = openApiRoutes(
    appRouter,
    {
      version: config.SERVICE_VERSION,
      contact: { name: 'Support', email: config.SUPPORT_EMAIL, url: config.APP_URL },
      webhooks: webhookEventsOpenApi,
    },
    plainRoutePaths,
  );
  app.use(only((req) => req.path === '/' || req.path === '/openapi.json' || isDocsPath(req.path), docs));

  // The public catalog is the same for everyone: kept as bytes until the catalog changes.
  app.use(responseCache({ '/billing/plans': { version: () => deps.plans.version, maxAgeMs: deps.plans.ttlMs } }));
  // Before the JSON parser: provider signatures are checked over the raw bytes, uploads are multipart.
  // Entered only by requests for one of their paths (the plain routes of `routes`), so the procedures'
  // requests do not walk their route lists.
  const plain = express
    .Router()
    .use(billingWebhookRoutes(deps), uploadRoutes(deps), oauthRedirectRoutes(deps), ssoRedirectRoutes(deps));
  app.use(only((req) => isPlainRoute(routes.matchRequest(req)), plain));
  // Directory sync: its own media type, error shape and token; documented in docs/api.md, not the document.
  app.use(SCIM_BASE_PATH, scimRoutes(deps));
  // The OAuth authorization server of MCP clients: before the JSON parser, as the provider reads its own bodies.
  const oauth = oauthRoutes(procedureDeps);
  app.use(only((req) => req.path.startsWith('/oauth/') || req.path.startsWith('/.well-known/oauth-'), oauth.routes));
  const json = express.json({
    // Of the decoded body: a small compressed body that inflates past it is refused as it inflates.
    limit: JSON_BODY_LIMIT_BYTES,
    reviver: refuseUnstorableText,
    // The decoded bytes, which /trpc is given instead of the parsed value (trpcHandler, server/platform/http.ts).
    verify: (req, _res, buf) => {
      (req as express.Request).rawBody = buf;
    },
  });
  // A compressed body with bytes after its end is a 400, as one that does not decode.
  app.use(only(takesBody, refuseTrailingBytes(json)));
  // Generations asked for as text/event-stream (never replayed: an Idempotency-Key there is a 400).
  app.use(generationStreams(procedureDeps));
  // Past authentication and the limiter, with the body as it came: a REST POST or PATCH with an
  // Idempotency-Key runs once, and its answer is replayed to the same request again.
  app.use(idempotencyKeys(deps, appRouter, routes));

  // MCP tools are procedures called through the tRPC caller: the procedure deps, as /trpc and REST have.
  app.all(MCP_PATH, mcpEndpoint(procedureDeps, appRouter, oauth.verify));
  app.use('/trpc', trpcHandler(appRouter, procedureDeps));
  app.use(restHandler(appRouter, procedureDeps));
  app.use(notFound);
  app.use(errorHandler(deps.logger));
  return app;
}

/**
 * Whether the request's body is read: not for GET and HEAD, whose input is in the URL (tRPC's queries,
 * trpc-to-openapi's GET routes). Their body is ignored, and the connection closed if it was not all in.
 */
/**
 * The rate limiter's name for a credential this instance has verified before: an API key, a SCIM token or
 * an MCP client's OAuth access token (its grant); undefined for anything else, counted by address.
 */
function knownCredentialOf(deps: AppDeps, raw: string): string | undefined {
  const named = (kind: string, id: string | undefined) => (id === undefined ? undefined : `${kind}:${id}`);
  if (raw.startsWith(API_KEY_PREFIX)) return named('key', deps.auth.knownApiKeyId(raw));
  if (raw.startsWith(SCIM_TOKEN_PREFIX)) return named('scim', verifiedScimTokenId(raw));
  return named('grant', verifiedGrantId(raw));
}

const takesBody = (req: express.Request) => req.method !== 'GET' && req.method !== 'HEAD';

/** A route of the plain Express routers (known to `routes` by their OpenAPI entries, without a procedure). */
const isPlainRoute = (route: RouteTemplate | undefined) => route !== undefined && route.procedure === undefined;

/** `handler` for the requests `wanted` picks; every other request goes straight on. */
function only(wanted: (req: express.Request) => boolean, handler: express.RequestHandler): express.RequestHandler {
  return (req, res, next) => (wanted(req) ? handler(req, res, next) : next());
}
