// GET /openapi.json: generated from the router's OpenAPI meta, then finished in one pass: public
// operations get `security: []`, creation routes answer 201/202, and every operation lists the errors it
// can answer, each status with the codes it carries (the `code` enum of the one Error schema the service
// really answers with). Those are the errors every route of its kind can answer (errorsOfKind) and the
// domain errors its procedure declares (`errors` in its meta). Plain Express routes add their entries,
// with their own errors, in `extraPaths`. The test suite checks the document against every error answer
// it sees (tests/helpers/error-ledger.ts).
import type { AnyTRPCRouter } from '@trpc/server';
import { generateOpenApiDocument, type OpenAPIObject } from 'trpc-to-openapi';
import { createDocument, type ZodOpenApiPathsObject } from 'zod-openapi';
import { tierOf, tierOfOperation, type Meta, type Tier } from '../server/platform/route-meta.js';
import { ERROR_STATUS, type ErrorCode } from '../server/platform/errors.js';
import { codesOf, errorSchema } from '../server/platform/error-response.js';
import { finishDocument } from './finish.js';

const ERROR_SCHEMA = {
  type: 'object',
  required: ['code', 'message', 'requestId'],
  properties: {
    code: {
      type: 'string',
      maxLength: 64,
      description: 'Domain code (e.g. USER_SUSPENDED) or the HTTP-class code (e.g. NOT_FOUND).',
      examples: ['NOT_FOUND'],
    },
    message: {
      type: 'string',
      maxLength: 2000,
      description: 'Human-readable explanation, safe to show.',
      examples: ['No such workspace.'],
    },
    requestId: {
      type: 'string',
      maxLength: 128,
      description: 'Equals the X-Request-Id response header.',
      examples: ['5b0e6c1e-2f5d-4a8e-9a51-0c2d7e3f4a6b'],
    },
    issues: {
      type: 'array',
      description: 'Validation problems, one per field.',
      items: {
        type: 'object',
        required: ['path', 'message', 'code'],
        properties: {
          path: { type: 'string', maxLength: 500, description: 'The dotted path of the field.', examples: ['email'] },
          message: { type: 'string', maxLength: 2000, examples: ['Enter a valid e-mail address.'] },
          code: { type: 'string', maxLength: 64, description: "Zod's issue code.", examples: ['invalid_format'] },
        },
      },
    },
  },
} as const;

/** Who the document names as its contact and under which licence the API description is published. */
export interface DocumentInfo {
  version: string;
  contact?: { name?: string; email?: string; url?: string };
  /** The outbound webhooks, by event: the document's `webhooks` section. */
  webhooks?: ZodOpenApiPathsObject;
}

/** What an error status means, as its response's description begins. */
const STATUS_MEANING: Record<number, string> = {
  400: 'Invalid request',
  401: 'Not authenticated',
  403: 'Not allowed',
  404: 'Not found',
  409: 'Conflicts with the current state',
  413: 'Body too large',
  415: 'Unsupported content type or Content-Encoding',
  422: 'The Idempotency-Key was used with another request',
  429: 'Rate limited: try again after the Retry-After header (seconds)',
  500: 'Server error',
  502: 'An upstream provider failed',
  503: 'Unavailable: not configured, or the database is away (then with Retry-After)',
};

/** What an error of every operation's kind means, where a plain route's own description does not say. */
const KIND_MEANING: Partial<Record<ErrorCode, string>> = {
  BAD_REQUEST: 'malformed input or path',
  PAYLOAD_TOO_LARGE: 'a body over the limit',
  UNSUPPORTED_MEDIA_TYPE: 'a body that is not JSON, or compressed other than with gzip, deflate or br',
  NOT_FOUND: 'no such record',
  RATE_LIMITED: 'over the rate limit, with Retry-After',
  INTERNAL_SERVER_ERROR: 'a bug, told only to the log',
  SERVICE_UNAVAILABLE: 'the database is away, with Retry-After',
};

/** The request header of the REST POST and PATCH operations (server/platform/idempotency.ts). */
const IDEMPOTENCY_KEY_PARAMETER = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes a retry safe: the same request sent again with the same key (within 24 hours, by the same caller) ' +
    'gets the first answer back, with `Idempotent-Replayed: true`, instead of running again.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7E]+$' },
} as const;

