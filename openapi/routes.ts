// GET /openapi.json and the docs UI at /docs (swagger-ui-express serves its assets from node_modules: no
// CDN at run time). The document is built once at start-up.
import { Router } from 'express';
import swaggerUi from 'swagger-ui-express';
import type { AnyTRPCRouter } from '@trpc/server';
import { buildOpenApiDocument } from './document.js';
import { billingWebhookOpenApiPaths } from '../routers/billing/webhooks.js';
import { uploadOpenApiPaths } from '../routers/files/uploads.js';
import { metricsOpenApiPaths } from '../server/metrics.js';

export function openApiRoutes(appRouter: AnyTRPCRouter, version: string): Router {
  const document = buildOpenApiDocument(appRouter, { version, extraPaths: { ...billingWebhookOpenApiPaths, ...uploadOpenApiPaths, ...metricsOpenApiPaths } });
  const routes = Router();
  routes.get('/openapi.json', (_req, res) => {
    res.json(document);
  });
  routes.use('/docs', swaggerUi.serve, swaggerUi.setup(document, { customSiteTitle: 'Workspace SaaS API' }));
  return routes;
}
