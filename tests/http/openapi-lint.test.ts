// The live /openapi.json through the linters a third party runs on it, as their real CLIs: Redocly's
// recommended rules (no error, no warning), Spectral's OpenAPI rules (none either, but for the rules
// docs/api.md lists as not applying, each only in its scope), and Spectral with the
// OWASP API Security ruleset (no error, but for the rules docs/api.md lists as not applying here, each
// only in the scope it names). Also what no linter checks: every operation says what it does, every tag
// is described, every resource schema is named and referenced, and the public routes' examples are valid.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { REPO_DIR } from '../helpers/client-build.js';
import { appRouter } from '../../routers/index.js';
import type { Meta } from '../../server/platform/route-meta.js';
import { loginInput, registerInput } from '../../routers/auth/schemas.js';

const run = promisify(execFile);
const BIN = path.join(REPO_DIR, 'node_modules/.bin');
/** No telemetry, no update check: the linters talk to nothing. */
const QUIET_ENV = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };

interface SpectralResult {
  code: string;
  /** 0 error, 1 warning, 2 information, 3 hint. */
  severity: number;
  path: Array<string | number>;
  message: string;
}

let app: TestApp;
let doc: any;
let file: string;
let dir: string;

beforeAll(async () => {
  app = await startTestApp();
  doc = (await app.api('GET', '/openapi.json')).body;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openapi-lint-'));
  file = path.join(dir, 'openapi.json');
  fs.writeFileSync(file, JSON.stringify(doc));
});
afterAll(async () => {
  await app.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Runs a CLI that exits non-zero when it finds problems; its JSON report is on stdout either way. */
async function report(bin: string, args: string[]): Promise<string> {
  try {
    return (await run(path.join(BIN, bin), args, { env: QUIET_ENV, maxBuffer: 64 * 1024 * 1024, cwd: REPO_DIR }))
      .stdout;
  } catch (err) {
    const stdout = (err as { stdout?: string }).stdout;
    if (stdout) return stdout;
    throw err;
  }
}

const runs = new Map<string, Promise<SpectralResult[]>>();
/** Spectral's results with `ruleset` (one run per ruleset, shared by the tests). */
const spectral = (ruleset: string) => {
  if (!runs.has(ruleset)) runs.set(ruleset, spectralRun(ruleset));
  return runs.get(ruleset)!;
};
const spectralRun = async (ruleset: string) =>
  JSON.parse(
    await report('spectral', [
      'lint',
      file,
      '--ruleset',
      path.join(REPO_DIR, 'tests/http', ruleset),
      '-f',
      'json',
      '-q',
    ]),
  ) as SpectralResult[];

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

/** `METHOD /path` of the procedures whose output is z.never(): they always answer an error. */
const NEVER_SUCCEEDING = new Set(
  Object.values(appRouter._def.procedures as unknown as Record<string, { _def: { meta?: Meta; output?: unknown } }>)
    .filter((p) => p._def.output instanceof z.ZodNever && p._def.meta?.openapi)
    .map((p) => `${p._def.meta!.openapi!.method} ${p._def.meta!.openapi!.path}`),
);

/** The operation a result's path points into (paths/<path>/<method>/...), if any. */
function operationAt(p: Array<string | number>): any {
  if (p[0] !== 'paths' || !METHODS.includes(String(p[2]))) return undefined;
  return doc.paths[p[1]]?.[p[2]];
}

/** The component schemas a request (a body or parameter of an operation) can reach through $refs. */
function schemasOfRequests(): Set<string> {
  const reached = new Set<string>();
  const visit = (value: unknown) => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (typeof value !== 'object' || value === null) return;
    const ref = (value as { $ref?: unknown }).$ref;
    if (typeof ref === 'string' && ref.startsWith('#/components/schemas/')) {
      const name = ref.slice('#/components/schemas/'.length);
      if (!reached.has(name)) {
        reached.add(name);
        visit(doc.components.schemas[name]);
      }
    }
    Object.values(value).forEach(visit);
  };
  for (const item of Object.values<any>(doc.paths))
    for (const [method, op] of Object.entries<any>(item)) {
      if (!METHODS.includes(method)) continue;
      visit(op.parameters);
      visit(op.requestBody);
    }
  return reached;
}

/**
 * Where a rule docs/api.md lists may be broken, by the scope it names: generic predicates over the
 * result's place in the document, so they hold for routes added later.
 */
function scopes(): Record<string, (r: SpectralResult) => boolean> {
  const requestSchemas = schemasOfRequests();
  return {
    // What the service sends (answers, webhook deliveries), never what it reads.
    answers: (r) =>
      (r.path[0] === 'paths' && r.path.includes('responses')) ||
      r.path[0] === 'webhooks' ||
      (r.path[0] === 'components' && r.path[1] === 'schemas' && !requestSchemas.has(String(r.path[2]))),
    // Operations anyone may call: security [].
    public: (r) => operationAt(r.path)?.security?.length === 0,
    // Operations the limiter never counts: no 429 among their answers.
    unlimited: (r) => operationAt(r.path) !== undefined && !operationAt(r.path).responses['429'],
    // The platform administration routes.
    admin: (r) => r.path[0] === 'paths' && String(r.path[1]).startsWith('/admin/'),
    // Operations of a procedure that never succeeds (its output z.never(): a placeholder), so no 2xx.
    'never-succeeds': (r) => {
      const op = operationAt(r.path);
      return op !== undefined && NEVER_SUCCEEDING.has(`${String(r.path[2]).toUpperCase()} ${String(r.path[1])}`);
    },
    // Path parameters naming a record by its id (apiKeyId), not carrying a credential.
    'id-parameters': (r) => {
      const op = operationAt(r.path);
      const i = r.path.indexOf('parameters');
      return op !== undefined && i > 0 && /Id$/.test(op.parameters[r.path[i + 1] as number]?.name ?? '');
    },
  };
}

/** The rules docs/api.md says do not apply (under `heading`), each with the scopes it does not apply in. */
function documentedExceptions(heading = '### OWASP rules that do not apply'): Map<string, string[]> {
  const text = fs.readFileSync(path.join(REPO_DIR, 'docs/api.md'), 'utf8');
  const start = text.indexOf(heading);
  expect(start, heading).toBeGreaterThan(-1);
  const section = text.slice(start + heading.length).split(/^#{1,3} /m)[0];
  const rows = [...section.matchAll(/^\| `([a-z0-9:-]+)` +\| ([^|]+)\|/gm)];
  return new Map(rows.map((m) => [m[1], [...m[2].matchAll(/`([a-z-]+)`/g)].map((s) => s[1])]));
}

/** The errors of `results` that no documented exception excuses in its scope. */
function unexcused(results: SpectralResult[], exceptions: Map<string, string[]>): string[] {
  const scope = scopes();
  for (const names of exceptions.values()) for (const name of names) expect(Object.keys(scope)).toContain(name);
  return results
    .filter((r) => !(exceptions.get(r.code) ?? []).some((name) => scope[name](r)))
    .map((r) => `${r.code} at ${r.path.join('/')}`);
}

describe('/openapi.json through the linters', () => {
  it('Redocly CLI, recommended rules: no error, no warning', async () => {
    const result = JSON.parse(await report('redocly', ['lint', file, '--format=json'])) as {
      totals: { errors: number; warnings: number };
      problems: Array<{ ruleId: string; message: string }>;
    };
    expect(result.problems.map((p) => `${p.ruleId}: ${p.message}`)).toEqual([]);
    expect(result.totals).toMatchObject({ errors: 0, warnings: 0 });
  });

  it('Spectral, spectral:oas: no error, no warning outside the documented exceptions, each in its scope', async () => {
    const exceptions = documentedExceptions('### Spectral rules that do not apply');
    const results = (await spectral('spectral-oas.yaml')).filter((r) => r.severity <= 1);
    expect(unexcused(results, exceptions)).toEqual([]);
    for (const rule of exceptions.keys())
      expect(
        results.some((r) => r.code === rule),
        rule,
      ).toBe(true);
  });

  it('Spectral, OWASP API Security ruleset: no error outside the documented exceptions, each in its scope', async () => {
    const exceptions = documentedExceptions();
    expect(exceptions.size).toBeGreaterThan(0);
    const errors = (await spectral('spectral-owasp.yaml')).filter((r) => r.severity === 0);
    expect(unexcused(errors, exceptions)).toEqual([]);
    // Every documented exception is still needed: one that no longer matches anything comes off the list.
    for (const rule of exceptions.keys())
      expect(
        errors.some((r) => r.code === rule),
        rule,
      ).toBe(true);
  });
});

describe('/openapi.json for a third party', () => {
  const procedures = Object.values(appRouter._def.procedures as unknown as Record<string, { _def: { meta?: Meta } }>)
    .map((p) => p._def.meta?.openapi)
    .filter((o): o is NonNullable<Meta['openapi']> => Boolean(o));

  it('says what every operation does: each procedure its own description, every operation one', () => {
    for (const o of procedures) expect(o.description?.length ?? 0, `${o.method} ${o.path}`).toBeGreaterThan(15);
    for (const [p, item] of Object.entries<any>(doc.paths))
      for (const [method, op] of Object.entries<any>(item)) {
        expect(op.description, `${method} ${p}`).toMatch(/\S.{15,}/s);
        // Who may call it: from the procedure builder, said by the plain route, or from its security.
        expect(op.description, `${method} ${p}`).toContain('**Who may call it:**');
      }
  });

  it('lists every tag an operation names, each with a description', () => {
    const listed = new Map<string, string>(
      doc.tags.map((t: { name: string; description: string }) => [t.name, t.description]),
    );
    for (const item of Object.values<any>(doc.paths))
      for (const op of Object.values<any>(item))
        for (const tag of op.tags) expect(listed.get(tag)?.length ?? 0, tag).toBeGreaterThan(10);
  });

  it('names the resources as reusable schemas, referenced; one Uuid schema instead of a pattern per id', () => {
    const names = Object.keys(doc.components.schemas);
    for (const name of [
      'User',
      'Workspace',
      'Member',
      'Invitation',
      'Plan',
      'Subscription',
      'Payment',
      'ApiKey',
      'Webhook',
      'WebhookDelivery',
      'Generation',
      'Template',
      'Release',
      'AuditLogEntry',
      'Error',
      'Uuid',
      'Timestamp',
      'AdminUserList',
      'PaymentList',
    ])
      expect(names).toContain(name);
    const text = JSON.stringify(doc);
    expect(text.split('"$ref":"#/components/schemas/Uuid"').length - 1).toBeGreaterThan(100);
    // The UUID pattern Zod writes is in the document once at most (the Uuid schema has its own).
    expect(text.split('[89abAB]').length - 1).toBe(0);
    expect(doc.info.license.identifier).toBeTruthy();
    expect(doc.info.contact.url).toBeTruthy();
  });

  it('bounds every request string, number and array (what the OWASP rules check, for inputs without exception)', async () => {
    const bounded = (await spectral('spectral-owasp.yaml')).filter(
      (r) =>
        r.severity === 0 &&
        /string-limit|integer-limit|integer-format|array-limit/.test(r.code) &&
        !scopes().answers(r),
    );
    expect(bounded.map((r) => `${r.code} at ${r.path.join('/')}`)).toEqual([]);
    // What the rules leave out: non-integer numbers, and maps (objects of any keys) need bounds too.
    const unbounded: string[] = [];
    const seen = new Set<string>();
    const walk = (value: unknown, where: string) => {
      if (Array.isArray(value)) return value.forEach((v, i) => walk(v, `${where}/${i}`));
      if (typeof value !== 'object' || value === null) return;
      const node = value as Record<string, any>;
      if (typeof node.$ref === 'string') {
        const name = node.$ref.split('/').pop()!;
        if (!seen.has(name)) {
          seen.add(name);
          walk(doc.components.schemas[name], name);
        }
      }
      if (node.type === 'number' && (node.minimum === undefined || node.maximum === undefined)) unbounded.push(where);
      if (typeof node.additionalProperties === 'object' && node.maxProperties === undefined) unbounded.push(where);
      for (const [k, v] of Object.entries(node)) walk(v, `${where}/${k}`);
    };
    for (const [p, item] of Object.entries<any>(doc.paths))
      for (const [method, op] of Object.entries<any>(item)) {
        walk(op.parameters, `${method} ${p} parameters`);
        walk(op.requestBody, `${method} ${p} body`);
      }
    expect(unbounded).toEqual([]);
  });

  it('declares the headers the limiter sends on the answers of rate-limited routes', () => {
    const login = doc.paths['/auth/login'].post.responses;
    for (const status of ['200', '400', '401', '429'])
      expect(Object.keys(login[status].headers), status).toEqual(
        expect.arrayContaining(['RateLimit', 'RateLimit-Policy', 'Access-Control-Allow-Origin']),
      );
    expect(login['429'].headers['Retry-After']).toEqual({ $ref: '#/components/headers/Retry-After' });
    expect(doc.paths['/health'].get.responses['200'].headers?.RateLimit).toBeUndefined();
  });

  it('documents every outbound webhook event with its envelope and the signature headers', () => {
    const events = Object.keys(doc.webhooks);
    expect(events).toContain('webhook.test');
    expect(events).toContain('member.added');
    for (const event of events) {
      const op = doc.webhooks[event].post;
      const names = op.parameters.map((p: { name: string }) => p.name);
      expect(names).toEqual(
        expect.arrayContaining(['X-Service-Signature', 'webhook-id', 'webhook-timestamp', 'webhook-signature']),
      );
      const ref: string = op.requestBody.content['application/json'].schema.$ref;
      const envelope = doc.components.schemas[ref.split('/').pop()!];
      expect(envelope.properties.event.const ?? envelope.properties.event.enum?.[0], event).toBe(event);
      expect(envelope.required).toEqual(expect.arrayContaining(['event', 'createdAt', 'workspaceId', 'data']));
    }
  });

  it("register's and login's examples are a valid sign-up and sign-in (tests/http/docs-browser.test.ts sends them)", () => {
    const example = (p: string) => {
      const schema = doc.paths[p].post.requestBody.content['application/json'].schema;
      return Object.fromEntries(Object.entries<any>(schema.properties).map(([k, v]) => [k, v.examples?.[0]]));
    };
    const register = example('/auth/register');
    expect(register).toEqual({ email: 'jane@example.com', password: expect.any(String), name: 'Jane Doe' });
    expect(registerInput.safeParse(register).success).toBe(true);
    expect(loginInput.safeParse(example('/auth/login')).success).toBe(true);
  });
});
