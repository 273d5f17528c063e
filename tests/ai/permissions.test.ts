// Who may use the AI routes: the workspace AI routes (path and active-workspace forms) for each role of an
// ACTIVE workspace (joined through real invitations), a caller from another workspace, an anonymous
// caller, and the members of a SUSPENDED workspace; and the platform route GET /admin/ai-usage. Expected
// outcomes are written out by hand (the role table: VIEWER holds ai.view only; MEMBER and above hold
// ai.generate, ai.view and ai.view_usage).
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, TEST_DEMO_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, login, registerAndLogin, type ApiResponse, type Session } from '../helpers/http.js';
import { createWorkspace, inviteAndJoin, upgradeWorkspace, type Role } from '../workspaces/helpers.js';
import { generationRows, tag, uniquePrompt } from './helpers.js';

let app: TestApp;
let fixture: string;
let sessions: Record<Role, Session>;
let outsider: Session;
let suspended: { id: string; owner: Session; member: Session };
let admin: Session;
let demoAdmin: Session;

/** A marker in every prompt of this file: GET /admin/ai-usage must never show it. */
const MARKER = `perm-marker-${tag()}`;

beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
  admin = await login(app.api, TEST_ADMIN.email, TEST_ADMIN.password);
  demoAdmin = await login(app.api, TEST_DEMO_ADMIN.email, TEST_DEMO_ADMIN.password);

  const owner = await registerAndLogin(app.api, { prefix: 'ai-perm-owner' });
  fixture = await createWorkspace(app, owner.accessToken, `AI permissions ${crypto.randomBytes(3).toString('hex')}`);
  // Four members: more than Lite's 3.
  await upgradeWorkspace(app, owner.accessToken, fixture);
  sessions = {
    OWNER: owner,
    ADMIN: await inviteAndJoin(app, owner.accessToken, fixture, 'ADMIN', 'ai-perm-admin'),
    MEMBER: await inviteAndJoin(app, owner.accessToken, fixture, 'MEMBER', 'ai-perm-member'),
    VIEWER: await inviteAndJoin(app, owner.accessToken, fixture, 'VIEWER', 'ai-perm-viewer'),
  };
  outsider = await registerAndLogin(app.api, { prefix: 'ai-perm-outsider' });

  const sOwner = await registerAndLogin(app.api, { prefix: 'ai-perm-s-owner' });
  const sId = await createWorkspace(app, sOwner.accessToken, `AI suspended ${crypto.randomBytes(3).toString('hex')}`);
  const sMember = await inviteAndJoin(app, sOwner.accessToken, sId, 'MEMBER', 'ai-perm-s-member');
  const moved = await app.api('POST', `/admin/workspaces/${sId}/suspend`, { token: admin.accessToken });
  if (moved.status !== 200) throw new Error(`suspend failed: ${moved.status} ${moved.text}`);
  suspended = { id: sId, owner: sOwner, member: sMember };
});
afterAll(() => app?.close());

type Call = (workspaceId: string, token: string | undefined) => Promise<ApiResponse>;
type Expect = 200 | 401 | 403 | 404 | 'WORKSPACE_UNAVAILABLE';

const prompt = () => uniquePrompt(MARKER);

interface RouteCase {
  label: string;
  call: Call;
  /** Outcome by role on the ACTIVE fixture. */
  roles: Record<Role, Expect>;
  /** Checks a 200 answer. */
  check(res: ApiResponse, workspaceId: string): void;
}

const generated = (res: ApiResponse, workspaceId: string) => {
  expect(res.body).toMatchObject({ workspaceId, status: 'SUCCEEDED' });
};
const listed = (res: ApiResponse) => {
  expect(Array.isArray(res.body.items)).toBe(true);
  expect(typeof res.body.total).toBe('number');
};
const usage = (res: ApiResponse, workspaceId: string) => {
  expect(res.body).toMatchObject({ workspaceId });
  expect(typeof res.body.limit).toBe('number');
};

const ALL: Record<Role, Expect> = { OWNER: 200, ADMIN: 200, MEMBER: 200, VIEWER: 200 };
const NOT_VIEWER: Record<Role, Expect> = { OWNER: 200, ADMIN: 200, MEMBER: 200, VIEWER: 403 };

