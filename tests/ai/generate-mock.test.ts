// Generation with the MOCK provider (the default): deterministic answers with realistic token counts, every
// request field stored with the generation and its domain event, the model chosen by request, then
// AI_DEFAULT_MODEL, then the provider's default, the workspace taken from the body, the query or the
// caller's active workspace, validation, usage and paginated history.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, registerAndLogin, type Session } from '../helpers/http.js';
import { createWorkspace } from '../workspaces/helpers.js';
import {
  domainEvents,
  generate,
  generateOk,
  generationRow,
  generationRows,
  GENERATION_FIELDS,
  providerStatusOf,
  subscribeWebhook,
  thisMonth,
  uniquePrompt,
  usageOf,
  UUID_RE,
  workspaceCounter,
} from './helpers.js';

let app: TestApp;
/** Runs with AI_DEFAULT_MODEL set. */
let defaultModelApp: TestApp;
/** Runs with a system ceiling (AI_MONTHLY_GENERATION_LIMIT) below Lite's 20. */
let lowCeilingApp: TestApp;

const HOUSE_MODEL = 'house-model-7';

beforeAll(async () => {
  [app, defaultModelApp, lowCeilingApp] = await Promise.all([
    // Webhooks are subscribed only so that events are written: their deliveries are recorded, not sent.
    startTestApp({ RATE_LIMIT_ENABLED: 'false', WEBHOOK_DELIVERY_ENABLED: 'false' }),
    startTestApp({ RATE_LIMIT_ENABLED: 'false', AI_DEFAULT_MODEL: HOUSE_MODEL }),
    startTestApp({ RATE_LIMIT_ENABLED: 'false', AI_MONTHLY_GENERATION_LIMIT: '3' }),
  ]);
});
afterAll(async () => {
  await Promise.all([app?.close(), defaultModelApp?.close(), lowCeilingApp?.close()]);
});

describe('MOCK answers', () => {
  let user: Session;
  beforeAll(async () => {
    user = await registerAndLogin(app.api, { prefix: 'ai-mock' });
  });

  it('gives the same output and token counts for the same input', async () => {
    const body = {
      prompt: uniquePrompt('Write a tagline for'),
      systemPrompt: 'You are terse.',
      temperature: 0.4,
      model: 'mock-writer-1',
    };
    const first = await generateOk(app, user.accessToken, body);
    const second = await generateOk(app, user.accessToken, body);
    expect(second.id).not.toBe(first.id);
    expect(second.output).toBe(first.output);
    expect([second.promptTokens, second.completionTokens]).toEqual([first.promptTokens, first.completionTokens]);
  });

  it('gives a different output for a different prompt', async () => {
    const a = await generateOk(app, user.accessToken, { prompt: uniquePrompt('Describe a lighthouse') });
    const b = await generateOk(app, user.accessToken, { prompt: uniquePrompt('Describe a volcano') });
    expect(a.output).not.toBe(b.output);
    expect(a.output.length).toBeGreaterThan(20);
  });

  it('counts tokens of a realistic size: about four characters a token, for prompt and answer', async () => {
    const systemPrompt = 'You write for busy engineering managers.';
    const prompt = `${uniquePrompt('Explain')} why code review matters, in a few sentences, for a team that ships every day.`;
    const g = await generateOk(app, user.accessToken, { prompt, systemPrompt });
    const promptChars = systemPrompt.length + prompt.length;
    expect(g.promptTokens).toBeGreaterThanOrEqual(Math.floor(promptChars / 6));
    expect(g.promptTokens).toBeLessThanOrEqual(Math.ceil(promptChars / 2));
    expect(g.completionTokens).toBeGreaterThanOrEqual(Math.floor(g.output.length / 6));
    expect(g.completionTokens).toBeLessThanOrEqual(Math.ceil(g.output.length / 2));
    expect(g.totalTokens).toBe(g.promptTokens + g.completionTokens);
  });

  it('keeps the answer within maxTokens', async () => {
    const g = await generateOk(app, user.accessToken, {
      prompt: uniquePrompt('Write a long essay about'),
      maxTokens: 3,
    });
    expect(g.completionTokens).toBeGreaterThan(0);
    expect(g.completionTokens).toBeLessThanOrEqual(3);
    expect(g.output.length).toBeLessThanOrEqual(3 * 4);
  });
});

