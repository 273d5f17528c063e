// GET /openapi.json and the docs UI at /docs (swagger-ui-express serves its assets from node_modules: no
// CDN at run time). The document is built once, by the first request for either (a few hundred ms of CPU
// the start-up does not spend), and swagger-ui-express is loaded by the first request for /docs.
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import { Router, type RequestHandler } from 'express';
import type { AnyTRPCRouter } from '@trpc/server';
import { buildOpenApiDocument } from './document.js';
import { metricsOpenApiPaths } from '../server/platform/metrics.js';

/**
 * The whole API's document: the procedures' routes and the plain Express routes (their OpenAPI entries,
 * handed in by the composition root, server/app.ts).
 */
export const apiDocument = (appRouter: AnyTRPCRouter, version: string, plainPaths: ZodOpenApiPathsObject) =>
  buildOpenApiDocument(appRouter, { version, extraPaths: { ...plainPaths, ...metricsOpenApiPaths } });

export function openApiRoutes(appRouter: AnyTRPCRouter, version: string, plainPaths: ZodOpenApiPathsObject): Router {
  let built: ReturnType<typeof apiDocument> | undefined;
  const document = () => (built ??= apiDocument(appRouter, version, plainPaths));
  const routes = Router();
  routes.get('/openapi.json', (_req, res) => {
    res.json(document());
  });
  let docsUi: Promise<RequestHandler> | undefined;
  const loadDocsUi = () =>
    (docsUi ??= import('swagger-ui-express').then(({ default: swaggerUi }) =>
      Router().use(swaggerUi.serve, swaggerUi.setup(document(), { customSiteTitle: 'Workspace SaaS API' })),
    ));
  routes.use('/docs', (req, res, next) => {
    loadDocsUi().then((ui) => ui(req, res, next), next);
  });
  return routes;
}
