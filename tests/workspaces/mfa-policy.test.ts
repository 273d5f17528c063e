// A workspace that requires two-factor sign-in: who may turn it on, and then every route of the workspace
// (each /workspaces/{workspaceId} operation of /openapi.json, so a new route is covered as it lands) x
// each kind of caller, with the expected outcome written out per caller. API keys are not people: they
// keep working.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, login, registerAndLogin, type ApiResponse, type Session } from '../helpers/http.js';
import { enableMfa } from '../helpers/mfa.js';
import { createWorkspace, inviteAndJoin, upgradeWorkspace } from './helpers.js';

let app: TestApp;
let workspaceId: string;
let owner: Session;
let admin: Session;
let member: Session;
let viewer: Session;
let outsider: Session;
let platformAdmin: Session;

beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
  platformAdmin = await login(app.api, TEST_ADMIN.email, TEST_ADMIN.password);
  owner = await registerAndLogin(app.api, { prefix: 'pol-owner' });
  workspaceId = await createWorkspace(app, owner.accessToken, `Policy ${crypto.randomBytes(4).toString('hex')}`);
  await upgradeWorkspace(app, owner.accessToken, workspaceId);
  admin = await inviteAndJoin(app, owner.accessToken, workspaceId, 'ADMIN', 'pol-admin');
  member = await inviteAndJoin(app, owner.accessToken, workspaceId, 'MEMBER', 'pol-member');
  viewer = await inviteAndJoin(app, owner.accessToken, workspaceId, 'VIEWER', 'pol-viewer');
  outsider = await registerAndLogin(app.api, { prefix: 'pol-outsider' });
});
afterAll(() => app?.close());

const patch = (token: string, body: Record<string, unknown>) =>
  app.api('PATCH', `/workspaces/${workspaceId}`, { token, body });

describe('turning the policy on', () => {
  it('is refused to a MEMBER (PERMISSION_DENIED) and to an OWNER without 2FA (MFA_REQUIRED)', async () => {
    expectError(await patch(member.accessToken, { requireMfa: true }), 403, 'PERMISSION_DENIED');
    expectError(await patch(owner.accessToken, { requireMfa: true }), 403, 'MFA_REQUIRED');
    expectError(await patch(owner.accessToken, {}), 400, 'BAD_REQUEST');
    expectError(await patch(owner.accessToken, { requireMfa: 'yes' }), 400, 'BAD_REQUEST');
    expectError(await patch(owner.accessToken, { requireMfa: 'false' }), 400, 'BAD_REQUEST');
    const ws = await app.api('GET', `/workspaces/${workspaceId}`, { token: owner.accessToken });
    expect(ws.body.requireMfa).toBe(false);
  });

  it('is done by an ADMIN with 2FA (audited); the answer and GET show requireMfa', async () => {
    await enableMfa(app.api, owner.accessToken);
    await enableMfa(app.api, admin.accessToken);
    const res = await patch(admin.accessToken, { requireMfa: true });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: workspaceId, requireMfa: true });
    const audit = await app.api('GET', `/workspaces/${workspaceId}/audit-logs`, { token: owner.accessToken });
    expect(audit.body.items[0]).toMatchObject({ action: 'workspace.updated', metadata: { requireMfa: true } });
  });
});

// ------------------------------------------------------------------ every route x every caller

type Caller = 'OWNER with 2FA' | 'ADMIN with 2FA' | 'MEMBER without 2FA' | 'VIEWER without 2FA' | 'outsider';
const CALLERS: Caller[] = ['OWNER with 2FA', 'ADMIN with 2FA', 'MEMBER without 2FA', 'VIEWER without 2FA', 'outsider'];

/** What each caller gets on any route of the workspace. "passes": anything but the policy's refusal. */
const EXPECTED: Record<Caller, string> = {
  'OWNER with 2FA': 'passes',
  'ADMIN with 2FA': 'passes',
  'MEMBER without 2FA': '403 MFA_REQUIRED',
  'VIEWER without 2FA': '403 MFA_REQUIRED',
  // Not a member: the workspace stays hidden, policy or not.
  outsider: '404 NOT_FOUND',
};

const tokenOf = (caller: Caller) =>
  ({
    'OWNER with 2FA': owner,
    'ADMIN with 2FA': admin,
    'MEMBER without 2FA': member,
    'VIEWER without 2FA': viewer,
    outsider,
  })[caller].accessToken;

interface Operation {
  method: string;
  path: string;
  /** The operation takes multipart/form-data (an upload). */
  multipart: boolean;
}

/** Every operation under /workspaces/{workspaceId} in /openapi.json. */
async function workspaceOperations(): Promise<Operation[]> {
  const doc = await app.api('GET', '/openapi.json');
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.body.paths as Record<string, Record<string, unknown>>)) {
    if (!path.startsWith('/workspaces/{workspaceId}')) continue;
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const content = (op as { requestBody?: { content?: Record<string, unknown> } }).requestBody?.content ?? {};
      ops.push({ method: method.toUpperCase(), path, multipart: 'multipart/form-data' in content });
    }
  }
  return ops;
}