describe('what a generation stores', () => {
  let user: Session;
  beforeAll(async () => {
    user = await registerAndLogin(app.api, { prefix: 'ai-store' });
  });

  it('answers every field and stores prompt, system prompt, temperature, model, provider, tokens, duration, status and the user', async () => {
    const prompt = uniquePrompt('Draft a welcome e-mail for');
    const res = await generate(app, user.accessToken, {
      prompt,
      systemPrompt: 'Be warm.',
      temperature: 0.7,
      maxTokens: 300,
      model: 'mock-writer-2',
    });
    expect(res.status, res.text).toBe(200);
    const g = res.body;
    expect(
      Object.keys(g)
        .filter((k) => k !== 'usage')
        .sort(),
    ).toEqual(GENERATION_FIELDS);
    expect(g).toMatchObject({
      workspaceId: user.workspaceId,
      userId: user.userId,
      templateId: null,
      provider: 'MOCK',
      model: 'mock-writer-2',
      prompt,
      systemPrompt: 'Be warm.',
      status: 'SUCCEEDED',
      isSample: false,
    });
    expect(g.id).toMatch(UUID_RE);
    expect(g.temperature).toBeCloseTo(0.7, 5);
    expect(g.promptTokens).toBeGreaterThan(0);
    expect(g.completionTokens).toBeGreaterThan(0);
    expect(Number.isInteger(g.durationMs) && g.durationMs >= 0).toBe(true);
    expect(Math.abs(Date.parse(g.createdAt) - Date.now())).toBeLessThan(60_000);
    expect(g.usage).toEqual({ used: 1, limit: 20, remaining: 19 });

    const row = await generationRow(app, g.id);
    expect(row).toMatchObject({
      workspace_id: user.workspaceId,
      user_id: user.userId,
      template_id: null,
      provider: 'MOCK',
      model: 'mock-writer-2',
      prompt,
      system_prompt: 'Be warm.',
      output: g.output,
      status: 'SUCCEEDED',
      error_code: null,
      prompt_tokens: g.promptTokens,
      completion_tokens: g.completionTokens,
      duration_ms: g.durationMs,
      is_sample: false,
    });
    expect(row.temperature).toBeCloseTo(0.7, 5);
  });

  it('answers exactly what history shows of it afterwards, time and stored temperature included', async () => {
    // MOCK answers first and is reserved and stored by one statement: the answer must still be the row.
    const g = await generateOk(app, user.accessToken, {
      prompt: uniquePrompt('Name a bakery'),
      temperature: 0.123456789,
      systemPrompt: 'Be brief.',
    });
    const res = await app.api('GET', '/ai/history?limit=1', { token: user.accessToken });
    expect(res.status, res.text).toBe(200);
    const { usage, ...answered } = g;
    expect(usage.used).toBeGreaterThan(0);
    expect(res.body.items[0]).toEqual(answered);
  });

  it('stores null for the optional fields the request leaves out', async () => {
    const g = await generateOk(app, user.accessToken, { prompt: uniquePrompt() });
    expect(g).toMatchObject({ systemPrompt: null, temperature: null, templateId: null });
    const row = await generationRow(app, g.id);
    expect(row).toMatchObject({ system_prompt: null, temperature: null, template_id: null });
  });

  it('emits one ai.generation.completed domain event per generation, naming it, once a webhook of the workspace subscribes', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'ai-events' });
    // No webhook: no event (nobody would get it).
    await generateOk(app, owner.accessToken, { prompt: uniquePrompt() });
    // A webhook of other events only: still none.
    await subscribeWebhook(app, owner, ['member.added']);
    await generateOk(app, owner.accessToken, { prompt: uniquePrompt() });
    expect(await domainEvents(app, owner.workspaceId, 'ai.generation.completed')).toHaveLength(0);

    await subscribeWebhook(app, owner);
    const generated = await Promise.all(
      [1, 2, 3].map(() => generateOk(app, owner.accessToken, { prompt: uniquePrompt() })),
    );
    const events = await domainEvents(app, owner.workspaceId, 'ai.generation.completed');
    expect(events).toHaveLength(3);
    for (const g of generated) {
      const mine = events.filter((e) => e.payload.generationId === g.id);
      expect(mine).toHaveLength(1);
      expect(mine[0].payload).toMatchObject({
        generationId: g.id,
        model: 'mock-writer-1',
        provider: 'MOCK',
        totalTokens: g.totalTokens,
      });
    }
  });

  it('emits no event for a workspace whose subscribed webhook is switched off', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'ai-events-off' });
    const hook = await subscribeWebhook(app, owner);
    const off = await app.api('PATCH', `/workspaces/${owner.workspaceId}/webhooks/${hook.id}`, {
      token: owner.accessToken,
      body: { isActive: false },
    });
    expect(off.status, off.text).toBe(200);
    await generateOk(app, owner.accessToken, { prompt: uniquePrompt() });
    expect(await domainEvents(app, owner.workspaceId, 'ai.generation.completed')).toHaveLength(0);
  });
});