/** The response header of an answer replayed for an Idempotency-Key. */
const REPLAYED_RESPONSE_HEADER = {
  description: 'Present (`true`) when this is the stored answer of an earlier request with the same Idempotency-Key.',
  schema: { type: 'string', enum: ['true'] },
} as const;

type Response = {
  description?: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { schema?: unknown }>;
};
type Operation = {
  description?: string;
  security?: unknown[];
  parameters?: unknown[];
  requestBody?: unknown;
  responses?: Record<string, Response>;
};

/** What the router's procedures say of their operation, by `method path`. */
interface Declared {
  successStatus?: number;
  errors: readonly ErrorCode[];
  sameBodyWith?: Record<number, string>;
  /** Its rate-limit tier; undefined: never limited. */
  tier: Tier | undefined;
  /** Who may call it (the procedure builder's sentence); undefined: anyone. */
  caller?: string;
  /** The domain errors it declares itself (not those of its access check). */
  ownErrors: readonly ErrorCode[];
  /** Its text/event-stream answer, described (RouteMeta.eventStream). */
  eventStream?: string;
}

function declaredByOperation(router: AnyTRPCRouter): Map<string, Declared> {
  const declared = new Map<string, Declared>();
  for (const procedure of Object.values(router._def.procedures as Record<string, { _def: { meta?: Meta } }>)) {
    const meta = procedure._def.meta;
    if (!meta?.openapi) continue;
    declared.set(`${meta.openapi.method.toLowerCase()} ${meta.openapi.path}`, {
      successStatus: meta.successStatus,
      errors: [...(meta.accessErrors ?? []), ...(meta.errors ?? [])],
      sameBodyWith: meta.sameBodyWith,
      tier: tierOf(meta.rateLimit),
      caller: meta.caller,
      ownErrors: meta.errors ?? [],
      eventStream: meta.eventStream,
    });
  }
  return declared;
}

/**
 * The errors any operation of this kind can answer, whatever it does: malformed input or path, a body the
 * parser refuses, an unknown id in the path, the rate limit, the database away. (Who may call it is the
 * procedure builder's `accessErrors`, or a plain route's own list.)
 */
function errorsOfKind(method: string, path: string, tier: Tier | undefined): ErrorCode[] {
  const codes: ErrorCode[] = ['BAD_REQUEST', 'INTERNAL_SERVER_ERROR', 'SERVICE_UNAVAILABLE'];
  if (method !== 'get') codes.push('PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE');
  if (path.includes('{')) codes.push('NOT_FOUND');
  if (tier) codes.push('RATE_LIMITED');
  return codes;
}

/** Whether a JSON request body's schema (its $ref followed) names a required field, in any part of an allOf. */
function bodyRequiresAField(requestBody: unknown, schemas: Record<string, unknown>): boolean {
  const content = (requestBody as { content?: Record<string, { schema?: unknown }> }).content ?? {};
  const requires = (schema: unknown, depth = 0): boolean => {
    if (!schema || typeof schema !== 'object' || depth > 10) return false;
    const s = schema as {
      $ref?: string;
      required?: unknown[];
      allOf?: unknown[];
      anyOf?: unknown[];
      oneOf?: unknown[];
    };
    if (s.$ref) return requires(schemas[s.$ref.split('/').pop()!], depth + 1);
    if (s.required?.length) return true;
    if (s.allOf?.some((part) => requires(part, depth + 1))) return true;
    const alternatives = s.anyOf ?? s.oneOf;
    return alternatives !== undefined && alternatives.every((part) => requires(part, depth + 1));
  };
  // Only a JSON body can be left out (read as `{}`); any other kind is required as declared.
  const kinds = Object.keys(content);
  return !(kinds.length === 1 && kinds[0] === 'application/json') || requires(content['application/json'].schema);
}