/** The operation's URL for this workspace; other ids are made up (the policy is checked before them). */
const urlOf = (op: Operation) =>
  op.path.replace('{workspaceId}', workspaceId).replace(/\{[^}]+\}/g, () => crypto.randomUUID());

/**
 * Reads only an OWNER may make (ownership.manage: the sign-in set-up of the workspace): an ADMIN with 2FA
 * passes the policy there and is then refused by the role, 403 PERMISSION_DENIED.
 */
const OWNER_ONLY_READS = new Set([
  '/workspaces/{workspaceId}/domains',
  '/workspaces/{workspaceId}/sso/connections',
  '/workspaces/{workspaceId}/scim/tokens',
  '/workspaces/{workspaceId}/scim/role-mappings',
]);

function expectOutcome(res: ApiResponse, expected: string, label: string) {
  if (expected === 'passes') {
    expect(res.status, `${label}: ${res.text.slice(0, 200)}`).not.toBe(401);
    expect((res.body as { code?: string } | undefined)?.code, label).not.toBe('MFA_REQUIRED');
    return;
  }
  const [status, code] = expected.split(' ');
  expectError(res, Number(status), code);
}

describe('with the policy on, every workspace route', () => {
  it('covers every /workspaces/{workspaceId} operation of the document (37 at the time of writing)', async () => {
    const ops = await workspaceOperations();
    expect(ops.length).toBeGreaterThanOrEqual(37);
    expect(ops).toContainEqual({ method: 'POST', path: '/workspaces/{workspaceId}/branding/logo', multipart: true });
    // The lifecycle routes too: restore, the one route open while a deletion waits, is no exception.
    expect(ops).toContainEqual({ method: 'POST', path: '/workspaces/{workspaceId}/restore', multipart: false });
  });

  for (const caller of CALLERS) {
    it(`${caller} → ${EXPECTED[caller]} on each route`, async () => {
      const ops = await workspaceOperations();
      for (const op of ops) {
        // An empty JSON body where one is taken: the policy answers before the input is read. The
        // passing callers get a GET of each read route only, so the fixture is not changed under the others.
        if (EXPECTED[caller] === 'passes' && op.method !== 'GET') continue;
        const res = await app.api(op.method, urlOf(op), {
          token: tokenOf(caller),
          ...(op.multipart ? { form: new FormData() } : {}),
          ...(!op.multipart && op.method !== 'GET' && op.method !== 'DELETE' ? { body: {} } : {}),
        });
        expectOutcome(res, EXPECTED[caller], `${caller} ${op.method} ${op.path}`);
        if (EXPECTED[caller] === 'passes' && !op.path.includes('{', '/workspaces/{workspaceId}'.length)) {
          if (caller === 'ADMIN with 2FA' && OWNER_ONLY_READS.has(op.path)) expectError(res, 403, 'PERMISSION_DENIED');
          else expect(res.status, `${caller} ${op.method} ${op.path}: ${res.text.slice(0, 200)}`).toBe(200);
        }
      }
    });
  }

  it('leaves the members their other workspaces, the list of workspaces and their account', async () => {
    const personal = (await app.api('GET', '/workspaces', { token: member.accessToken })).body.items.find(
      (w: { isPersonal: boolean }) => w.isPersonal,
    );
    expect((await app.api('GET', `/workspaces/${personal.id}`, { token: member.accessToken })).status).toBe(200);
    const list = await app.api('GET', '/workspaces', { token: member.accessToken });
    expect(list.body.items.map((w: { id: string }) => w.id)).toContain(workspaceId);
    expect((await app.api('GET', '/auth/me', { token: member.accessToken })).status).toBe(200);
  });

  it('lets API keys of the workspace keep working', async () => {
    const key = await app.api('POST', `/workspaces/${workspaceId}/api-keys`, {
      token: owner.accessToken,
      body: { name: 'CI', scopes: ['read'] },
    });
    expect(key.status, key.text).toBe(201);
    const res = await app.api('GET', '/public-api/workspace', { headers: { 'x-api-key': key.body.rawKey } });
    expect(res.status, res.text).toBe(200);
  });

  it('lets a member in once they turn 2FA on, and shuts an OWNER out when an admin resets theirs', async () => {
    await enableMfa(app.api, member.accessToken);
    expect((await app.api('GET', `/workspaces/${workspaceId}`, { token: member.accessToken })).status).toBe(200);

    const reset = await app.api('POST', `/admin/users/${owner.userId}/mfa/reset`, { token: platformAdmin.accessToken });
    expect(reset.status, reset.text).toBe(200);
    expectError(await app.api('GET', `/workspaces/${workspaceId}`, { token: owner.accessToken }), 403, 'MFA_REQUIRED');
  });

  it('turned off again, lets members without 2FA back in', async () => {
    const off = await patch(admin.accessToken, { requireMfa: false });
    expect(off.status, off.text).toBe(200);
    expect(off.body.requireMfa).toBe(false);
    expect((await app.api('GET', `/workspaces/${workspaceId}`, { token: viewer.accessToken })).status).toBe(200);
    expect((await app.api('GET', `/workspaces/${workspaceId}`, { token: owner.accessToken })).status).toBe(200);
  });
});