describe('model choice', () => {
  let user: Session;
  beforeAll(async () => {
    user = await registerAndLogin(app.api, { prefix: 'ai-model' });
  });

  it("uses the provider's default model (mock-writer-1) when neither the request nor AI_DEFAULT_MODEL names one", async () => {
    expect((await generateOk(app, user.accessToken, { prompt: uniquePrompt() })).model).toBe('mock-writer-1');
    expect((await providerStatusOf(app, user.accessToken)).model).toBe('mock-writer-1');
  });

  it('uses the model the request names', async () => {
    const g = await generateOk(app, user.accessToken, { prompt: uniquePrompt(), model: 'mock-writer-large' });
    expect(g.model).toBe('mock-writer-large');
    expect((await generationRow(app, g.id)).model).toBe('mock-writer-large');
  });

  it('uses AI_DEFAULT_MODEL over the provider default, and the request model over both', async () => {
    const g = await generateOk(defaultModelApp, user.accessToken, { prompt: uniquePrompt() });
    expect(g.model).toBe(HOUSE_MODEL);
    expect((await generationRow(defaultModelApp, g.id)).model).toBe(HOUSE_MODEL);
    expect((await providerStatusOf(defaultModelApp, user.accessToken)).model).toBe(HOUSE_MODEL);
    expect(
      (await generateOk(defaultModelApp, user.accessToken, { prompt: uniquePrompt(), model: 'mock-writer-1' })).model,
    ).toBe('mock-writer-1');
  });
});

