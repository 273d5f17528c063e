// Monthly limits, counted atomically: concurrent generations never pass the workspace limit or the cap of a
// test account (AI_TEST_USER_EMAILS); demo accounts (AI_DEMO_RESTRICTED_EMAILS) are refused real
// generation and shown sample history; a plan upgrade raises the limit up to the system ceiling.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, uniqueEmail, type Session } from '../helpers/http.js';
import { createWorkspace, registerAs, upgradeWorkspace } from '../workspaces/helpers.js';
import {
  domainEvents,
  generate,
  generateOk,
  generationRows,
  providerStatusOf,
  subscribeWebhook,
  tally,
  thisMonth,
  uniquePrompt,
  usageOf,
  userCounter,
  workspaceCounter,
} from './helpers.js';

const TESTER = uniqueEmail('ai-tester');
const TESTER_MULTI = uniqueEmail('ai-tester-multi');
const TESTER_FULL = uniqueEmail('ai-tester-full');
const DEMO = uniqueEmail('ai-demo');
const DEMO_OPEN = uniqueEmail('ai-demo-open');
const DEMO_RACE = uniqueEmail('ai-demo-race');

let app: TestApp;
/** Same accounts, sample history of demo accounts switched off. */
let noSamplesApp: TestApp;
/** Demo accounts listed, but real generation not blocked. */
let unblockedApp: TestApp;

const common = {
  RATE_LIMIT_ENABLED: 'false',
  AI_TEST_USER_EMAILS: `${TESTER},${TESTER_MULTI},${TESTER_FULL}`,
  AI_TEST_USER_MONTHLY_LIMIT: '5',
  AI_DEMO_RESTRICTED_EMAILS: `${DEMO},${DEMO_OPEN},${DEMO_RACE}`,
  // A webhook is subscribed only so that events are written: its deliveries are recorded, not sent.
  WEBHOOK_DELIVERY_ENABLED: 'false',
};

beforeAll(async () => {
  [app, noSamplesApp, unblockedApp] = await Promise.all([
    startTestApp({ ...common, AI_DEMO_BLOCK_REAL_GENERATION: 'true', AI_DEMO_SHOW_SAMPLE_HISTORY: 'true' }),
    startTestApp({ ...common, AI_DEMO_BLOCK_REAL_GENERATION: 'true', AI_DEMO_SHOW_SAMPLE_HISTORY: 'false' }),
    startTestApp({ ...common, AI_DEMO_BLOCK_REAL_GENERATION: 'false', AI_DEMO_SHOW_SAMPLE_HISTORY: 'true' }),
  ]);
});
afterAll(async () => {
  await Promise.all([app?.close(), noSamplesApp?.close(), unblockedApp?.close()]);
});

const register = (prefix: string) => registerAs(app, uniqueEmail(prefix));

