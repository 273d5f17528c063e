// Every documented REST route, sent what a careless or hostile client sends: malformed JSON, bodies of the
// wrong type, fields of the wrong type, absurd sizes, path and query values that are not what the route
// takes (broken percent-encoding among them). Each route is tried anonymously, as a workspace owner on
// their own workspace, and as the platform admin, so that the input reaches validation behind the
// authentication. No answer may be a 5xx (a 5xx is a bug; only the documented 503s of a feature the server
// has not configured are expected), and every 4xx must be the documented error body:
// `{ code, message, requestId, issues? }`.
//
// The routes come from /openapi.json, so a route added later is covered without touching this file.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { login, registerAndLogin, type ApiResponse, type RequestOptions, type Session } from '../helpers/http.js';
import { SECRET_FIELD } from '../helpers/secret-ledger.js';

let app: TestApp;
let doc: { paths: Record<string, Record<string, Operation>> };

interface Schema {
  type?: string | string[];
  format?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  enum?: unknown[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  minimum?: number;
  minLength?: number;
  minItems?: number;
  required?: string[];
}
interface Operation {
  parameters?: Array<{ name: string; in: 'path' | 'query' | 'header'; schema?: Schema }>;
  requestBody?: { content?: Record<string, { schema?: Schema }> };
}

beforeAll(async () => {
  app = await startTestApp();
  const body = (await app.api('GET', '/openapi.json')).body as typeof doc & {
    components: { schemas: Record<string, Schema> };
  };
  doc = { paths: inlineRefs(body.paths, body.components.schemas) as typeof doc.paths };
});

/** `value` with every `$ref` to a component schema replaced by the schema (its own keys kept). */
function inlineRefs(value: unknown, schemas: Record<string, Schema>, depth = 0): unknown {
  if (Array.isArray(value)) return value.map((v) => inlineRefs(v, schemas, depth));
  if (typeof value !== 'object' || value === null || depth > 20) return value;
  const { $ref, ...own } = value as { $ref?: unknown };
  const base = typeof $ref === 'string' ? schemas[$ref.split('/').pop()!] : {};
  return Object.fromEntries(
    Object.entries({ ...base, ...own }).map(([k, v]) => [k, inlineRefs(v, schemas, depth + (base ? 1 : 0))]),
  );
}
afterAll(() => app?.close());

/** Path values a route does not take. */
const HOSTILE_PATH_VALUES = [
  'not-an-id',
  crypto.randomUUID(),
  '00000000-0000-0000-0000-000000000000',
  'x'.repeat(3_000),
  '%E0%A4%A', // broken percent-encoding
  '%00',
  '..%2F..%2Fetc%2Fpasswd',
  encodeURIComponent("1' or '1'='1"),
  '-1',
  '1e400',
];

/** Query values a route does not take, for each documented query parameter in turn. */
const HOSTILE_QUERY_VALUES = [
  '',
  '-1',
  '0',
  'abc',
  '1e400',
  '99999999999999999999',
  'x'.repeat(5_000),
  '%E0%A4%A',
  '%00',
  'a%00b',
  '%ED%A0%80',
  'null',
];

/** A value of the wrong type for `schema`. */
function wrongValue(schema: Schema | undefined): unknown {
  const type = Array.isArray(schema?.type) ? schema.type[0] : schema?.type;
  if (schema?.enum) return 'not-one-of-the-values';
  switch (type) {
    case 'string':
      return { not: 'a string' };
    case 'number':
    case 'integer':
      return '12abc';
    case 'boolean':
      return 'yes';
    case 'array':
      return 'not an array';
    case 'object':
      return ['not', 'an', 'object'];
    default:
      return null;
  }
}

function objectSchemaOf(op: Operation): Schema | undefined {
  const schema = op.requestBody?.content?.['application/json']?.schema;
  return schema?.properties ? schema : (schema?.anyOf ?? schema?.oneOf)?.find((s) => s.properties);
}

/** Bodies a route does not take: raw text sent as JSON, and objects built from its documented schema. */
function hostileBodies(op: Operation): RequestOptions[] {
  const json = { 'content-type': 'application/json' };
  const raws = [
    '{',
    '{"a":',
    '[]',
    '"text"',
    'null',
    '123',
    'true',
    '{}',
    '{"__proto__":{"isAdmin":true},"constructor":{"prototype":{"x":1}}}',
    '['.repeat(5_000) + ']'.repeat(5_000),
  ];
  const bodies: RequestOptions[] = raws.map((raw) => ({ raw, headers: json }));
  bodies.push({ raw: '{"a":1}', headers: { 'content-type': 'text/plain' } });
  bodies.push({ raw: '{"a":1}', headers: { 'content-type': 'application/json; charset=utf-32' } });
  bodies.push({ raw: Buffer.from([0xff, 0xfe, 0x7b, 0x00]), headers: json });
  bodies.push({ raw: JSON.stringify({ padding: 'x'.repeat(2_000_000) }), headers: json });
  // Bodies that do not decode as their Content-Encoding says (were a 500), and an encoding not decoded.
  bodies.push({ raw: '{"a":1}', headers: { ...json, 'content-encoding': 'gzip' } });
  bodies.push({ raw: Buffer.from([0x1b, 0x00]), headers: { ...json, 'content-encoding': 'br' } });
  bodies.push({ raw: '{"a":1}', headers: { ...json, 'content-encoding': 'zstd' } });
  // Multipart bodies that are not: no boundary, a boundary never met, a part without a name.
  bodies.push({ raw: 'x', headers: { 'content-type': 'multipart/form-data' } });
  bodies.push({
    raw: '--b\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\nabc',
    headers: { 'content-type': 'multipart/form-data; boundary=b' },
  });
  bodies.push({
    raw: '--b\r\nContent-Type: image/png\r\n\r\nabc\r\n--b--\r\n',
    headers: { 'content-type': 'multipart/form-data; boundary=b' },
  });
  const schema = objectSchemaOf(op);
  if (schema?.properties) {
    const names = Object.keys(schema.properties);
    // Every field of the wrong type at once, then each alone.
    bodies.push({ body: Object.fromEntries(names.map((n) => [n, wrongValue(schema.properties![n])])) });
    for (const n of names) bodies.push({ body: { [n]: wrongValue(schema.properties[n]) } });
    // Every field a string Postgres cannot store as text (a NUL), or a lone UTF-16 surrogate.
    bodies.push({ body: Object.fromEntries(names.map((n) => [n, 'a\u0000b'])) });
    bodies.push({ body: Object.fromEntries(names.map((n) => [n, 'a\ud800b'])) });
    // Every field an absurdly long string, or a deep object.
    bodies.push({ body: Object.fromEntries(names.map((n) => [n, 'x'.repeat(100_000)])) });
    bodies.push({
      body: Object.fromEntries(names.map((n) => [n, JSON.parse('{"a":'.repeat(500) + '1' + '}'.repeat(500))])),
    });
  }
  return bodies;
}

/** Credentials that are not: for the anonymous caller, as Authorization or X-API-Key. */
const HOSTILE_CREDENTIALS: Array<Record<string, string>> = [
  { authorization: 'Bearer' },
  { authorization: 'Bearer ' },
  { authorization: `Bearer ${'x'.repeat(10_000)}` },
  { authorization: 'Basic YWRtaW46YWRtaW4=' },
  { authorization: 'Bearer a.b.c' },
  // A token of alg "none" claiming to be an admin.
  {
    authorization: `Bearer ${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from('{"sub":"1","role":"ADMIN"}').toString('base64url')}.`,
  },
  { 'x-api-key': `sk_live_${'0'.repeat(40)}` },
  { 'x-api-key': 'x'.repeat(5_000) },
  { 'x-api-key': '%E0%A4%A' },
];

/** A value `schema` accepts, as far as its type, format, enum and minimums tell (a best effort). */
function sampleOf(schema: Schema | undefined, name: string, own: (param: string) => string | undefined): unknown {
  const variant = schema?.anyOf?.find((v) => v.type !== 'null') ?? schema?.oneOf?.find((v) => v.type !== 'null');
  if (variant) return sampleOf(variant, name, own);
  if (schema?.enum) return schema.enum[0];
  const type = Array.isArray(schema?.type) ? schema.type.find((t) => t !== 'null') : schema?.type;
  switch (type) {
    case 'string':
      if (schema?.format === 'uuid') return own(name) ?? crypto.randomUUID();
      if (schema?.format === 'date-time') return new Date(Date.now() + 86_400_000).toISOString();
      if (schema?.format === 'email' || /email/i.test(name))
        return `hostile-${crypto.randomBytes(4).toString('hex')}@tests.local`;
      if (schema?.format === 'uri' || /url/i.test(name)) return 'https://receiver.invalid/hook';
      if (/password/i.test(name)) return 'Strong-pass-123';
      return 'x'.repeat(Math.max(schema?.minLength ?? 0, 3));
    case 'integer':
    case 'number':
      return Math.max(schema?.minimum ?? 1, 1);
    case 'boolean':
      return true;
    case 'array':
      return Array.from({ length: Math.max(schema?.minItems ?? 1, 1) }, () => sampleOf(schema?.items, name, own));
    case 'object':
      // The required fields only: an optional one (a template id) could send the request elsewhere.
      return Object.fromEntries(
        Object.entries(schema?.properties ?? {})
          .filter(([n]) => !schema?.required || schema.required.includes(n))
          .map(([n, s]) => [n, sampleOf(s, n, own)]),
      );
    default:
      return 'x';
  }
}

/**
 * Values at or past the edge of what the field `name` of `schema` could hold. A secret's (a password, a backup code) are
 * its own, so that the secret ledger does not take another field's echo of the same text for a leak.
 */
function extremesOf(name: string, schema: Schema): unknown[] {
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  if (schema.enum) return [];
  if (type === 'string' && SECRET_FIELD.test(name))
    return [`${crypto.randomBytes(8).toString('hex')}${'x'.repeat(100_000)}`];
  switch (type) {
    case 'integer':
    case 'number':
      return [2 ** 31, 2 ** 53 + 2, 1e308, -1e308, -1, 0, 0.5];
    case 'string':
      if (schema.format === 'date-time')
        return ['0001-01-01T00:00:00Z', '9999-12-31T23:59:59.999Z', '1970-01-01T00:00:00Z'];
      if (schema.format === 'uuid')
        return ['00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff'];
      return [
        '',
        '   ',
        'x'.repeat(100_000),
        '\u202e\u0301\ufeff',
        '<script>alert(1)</script>',
        'javascript:alert(1)',
        'http://127.0.0.1:1/',
        'file:///etc/passwd',
      ];
    case 'array':
      return [[], Array.from({ length: 10_000 }, () => 'x')];
    default:
      return [];
  }
}

interface Caller {
  name: string;
  token(): Promise<string | undefined>;
  /** The value this caller gives a path parameter it owns (its workspace), if any. */
  own(param: string): string | undefined;
}

/** A session that logs in again when a hostile request ended it (a logout takes no body). */
function sessionCaller(name: string, start: () => Promise<Session>): Caller {
  let session: Session | undefined;
  return {
    name,
    async token() {
      if (session && (await app.api('GET', '/auth/me', { token: session.accessToken })).status === 200)
        return session.accessToken;
      // (A hostile request may also have closed the account: then a new one.)
      session = session ? await login(app.api, session.email, session.password).catch(start) : await start();
      return session.accessToken;
    },
    own: (param) => (param === 'workspaceId' && session ? session.workspaceId : undefined),
  };
}

const ERROR_BODY_KEYS = ['code', 'message', 'requestId'];
/** The documented 503s: a feature this server has not configured (the test app configures none). */
const NOT_CONFIGURED = new Set([
  'AI_PROVIDER_NOT_CONFIGURED',
  'BILLING_NOT_CONFIGURED',
  'DOWNLOADS_DISABLED',
  'STORAGE_NOT_CONFIGURED',
]);

/** Every operation of /openapi.json. */
const operations = () =>
  Object.entries(doc.paths).flatMap(([template, methods]) =>
    Object.entries(methods).map(([lower, op]) => ({ method: lower.toUpperCase(), template, op })),
  );

/** A workspace owner (registered with `prefix`) and the admin, each signed in. */
const signedIn = (prefix: string): Caller[] => [
  sessionCaller('a workspace owner', () => registerAndLogin(app.api, { prefix })),
  sessionCaller('the admin', () => login(app.api, TEST_ADMIN.email, TEST_ADMIN.password)),
];

/** `template` with the caller's own values where it has them (its workspace), a random UUID elsewhere. */
const pathFor = (template: string, caller: Caller, overrides: Record<string, string> = {}) =>
  template.replace(/\{(\w+)\}/g, (_, name: string) => overrides[name] ?? caller.own(name) ?? crypto.randomUUID());

/** The answers of a sweep: each 5xx (but the not-configured 503s), and each 4xx without the error body. */
class Verdicts {
  sent = 0;
  readonly failures: string[] = [];

