// GET /openapi.json, the docs UI at /docs (swagger-ui-express serves its assets from node_modules: no
// CDN at run time), and GET /, which points at both. The document is built once, by the first request for
// it or the UI (a few hundred ms of CPU the start-up does not spend), and swagger-ui-express is loaded by the
// first request for /docs.
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import { Router, type RequestHandler } from 'express';
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

/** What GET / answers: where to read about the API. */
const API_TITLE = 'Workspace SaaS API';
const ROOT = { docs: '/docs', openapi: '/openapi.json', health: '/health' } as const;

/** GET / in /openapi.json (a plain route: server/app.ts hands it in with the others). */
export const rootOpenApiPaths: ZodOpenApiPathsObject = {
  '/': {
    get: {
      operationId: 'root',
      summary: 'Where to start: links to the docs, the OpenAPI document and the health check',
      description:
        'A small JSON for people and tools that open the API base URL: the name and version of the service and ' +
        'the paths of the interactive docs (`/docs`), this document (`/openapi.json`) and `GET /health`.',
      tags: ['Meta'],
      security: [],
      responses: {
        200: {
          description: 'Links, relative to the base URL',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['name', 'version', 'docs', 'openapi', 'health'],
                properties: {
                  name: { type: 'string', maxLength: 100, examples: ['Workspace SaaS API'] },
                  version: { type: 'string', maxLength: 50, description: 'SERVICE_VERSION', examples: ['1.2.0'] },
                  docs: { type: 'string', enum: [ROOT.docs] },
                  openapi: { type: 'string', enum: [ROOT.openapi] },
                  health: { type: 'string', enum: [ROOT.health] },
                },
              },
            },
          },
        },
      },
    },
  },
};

export function openApiRoutes(appRouter: AnyTRPCRouter, info: DocumentInfo, plainPaths: ZodOpenApiPathsObject): Router {
  let built: ReturnType<typeof apiDocument> | undefined;
  const document = () => (built ??= apiDocument(appRouter, info, plainPaths));
  const routes = Router();
  const root = { name: API_TITLE, version: info.version, ...ROOT };
  routes.get('/', (_req, res) => {
    res.json(root);
  });
  routes.get('/openapi.json', (_req, res) => {
    res.json(document());
  });
  // Groups start closed: with all of them open, Swagger UI 5 stops drawing a document of this size part-way
  // (two groups shown until the window is resized); closed, every group is listed and opens in full.
  let docsUi: Promise<RequestHandler> | undefined;
  const loadDocsUi = () =>
    (docsUi ??= import('swagger-ui-express').then(({ default: swaggerUi }) =>
      Router().use(
        swaggerUi.serve,
        swaggerUi.setup(document(), { customSiteTitle: API_TITLE, swaggerOptions: { docExpansion: 'none' } }),
      ),
    ));
  routes.use('/docs', (req, res, next) => {
    loadDocsUi().then((ui) => ui(req, res, next), next);
  });
  return routes;
}