describe('workspace monthly limit', () => {
  it('lets exactly 20 of 40 concurrent generations through on a fresh Lite workspace (limit 20), refusing the rest with AI_MONTHLY_LIMIT_REACHED', async () => {
    const owner = await register('ai-race');
    await subscribeWebhook(app, owner);
    const responses = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        generate(app, owner.accessToken, { prompt: uniquePrompt(`Race ${i}`), workspaceId: owner.workspaceId }),
      ),
    );
    expect(tally(responses)).toEqual({ '200': 20, '403 AI_MONTHLY_LIMIT_REACHED': 20 });
    for (const r of responses.filter((x) => x.status !== 200)) expectError(r, 403, 'AI_MONTHLY_LIMIT_REACHED');

    expect(await workspaceCounter(app, owner.workspaceId)).toBe(20);
    const rows = await generationRows(app, owner.workspaceId);
    expect(rows).toHaveLength(20);
    expect(rows.every((r) => r.status === 'SUCCEEDED')).toBe(true);
    expect(await domainEvents(app, owner.workspaceId, 'ai.generation.completed')).toHaveLength(20);
    const usage = await usageOf(app, owner.accessToken);
    expect(usage).toMatchObject({ used: 20, limit: 20, limitSource: 'PLAN', remaining: 0 });
    // The successes' own usage figures never exceed the limit.
    expect(Math.max(...responses.filter((r) => r.status === 200).map((r) => r.body.usage.used))).toBe(20);
  });

  it('holds each limit when several workspaces race at once, each success with its own usage figure and its tokens counted', async () => {
    // Three fresh Lite workspaces (limit 20), 30 concurrent generations each, all at the same time: the
    // requests of different workspaces share batched statements but never one another's quota.
    const owners = await Promise.all([register('ai-race-a'), register('ai-race-b'), register('ai-race-c')]);
    const responses = await Promise.all(
      owners.map((o) =>
        Promise.all(
          Array.from({ length: 30 }, (_, i) =>
            generate(app, o.accessToken, { prompt: uniquePrompt(`Many ${i}`), workspaceId: o.workspaceId }),
          ),
        ),
      ),
    );
    for (const [i, owner] of owners.entries()) {
      const mine = responses[i];
      expect(tally(mine)).toEqual({ '200': 20, '403 AI_MONTHLY_LIMIT_REACHED': 10 });
      const used = mine.filter((r) => r.status === 200).map((r) => r.body.usage.used as number);
      expect(used.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, n) => n + 1));
      expect(mine.filter((r) => r.status === 200).every((r) => r.body.workspaceId === owner.workspaceId)).toBe(true);
      expect(await workspaceCounter(app, owner.workspaceId)).toBe(20);
      const rows = await generationRows(app, owner.workspaceId);
      expect(rows).toHaveLength(20);
      const usage = await usageOf(app, owner.accessToken);
      const tokens = rows.reduce((sum, r) => sum + r.prompt_tokens + r.completion_tokens, 0);
      expect(usage).toMatchObject({ used: 20, remaining: 0 });
      expect(usage.tokens).toBe(tokens);
    }
  });

  it('refuses the next generation once the limit is used up, with a message naming the limit', async () => {
    const owner = await register('ai-full');
    await app.deps.db
      .insertInto('ai_usage_counters')
      .values({ workspace_id: owner.workspaceId, period: thisMonth().period, generations: 20 })
      .execute();
    const err = expectError(
      await generate(app, owner.accessToken, { prompt: uniquePrompt() }),
      403,
      'AI_MONTHLY_LIMIT_REACHED',
    );
    expect(err.message).toContain('20');
    expect(await generationRows(app, owner.workspaceId)).toHaveLength(0);
    expect(await workspaceCounter(app, owner.workspaceId)).toBe(20);
  });

  it('after an upgrade to Pro, the limit is min(500, AI_MONTHLY_GENERATION_LIMIT = 100) = 100 with source SYSTEM', async () => {
    const owner = await register('ai-pro');
    const ws = await createWorkspace(app, owner.accessToken, `AI pro ${crypto.randomBytes(3).toString('hex')}`);
    expect(await usageOf(app, owner.accessToken, ws)).toMatchObject({ limit: 20, limitSource: 'PLAN' });
    await upgradeWorkspace(app, owner.accessToken, ws, 'pro');
    expect(await usageOf(app, owner.accessToken, ws)).toMatchObject({
      used: 0,
      limit: 100,
      limitSource: 'SYSTEM',
      remaining: 100,
    });
    const g = await generateOk(app, owner.accessToken, { prompt: uniquePrompt(), workspaceId: ws });
    expect(g.usage).toEqual({ used: 1, limit: 100, remaining: 99 });
  });
});