  check(what: string, res: ApiResponse): void {
    this.sent += 1;
    const body = res.body as Record<string, unknown> | undefined;
    if (res.status === 503 && NOT_CONFIGURED.has(body?.code as string)) return;
    if (res.status >= 500) this.failures.push(`${what}: ${res.status} ${res.text.slice(0, 200)}`);
    else if (res.status >= 400) {
      const missing = ERROR_BODY_KEYS.filter((k) => typeof body?.[k] !== 'string');
      if (missing.length)
        this.failures.push(`${what}: ${res.status} without ${missing.join(', ')}: ${res.text.slice(0, 200)}`);
    }
  }

  /** At least `requests` were checked, and none failed. */
  expectClean(requests: number): void {
    expect(this.sent).toBeGreaterThan(requests);
    expect(this.failures, this.failures.slice(0, 30).join('\n')).toEqual([]);
  }
}

describe('hostile input on every documented route', () => {
  it(
    'never gets a 5xx, and every 4xx is an error body with code, message and requestId',
    { timeout: 600_000 },
    async () => {
      const callers: Caller[] = [
        { name: 'anonymous', token: async () => undefined, own: () => undefined },
        ...signedIn('hostile'),
      ];
      const verdicts = new Verdicts();
      expect(operations().length).toBeGreaterThan(80);

      for (const { method, template, op } of operations()) {
        const pathParams = (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name);
        const queryParams = (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
        for (const caller of callers) {
          const token = await caller.token();
          const send = async (path: string, opts: RequestOptions = {}) => {
            const what = `${caller.name}: ${method} ${path.length > 150 ? `${path.slice(0, 150)}...` : path}${opts.raw !== undefined ? ` raw ${String(opts.raw).slice(0, 40)}` : ''}${opts.body !== undefined ? ` body ${JSON.stringify(opts.body).slice(0, 80)}` : ''}${opts.headers ? ` headers ${JSON.stringify(opts.headers).slice(0, 80)}` : ''}`;
            verdicts.check(what, await app.api(method, path, { ...opts, token }));
          };
          // The caller's own values where it has them: the request reaches the route's own checks.
          const filled = (overrides: Record<string, string> = {}) => pathFor(template, caller, overrides);

          for (const param of pathParams) {
            for (const value of HOSTILE_PATH_VALUES) await send(filled({ [param]: value }));
          }
          for (const param of queryParams) {
            for (const value of HOSTILE_QUERY_VALUES) await send(`${filled()}?${param}=${value}`);
            await send(`${filled()}?${param}=1&${param}=2`);
            await send(`${filled()}?${param}[a]=1`);
          }
          if (caller.name === 'anonymous') {
            for (const headers of HOSTILE_CREDENTIALS) await send(filled(), { headers });
          }
          if (method === 'POST' || method === 'PUT' || method === 'PATCH') {
            for (const body of hostileBodies(op)) await send(filled(), body);
          }
        }
      }
      verdicts.expectClean(5_000);
    },
  );
});

describe('hostile input on the tRPC endpoint', () => {
  it('never gets a 5xx, and every error is a tRPC error with a code, an HTTP status and the request id', async () => {
    const session = await registerAndLogin(app.api, { prefix: 'hostile-trpc' });
    const json = { 'content-type': 'application/json' };
    const requests: Array<[string, string, RequestOptions?]> = [
      ['GET', '/trpc/auth.me?input=%7Bbad'],
      ['GET', '/trpc/auth.me?input=%E0%A4%A'],
      ['GET', '/trpc/auth.me,workspaces.list?batch=1&input=%5B%5B%5B'],
      ['GET', `/trpc/auth.me?batch=1&input=${encodeURIComponent(JSON.stringify({ 0: 'x'.repeat(10_000) }))}`],
      ['GET', '/trpc/does.not.exist'],
      ['GET', `/trpc/${'a.'.repeat(2_000)}b`],
      ['GET', `/trpc/${Array.from({ length: 200 }, () => 'auth.me').join(',')}?batch=1`],
      ['GET', '/trpc/auth.login'],
      ['POST', '/trpc/auth.me'],
      ['POST', '/trpc/auth.login', { raw: '{', headers: json }],
      ['POST', '/trpc/auth.login', { raw: '[]', headers: json }],
      ['POST', '/trpc/auth.login', { raw: 'null', headers: json }],
      ['POST', '/trpc/auth.login', { body: { email: { $ne: '' }, password: ['x'] } }],
      ['POST', '/trpc/auth.login?batch=1', { raw: '{"0":', headers: json }],
      ['POST', '/trpc/auth.login?batch=1', { body: [{ email: 'a@b.c' }] }],
      ['POST', '/trpc/auth.login', { raw: JSON.stringify({ padding: 'x'.repeat(2_000_000) }), headers: json }],
      ['POST', '/trpc/workspaces.create', { token: session.accessToken, body: { name: { toString: 'x' } } }],
      [
        'POST',
        '/trpc/workspaces.create',
        { token: session.accessToken, raw: '['.repeat(5_000) + ']'.repeat(5_000), headers: json },
      ],
    ];
    const failures: string[] = [];
    for (const [method, path, opts] of requests) {
      const res = await app.api(method, path, opts);
      const what = `${method} ${path.slice(0, 120)} ${opts?.raw !== undefined ? String(opts.raw).slice(0, 40) : ''}`;
      if (res.status >= 500) failures.push(`${what}: ${res.status} ${res.text.slice(0, 200)}`);
      else if (res.status >= 400) {
        const errors = (Array.isArray(res.body) ? res.body : [res.body]).map(
          (b: { error?: { data?: Record<string, unknown> } }) => b?.error?.data,
        );
        if (
          !errors.every(
            (d) =>
              typeof d?.code === 'string' &&
              typeof d?.httpStatus === 'number' &&
              d?.requestId === res.headers.get('x-request-id'),
          )
        ) {
          failures.push(`${what}: ${res.status} not a tRPC error: ${res.text.slice(0, 200)}`);
        }
      }
    }
    expect(failures, failures.join('\n')).toEqual([]);
  });
});

describe('what the sweeps found, one by one', () => {
  const json = { 'content-type': 'application/json' };

  it('a path parameter with broken percent-encoding is a 400 BAD_REQUEST on the plain Express routes too (was a 500)', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'hostile-uri' });
    for (const [method, path] of [
      ['GET', '/users/%E0%A4%A/avatar'],
      ['GET', '/storage/files/%E0%A4%A'],
      ['POST', '/workspaces/%E0%A4%A/branding/logo'],
    ] as const) {
      const res = await app.api(method, path, { token: s.accessToken });
      expect(res.status, `${method} ${path}: ${res.text}`).toBe(400);
      expect(res.body).toEqual({
        code: 'BAD_REQUEST',
        message: 'Malformed percent-encoding in the URL path.',
        requestId: res.headers.get('x-request-id'),
      });
    }
  });

