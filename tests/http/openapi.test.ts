import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { appRouter } from '../../routers/index.js';
import { plainRoutePaths } from '../../server/app.js';
import type { Meta } from '../../server/platform/route-meta.js';
import { ERROR_STATUS, type ErrorCode } from '../../server/platform/errors.js';
import SwaggerParser from '@apidevtools/swagger-parser';
import { registerAndLogin } from '../helpers/http.js';
import { createKey, ownerOn } from '../developer/helpers.js';

let app: TestApp;
let doc: any;
beforeAll(async () => {
  app = await startTestApp();
  doc = (await app.api('GET', '/openapi.json')).body;
});
afterAll(() => app.close());

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

function operations(): Array<{ method: string; path: string; op: any }> {
  return Object.entries(doc.paths).flatMap(([path, item]: [string, any]) =>
    Object.entries(item)
      .filter(([m]) => METHODS.includes(m))
      .map(([method, op]) => ({ method, path, op })),
  );
}

/**
 * Every REST route the app serves, read from where each is declared: the procedures' OpenAPI meta, and the
 * plain Express routes' entries (the composition root's list), so a new route needs no list of its own here.
 */
const procedureRoutes = Object.values(appRouter._def.procedures as unknown as Record<string, { _def: { meta?: Meta } }>)
  .map((p) => p._def.meta?.openapi)
  .filter((o): o is NonNullable<Meta['openapi']> => Boolean(o))
  .map((o) => `${o.method} ${o.path}`);
const PLAIN_ROUTES = new Set(
  Object.entries(plainRoutePaths).flatMap(([path, item]) =>
    Object.keys(item ?? {})
      .filter((m) => METHODS.includes(m))
      .map((m) => `${m.toUpperCase()} ${path}`),
  ),
);
const DECLARED_ROUTES = [...procedureRoutes, ...PLAIN_ROUTES];