describe('test accounts (AI_TEST_USER_EMAILS)', () => {
  let tester: Session;
  beforeAll(async () => {
    tester = await registerAs(app, TESTER);
  });

  it('are flagged in provider status', async () => {
    expect(await providerStatusOf(app, tester.accessToken)).toMatchObject({ testAccount: true, demoRestricted: false });
  });

  it('let exactly 5 of 12 concurrent generations through, refusing the rest with TEST_ACCOUNT_LIMIT_REACHED', async () => {
    const responses = await Promise.all(
      Array.from({ length: 12 }, (_, i) => generate(app, tester.accessToken, { prompt: uniquePrompt(`Tester ${i}`) })),
    );
    expect(tally(responses)).toEqual({ '200': 5, '403 TEST_ACCOUNT_LIMIT_REACHED': 7 });
    for (const r of responses.filter((x) => x.status !== 200)) {
      const err = expectError(r, 403, 'TEST_ACCOUNT_LIMIT_REACHED');
      expect(err.message).toMatch(/test account limit/i);
    }
    expect(await userCounter(app, tester.userId)).toBe(5);
    // Refused requests hold no workspace quota either.
    expect(await workspaceCounter(app, tester.workspaceId)).toBe(5);
    expect(await generationRows(app, tester.workspaceId)).toHaveLength(5);
  });

  it('report the test-account cap as their limit once it is the smaller one', async () => {
    expect(await usageOf(app, tester.accessToken)).toMatchObject({
      used: 5,
      limit: 5,
      limitSource: 'TEST_ACCOUNT',
      remaining: 0,
    });
  });

  it('count their cap across all their workspaces', async () => {
    const multi = await registerAs(app, TESTER_MULTI);
    const other = await createWorkspace(
      app,
      multi.accessToken,
      `AI tester second ${crypto.randomBytes(3).toString('hex')}`,
    );
    for (let i = 0; i < 3; i++) await generateOk(app, multi.accessToken, { prompt: uniquePrompt() });
    for (let i = 0; i < 2; i++)
      await generateOk(app, multi.accessToken, { prompt: uniquePrompt(), workspaceId: other });

    const err = expectError(
      await generate(app, multi.accessToken, { prompt: uniquePrompt(), workspaceId: other }),
      403,
      'TEST_ACCOUNT_LIMIT_REACHED',
    );
    expect(err.message).toMatch(/test account limit/i);
    expectError(await generate(app, multi.accessToken, { prompt: uniquePrompt() }), 403, 'TEST_ACCOUNT_LIMIT_REACHED');
    expect(await workspaceCounter(app, multi.workspaceId)).toBe(3);
    expect(await workspaceCounter(app, other)).toBe(2);
    expect(await userCounter(app, multi.userId)).toBe(5);
  });

  it('keep their cap when their workspace refuses the generation for its own limit', async () => {
    const full = await registerAs(app, TESTER_FULL);
    await app.deps.db
      .insertInto('ai_usage_counters')
      .values({ workspace_id: full.workspaceId, period: thisMonth().period, generations: 20 })
      .execute();
    expectError(await generate(app, full.accessToken, { prompt: uniquePrompt() }), 403, 'AI_MONTHLY_LIMIT_REACHED');
    expect(await userCounter(app, full.userId)).toBe(0);
    expect(await workspaceCounter(app, full.workspaceId)).toBe(20);
  });

  it('leave ordinary accounts on their plan limit', async () => {
    const ordinary = await register('ai-ordinary');
    expect(await usageOf(app, ordinary.accessToken)).toMatchObject({ limit: 20, limitSource: 'PLAN' });
    expect(await providerStatusOf(app, ordinary.accessToken)).toMatchObject({
      testAccount: false,
      demoRestricted: false,
    });
  });
});