  it('a JSON body nested thousands deep is a 400 saying so, on REST and /trpc (on /trpc it was a 500: tRPC serialised the parsed body again)', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'hostile-deep' });
    const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
    const rest = await app.api('POST', '/workspaces', { token: s.accessToken, raw: deep(5_000), headers: json });
    expect(rest.status, rest.text).toBe(400);
    expect(rest.body).toMatchObject({ code: 'BAD_REQUEST', message: 'The JSON body is nested too deeply.' });
    const trpc = await app.api('POST', '/trpc/workspaces.create', {
      token: s.accessToken,
      raw: deep(5_000),
      headers: json,
    });
    expect(trpc.status, trpc.text).toBe(400);
    expect(trpc.body.error).toMatchObject({
      message: 'The JSON body is nested too deeply.',
      data: { code: 'BAD_REQUEST', httpStatus: 400, requestId: trpc.headers.get('x-request-id') },
    });
    // Less deep, it is input of the wrong shape; Zod's own wording already says "Invalid input": said once.
    const shallower = await app.api('POST', '/trpc/workspaces.create', {
      token: s.accessToken,
      raw: deep(2_000),
      headers: json,
    });
    expect(shallower.status, shallower.text).toBe(400);
    expect(shallower.body.error.message).toBe('Invalid input: expected object, received array');
    // A well-formed call still arrives whole: tRPC reads the bytes sent.
    const created = await app.api('POST', '/trpc/workspaces.create', {
      token: s.accessToken,
      raw: JSON.stringify({ name: 'Ünïcode ✓ team 😀' }),
      headers: json,
    });
    expect(created.status, created.text).toBe(200);
    expect(created.body.result.data).toMatchObject({ name: 'Ünïcode ✓ team 😀' });
  });

  it('text Postgres cannot store (a NUL, an unpaired surrogate) is a 400 wherever it comes in, and nothing is written (was a 500)', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'hostile-nul' });
    const workspaces = async () => (await app.api('GET', '/workspaces', { token: s.accessToken })).body;
    const before = await workspaces();
    const refused = (res: ApiResponse) => {
      expect(res.status, res.text).toBe(400);
      const error = res.body.error ? { code: res.body.error.data.code, message: res.body.error.message } : res.body;
      expect(error).toMatchObject({
        code: 'BAD_REQUEST',
        message: 'Text may not contain NUL characters or unpaired UTF-16 surrogates.',
      });
    };
    // In a JSON body: a value, a key, a lone surrogate; on REST and /trpc.
    refused(await app.api('POST', '/workspaces', { token: s.accessToken, raw: '{"name":"a\\u0000b"}', headers: json }));
    refused(await app.api('POST', '/workspaces', { token: s.accessToken, raw: '{"name":"a\\ud800b"}', headers: json }));
    refused(
      await app.api('PATCH', `/workspaces/${s.workspaceId}`, {
        token: s.accessToken,
        raw: '{"name":"ok","x\\u0000":1}',
        headers: json,
      }),
    );
    refused(
      await app.api('POST', '/trpc/workspaces.create', {
        token: s.accessToken,
        raw: '{"name":"a\\u0000b"}',
        headers: json,
      }),
    );
    expect(await workspaces()).toEqual(before);
    // In the URL: the path or the query; and in the JSON input of a /trpc query.
    refused(await app.api('GET', '/search?q=a%00b', { token: s.accessToken }));
    refused(await app.api('GET', `/workspaces/${s.workspaceId}/audit-logs?action=%00`, { token: s.accessToken }));
    refused(
      await app.api('GET', `/trpc/search.search?input=${encodeURIComponent('{"q":"a\\u0000b"}')}`, {
        token: s.accessToken,
      }),
    );
    // A surrogate pair is one character, and fine.
    const emoji = await app.api('PATCH', `/workspaces/${s.workspaceId}`, {
      token: s.accessToken,
      raw: '{"name":"Team \\ud83d\\ude00"}',
      headers: json,
    });
    expect(emoji.status, emoji.text).toBe(200);
    expect(emoji.body.name).toBe('Team 😀');
  });

  it("/trpc: malformed JSON and a body over the limit are answered in tRPC's envelope, which its client reads (were REST error bodies)", async () => {
    const malformed = await app.api('POST', '/trpc/auth.login', { raw: '{"email":', headers: json });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toEqual({
      error: {
        message: 'Malformed JSON in request body.',
        code: -32700,
        data: { code: 'BAD_REQUEST', httpStatus: 400, requestId: malformed.headers.get('x-request-id') },
      },
    });
    const large = await app.api('POST', '/trpc/auth.login', {
      raw: JSON.stringify({ padding: 'x'.repeat(2_000_000) }),
      headers: json,
    });
    expect(large.status).toBe(413);
    expect(large.body.error).toMatchObject({
      code: -32013,
      data: { code: 'PAYLOAD_TOO_LARGE', httpStatus: 413, requestId: large.headers.get('x-request-id') },
    });
  });

  it('/trpc: errors raised before tRPC makes the context (a batch too large, no Content-Type) carry the request id (they had none)', async () => {
    const batch = await app.api('GET', `/trpc/${Array.from({ length: 101 }, () => 'auth.me').join(',')}?batch=1`, {
      headers: { 'x-request-id': 'hostile-batch-1' },
    });
    expect(batch.status).toBe(400);
    expect(batch.body.error.data).toMatchObject({ code: 'BAD_REQUEST', httpStatus: 400, requestId: 'hostile-batch-1' });
    const bare = await app.api('POST', '/trpc/auth.me', { headers: { 'x-request-id': 'hostile-bare-1' } });
    expect(bare.status).toBe(415);
    expect(bare.body.error.data).toMatchObject({
      code: 'UNSUPPORTED_MEDIA_TYPE',
      httpStatus: 415,
      requestId: 'hostile-bare-1',
    });
  });
});