const ROUTES: RouteCase[] = [
  {
    label: 'POST /workspaces/:workspaceId/ai/generate (ai.generate)',
    call: (id, token) => app.api('POST', `/workspaces/${id}/ai/generate`, { token, body: { prompt: prompt() } }),
    roles: NOT_VIEWER,
    check: generated,
  },
  {
    label: 'GET /workspaces/:workspaceId/ai/generations (ai.view)',
    call: (id, token) => app.api('GET', `/workspaces/${id}/ai/generations`, { token }),
    roles: ALL,
    check: listed,
  },
  {
    label: 'GET /workspaces/:workspaceId/ai/usage (ai.view_usage)',
    call: (id, token) => app.api('GET', `/workspaces/${id}/ai/usage`, { token }),
    roles: NOT_VIEWER,
    check: usage,
  },
  {
    label: 'POST /ai/generate with workspaceId in the body (ai.generate)',
    call: (id, token) => app.api('POST', '/ai/generate', { token, body: { prompt: prompt(), workspaceId: id } }),
    roles: NOT_VIEWER,
    check: generated,
  },
  {
    label: 'POST /ai/generate?workspaceId= (ai.generate)',
    call: (id, token) => app.api('POST', `/ai/generate?workspaceId=${id}`, { token, body: { prompt: prompt() } }),
    roles: NOT_VIEWER,
    check: generated,
  },
  {
    label: 'GET /ai/history?workspaceId= (ai.view)',
    call: (id, token) => app.api('GET', `/ai/history?workspaceId=${id}`, { token }),
    roles: ALL,
    check: listed,
  },
  {
    label: 'GET /ai/usage?workspaceId= (ai.view_usage)',
    call: (id, token) => app.api('GET', `/ai/usage?workspaceId=${id}`, { token }),
    roles: NOT_VIEWER,
    check: usage,
  },
];

function expectOutcome(res: ApiResponse, outcome: Expect, workspaceId: string, route: RouteCase) {
  switch (outcome) {
    case 200:
      expect(res.status, res.text).toBe(200);
      route.check(res, workspaceId);
      return;
    case 401:
      expectError(res, 401, 'UNAUTHORIZED');
      return;
    case 403:
      expectError(res, 403, 'PERMISSION_DENIED');
      return;
    case 404:
      expectError(res, 404, 'NOT_FOUND');
      return;
    case 'WORKSPACE_UNAVAILABLE':
      expectError(res, 403, 'WORKSPACE_UNAVAILABLE');
      return;
  }
}

for (const route of ROUTES) {
  describe(route.label, () => {
    for (const role of ['OWNER', 'ADMIN', 'MEMBER', 'VIEWER'] as const) {
      const outcome = route.roles[role];
      it(`${role}: ${outcome === 200 ? '200' : '403 PERMISSION_DENIED'}`, async () => {
        expectOutcome(await route.call(fixture, sessions[role].accessToken), outcome, fixture, route);
      });
    }
    it('a member of another workspace: 404 NOT_FOUND', async () => {
      expectOutcome(await route.call(fixture, outsider.accessToken), 404, fixture, route);
    });
    it('anonymous: 401 UNAUTHORIZED', async () => {
      expectOutcome(await route.call(fixture, undefined), 401, fixture, route);
    });
    it('the OWNER of a SUSPENDED workspace: 403 WORKSPACE_UNAVAILABLE', async () => {
      expectOutcome(
        await route.call(suspended.id, suspended.owner.accessToken),
        'WORKSPACE_UNAVAILABLE',
        suspended.id,
        route,
      );
    });
    it('a MEMBER of a SUSPENDED workspace: 403 WORKSPACE_UNAVAILABLE', async () => {
      expectOutcome(
        await route.call(suspended.id, suspended.member.accessToken),
        'WORKSPACE_UNAVAILABLE',
        suspended.id,
        route,
      );
    });
  });
}

describe('refused generations', () => {
  it('store nothing in the workspace: only OWNER, ADMIN and MEMBER generated there', async () => {
    const rows = await generationRows(app, fixture);
    const users = new Set(rows.map((r) => r.user_id));
    expect(users.has(sessions.VIEWER.userId)).toBe(false);
    expect(users.has(outsider.userId)).toBe(false);
    expect(await generationRows(app, suspended.id)).toHaveLength(0);
  });
});