describe('demo accounts (AI_DEMO_RESTRICTED_EMAILS)', () => {
  let demo: Session;
  beforeAll(async () => {
    demo = await registerAs(app, DEMO);
  });

  it('are refused generation with DEMO_GENERATION_DISABLED, a message pointing to the sample history, and nothing counted', async () => {
    const err = expectError(
      await generate(app, demo.accessToken, { prompt: uniquePrompt() }),
      403,
      'DEMO_GENERATION_DISABLED',
    );
    expect(err.message).toMatch(/demo/i);
    expect(err.message).toMatch(/history/i);
    const onPath = await app.api('POST', `/workspaces/${demo.workspaceId}/ai/generate`, {
      token: demo.accessToken,
      body: { prompt: uniquePrompt() },
    });
    expectError(onPath, 403, 'DEMO_GENERATION_DISABLED');
    expect(await workspaceCounter(app, demo.workspaceId)).toBe(0);
    expect((await generationRows(app, demo.workspaceId)).filter((r) => !r.is_sample)).toHaveLength(0);
  });

  it('see demoRestricted true in provider status, with the demo flags', async () => {
    expect(await providerStatusOf(app, demo.accessToken)).toMatchObject({
      provider: 'MOCK',
      demoRestricted: true,
      blockRealGeneration: true,
      showSampleHistory: true,
    });
  });

  it('see sample generations (isSample true) in their history when AI_DEMO_SHOW_SAMPLE_HISTORY is true', async () => {
    const res = await app.api('GET', '/ai/history', { token: demo.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(res.body.items.length).toBeGreaterThan(0);
    expect(res.body.total).toBe(res.body.items.length);
    for (const g of res.body.items) {
      expect(g).toMatchObject({ isSample: true, status: 'SUCCEEDED', workspaceId: demo.workspaceId });
      expect(g.prompt.length).toBeGreaterThan(0);
      expect(g.output.length).toBeGreaterThan(0);
    }
    // Seeing them twice does not add more.
    const again = await app.api('GET', `/workspaces/${demo.workspaceId}/ai/generations`, { token: demo.accessToken });
    expect(again.body.total).toBe(res.body.total);
  });

  it('create the sample history once, even when their first visits arrive together', async () => {
    const racer = await registerAs(app, DEMO_RACE);
    const first = await Promise.all(
      Array.from({ length: 8 }, () => app.api('GET', '/ai/history', { token: racer.accessToken })),
    );
    for (const r of first) expect(r.status, r.text).toBe(200);
    const settled = await app.api('GET', '/ai/history', { token: racer.accessToken });
    const prompts = settled.body.items.map((g: { prompt: string }) => g.prompt);
    expect(prompts.length).toBeGreaterThan(0);
    expect(new Set(prompts).size, 'each sample appears once').toBe(prompts.length);
    expect(first.map((r) => r.body.total)).toEqual(first.map(() => settled.body.total));
  });

  it('samples are never counted as usage', async () => {
    expect(await usageOf(app, demo.accessToken)).toMatchObject({ used: 0, tokens: 0, byModel: [] });
  });

  it('see no sample generations when an app runs with AI_DEMO_SHOW_SAMPLE_HISTORY false', async () => {
    expect(await providerStatusOf(noSamplesApp, demo.accessToken)).toMatchObject({
      demoRestricted: true,
      showSampleHistory: false,
    });
    const res = await noSamplesApp.api('GET', '/ai/history', { token: demo.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ items: [], total: 0 });
    // A demo account that never visited with samples on gets none created either.
    const fresh = await registerAs(noSamplesApp, uniqueEmail('ai-demo-fresh'));
    expect((await noSamplesApp.api('GET', '/ai/history', { token: fresh.accessToken })).body.total).toBe(0);
  });

  it('ordinary accounts never see samples', async () => {
    const ordinary = await register('ai-nosample');
    const res = await app.api('GET', '/ai/history', { token: ordinary.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ items: [], total: 0 });
  });

  it('may generate when AI_DEMO_BLOCK_REAL_GENERATION is false', async () => {
    const open = await registerAs(unblockedApp, DEMO_OPEN);
    expect(await providerStatusOf(unblockedApp, open.accessToken)).toMatchObject({
      demoRestricted: false,
      blockRealGeneration: false,
    });
    const g = await generateOk(unblockedApp, open.accessToken, { prompt: uniquePrompt() });
    expect(g.status).toBe('SUCCEEDED');
    expect(await workspaceCounter(unblockedApp, open.workspaceId)).toBe(1);
  });
});