describe('valid bodies with one field pushed to an extreme, on every documented route', () => {
  it(
    'never get a 5xx, and every 4xx is an error body with code, message and requestId',
    { timeout: 600_000 },
    async () => {
      const verdicts = new Verdicts();
      const callers = signedIn('extreme');
      for (const { method, template, op } of operations()) {
        const schema = objectSchemaOf(op);
        if (!schema?.properties) continue;
        for (const caller of callers) {
          const token = await caller.token();
          const path = pathFor(template, caller);
          const base = sampleOf(schema, '', caller.own) as Record<string, unknown>;
          const bodies: Array<Record<string, unknown>> = [base];
          for (const [name, field] of Object.entries(schema.properties)) {
            for (const value of extremesOf(name, field)) bodies.push({ ...base, [name]: value });
            // One level down: the fields of an object field.
            for (const [inner, innerField] of Object.entries(field.properties ?? {})) {
              for (const value of extremesOf(inner, innerField))
                bodies.push({ ...base, [name]: { ...(sampleOf(field, name, caller.own) as object), [inner]: value } });
            }
          }
          for (const body of bodies) {
            verdicts.check(
              `${caller.name}: ${method} ${path} ${JSON.stringify(body).slice(0, 160)}`,
              await app.api(method, path, { token, body }),
            );
          }
        }
      }
      verdicts.expectClean(1_000);
    },
  );
});

describe('the same valid request eight times at once, on every documented route that changes something', () => {
  it(
    'never gets a 5xx: races end in a 2xx and clean 4xx (a unique rule taken, a state already changed)',
    { timeout: 600_000 },
    async () => {
      const verdicts = new Verdicts();
      const callers = signedIn('race');
      for (const { method, template, op } of operations()) {
        if (method === 'GET') continue;
        for (const caller of callers) {
          const token = await caller.token();
          const path = pathFor(template, caller);
          const schema = objectSchemaOf(op);
          const body = schema ? sampleOf(schema, '', caller.own) : undefined;
          const answers = await Promise.all(Array.from({ length: 8 }, () => app.api(method, path, { token, body })));
          for (const res of answers)
            verdicts.check(`${caller.name}: ${method} ${path} ${JSON.stringify(body ?? null).slice(0, 120)}`, res);
        }
      }
      verdicts.expectClean(500);
    },
  );
});
