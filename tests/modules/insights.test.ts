// GET /dashboard/insights?workspaceId= (spec: "Other named routes"): a workspace at a glance, with exact
// numbers after a known setup made over HTTP (members through invitations, a MOCK checkout to Pro, MOCK
// generations, API keys, webhooks and their test deliveries to a local receiver) plus a few dated rows
// that HTTP cannot make (generations of earlier days). Needs workspace.read (each section beyond the
// workspace and its members needs the permission that reads it elsewhere); non-members get 404.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, login, registerAndLogin, uniqueEmail, type Session } from '../helpers/http.js';
import { ledger } from '../helpers/secret-ledger.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { createWorkspace, invite, inviteAndJoin, upgradeWorkspace } from '../workspaces/helpers.js';

const hex = () => crypto.randomBytes(4).toString('hex');
const DAY = 86_400_000;
const dayOf = (d: Date) => d.toISOString().slice(0, 10);
/** The last 30 UTC days, oldest first, ending today. */
const last30Days = () => Array.from({ length: 30 }, (_, i) => dayOf(new Date(Date.now() - (29 - i) * DAY)));

interface Insights {
  workspace: { id: string; name: string; edition: string; plan: string | null };
  members: number;
  // Null for a role that may not read them (see 'who may read insights'); the owner's view is typed here.
  ai: { used: number; limit: number; remaining: number; perDay: Array<{ day: string; generations: number }> };
  apiKeys: number;
  webhooks: { active: number; deliveries30d: number; successRate: number | null };
  recentActivity: Array<{ action: string; createdAt: string }>;
}

/** System ceiling below Pro's 500, so the limit shown is this one. */
const SYSTEM_LIMIT = 50;

let app: TestApp;
let receiver: WebhookReceiver;
let owner: Session;
let member: Session;
let viewer: Session;
let outsider: Session;
const teamName = `Insights team ${hex()}`;
let teamId: string;
/** Audit actions of the team workspace in the order the setup caused them. */
const expectedActions: string[] = [];