describe('which workspace', () => {
  let user: Session;
  let second: string;
  let stranger: Session;
  beforeAll(async () => {
    user = await registerAndLogin(app.api, { prefix: 'ai-which' });
    second = await createWorkspace(app, user.accessToken, `AI second ${crypto.randomBytes(3).toString('hex')}`);
    stranger = await registerAndLogin(app.api, { prefix: 'ai-stranger' });
  });

  it('takes the workspace from the body', async () => {
    const g = await generateOk(app, user.accessToken, { prompt: uniquePrompt(), workspaceId: second });
    expect(g.workspaceId).toBe(second);
    expect((await generationRow(app, g.id)).workspace_id).toBe(second);
  });

  it('takes the workspace from the query', async () => {
    const res = await generate(app, user.accessToken, { prompt: uniquePrompt() }, `?workspaceId=${second}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.workspaceId).toBe(second);
    expect((await generationRow(app, res.body.id)).workspace_id).toBe(second);
  });

  it("uses the caller's active workspace when none is named", async () => {
    const g = await generateOk(app, user.accessToken, { prompt: uniquePrompt() });
    expect(g.workspaceId).toBe(user.workspaceId);
    expect((await generationRow(app, g.id)).workspace_id).toBe(user.workspaceId);
  });

  it('generates in the workspace of the path on POST /workspaces/:workspaceId/ai/generate', async () => {
    const res = await app.api('POST', `/workspaces/${second}/ai/generate`, {
      token: user.accessToken,
      body: { prompt: uniquePrompt() },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.workspaceId).toBe(second);
  });

  it('answers 404 NOT_FOUND for a workspace the caller is not a member of, storing nothing there', async () => {
    expectError(
      await generate(app, stranger.accessToken, { prompt: uniquePrompt(), workspaceId: second }),
      404,
      'NOT_FOUND',
    );
    expectError(
      await generate(app, stranger.accessToken, { prompt: uniquePrompt() }, `?workspaceId=${second}`),
      404,
      'NOT_FOUND',
    );
    expectError(
      await app.api('POST', `/workspaces/${second}/ai/generate`, {
        token: stranger.accessToken,
        body: { prompt: uniquePrompt() },
      }),
      404,
      'NOT_FOUND',
    );
    expectError(
      await generate(app, user.accessToken, { prompt: uniquePrompt(), workspaceId: crypto.randomUUID() }),
      404,
      'NOT_FOUND',
    );
    const rows = await generationRows(app, second);
    expect(rows.every((r) => r.user_id === user.userId)).toBe(true);
  });

  it('answers 400 for a workspaceId that is not a UUID', async () => {
    expectError(
      await generate(app, user.accessToken, { prompt: uniquePrompt(), workspaceId: 'my-workspace' }),
      400,
      'BAD_REQUEST',
    );
  });
});

describe('validation', () => {
  let user: Session;
  beforeAll(async () => {
    user = await registerAndLogin(app.api, { prefix: 'ai-valid' });
  });

  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['an empty prompt', { prompt: '' }, 'prompt'],
    ['a blank prompt', { prompt: '   ' }, 'prompt'],
    ['no prompt', { systemPrompt: 'hello' }, 'prompt'],
    ['a prompt that is not a string', { prompt: 42 }, 'prompt'],
    ['temperature 3', { prompt: 'hi there', temperature: 3 }, 'temperature'],
    ['a negative temperature', { prompt: 'hi there', temperature: -0.1 }, 'temperature'],
    ['maxTokens 0', { prompt: 'hi there', maxTokens: 0 }, 'maxTokens'],
    ['a fractional maxTokens', { prompt: 'hi there', maxTokens: 10.5 }, 'maxTokens'],
    ['a model name with spaces and symbols', { prompt: 'hi there', model: 'bad model!' }, 'model'],
    ['a model name of 200 characters', { prompt: 'hi there', model: 'm'.repeat(200) }, 'model'],
  ];

  for (const [label, body, path] of cases) {
    it(`answers 400 BAD_REQUEST naming ${path} for ${label}`, async () => {
      const err = expectError(await generate(app, user.accessToken, body), 400, 'BAD_REQUEST');
      expect(err.issues?.map((i) => i.path)).toContain(path);
    });
  }

  it('counts and stores nothing for refused requests', async () => {
    await generate(app, user.accessToken, { prompt: '' });
    await generate(app, user.accessToken, { prompt: 'x', temperature: 3 });
    expect(await workspaceCounter(app, user.workspaceId)).toBe(0);
    expect(await generationRows(app, user.workspaceId)).toHaveLength(0);
  });
});

describe('usage', () => {
  it('reports used, the Lite plan limit of 20 (source PLAN), remaining, tokens, by model and the reset date', async () => {
    const user = await registerAndLogin(app.api, { prefix: 'ai-usage' });
    const made = [
      await generateOk(app, user.accessToken, { prompt: uniquePrompt() }),
      await generateOk(app, user.accessToken, { prompt: uniquePrompt(), model: 'mock-writer-2' }),
      await generateOk(app, user.accessToken, { prompt: uniquePrompt() }),
    ];
    expect(made.map((g) => g.usage.used)).toEqual([1, 2, 3]);
    expect(made[2].usage).toEqual({ used: 3, limit: 20, remaining: 17 });

    const usage = await usageOf(app, user.accessToken);
    const month = thisMonth();
    const tokensOf = (gs: Array<Record<string, any>>) => gs.reduce((n, g) => n + g.totalTokens, 0);
    expect(usage).toMatchObject({
      workspaceId: user.workspaceId,
      used: 3,
      limit: 20,
      limitSource: 'PLAN',
      remaining: 17,
    });
    expect(usage.tokens).toBe(tokensOf(made));
    expect(new Date(usage.period.start).toISOString()).toBe(month.start.toISOString());
    expect(new Date(usage.period.resetsAt).toISOString()).toBe(month.resetsAt.toISOString());
    const byModel = Object.fromEntries(usage.byModel.map((m) => [`${m.provider}/${m.model}`, m]));
    expect(Object.keys(byModel).sort()).toEqual(['MOCK/mock-writer-1', 'MOCK/mock-writer-2']);
    expect(byModel['MOCK/mock-writer-1']).toMatchObject({ generations: 2, tokens: tokensOf([made[0], made[2]]) });
    expect(byModel['MOCK/mock-writer-2']).toMatchObject({ generations: 1, tokens: made[1].totalTokens });

    const named = await app.api('GET', `/workspaces/${user.workspaceId}/ai/usage`, { token: user.accessToken });
    expect(named.status, named.text).toBe(200);
    expect(named.body).toEqual(usage);
    expect(await usageOf(app, user.accessToken, user.workspaceId)).toEqual(usage);
  });

  it('reports a workspace of its own with nothing used yet', async () => {
    const user = await registerAndLogin(app.api, { prefix: 'ai-usage0' });
    const ws = await createWorkspace(app, user.accessToken, `AI empty ${crypto.randomBytes(3).toString('hex')}`);
    await generateOk(app, user.accessToken, { prompt: uniquePrompt() });
    const usage = await usageOf(app, user.accessToken, ws);
    expect(usage).toMatchObject({
      workspaceId: ws,
      used: 0,
      limit: 20,
      limitSource: 'PLAN',
      remaining: 20,
      tokens: 0,
      byModel: [],
    });
  });

  it('applies AI_MONTHLY_GENERATION_LIMIT when it is lower than the plan (source SYSTEM) and refuses beyond it', async () => {
    const user = await registerAndLogin(lowCeilingApp.api, { prefix: 'ai-ceiling' });
    const usage = await usageOf(lowCeilingApp, user.accessToken);
    expect(usage).toMatchObject({ used: 0, limit: 3, limitSource: 'SYSTEM', remaining: 3 });
    for (let i = 0; i < 3; i++) await generateOk(lowCeilingApp, user.accessToken, { prompt: uniquePrompt() });
    expectError(
      await generate(lowCeilingApp, user.accessToken, { prompt: uniquePrompt() }),
      403,
      'AI_MONTHLY_LIMIT_REACHED',
    );
    expect(await usageOf(lowCeilingApp, user.accessToken)).toMatchObject({
      used: 3,
      limit: 3,
      limitSource: 'SYSTEM',
      remaining: 0,
    });
    expect(await workspaceCounter(lowCeilingApp, user.workspaceId)).toBe(3);
  });
});

describe('history', () => {
  let user: Session;
  let made: Array<Record<string, any>>;
  beforeAll(async () => {
    user = await registerAndLogin(app.api, { prefix: 'ai-history' });
    made = [];
    for (let i = 0; i < 5; i++)
      made.push(await generateOk(app, user.accessToken, { prompt: uniquePrompt(`History item ${i}`) }));
  });

  const idsOf = (body: { items: Array<{ id: string }> }) => body.items.map((g) => g.id);
  const newestFirst = () => made.map((g) => g.id).reverse();

  it('lists the generations newest first, with every field and the pagination fields', async () => {
    const res = await app.api('GET', '/ai/history', { token: user.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ page: 1, limit: 20, total: 5, totalPages: 1 });
    expect(idsOf(res.body)).toEqual(newestFirst());
    for (const g of res.body.items) expect(Object.keys(g).sort()).toEqual(GENERATION_FIELDS);
    expect(res.body.items[0]).toMatchObject({
      prompt: made[4].prompt,
      output: made[4].output,
      isSample: false,
      status: 'SUCCEEDED',
    });
  });

  it('pages with limit and page', async () => {
    const pages = [];
    for (const page of [1, 2, 3]) {
      const res = await app.api('GET', `/ai/history?limit=2&page=${page}`, { token: user.accessToken });
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({ page, limit: 2, total: 5, totalPages: 3 });
      pages.push(...idsOf(res.body));
    }
    expect(pages).toEqual(newestFirst());
    const beyond = await app.api('GET', '/ai/history?limit=2&page=4', { token: user.accessToken });
    expect(beyond.status, beyond.text).toBe(200);
    expect(beyond.body.items).toEqual([]);
  });

  it('answers the same pages on GET /workspaces/:workspaceId/ai/generations and GET /ai/history?workspaceId=', async () => {
    const a = await app.api('GET', `/workspaces/${user.workspaceId}/ai/generations?limit=3&page=1`, {
      token: user.accessToken,
    });
    expect(a.status, a.text).toBe(200);
    expect(a.body).toMatchObject({ page: 1, limit: 3, total: 5, totalPages: 2 });
    expect(idsOf(a.body)).toEqual(newestFirst().slice(0, 3));
    const b = await app.api('GET', `/ai/history?workspaceId=${user.workspaceId}&limit=3&page=2`, {
      token: user.accessToken,
    });
    expect(b.status, b.text).toBe(200);
    expect(idsOf(b.body)).toEqual(newestFirst().slice(3));
  });

  it('shows only the named workspace', async () => {
    const ws = await createWorkspace(
      app,
      user.accessToken,
      `AI history other ${crypto.randomBytes(3).toString('hex')}`,
    );
    const g = await generateOk(app, user.accessToken, { prompt: uniquePrompt(), workspaceId: ws });
    const res = await app.api('GET', `/ai/history?workspaceId=${ws}`, { token: user.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(idsOf(res.body)).toEqual([g.id]);
    const own = await app.api('GET', '/ai/history', { token: user.accessToken });
    expect(idsOf(own.body)).not.toContain(g.id);
  });

  for (const query of ['limit=101', 'limit=0', 'page=0', 'page=-1', 'limit=abc']) {
    it(`answers 400 BAD_REQUEST for ${query}`, async () => {
      expectError(await app.api('GET', `/ai/history?${query}`, { token: user.accessToken }), 400, 'BAD_REQUEST');
      expectError(
        await app.api('GET', `/workspaces/${user.workspaceId}/ai/generations?${query}`, { token: user.accessToken }),
        400,
        'BAD_REQUEST',
      );
    });
  }
});