describe('GET /openapi.json', () => {
  it('is an OpenAPI 3.1 document', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.title).toBeTruthy();
  });

  it('documents every route the app declares, and nothing else (GET /metrics, on with METRICS_TOKEN, aside)', () => {
    const documented = operations().map((o) => `${o.method.toUpperCase()} ${o.path}`);
    expect(DECLARED_ROUTES.length).toBeGreaterThan(100);
    expect(documented.sort()).toEqual([...DECLARED_ROUTES, 'GET /metrics'].sort());
  });

  /** The POST /auth routes of a signed-in user: two-factor set-up, password change, sessions, account. */
  const SIGNED_IN_AUTH_POSTS = new Set([
    'POST /auth/mfa/totp/setup',
    'POST /auth/mfa/totp/confirm',
    'POST /auth/mfa/disable',
    'POST /auth/mfa/backup-codes',
    'POST /auth/change-password',
    'POST /auth/sessions/revoke-others',
    'POST /auth/change-email',
    'POST /auth/me/delete',
    'POST /auth/me/exports',
  ]);

  it('gives every operation a summary and tags; public ones carry security: []', () => {
    const publicRoutes = new Set([
      'GET /',
      'GET /health',
      'GET /demo/status',
      'GET /search/status',
      'GET /security/status',
      'POST /analytics/events',
      'POST /contact/messages',
      'GET /billing/provider-status',
      'GET /billing/plans',
      'GET /auth/providers',
      'GET /auth/oauth/{provider}/start',
      'GET /auth/oauth/{provider}/callback',
      // Enterprise single sign-on: the browser's legs and the service provider's metadata.
      'GET /auth/sso/start',
      'GET /auth/sso/oidc/{connectionId}/callback',
      'GET /auth/sso/saml/{connectionId}/metadata',
      ...DECLARED_ROUTES.filter(
        (r) =>
          (r.startsWith('POST /auth/') && !r.startsWith('POST /auth/identities/') && !SIGNED_IN_AUTH_POSTS.has(r)) ||
          r.startsWith('POST /billing/webhooks/'),
      ),
    ]);
    for (const { method, path, op } of operations()) {
      const key = `${method.toUpperCase()} ${path}`;
      expect(op.summary, key).toBeTruthy();
      expect(op.tags?.length, key).toBeGreaterThan(0);
      if (publicRoutes.has(key)) expect(op.security, key).toEqual([]);
      else if (path.startsWith('/public-api/')) expect(op.security, key).toEqual([{ apiKey: [] }]);
      else expect(op.security, key).toEqual([{ bearerAuth: [] }]);
    }
  });

  it('is a valid OpenAPI 3.1 document, every $ref resolving (what client generators and the docs UI read)', async () => {
    expect(doc.openapi).toBe('3.1.0');
    // validate() dereferences in place: it gets a copy.
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeTruthy();
    const broken = structuredClone(doc);
    broken.paths['/auth/register'].post.responses['409'].content['application/json'].schema.allOf[0].$ref =
      '#/components/schemas/Missing';
    await expect(SwaggerParser.validate(broken)).rejects.toThrow(/Missing/);
  });

  it('documents creation routes with 201 and every error with the Error schema, its code one of the codes of that status', () => {
    expect(doc.paths['/auth/register'].post.responses['201']).toBeDefined();
    expect(doc.paths['/auth/register'].post.responses['200']).toBeUndefined();
    for (const { method, path, op } of operations()) {
      for (const [status, response] of Object.entries<any>(op.responses)) {
        if (Number(status) < 400 || status === 'default' || (path === '/health' && status === '503')) continue;
        const where = `${method} ${path} ${status}`;
        const schema = response.content['application/json'].schema;
        expect(schema.allOf[0], where).toEqual({ $ref: '#/components/schemas/Error' });
        const codes: string[] = schema.allOf[1].properties.code.enum;
        expect(codes.length, where).toBeGreaterThan(0);
        for (const code of codes) expect(`${code} ${ERROR_STATUS[code as ErrorCode]}`, where).toBe(`${code} ${status}`);
        expect(response.description, where).toBeTruthy();
      }
    }
    expect(doc.components.schemas.Error.required).toEqual(['code', 'message', 'requestId']);
  });

  /** The codes an operation documents for `status`. */
  const codes = (method: string, path: string, status: number): string[] =>
    doc.paths[path][method].responses[String(status)]?.content['application/json'].schema.allOf[1].properties.code
      .enum ?? [];

  it("lists each route's own errors: its domain codes, who may call it, and what every route of its kind can answer", () => {
    // Domain errors the procedure declares.
    expect(codes('post', '/auth/register', 409)).toEqual(['EMAIL_TAKEN', 'IDEMPOTENCY_KEY_IN_USE']);
    expect(codes('post', '/auth/register', 400)).toEqual(['BAD_REQUEST', 'WEAK_PASSWORD']);
    expect(codes('post', '/auth/login', 401)).toEqual(['INVALID_CREDENTIALS']);
    expect(codes('post', '/ai/generate', 502)).toEqual(['AI_PROVIDER_ERROR']);
    expect(codes('delete', '/admin/billing/plans/{planId}', 409)).toEqual(['INVALID_STATE', 'PLAN_HAS_SUBSCRIPTIONS']);
    // Who may call it, from the procedure's builder.
    expect(codes('get', '/auth/me', 401)).toEqual(['UNAUTHORIZED']);
    expect(codes('get', '/auth/me', 403)).toEqual(['USER_SUSPENDED']);
    expect(codes('get', '/admin/users', 403)).toEqual(['FORBIDDEN', 'USER_SUSPENDED']);
    expect(codes('patch', '/admin/users/{userId}', 403)).toEqual(['DEMO_READ_ONLY', 'FORBIDDEN', 'USER_SUSPENDED']);
    expect(codes('get', '/workspaces/{workspaceId}/members', 403)).toEqual([
      'MEMBERSHIP_SUSPENDED',
      'MFA_REQUIRED',
      'PERMISSION_DENIED',
      'SSO_REQUIRED',
      'USER_SUSPENDED',
      'WORKSPACE_UNAVAILABLE',
    ]);
    expect(codes('post', '/workspaces/{workspaceId}/api-keys', 403)).toEqual([
      'API_KEYS_NOT_IN_PLAN',
      'API_KEY_LIMIT_REACHED',
      'DEMO_READ_ONLY',
      'MEMBERSHIP_SUSPENDED',
      'MFA_REQUIRED',
      'PERMISSION_DENIED',
      'SSO_REQUIRED',
      'USER_SUSPENDED',
      'WORKSPACE_UNAVAILABLE',
    ]);
    expect(codes('get', '/public-api/workspace', 403)).toEqual([
      'API_KEYS_NOT_IN_PLAN',
      'PERMISSION_DENIED',
      'WORKSPACE_UNAVAILABLE',
    ]);
    // Public routes have no authentication errors; routes without ids in their path have no 404 of their own.
    expect(codes('post', '/auth/register', 401)).toEqual([]);
    expect(codes('get', '/billing/plans', 404)).toEqual([]);
    expect(codes('get', '/ai/templates/{templateId}', 404)).toEqual(['NOT_FOUND']);
    // A body refused by the parser, on every method that takes one.
    expect(codes('post', '/admin/monitoring/clear', 413)).toEqual(['PAYLOAD_TOO_LARGE']);
    expect(codes('get', '/auth/me', 413)).toEqual([]);
    // An Idempotency-Key used with another request, or still running, on every POST and PATCH of a procedure.
    expect(codes('patch', '/workspaces/{workspaceId}', 422)).toEqual(['IDEMPOTENCY_KEY_REUSED']);
    expect(codes('get', '/auth/me', 422)).toEqual([]);
    expect(codes('post', '/storage/upload', 422)).toEqual([]);
    // The database away, on every route.
    expect(codes('get', '/billing/plans', 503)).toEqual(['SERVICE_UNAVAILABLE']);
    // A plain route's own list, with what every route of its kind adds named in its description.
    expect(codes('post', '/profile/avatar', 400)).toEqual(['BAD_REQUEST']);
    expect(codes('get', '/storage/files/{fileId}', 503)).toEqual(['SERVICE_UNAVAILABLE', 'STORAGE_NOT_CONFIGURED']);
    expect(doc.paths['/storage/files/{fileId}'].get.responses['503'].description).toMatch(
      /; also SERVICE_UNAVAILABLE \(the database is away, with Retry-After\)$/,
    );
    // The uploads name it themselves: image work has its queue too.
    expect(codes('post', '/storage/upload', 503)).toEqual(['SERVICE_UNAVAILABLE', 'STORAGE_NOT_CONFIGURED']);
    expect(doc.paths['/storage/upload'].post.responses['503'].description).toBe(
      'The selected storage provider lacks its settings, or too many images are being processed (with Retry-After)',
    );
    expect(doc.paths['/storage/upload'].post.responses['415'].description).toBe(
      'Not multipart, sent with a Content-Encoding, or a type not accepted (checked by content)',
    );
  });

  it('lists 429 with its Retry-After header on every rate-limited route, and not on the routes the limiter skips', () => {
    const retryAfter = { $ref: '#/components/headers/Retry-After' };
    expect(doc.paths['/billing/plans'].get.responses['503'].headers['Retry-After']).toEqual(retryAfter);
    expect(doc.components.headers['Retry-After'].schema.type).toBe('integer');
    for (const { method, path, op } of operations()) {
      const limited = !['get /health', 'get /search/status', 'get /security/status', 'get /metrics'].includes(
        `${method} ${path}`,
      );
      expect(codes(method, path, 429), `${method} ${path}`).toEqual(limited ? ['RATE_LIMITED'] : []);
      if (limited) expect(op.responses['429'].headers['Retry-After'], `${method} ${path}`).toEqual(retryAfter);
    }
  });

  it("documents /health's 503 as its own body (status degraded), not as an error", () => {
    const responses = doc.paths['/health'].get.responses;
    expect(responses['503'].content['application/json'].schema).toEqual(
      responses['200'].content['application/json'].schema,
    );
    expect(responses['503'].description).toMatch(/database/);
  });

  it('declares no {param} path before a static path it would shadow (the REST router takes the first match)', () => {
    // trpc-to-openapi builds one list per method in the router's declaration order and takes the first match.
    const declared = Object.values(appRouter._def.procedures as unknown as Record<string, { _def: { meta?: Meta } }>)
      .map((p) => p._def.meta?.openapi)
      .filter((o): o is NonNullable<Meta['openapi']> => Boolean(o));
    const toRegExp = (p: string) => new RegExp(`^${p.replace(/\{[^}]+\}/g, '[^/]+')}$`, 'i');
    const shadowed: string[] = [];
    declared.forEach((earlier, i) => {
      if (!earlier.path.includes('{')) return;
      for (const later of declared.slice(i + 1)) {
        if (later.method === earlier.method && !later.path.includes('{') && toRegExp(earlier.path).test(later.path)) {
          shadowed.push(`${later.method} ${later.path} is shadowed by ${earlier.path}`);
        }
      }
    });
    expect(shadowed).toEqual([]);
  });

  /** Whether a request body's schema names a required field (following $refs and allOf). */
  const requiresAField = (schema: any): boolean => {
    if (schema?.$ref) return requiresAField(doc.components.schemas[schema.$ref.split('/').pop()]);
    return Boolean(schema?.required?.length) || (schema?.allOf ?? []).some(requiresAField);
  };

  it('declares a JSON body required only when it has a required field (a missing body is read as {})', async () => {
    const optional: string[] = [];
    for (const { method, path, op } of operations()) {
      const json = op.requestBody?.content?.['application/json'];
      if (!json || path.startsWith('/billing/webhooks/')) continue;
      const key = `${method.toUpperCase()} ${path}`;
      expect(op.requestBody.required ?? false, key).toBe(requiresAField(json.schema));
      if (!op.requestBody.required) optional.push(key);
    }
    expect(optional.sort()).toEqual(
      [
        'POST /auth/identities/{provider}/link/start',
        // Re-authentication fields, each needed only by some accounts (a password, a second factor).
        'POST /auth/me/delete',
        'PATCH /workspaces/{workspaceId}',
        'POST /billing/checkout',
        'POST /billing/cancel',
        'POST /billing/portal',
        'POST /workspaces/{workspaceId}/billing/mock-checkout',
        'PATCH /workspaces/{workspaceId}/api-keys/{apiKeyId}',
        'POST /workspaces/{workspaceId}/api-keys/{apiKeyId}/rotate',
        'PATCH /workspaces/{workspaceId}/webhooks/{webhookId}',
        'POST /workspaces/{workspaceId}/webhooks/{webhookId}/rotate-secret',
        'PATCH /workspaces/{workspaceId}/branding',
        'PATCH /admin/billing/plans/{planId}',
        'PATCH /admin/billing/settings',
        'PATCH /admin/users/{userId}',
        'PATCH /workspaces/{workspaceId}/sso/connections/{connectionId}',
      ].sort(),
    );
    // The payment providers always send a body, which their signature covers.
    expect(doc.paths['/billing/webhooks/processor-a'].post.requestBody.required).toBe(true);
    // And the service takes such an operation without a body, as the document now says.
    const owner = await ownerOn(app, 'pro', 'bodiless');
    const key = await createKey(app, owner);
    const rotate = `/workspaces/${owner.workspaceId}/api-keys/${key.id}/rotate`;
    const res = await app.api('POST', rotate, { token: owner.accessToken });
    expect(res.status, res.text).toBe(200);
  });

  it('declares only the answers an operation gives: no `{ not: {} }` schema; the download placeholder no 2xx', async () => {
    const never: string[] = [];
    const visit = (value: unknown, where: string) => {
      if (Array.isArray(value)) return value.forEach((v, i) => visit(v, `${where}/${i}`));
      if (!value || typeof value !== 'object') return;
      const not = (value as { not?: unknown }).not;
      if (not && typeof not === 'object' && !Object.keys(not).length) never.push(where);
      for (const [k, v] of Object.entries(value)) visit(v, `${where}/${k}`);
    };
    visit(doc, '#');
    expect(never).toEqual([]);
    const download = doc.paths['/updates/releases/{version}/download'].get;
    expect(Object.keys(download.responses).filter((status) => /^[23]/.test(status))).toEqual([]);
    expect(codes('get', '/updates/releases/{version}/download', 503)).toEqual([
      'DOWNLOADS_DISABLED',
      'SERVICE_UNAVAILABLE',
    ]);
    // What it answers is one of what it declares.
    const user = await registerAndLogin(app.api, { prefix: 'download' });
    const res = await app.api('GET', '/updates/releases/1.0.0/download', { token: user.accessToken });
    expect(res.status).toBe(503);
    expect(download.responses['503']).toBeDefined();
  });
});
