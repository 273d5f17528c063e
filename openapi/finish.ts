// The last pass over the generated document, by rules that hold for any route added later: shared schemas
// for the values every resource carries (Uuid, Timestamp), integer formats from their bounds, the headers
// the rate limiter and CORS add to answers, no answer that is never given, the top-level tags list, and
// no component left unreferenced.
import { TAG_DESCRIPTIONS } from './tags.js';

type Json = Record<string, unknown>;
type Operation = Json & { tags?: string[]; responses?: Record<string, Json> };

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Calls `visit` on every object of `value` (depth first, children first), which may return a replacement. */
function rewrite(value: unknown, visit: (node: Json) => Json): unknown {
  if (Array.isArray(value)) return value.map((v) => rewrite(v, visit));
  if (!isObject(value)) return value;
  const out: Json = {};
  for (const [k, v] of Object.entries(value)) out[k] = rewrite(v, visit);
  return visit(out);
}

/** Bounds of a UUID and of an ISO 8601 date-time with offset as the service writes and reads them. */
export const SHARED_SCHEMAS = {
  Uuid: {
    type: 'string',
    format: 'uuid',
    minLength: 36,
    maxLength: 36,
    pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
    description: 'A UUID, as 36 characters.',
    examples: ['3f1c2a9e-6b7d-4c1e-9a2b-5d4e3f2a1b0c'],
  },
  Timestamp: {
    type: 'string',
    format: 'date-time',
    maxLength: 40,
    description: 'An ISO 8601 date-time with offset (answers are in UTC, with milliseconds).',
    examples: ['2026-01-15T09:30:00.000Z'],
  },
} as const;

/**
 * A string schema of a UUID or date-time becomes a $ref to the shared one, keeping what is its own (its
 * description, example). Zod writes both with a long pattern: that pattern is the one the service checks,
 * and the shared schemas' bounds are those of every value it accepts.
 */
function shareValueSchemas(node: Json): Json {
  if (node.type !== 'string' || (node.format !== 'uuid' && node.format !== 'date-time')) return node;
  const { type: _type, format, pattern: _pattern, maxLength: _max, minLength: _min, ...own } = node;
  return { $ref: `#/components/schemas/${format === 'uuid' ? 'Uuid' : 'Timestamp'}`, ...own };
}

const INT32 = { min: -(2 ** 31), max: 2 ** 31 - 1 };

/**
 * An integer without a format gets int32 when its bounds fit, else int64 (JSON numbers: 53 bits at most).
 * One whose bounds allow negatives and that has no example gets 0 (or its bound nearest 0), so the docs
 * UI does not show its minimum, -9007199254740991, as the example of a count.
 */
function integerFormat(node: Json): Json {
  if (node.type !== 'integer') return node;
  if (!node.examples && !('example' in node) && typeof node.minimum === 'number' && node.minimum < 0) {
    const max = typeof node.maximum === 'number' ? node.maximum : 0;
    node = { ...node, examples: [Math.min(0, max)] };
  }
  if (node.format) return node;
  const fits =
    typeof node.minimum === 'number' &&
    typeof node.maximum === 'number' &&
    node.minimum >= INT32.min &&
    node.maximum <= INT32.max;
  return { ...node, format: fits ? 'int32' : 'int64' };
}

/** The headers answers carry besides their body, declared once (components.headers) and referenced. */
export const RESPONSE_HEADERS = {
  RateLimit: {
    description:
      'The rate-limit tier counting this call (the tightest, when a /trpc batch spans several): its points per ' +
      'window, those left, and seconds until the window resets. Sent on every answer of a rate-limited route ' +
      'while RATE_LIMIT_ENABLED is on.',
    schema: { type: 'string', maxLength: 100, examples: ['limit=100, remaining=99, reset=60'] },
  },
  'RateLimit-Policy': {
    description: 'The same tier as `<points>;w=<window seconds>`.',
    schema: { type: 'string', maxLength: 100, examples: ['100;w=60'] },
  },
  'Retry-After': {
    description: 'Seconds to wait before trying again.',
    schema: { type: 'integer', format: 'int32', minimum: 1, maximum: 86_400, examples: [30] },
  },
  'Access-Control-Allow-Origin': {
    description: "The request's Origin, when CORS_ORIGINS lists it (no CORS headers otherwise).",
    schema: { type: 'string', maxLength: 2048, examples: ['https://app.example.com'] },
  },
} as const;

const headerRef = (name: keyof typeof RESPONSE_HEADERS) => ({ $ref: `#/components/headers/${name}` });

/**
 * Declares the headers of each answer: RateLimit and RateLimit-Policy on every answer of a rate-limited
 * operation, Retry-After where the answer says it (429, a 503 with it), and Access-Control-Allow-Origin
 * on every answer that declares headers (CORS adds it to any answer).
 */