/** Sets the operation's error responses: each status once, with every code it can carry. */
function documentErrors(op: Operation, codes: Iterable<string>) {
  const responses = (op.responses ??= {});
  const byStatus = new Map<number, Set<string>>();
  for (const [status, response] of Object.entries(responses)) {
    if (Number(status) >= 400) byStatus.set(Number(status), new Set(codesOf(response)));
  }
  for (const code of codes) {
    const status: number = ERROR_STATUS[code as ErrorCode];
    if (!byStatus.has(status)) byStatus.set(status, new Set());
    byStatus.get(status)!.add(code);
  }
  for (const [status, statusCodes] of [...byStatus].sort(([a], [b]) => a - b)) {
    const retryAfter =
      statusCodes.has('RATE_LIMITED') ||
      statusCodes.has('SERVICE_UNAVAILABLE') ||
      statusCodes.has('IDEMPOTENCY_KEY_IN_USE');
    responses[String(status)] = {
      description: describeError(status, responses[String(status)], statusCodes),
      ...(retryAfter
        ? {
            headers: {
              'Retry-After': { description: 'Seconds to wait before trying again', schema: { type: 'integer' } },
            },
          }
        : {}),
      content: { 'application/json': { schema: errorSchema([...statusCodes].sort()) } },
    };
  }
}

/**
 * An error response's description: a plain route's own stays, naming the codes this pass added to it;
 * otherwise what the status means (trpc-to-openapi's generic ones, "Invalid input data", were removed).
 */
function describeError(status: number, own: Response | undefined, codes: Set<string>): string {
  const ownCodes = codesOf(own);
  if (!own?.description || !ownCodes.length) return STATUS_MEANING[status] ?? 'Error';
  const added = [...codes].filter((code) => !ownCodes.includes(code)).sort();
  if (!added.length) return own.description;
  return `${own.description}; also ${added.map((code) => `${code} (${KIND_MEANING[code as ErrorCode] ?? STATUS_MEANING[status]})`).join(', ')}`;
}

const WHO = '**Who may call it:**';

/** The headers of an event-stream answer: nothing may cache or buffer it. */
const EVENT_STREAM_HEADERS = {
  'Cache-Control': { description: '`no-cache` on an event stream', schema: { type: 'string' } },
  'X-Accel-Buffering': {
    description: '`no` on an event stream: proxies (nginx) pass each event on at once',
    schema: { type: 'string' },
  },
};

/**
 * A procedure's description: its own (what it does), then who may call it and the errors of its own, from
 * its meta, so the two cannot drift from what the procedure enforces.
 */
function describeOperation(own: string | undefined, declared: Declared): string {
  const errors = [...new Set(declared.ownErrors)]
    .sort()
    .map((code) => `\`${code}\` (${ERROR_STATUS[code]})`)
    .join(', ');
  return [
    own,
    `${WHO} ${declared.caller ?? 'anyone, without authentication.'}`,
    errors && `**Errors of its own:** ${errors}; the responses list every error it can answer.`,
  ]
    .filter(Boolean)
    .join('\n\n');
}

