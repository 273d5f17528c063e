// GET /openapi.json and the docs UI at /docs (swagger-ui-express serves its assets from node_modules: no
// CDN at run time). The document is built once at start-up.
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import { Router } from 'express';
import swaggerUi from 'swagger-ui-express';
import type { AnyTRPCRouter } from '@trpc/server';
import { buildOpenApiDocument, type DocumentInfo } from './document.js';
import { metricsOpenApiPaths } from '../server/platform/metrics.js';

/**
 * The whole API's document: the procedures' routes and the plain Express routes (their OpenAPI entries,
 * handed in by the composition root, server/app.ts).
 */
export const apiDocument = (appRouter: AnyTRPCRouter, info: DocumentInfo | string, plainPaths: ZodOpenApiPathsObject) =>
  buildOpenApiDocument(appRouter, {
    ...(typeof info === 'string' ? { version: info } : info),
    extraPaths: { ...plainPaths, ...metricsOpenApiPaths },
  });

export function openApiRoutes(appRouter: AnyTRPCRouter, info: DocumentInfo, plainPaths: ZodOpenApiPathsObject): Router {
  const document = apiDocument(appRouter, info, plainPaths);
  const routes = Router();
  routes.get('/openapi.json', (_req, res) => {
    res.json(document);
  });
  routes.use('/docs', swaggerUi.serve, swaggerUi.setup(document, { customSiteTitle: 'Workspace SaaS API' }));
  return routes;
}