describe('token-only AI routes', () => {
  for (const path of ['/ai/provider-status', '/ai/templates', '/ai/history', '/ai/usage']) {
    it(`GET ${path}: 401 UNAUTHORIZED without a token, 200 for any signed-in user (their active workspace)`, async () => {
      expectError(await app.api('GET', path), 401, 'UNAUTHORIZED');
      const res = await app.api('GET', path, { token: sessions.VIEWER.accessToken });
      expect(res.status, res.text).toBe(200);
    });
  }
  it('POST /ai/generate: 401 UNAUTHORIZED without a token, and a bad token is refused too', async () => {
    expectError(await app.api('POST', '/ai/generate', { body: { prompt: prompt() } }), 401, 'UNAUTHORIZED');
    expectError(
      await app.api('POST', '/ai/generate', { token: 'not-a-real-token', body: { prompt: prompt() } }),
      401,
      'UNAUTHORIZED',
    );
  });
});

describe('GET /admin/ai-usage (admin.ai_usage.view)', () => {
  const RECENT_FIELDS = [
    'id',
    'workspaceId',
    'userId',
    'provider',
    'model',
    'status',
    'totalTokens',
    'durationMs',
    'createdAt',
  ].sort();

  function expectAggregates(res: ApiResponse) {
    expect(res.status, res.text).toBe(200);
    const b = res.body;
    for (const k of ['generationsThisMonth', 'tokensThisMonth', 'generationsAllTime', 'failedThisMonth']) {
      expect(Number.isInteger(b.totals[k]), `totals.${k}`).toBe(true);
    }
    // Other test files generate too: this file's own generations are a lower bound.
    expect(b.totals.generationsThisMonth).toBeGreaterThanOrEqual(1);
    expect(b.totals.generationsAllTime).toBeGreaterThanOrEqual(b.totals.generationsThisMonth);
    expect(b.totals.tokensThisMonth).toBeGreaterThan(0);
    expect(b.byProvider.length).toBeGreaterThan(0);
    for (const p of b.byProvider) {
      expect(['MOCK', 'PROVIDER_A', 'PROVIDER_B']).toContain(p.provider);
      expect(typeof p.model).toBe('string');
      expect(p.generations).toBeGreaterThan(0);
    }
    expect(b.byWorkspace.length).toBeGreaterThan(0);
    for (const w of b.byWorkspace)
      expect(Object.keys(w).sort()).toEqual(['generations', 'name', 'tokens', 'workspaceId']);
    expect(b.recent.length).toBeGreaterThan(0);
    for (const r of b.recent) expect(Object.keys(r).sort()).toEqual(RECENT_FIELDS);
    // No prompt or output text anywhere in the answer.
    expect(res.text).not.toContain(MARKER);
    expect(res.text).not.toMatch(/"(prompt|output|systemPrompt)"/);
  }

  beforeAll(async () => {
    // At least one generation of this file before the admin reads (the route matrix above also makes some).
    const res = await app.api('POST', `/workspaces/${fixture}/ai/generate`, {
      token: sessions.OWNER.accessToken,
      body: { prompt: prompt() },
    });
    expect(res.status, res.text).toBe(200);
  });

  it('anonymous: 401 UNAUTHORIZED', async () => {
    expectError(await app.api('GET', '/admin/ai-usage'), 401, 'UNAUTHORIZED');
  });

  it('a normal user, even a workspace OWNER: 403 FORBIDDEN', async () => {
    expectError(await app.api('GET', '/admin/ai-usage', { token: sessions.OWNER.accessToken }), 403, 'FORBIDDEN');
    expectError(await app.api('GET', '/admin/ai-usage', { token: outsider.accessToken }), 403, 'FORBIDDEN');
  });

  it('the platform admin: 200 with totals, by provider and model, by workspace and recent records without prompt or output text', async () => {
    expectAggregates(await app.api('GET', '/admin/ai-usage', { token: admin.accessToken }));
  });

  it('the demo admin (read-only): 200 with the same aggregates', async () => {
    expectAggregates(await app.api('GET', '/admin/ai-usage', { token: demoAdmin.accessToken }));
  });

  it("counts a new generation in this month's totals", async () => {
    const before = (await app.api('GET', '/admin/ai-usage', { token: admin.accessToken })).body.totals;
    const res = await app.api('POST', `/workspaces/${fixture}/ai/generate`, {
      token: sessions.MEMBER.accessToken,
      body: { prompt: prompt() },
    });
    expect(res.status, res.text).toBe(200);
    const after = (await app.api('GET', '/admin/ai-usage', { token: admin.accessToken })).body.totals;
    expect(after.generationsThisMonth).toBeGreaterThanOrEqual(before.generationsThisMonth + 1);
    expect(after.tokensThisMonth).toBeGreaterThanOrEqual(before.tokensThisMonth + res.body.totalTokens);
    expect(after.generationsAllTime).toBeGreaterThanOrEqual(before.generationsAllTime + 1);
  });
});
