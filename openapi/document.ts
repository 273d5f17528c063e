// GET /openapi.json: generated from the router's OpenAPI meta, then finished in one pass: public
// operations get `security: []`, creation routes answer 201/202, and every error response points at the
// one Error schema the service really answers with. Plain Express routes add their entries in `extraPaths`.
import type { AnyTRPCRouter } from '@trpc/server';
import { generateOpenApiDocument, type OpenAPIObject } from 'trpc-to-openapi';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import type { Meta } from '../server/trpc.js';

const ERROR_SCHEMA = {
  type: 'object',
  required: ['code', 'message', 'requestId'],
  properties: {
    code: { type: 'string', description: 'Domain code (e.g. USER_SUSPENDED) or the HTTP-class code (e.g. NOT_FOUND).' },
    message: { type: 'string', description: 'Human-readable explanation, safe to show.' },
    requestId: { type: 'string', description: 'Equals the X-Request-Id response header.' },
    issues: {
      type: 'array',
      description: 'Validation problems, one per field.',
      items: {
        type: 'object',
        required: ['path', 'message', 'code'],
        properties: { path: { type: 'string' }, message: { type: 'string' }, code: { type: 'string' } },
      },
    },
  },
} as const;

type Operation = { security?: unknown[]; responses?: Record<string, { content?: Record<string, { schema?: unknown }> }> };

/** method+path -> success status, from the procedures' meta. */
function successStatuses(router: AnyTRPCRouter): Map<string, number> {
  const statuses = new Map<string, number>();
  for (const procedure of Object.values(router._def.procedures as Record<string, { _def: { meta?: Meta } }>)) {
    const meta = procedure._def.meta;
    if (meta?.openapi && meta.successStatus) statuses.set(`${meta.openapi.method.toLowerCase()} ${meta.openapi.path}`, meta.successStatus);
  }
  return statuses;
}

export function buildOpenApiDocument(
  router: AnyTRPCRouter,
  opts: { version: string; extraPaths?: ZodOpenApiPathsObject },
): OpenAPIObject {
  const doc = generateOpenApiDocument(router, {
    title: 'Workspace SaaS API',
    description:
      'Multi-tenant SaaS back end. Send `Authorization: Bearer <accessToken>` on protected routes. ' +
      'Errors are `{ code, message, requestId, issues? }`.',
    version: opts.version,
    baseUrl: '/',
    securitySchemes: {
      bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'A workspace API key (wsk_...); Authorization: Bearer wsk_... works too.' },
    },
    paths: opts.extraPaths,
  });
  doc.components = { ...doc.components, schemas: { ...doc.components?.schemas, Error: ERROR_SCHEMA as never } };

  const statuses = successStatuses(router);
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(item as Record<string, Operation>)) {
      op.security ??= [];
      // The public API takes workspace API keys, everything else protected takes access tokens.
      if (path.startsWith('/public-api/')) op.security = [{ apiKey: [] }];
      else if (op.security.length) op.security = [{ bearerAuth: [] }];
      const responses = op.responses ?? {};
      const status = statuses.get(`${method} ${path}`);
      if (status && responses['200']) {
        responses[String(status)] = responses['200'];
        delete responses['200'];
      }
      for (const [code, response] of Object.entries(responses)) {
        if (Number(code) >= 400 && response.content?.['application/json']) {
          response.content['application/json'].schema = { $ref: '#/components/schemas/Error' };
        }
      }
    }
  }
  return doc;
}