export function buildOpenApiDocument(
  router: AnyTRPCRouter,
  opts: DocumentInfo & { extraPaths?: ZodOpenApiPathsObject },
): OpenAPIObject {
  const doc = generateOpenApiDocument(router, {
    title: 'Workspace SaaS API',
    description:
      'Multi-tenant SaaS back end. Send `Authorization: Bearer <accessToken>` on protected routes. ' +
      'Errors are `{ code, message, requestId, issues? }`; each operation lists the codes it can answer. ' +
      'Request bodies may be sent compressed (Content-Encoding gzip, deflate or br; uploads as is), and their limit ' +
      'is on the decoded size. A request not sent in full in time (by default: its headers within 30 s, all of it ' +
      'within 60 s) is answered 408 `REQUEST_TIMEOUT` before it reaches any operation.',
    version: opts.version,
    baseUrl: '/',
    securitySchemes: {
      bearerAuth: {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description:
          'An access token from POST /auth/login, /auth/register or /auth/refresh (a signed JWT, HS256, valid ' +
          'for `expiresIn` seconds), as `Authorization: Bearer <accessToken>`. Issued and checked following ' +
          'RFC8725 (JWT best current practices): one algorithm, a fixed issuer and audience, short lifetime. ' +
          'Not an API key: a wsk_ key here is 401.',
      },
      apiKey: {
        type: 'apiKey',
        in: 'header',
        name: 'X-API-Key',
        description:
          'A workspace API key (wsk_...), for the /public-api routes only; `Authorization: Bearer wsk_...` works ' +
          'too. Not an access token: a JWT there is 401.',
      },
    },
    paths: opts.extraPaths,
  });
  doc.components = { ...doc.components, schemas: { ...doc.components?.schemas, Error: ERROR_SCHEMA as never } };
  // An address without a dot in its domain (the default support@localhost) is no address to publish.
  const { email, ...contact } = opts.contact ?? {};
  doc.info.contact = { ...contact, ...(email && /^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email) ? { email } : {}) };
  doc.info.license = { name: 'MIT', identifier: 'MIT' };
  doc.servers = [
    {
      url: '/',
      description: 'This instance, where the document is served from (production, staging or a local one).',
      'x-internal': false,
    },
  ];

  if (opts.webhooks) {
    // trpc-to-openapi has no `webhooks` option: zod-openapi writes them, with the schemas they name.
    const outbound = createDocument({ openapi: '3.1.0', info: doc.info, webhooks: opts.webhooks });
    doc.webhooks = outbound.webhooks;
    doc.components.schemas = { ...outbound.components?.schemas, ...doc.components.schemas };
  }

  const declared = declaredByOperation(router);
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(item as Record<string, Operation>)) {
      op.security ??= [];
      // The public API takes workspace API keys, everything else protected takes access tokens.
      if (path.startsWith('/public-api/')) op.security = [{ apiKey: [] }];
      else if (op.security.length) op.security = [{ bearerAuth: [] }];
      const responses = (op.responses ??= {});
      const own = declared.get(`${method} ${path}`);
      if (own?.successStatus && responses['200']) {
        responses[String(own.successStatus)] = responses['200'];
        delete responses['200'];
      }
      // trpc-to-openapi's generic error entries (no codes) are replaced by the lists below.
      for (const status of Object.keys(responses))
        if (Number(status) >= 400 && !codesOf(responses[status]).length) delete responses[status];
      if (own) op.description = describeOperation(op.description, own);
      else if (!op.description?.includes(WHO)) {
        // A plain route that does not say who may call it: what its security says.
        const who = op.security.length
          ? 'a valid access token (see above for more).'
          : 'anyone, without authentication.';
        op.description = [op.description, `${WHO} ${who}`].filter(Boolean).join('\n\n');
      }
      // A procedure reads a missing body as `{}`: a body with no required field may be left out.
      if (own && op.requestBody && !bodyRequiresAField(op.requestBody, doc.components?.schemas ?? {}))
        (op.requestBody as { required?: boolean }).required = false;
      const tier = own ? own.tier : tierOfOperation(op);
      // A procedure's POST or PATCH takes an Idempotency-Key (the plain Express routes do not).
      const keyed = own !== undefined && (method === 'post' || method === 'patch');
      if (keyed) op.parameters = [...(op.parameters ?? []), IDEMPOTENCY_KEY_PARAMETER];
      documentErrors(op, [
        ...errorsOfKind(method, path, tier),
        ...(keyed ? (['IDEMPOTENCY_KEY_IN_USE', 'IDEMPOTENCY_KEY_REUSED'] as const) : []),
        ...(own?.errors ?? []),
      ]);
      if (keyed) {
        // A replayed answer carries the header; a replayed error is documented by its status as it stands.
        const success = responses[String(own.successStatus ?? 200)];
        if (success) success.headers = { ...success.headers, 'Idempotent-Replayed': REPLAYED_RESPONSE_HEADER };
      }
      if (own?.eventStream) {
        // The same success status, as server-sent events when asked for with Accept: text/event-stream.
        const success = responses[String(own.successStatus ?? 200)];
        if (success?.content) {
          success.content = {
            ...success.content,
            'text/event-stream': { schema: { type: 'string', description: own.eventStream } },
          };
          success.headers = { ...success.headers, ...EVENT_STREAM_HEADERS };
        }
      }
      for (const [status, description] of Object.entries(own?.sameBodyWith ?? {})) {
        const success = responses[String(own?.successStatus ?? 200)];
        responses[status] = { description, content: success?.content };
      }
    }
  }
  finishDocument(doc as never, (method, path, op) => {
    const own = declared.get(`${method} ${path}`);
    return (own ? own.tier : tierOfOperation(op)) !== undefined;
  });
  return doc;
}