function declareHeaders(op: Operation, limited: boolean) {
  for (const response of Object.values(op.responses ?? {})) {
    const own = (response.headers ?? {}) as Record<string, unknown>;
    const headers: Record<string, unknown> = {};
    if (limited) {
      headers.RateLimit = headerRef('RateLimit');
      headers['RateLimit-Policy'] = headerRef('RateLimit-Policy');
    }
    for (const name of Object.keys(own)) {
      headers[name] = name in RESPONSE_HEADERS ? headerRef(name as keyof typeof RESPONSE_HEADERS) : own[name];
    }
    if (Object.keys(headers).length) headers['Access-Control-Allow-Origin'] = headerRef('Access-Control-Allow-Origin');
    if (Object.keys(headers).length) response.headers = headers;
  }
}

/**
 * An answer whose schema is `{ not: {} }` (a procedure whose output is `z.never()`: it always fails) is
 * never given, so it is not declared: a generator would type it `unknown`.
 */
function dropAnswersNeverGiven(op: Operation) {
  for (const [status, response] of Object.entries(op.responses ?? {})) {
    const content = Object.values((response.content ?? {}) as Record<string, { schema?: unknown }>);
    const never = (schema: unknown) => isObject(schema) && isObject(schema.not) && !Object.keys(schema.not).length;
    if (content.length && content.every((c) => never(c.schema))) delete op.responses![status];
  }
}

/**
 * An operation that answers no 2xx (a browser redirect) gets a `default` answer: any status it does not
 * list (e.g. 408 for a request not sent in time) is an error in the Error shape.
 */
function defaultAnswer(op: Operation) {
  const responses = (op.responses ??= {});
  if (Object.keys(responses).some((status) => status.startsWith('2'))) return;
  responses.default = {
    description: 'Any status not listed: an error, in the Error shape',
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  };
}

/** Every `#/components/<kind>/<name>` reference in `value`. */
function refsIn(value: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const v of value) refsIn(v, found);
  else if (isObject(value)) {
    if (typeof value.$ref === 'string') found.add(value.$ref);
    for (const v of Object.values(value)) refsIn(v, found);
  }
  return found;
}

/** Drops components no operation, webhook or other used component refers to (trpc-to-openapi adds some). */
function dropUnusedComponents(doc: Json) {
  const components = (doc.components ?? {}) as Record<string, Record<string, unknown> | undefined>;
  const { components: _c, ...rest } = doc;
  const used = new Set<string>();
  const queue = [...refsIn(rest)];
  while (queue.length) {
    const ref = queue.pop()!;
    if (used.has(ref)) continue;
    used.add(ref);
    const [, , kind, name] = ref.split('/');
    queue.push(...refsIn(components[kind]?.[decodeURIComponent(name)]));
  }
  for (const kind of ['schemas', 'headers', 'responses', 'parameters', 'examples', 'requestBodies']) {
    const entries = components[kind];
    if (!entries) continue;
    for (const name of Object.keys(entries)) {
      if (!used.has(`#/components/${kind}/${name}`)) delete entries[name];
    }
  }
}

/** The top-level tags: those the operations use, in TAG_DESCRIPTIONS' order, each with its description. */
function listTags(doc: Json, operations: Operation[]) {
  const used = new Set(operations.flatMap((op) => op.tags ?? []));
  const known = Object.keys(TAG_DESCRIPTIONS);
  const order = [...known.filter((t) => used.has(t)), ...[...used].filter((t) => !known.includes(t)).sort()];
  doc.tags = order.map((name) => ({ name, description: TAG_DESCRIPTIONS[name] ?? '' }));
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** The operations of the document's paths, with their path and method. */
export function operationsOf(doc: Json): Array<{ path: string; method: string; op: Operation }> {
  return Object.entries((doc.paths ?? {}) as Record<string, Record<string, Operation>>).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, op]) => ({ path, method, op })),
  );
}

/**
 * Finishes the document in place. `isLimited` tells whether an operation's calls are rate-limited (its
 * tier), and so whether its answers carry the RateLimit headers.
 */
export function finishDocument(doc: Json, isLimited: (method: string, path: string, op: Operation) => boolean) {
  const components = (doc.components ??= {}) as Record<string, Record<string, unknown>>;
  components.schemas = { ...components.schemas, ...SHARED_SCHEMAS };
  components.headers = { ...components.headers, ...RESPONSE_HEADERS };
  for (const { path, method, op } of operationsOf(doc)) {
    dropAnswersNeverGiven(op);
    declareHeaders(op, isLimited(method, path, op));
    defaultAnswer(op);
  }

  const { components: comps, ...rest } = doc;
  const sharedNames = new Set(Object.keys(SHARED_SCHEMAS));
  const schemas = comps as { schemas: Record<string, unknown>; headers: Record<string, unknown> };
  for (const [name, schema] of Object.entries(schemas.schemas)) {
    if (sharedNames.has(name)) schemas.schemas[name] = rewrite(schema, integerFormat);
    else schemas.schemas[name] = rewrite(rewrite(schema, shareValueSchemas), integerFormat);
  }
  for (const [key, value] of Object.entries(rest)) {
    if (key === 'paths' || key === 'webhooks') doc[key] = rewrite(rewrite(value, shareValueSchemas), integerFormat);
  }
  dropUnusedComponents(doc);
  listTags(
    doc,
    operationsOf(doc).map(({ op }) => op),
  );
}
