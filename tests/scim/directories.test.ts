// The provisioning sequences of Okta and Microsoft Entra ID, as their public provisioning docs describe them,
// kept as JSON under fixtures/ and replayed end to end against a fresh workspace: each step's status and
// answer, and what the person notices (their membership's state, their role from the group mappings).
// The account the directory made is then checked: verified, no password, no personal workspace.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { hex, scimWorkspace } from './helpers.js';

interface Step {
  name: string;
  method: string;
  path: string;
  body?: unknown;
  status: number;
  match?: Record<string, unknown>;
  /** Variables to remember from the answer: name -> dotted path. */
  save?: Record<string, string>;
  /** The state of the provisioned membership after the step (null: no membership). */
  membership?: 'ACTIVE' | 'SUSPENDED' | null;
  /** The provisioned member's role after the step. */
  role?: string;
}

interface Fixture {
  directory: string;
  roleMappings: Array<{ group: string; role: string }>;
  steps: Step[];
}

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = ['okta.json', 'entra.json'].map(
  (file) => JSON.parse(fs.readFileSync(path.join(here, 'fixtures', file), 'utf8')) as Fixture,
);

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.close());

/** `value` with every `{{name}}` of a string replaced by `vars[name]`. */
function fill<T>(value: T, vars: Record<string, string>): T {
  const text = JSON.stringify(value).replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
    if (!(name in vars)) throw new Error(`no value for {{${name}}}`);
    return vars[name];
  });
  return JSON.parse(text) as T;
}

describe.each(fixtures.map((f) => [f.directory, f] as const))('%s provisioning sequence', (_name, fixture) => {
  it('replays end to end', async () => {
    const ws = await scimWorkspace(app);
    const vars: Record<string, string> = { domain: ws.domain, suffix: hex() };
    const mappings = await app.api('PUT', `/workspaces/${ws.workspaceId}/scim/role-mappings`, {
      token: ws.owner.accessToken,
      body: { mappings: fill(fixture.roleMappings, vars) },
    });
    expect(mappings.status).toBe(200);

    for (const raw of fixture.steps) {
      const step = fill(raw, vars);
      const res = await ws.scim(step.method, step.path, step.body);
      expect(res.status, `${step.name}: ${res.text.slice(0, 400)}`).toBe(step.status);
      expect(res.headers.get('content-type') ?? 'application/scim+json').toContain('application/scim+json');
      if (step.match) expect(res.body, step.name).toMatchObject(step.match);
      for (const [name, at] of Object.entries(step.save ?? {}))
        vars[name] = at.split('.').reduce<any>((o, k) => o?.[k], res.body);
      if (step.membership !== undefined || step.role) {
        const row = await app.deps.db
          .selectFrom('workspace_members')
          .select(['status', 'role'])
          .where('id', '=', vars.userId)
          .executeTakeFirst();
        if (step.membership !== undefined) expect(row?.status ?? null, step.name).toBe(step.membership);
        if (step.role) expect(row?.role, step.name).toBe(step.role);
      }
    }

    const account = await app.deps.db
      .selectFrom('users')
      .select(['id', 'password_hash', 'email_verified_at', 'provisioned_by_workspace_id'])
      .where('provisioned_by_workspace_id', '=', ws.workspaceId)
      .execute();
    expect(account).toHaveLength(1);
    expect(account[0].password_hash).toBeNull();
    expect(account[0].email_verified_at).not.toBeNull();
    const personal = await app.deps.db
      .selectFrom('workspace_members as m')
      .innerJoin('workspaces as w', 'w.id', 'm.workspace_id')
      .select('w.id')
      .where('m.user_id', '=', account[0].id)
      .where('w.is_personal', '=', true)
      .execute();
    expect(personal).toEqual([]);
    const audited = await app.deps.db
      .selectFrom('audit_logs')
      .select('action')
      .where('workspace_id', '=', ws.workspaceId)
      .where('action', 'like', 'scim.%')
      .where('actor_user_id', 'is', null)
      .execute();
    expect(audited.length).toBeGreaterThanOrEqual(
      fixture.steps.filter((s) => s.method !== 'GET' && s.status < 300).length,
    );
  });
});