async function insightsOf(token: string, workspaceId?: string): Promise<Insights> {
  const res = await app.api('GET', `/dashboard/insights${workspaceId ? `?workspaceId=${workspaceId}` : ''}`, { token });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

async function generate(s: Session, workspaceId: string) {
  const res = await app.api('POST', '/ai/generate', {
    token: s.accessToken,
    body: { prompt: `Write a tagline for product ${hex()}`, workspaceId },
  });
  if (res.status !== 200) throw new Error(`generate failed: ${res.status} ${res.text}`);
}

async function insertGeneration(
  workspaceId: string,
  fields: { createdAt: Date; status?: 'SUCCEEDED' | 'FAILED'; isSample?: boolean },
) {
  await app.deps.db
    .insertInto('ai_generations')
    .values({
      workspace_id: workspaceId,
      user_id: owner.userId,
      template_id: null,
      provider: 'MOCK',
      model: 'mock-writer-1',
      prompt: 'An earlier generation',
      system_prompt: null,
      temperature: null,
      output: 'Output of an earlier day.',
      status: fields.status ?? 'SUCCEEDED',
      error_code: fields.status === 'FAILED' ? 'AI_PROVIDER_ERROR' : null,
      is_sample: fields.isSample ?? false,
      created_at: fields.createdAt,
    })
    .execute();
}

beforeAll(async () => {
  [app, receiver] = await Promise.all([
    startTestApp({
      RATE_LIMIT_ENABLED: 'false',
      AI_MONTHLY_GENERATION_LIMIT: String(SYSTEM_LIMIT),
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      WEBHOOK_MAX_RETRIES: '0',
    }),
    WebhookReceiver.start(),
  ]);
  owner = await registerAndLogin(app.api, { prefix: 'insights-owner' });
  outsider = await registerAndLogin(app.api, { prefix: 'insights-outsider' });

  teamId = await createWorkspace(app, owner.accessToken, teamName);
  expectedActions.push('workspace.created');
  await upgradeWorkspace(app, owner.accessToken, teamId, 'pro');
  expectedActions.push('billing.plan_changed');
  member = await inviteAndJoin(app, owner.accessToken, teamId, 'MEMBER', 'insights-member');
  expectedActions.push('member.invited', 'member.joined');
  viewer = await inviteAndJoin(app, owner.accessToken, teamId, 'VIEWER', 'insights-viewer');
  expectedActions.push('member.invited', 'member.joined');
  // An invitation nobody accepted: not a member.
  await invite(app, owner.accessToken, teamId, uniqueEmail('insights-pending'), 'MEMBER');
  expectedActions.push('member.invited');

  // Generations: three by the owner and one by the member this month; one in the owner's other workspace.
  for (let i = 0; i < 3; i++) await generate(owner, teamId);
  await generate(member, teamId);
  await generate(owner, owner.workspaceId);

  // API keys: three created, one revoked.
  const keys: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await app.api('POST', `/workspaces/${teamId}/api-keys`, {
      token: owner.accessToken,
      body: { name: `key ${i}`, scopes: ['read'] },
    });
    if (res.status !== 201) throw new Error(`api key failed: ${res.status} ${res.text}`);
    ledger.sent(res.body.rawKey, 'an API key');
    keys.push(res.body.id);
    expectedActions.push('api_key.created');
  }
  const revoked = await app.api('DELETE', `/workspaces/${teamId}/api-keys/${keys[0]}`, { token: owner.accessToken });
  if (revoked.status !== 200) throw new Error(`revoke failed: ${revoked.status} ${revoked.text}`);
  expectedActions.push('api_key.revoked');

  // Webhooks: two created, one switched off; four test deliveries of the active one, the last refused
  // for good (410), so three of four succeeded.
  const hooks: string[] = [];
  for (let i = 0; i < 2; i++) {
    const res = await app.api('POST', `/workspaces/${teamId}/webhooks`, {
      token: owner.accessToken,
      body: { name: `hook ${i}`, url: receiver.url(`/hook-${i}`), events: ['webhook.test'] },
    });
    if (res.status !== 201) throw new Error(`webhook failed: ${res.status} ${res.text}`);
    ledger.sent(res.body.secret, 'a webhook signing secret');
    hooks.push(res.body.id);
    expectedActions.push('webhook.created');
  }
  const off = await app.api('PATCH', `/workspaces/${teamId}/webhooks/${hooks[1]}`, {
    token: owner.accessToken,
    body: { isActive: false },
  });
  if (off.status !== 200) throw new Error(`disable failed: ${off.status} ${off.text}`);
  expectedActions.push('webhook.updated');
  receiver.reply([{ status: 200 }, { status: 200 }, { status: 204 }, { status: 410 }]);
  const outcomes: string[] = [];
  for (let i = 0; i < 4; i++) {
    const res = await app.api('POST', `/workspaces/${teamId}/webhooks/${hooks[0]}/test`, { token: owner.accessToken });
    if (res.status !== 200) throw new Error(`test delivery failed: ${res.status} ${res.text}`);
    outcomes.push(res.body.status);
  }
  if (outcomes.join() !== 'success,success,success,failed')
    throw new Error(`unexpected delivery outcomes: ${outcomes.join()}`);

  // Earlier days (HTTP cannot date a generation): one three days ago counts in its day; one 40 days ago,
  // a failed one and a sample do not count.
  await insertGeneration(teamId, { createdAt: new Date(Date.now() - 3 * DAY) });
  await insertGeneration(teamId, { createdAt: new Date(Date.now() - 40 * DAY) });
  await insertGeneration(teamId, { createdAt: new Date(), status: 'FAILED' });
  await insertGeneration(teamId, { createdAt: new Date(), isSample: true });
});
afterAll(async () => {
  await Promise.all([app?.close(), receiver?.close()]);
});

