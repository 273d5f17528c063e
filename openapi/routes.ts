// GET /openapi.json and the docs UI at /docs (swagger-ui-express serves its assets from node_modules: no
// CDN at run time). The document is built once at start-up.
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import { Router } from 'express';
import swaggerUi from 'swagger-ui-express';
import type { AnyTRPCRouter } from '@trpc/server';
import { buildOpenApiDocument } from './document.js';
import { billingWebhookOpenApiPaths } from '../routers/billing/webhooks.js';
import { uploadOpenApiPaths } from '../routers/files/uploads.js';
import { metricsOpenApiPaths } from '../server/platform/metrics.js';

/**
 * The plain Express routes (inbound provider webhooks, uploads), as their OpenAPI entries: documented here,
 * and the list by which the app matches a request to them (server/app.ts, server/platform/route-templates.ts).
 */
export const plainRoutePaths: ZodOpenApiPathsObject = { ...billingWebhookOpenApiPaths, ...uploadOpenApiPaths };

/** The whole API's document: the procedures' routes and the plain Express routes. */
export const apiDocument = (appRouter: AnyTRPCRouter, version: string) =>
  buildOpenApiDocument(appRouter, { version, extraPaths: { ...plainRoutePaths, ...metricsOpenApiPaths } });

export function openApiRoutes(appRouter: AnyTRPCRouter, version: string): Router {
  const document = apiDocument(appRouter, version);
  const routes = Router();
  routes.get('/openapi.json', (_req, res) => {
    res.json(document);
  });
  routes.use('/docs', swaggerUi.serve, swaggerUi.setup(document, { customSiteTitle: 'Workspace SaaS API' }));
  return routes;
}