describe('GET /dashboard/insights after a known setup', () => {
  it('names the workspace, its plan and edition', async () => {
    const i = await insightsOf(owner.accessToken, teamId);
    expect(i.workspace).toEqual({ id: teamId, name: teamName, edition: 'PRO', plan: 'Pro' });
  });

  it('counts the members (an unaccepted invitation is not one)', async () => {
    expect((await insightsOf(owner.accessToken, teamId)).members).toBe(3);
  });

  it("gives this month's AI usage against the limit (the smaller of the plan's and the system's)", async () => {
    const i = await insightsOf(owner.accessToken, teamId);
    expect({ used: i.ai.used, limit: i.ai.limit, remaining: i.ai.remaining }).toEqual({
      used: 4,
      limit: SYSTEM_LIMIT,
      remaining: SYSTEM_LIMIT - 4,
    });
  });

  it('agrees with GET /ai/usage of the same workspace', async () => {
    const i = await insightsOf(owner.accessToken, teamId);
    const usage = await app.api('GET', `/ai/usage?workspaceId=${teamId}`, { token: owner.accessToken });
    expect(usage.status).toBe(200);
    expect({ used: i.ai.used, limit: i.ai.limit, remaining: i.ai.remaining }).toEqual({
      used: usage.body.used,
      limit: usage.body.limit,
      remaining: usage.body.remaining,
    });
  });

  it('gives generations per day for 30 days: 30 entries, oldest first, ending today', async () => {
    const { perDay } = (await insightsOf(owner.accessToken, teamId)).ai;
    expect(perDay).toHaveLength(30);
    expect(perDay.map((d) => d.day)).toEqual(last30Days());
  });

  it('counts successful, non-sample generations on the day they were made, and none on any other day', async () => {
    const { perDay } = (await insightsOf(owner.accessToken, teamId)).ai;
    const today = dayOf(new Date());
    const threeDaysAgo = dayOf(new Date(Date.now() - 3 * DAY));
    // Whatever the shape of the other days (the 30-entry test above covers it), only these two count.
    const nonZero = Object.fromEntries(perDay.filter((d) => d.generations !== 0).map((d) => [d.day, d.generations]));
    expect(nonZero).toEqual({ [threeDaysAgo]: 1, [today]: 4 });
    for (const d of perDay) expect(last30Days(), d.day).toContain(d.day);
  });

  it('counts the API keys that are not revoked', async () => {
    expect((await insightsOf(owner.accessToken, teamId)).apiKeys).toBe(2);
  });

  it('counts the active webhooks, the finished deliveries of 30 days and their success rate', async () => {
    expect((await insightsOf(owner.accessToken, teamId)).webhooks).toEqual({
      active: 1,
      deliveries30d: 4,
      successRate: 0.75,
    });
  });

  it('lists the recent audit events of the workspace, newest first, at most 10', async () => {
    const { recentActivity } = await insightsOf(owner.accessToken, teamId);
    expect(recentActivity.map((a) => a.action)).toEqual([...expectedActions].reverse().slice(0, 10));
    const times = recentActivity.map((a) => Date.parse(a.createdAt));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    for (const t of times) expect(Date.now() - t).toBeLessThan(10 * 60_000);
  });

  it('shows nothing of the workspace in another workspace of the same owner', async () => {
    const personal = await insightsOf(owner.accessToken, owner.workspaceId);
    expect(personal.workspace).toMatchObject({ id: owner.workspaceId, edition: 'LITE', plan: 'Lite' });
    expect(personal.members).toBe(1);
    expect(personal.ai).toMatchObject({ used: 1, limit: 20, remaining: 19 });
    expect(personal.apiKeys).toBe(0);
    expect(personal.webhooks).toEqual({ active: 0, deliveries30d: 0, successRate: null });
    expect(personal.recentActivity.map((a) => a.action)).not.toContain('api_key.created');
  });

  it("without workspaceId answers the caller's active workspace", async () => {
    const i = await insightsOf(owner.accessToken);
    expect(i.workspace.id).toBe(owner.workspaceId);
  });
});

describe('a new workspace', () => {
  let fresh: Session;
  beforeAll(async () => {
    fresh = await registerAndLogin(app.api, { prefix: 'insights-fresh' });
  });

  it('starts at one member, Lite, no usage, no keys, no webhooks and no success rate', async () => {
    const s = fresh;
    const i = await insightsOf(s.accessToken, s.workspaceId);
    expect(i.workspace).toMatchObject({ id: s.workspaceId, edition: 'LITE', plan: 'Lite' });
    expect(i.members).toBe(1);
    expect({ used: i.ai.used, limit: i.ai.limit, remaining: i.ai.remaining }).toEqual({
      used: 0,
      limit: 20,
      remaining: 20,
    });
    expect(i.apiKeys).toBe(0);
    expect(i.webhooks).toEqual({ active: 0, deliveries30d: 0, successRate: null });
  });

  it('shows 30 days of zero generations', async () => {
    const i = await insightsOf(fresh.accessToken, fresh.workspaceId);
    expect(i.ai.perDay).toEqual(last30Days().map((day) => ({ day, generations: 0 })));
  });
});

describe('who may read insights', () => {
  it('every member, down to a VIEWER (workspace.read), sees the workspace and its member count', async () => {
    const byOwner = await insightsOf(owner.accessToken, teamId);
    for (const s of [member, viewer]) {
      const i = await insightsOf(s.accessToken, teamId);
      expect({ workspace: i.workspace, members: i.members }).toEqual({
        workspace: byOwner.workspace,
        members: byOwner.members,
      });
    }
  });

  it('shows each other section only to a role that may read it elsewhere: AI usage to a MEMBER, keys, webhooks and activity to OWNER and ADMIN', async () => {
    const byOwner = await insightsOf(owner.accessToken, teamId);
    expect(byOwner.ai).not.toBeNull();
    expect(byOwner.apiKeys).not.toBeNull();
    expect(byOwner.webhooks).not.toBeNull();
    expect(byOwner.recentActivity).not.toBeNull();
    const byMember = await insightsOf(member.accessToken, teamId);
    expect(byMember.ai).toEqual(byOwner.ai);
    expect({ apiKeys: byMember.apiKeys, webhooks: byMember.webhooks, recentActivity: byMember.recentActivity }).toEqual(
      { apiKeys: null, webhooks: null, recentActivity: null },
    );
    const byViewer = await insightsOf(viewer.accessToken, teamId);
    expect({
      ai: byViewer.ai,
      apiKeys: byViewer.apiKeys,
      webhooks: byViewer.webhooks,
      recentActivity: byViewer.recentActivity,
    }).toEqual({
      ai: null,
      apiKeys: null,
      webhooks: null,
      recentActivity: null,
    });
    // As elsewhere: the viewer may not read AI usage or the audit log by their own routes either.
    expectError(
      await app.api('GET', `/workspaces/${teamId}/ai/usage`, { token: viewer.accessToken }),
      403,
      'PERMISSION_DENIED',
    );
    expectError(
      await app.api('GET', `/workspaces/${teamId}/audit-logs`, { token: member.accessToken }),
      403,
      'PERMISSION_DENIED',
    );
  });

  it('a non-member is refused with 404 NOT_FOUND and learns nothing of the workspace', async () => {
    const res = await app.api('GET', `/dashboard/insights?workspaceId=${teamId}`, { token: outsider.accessToken });
    expectError(res, 404, 'NOT_FOUND');
    expect(res.text).not.toContain(teamName);
  });

  it('a platform admin who is not a member is refused too', async () => {
    const admin = await login(app.api, TEST_ADMIN.email, TEST_ADMIN.password);
    expectError(
      await app.api('GET', `/dashboard/insights?workspaceId=${teamId}`, { token: admin.accessToken }),
      404,
      'NOT_FOUND',
    );
  });

  it('an anonymous caller gets 401 UNAUTHORIZED', async () => {
    expectError(await app.api('GET', `/dashboard/insights?workspaceId=${teamId}`), 401, 'UNAUTHORIZED');
    expectError(await app.api('GET', '/dashboard/insights'), 401, 'UNAUTHORIZED');
  });

  it('a workspaceId that is not a UUID is a 400', async () => {
    expectError(
      await app.api('GET', '/dashboard/insights?workspaceId=team', { token: owner.accessToken }),
      400,
      'BAD_REQUEST',
    );
  });

  it('a member of a suspended workspace gets 403 WORKSPACE_UNAVAILABLE', async () => {
    const admin = await login(app.api, TEST_ADMIN.email, TEST_ADMIN.password);
    const s = await registerAndLogin(app.api, { prefix: 'insights-suspended' });
    const moved = await app.api('POST', `/admin/workspaces/${s.workspaceId}/suspend`, { token: admin.accessToken });
    expect(moved.status, moved.text).toBe(200);
    expectError(
      await app.api('GET', `/dashboard/insights?workspaceId=${s.workspaceId}`, { token: s.accessToken }),
      403,
      'WORKSPACE_UNAVAILABLE',
    );
  });
});
