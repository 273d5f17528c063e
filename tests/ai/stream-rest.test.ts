// Streaming generation over REST (docs/api.md, "Streaming generation"): both generate routes answer
// `Accept: text/event-stream` with started, delta... and completed events, unbuffered (no-cache, no proxy
// buffering, never gzipped), a keep-alive comment while the text is slow; every refusal before the stream
// (validation, credentials, membership, limits, the demo rule, an Idempotency-Key) is the usual JSON
// error. Against the loopback fakes of OpenAI and Anthropic: the provider's text and tokens, an error in
// the middle of the stream (an error event, FAILED, nothing counted), and a client that goes away (the
// provider sees its connection close; CANCELED with the partial text, counted). The sweep closes the
// generations a crashed API left RUNNING.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, registerAndLogin, uniqueEmail, type Session } from '../helpers/http.js';
import { FAKE_OPENAI_CANARY, fakeOpenAIAnswer, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { FAKE_ANTHROPIC_CANARY, fakeAnthropicAnswer, startFakeAnthropic } from '../helpers/fake-anthropic.js';
import { waitFor } from '../helpers/wait.js';
import { closeAbandonedStreams } from '../../routers/ai/stream.js';
import {
  domainEvents,
  generateOk,
  generationRow,
  GENERATION_FIELDS,
  subscribeWebhook,
  uniquePrompt,
  UUID_RE,
  workspaceCounter,
} from './helpers.js';
import { openStream, type SseMessage } from './stream-helpers.js';

const DEMO_EMAIL = uniqueEmail('ai-stream-demo');

let app: TestApp;
/** A slow MOCK (chunks 150 ms apart) with a keep-alive comment every 40 ms. */
let slowApp: TestApp;
/** A system ceiling of 1 generation a month. */
let oneApp: TestApp;

beforeAll(async () => {
  [app, slowApp, oneApp] = await Promise.all([
    startTestApp({ AI_MOCK_STREAM_CHUNK_DELAY_MS: '1', AI_DEMO_RESTRICTED_EMAILS: DEMO_EMAIL }),
    startTestApp({ AI_MOCK_STREAM_CHUNK_DELAY_MS: '150', AI_STREAM_KEEPALIVE_MS: '40' }),
    startTestApp({ AI_MOCK_STREAM_CHUNK_DELAY_MS: '1', AI_MONTHLY_GENERATION_LIMIT: '1' }),
  ]);
});
afterAll(async () => {
  await Promise.all([app?.close(), slowApp?.close(), oneApp?.close()]);
});

const texts = (events: SseMessage[]) =>
  events
    .filter((e) => e.event === 'delta')
    .map((e) => e.data.text as string)
    .join('');

describe('POST /ai/generate with Accept: text/event-stream (MOCK)', () => {
  let user: Session;
  beforeAll(async () => {
    user = await registerAndLogin(app.api, { prefix: 'ai-stream' });
  });

  it('streams started, the text in deltas and completed with the stored generation, unbuffered and not gzipped', async () => {
    const body = { prompt: uniquePrompt('Stream an outline of'), temperature: 0.3 };
    const stream = await openStream(app, '/ai/generate', {
      token: user.accessToken,
      body,
      headers: { 'accept-encoding': 'gzip, deflate, br' },
    });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(stream.headers.get('cache-control')).toBe('no-cache');
    expect(stream.headers.get('x-accel-buffering')).toBe('no');
    expect(stream.headers.get('content-encoding')).toBeNull();
    expect(stream.headers.get('x-request-id')).toBeTruthy();

    const events = await stream.rest();
    expect(events[0].event).toBe('started');
    expect(events[0].data.id).toMatch(UUID_RE);
    expect(events.at(-1)!.event).toBe('completed');
    const deltas = events.filter((e) => e.event === 'delta');
    expect(deltas.length).toBeGreaterThan(5);
    expect(events.slice(1, -1).every((e) => e.event === 'delta')).toBe(true);

    const completed = events.at(-1)!.data;
    expect(Object.keys(completed).sort()).toEqual([...GENERATION_FIELDS, 'usage'].sort());
    expect(completed).toMatchObject({ id: events[0].data.id, status: 'SUCCEEDED', prompt: body.prompt });
    expect(completed.usage).toEqual({ used: 1, limit: completed.usage.limit, remaining: completed.usage.limit - 1 });
    expect(texts(events)).toBe(completed.output);
    // The same text as the JSON answer (MOCK is deterministic).
    expect((await generateOk(app, user.accessToken, body)).output).toBe(completed.output);

    const row = await generationRow(app, completed.id);
    expect(row).toMatchObject({ status: 'SUCCEEDED', output: completed.output, heartbeat_at: null });
    expect(row.prompt_tokens).toBe(completed.promptTokens);
    expect(row.completion_tokens).toBe(completed.completionTokens);
    expect(completed.completionTokens).toBeGreaterThan(0);
    expect(await workspaceCounter(app, user.workspaceId)).toBe(2);
  });

  it('streams on POST /workspaces/{workspaceId}/ai/generate too', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'ai-stream-ws' });
    const stream = await openStream(app, `/workspaces/${owner.workspaceId}/ai/generate`, {
      token: owner.accessToken,
      body: { prompt: uniquePrompt() },
    });
    expect(stream.status).toBe(200);
    const events = await stream.rest();
    expect(events.at(-1)).toMatchObject({ event: 'completed', data: { workspaceId: owner.workspaceId } });
    expect(await workspaceCounter(app, owner.workspaceId)).toBe(1);
  });

  it('answers refusals before the stream as JSON errors: validation, no token, not a member, the demo rule', async () => {
    const invalid = await openStream(app, '/ai/generate', { token: user.accessToken, body: { prompt: '' } });
    expect(invalid.status).toBe(400);
    expect(invalid.headers.get('content-type')).toMatch(/^application\/json/);
    expect(invalid.json).toMatchObject({ code: 'BAD_REQUEST', requestId: expect.any(String) });
    expect(invalid.json.issues[0].path).toBe('prompt');

    const anonymous = await openStream(app, '/ai/generate', { body: { prompt: 'hello' } });
    expect(anonymous.status).toBe(401);
    expect(anonymous.json.code).toBe('UNAUTHORIZED');

    const stranger = await registerAndLogin(app.api, { prefix: 'ai-stream-stranger' });
    const elsewhere = await openStream(app, `/workspaces/${user.workspaceId}/ai/generate`, {
      token: stranger.accessToken,
      body: { prompt: 'hello' },
    });
    expect(elsewhere.status).toBeGreaterThanOrEqual(403);
    expect(elsewhere.status).toBeLessThan(500);
    expect(elsewhere.headers.get('content-type')).toMatch(/^application\/json/);

    for (const path of ['/workspaces/not-a-uuid/ai/generate', '/workspaces/%E0%A4%A/ai/generate']) {
      const odd = await openStream(app, path, { token: user.accessToken, body: { prompt: 'hello' } });
      expect(odd.status, path).toBeGreaterThanOrEqual(400);
      expect(odd.status, path).toBeLessThan(500);
      expect(odd.json.code, path).toBeTruthy();
    }
    const notJson = await openStream(app, '/ai/generate', {
      token: user.accessToken,
      body: 'prompt',
      headers: { 'content-type': 'text/plain' },
    });
    expect(notJson.status).toBe(415);

    const demo = await app.api('POST', '/auth/register', {
      body: { email: DEMO_EMAIL, password: 'Strong-pass-123', name: 'Demo' },
    });
    expect(demo.status).toBe(201);
    const demoLogin = await app.api('POST', '/auth/login', {
      body: { email: DEMO_EMAIL, password: 'Strong-pass-123' },
    });
    const demoStream = await openStream(app, '/ai/generate', {
      token: demoLogin.body.accessToken,
      body: { prompt: 'hello' },
    });
    expect(demoStream.status).toBe(403);
    expect(demoStream.json.code).toBe('DEMO_GENERATION_DISABLED');
  });

  it('writes the ai.generation.completed event of a completed stream', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'ai-stream-event' });
    await subscribeWebhook(app, owner);
    const stream = await openStream(app, '/ai/generate', {
      token: owner.accessToken,
      body: { prompt: uniquePrompt() },
    });
    const completed = (await stream.rest()).at(-1)!;
    const events = await domainEvents(app, owner.workspaceId, 'ai.generation.completed');
    expect(events.map((e) => (e.payload as { generationId: string }).generationId)).toEqual([completed.data.id]);
  });

  it('refuses an Idempotency-Key on a streaming request with a 400, counting nothing', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'ai-stream-idem' });
    const stream = await openStream(app, '/ai/generate', {
      token: owner.accessToken,
      body: { prompt: uniquePrompt() },
      headers: { 'idempotency-key': crypto.randomUUID() },
    });
    expect(stream.status).toBe(400);
    expect(stream.json.code).toBe('BAD_REQUEST');
    expect(stream.json.message).toMatch(/Idempotency-Key/);
    expect(await workspaceCounter(app, owner.workspaceId)).toBe(0);
  });
});

describe('limits before the stream', () => {
  it('when the month is used up, then a JSON 403 AI_MONTHLY_LIMIT_REACHED instead of a stream', async () => {
    const owner = await registerAndLogin(oneApp.api, { prefix: 'ai-stream-limit' });
    const first = await openStream(oneApp, '/ai/generate', {
      token: owner.accessToken,
      body: { prompt: uniquePrompt() },
    });
    expect(first.status).toBe(200);
    expect((await first.rest()).at(-1)!.event).toBe('completed');
    const second = await openStream(oneApp, '/ai/generate', {
      token: owner.accessToken,
      body: { prompt: uniquePrompt() },
    });
    expect(second.status).toBe(403);
    expect(second.headers.get('content-type')).toMatch(/^application\/json/);
    expectError(
      { status: second.status, headers: second.headers, body: second.json, text: JSON.stringify(second.json) },
      403,
      'AI_MONTHLY_LIMIT_REACHED',
    );
    expect(await workspaceCounter(oneApp, owner.workspaceId)).toBe(1);
  });
});

describe('a slow stream', () => {
  let user: Session;
  beforeAll(async () => {
    user = await registerAndLogin(slowApp.api, { prefix: 'ai-stream-slow' });
  });

  it('sends a keep-alive comment while the text is slow to come', async () => {
    const stream = await openStream(slowApp, '/ai/generate', {
      token: user.accessToken,
      body: { prompt: uniquePrompt(), maxTokens: 4 },
    });
    expect(stream.status).toBe(200);
    const seen: SseMessage[] = [];
    for (let m = await stream.next(); m; m = await stream.next()) seen.push(m);
    expect(seen.some((m) => m.event === 'comment' && m.data === 'keep-alive')).toBe(true);
    expect(seen.at(-1)!.event).toBe('completed');
  });

  it('when the client goes away, then the generation is CANCELED with its partial text and tokens, and counted', async () => {
    const stream = await openStream(slowApp, '/ai/generate', {
      token: user.accessToken,
      body: { prompt: uniquePrompt() },
    });
    const started = await stream.nextEvent();
    expect(started?.event).toBe('started');
    expect((await stream.nextEvent())?.event).toBe('delta');
    const before = await workspaceCounter(slowApp, user.workspaceId);
    stream.abort();
    const row = await waitFor(
      async () => {
        const r = await generationRow(slowApp, started!.data.id);
        return r.status === 'CANCELED' ? r : undefined;
      },
      { message: 'the generation stored CANCELED' },
    );
    expect(row.output.length).toBeGreaterThan(0);
    expect(row.prompt_tokens).toBeGreaterThan(0);
    expect(row.completion_tokens).toBeGreaterThan(0);
    expect(row.heartbeat_at).toBeNull();
    const whole = await generateOk(slowApp, user.accessToken, { prompt: row.prompt });
    expect(whole.output.startsWith(row.output)).toBe(true);
    expect(row.output.length).toBeLessThan(whole.output.length);
    // Counted: the canceled one stays in the month's count (the JSON generation adds its own).
    expect(await workspaceCounter(slowApp, user.workspaceId)).toBe(before + 1);
  });
});

const PROVIDERS = [
  {
    name: 'PROVIDER_A',
    canary: FAKE_OPENAI_CANARY,
    answer: fakeOpenAIAnswer,
    async start(apiKey: string) {
      const fake = await startFakeOpenAI({ apiKey });
      return {
        fake,
        env: { AI_PROVIDER: 'PROVIDER_A', PROVIDER_A_API_KEY: apiKey, PROVIDER_A_BASE_URL: `${fake.url}/v1` },
      };
    },
  },
  {
    name: 'PROVIDER_B',
    canary: FAKE_ANTHROPIC_CANARY,
    answer: fakeAnthropicAnswer,
    async start(apiKey: string) {
      const fake = await startFakeAnthropic({ apiKey });
      return {
        fake: fake as unknown as FakeOpenAI,
        env: { AI_PROVIDER: 'PROVIDER_B', PROVIDER_B_API_KEY: apiKey, PROVIDER_B_BASE_URL: fake.url },
      };
    },
  },
];

describe.each(PROVIDERS)('$name streams through its SDK', ({ start, answer, canary }) => {
  let fake: FakeOpenAI;
  let providerApp: TestApp;
  let user: Session;
  beforeAll(async () => {
    const apiKey = `sk-test-stream-${crypto.randomBytes(12).toString('hex')}`;
    const started = await start(apiKey);
    fake = started.fake;
    providerApp = await startTestApp(started.env);
    user = await registerAndLogin(providerApp.api, { prefix: 'ai-stream-provider' });
  });
  afterAll(async () => {
    await providerApp?.close();
    await fake?.close();
  });

  it("streams the provider's text with the tokens of its final events", async () => {
    fake.setMode('ok');
    const prompt = uniquePrompt();
    const stream = await openStream(providerApp, '/ai/generate', { token: user.accessToken, body: { prompt } });
    const events = await stream.rest();
    const completed = events.at(-1)!;
    expect(completed.event).toBe('completed');
    expect(texts(events)).toBe(answer(prompt));
    const recorded = fake.requests.at(-1)!;
    expect(recorded.stream).toBe(true);
    expect(completed.data).toMatchObject({
      output: answer(prompt),
      promptTokens: recorded.answered!.promptTokens,
      completionTokens: recorded.answered!.completionTokens,
      status: 'SUCCEEDED',
    });
  });

  it('passes a slow stream on as it comes: the first delta arrives before the provider has finished', async () => {
    fake.setMode('slow');
    fake.setChunkDelay(100);
    const stream = await openStream(providerApp, '/ai/generate', {
      token: user.accessToken,
      body: { prompt: uniquePrompt() },
    });
    expect((await stream.nextEvent())?.event).toBe('started');
    expect((await stream.nextEvent())?.event).toBe('delta');
    const recorded = fake.requests.at(-1)!;
    const total = recorded.answered!.output.split(/\s+/).length;
    expect(recorded.sentChunks).toBeLessThan(total);
    expect((await stream.rest()).at(-1)!.event).toBe('completed');
  });

  it('when the provider fails mid-stream, then an error event, the generation FAILED, and nothing counted', async () => {
    fake.setMode('error-mid-stream');
    const before = await workspaceCounter(providerApp, user.workspaceId);
    const prompt = uniquePrompt();
    const stream = await openStream(providerApp, '/ai/generate', { token: user.accessToken, body: { prompt } });
    expect(stream.status).toBe(200);
    const events = await stream.rest();
    expect(events[0].event).toBe('started');
    expect(events.some((e) => e.event === 'delta')).toBe(true);
    const error = events.at(-1)!;
    expect(error.event).toBe('error');
    expect(Object.keys(error.data).sort()).toEqual(['code', 'message']);
    expect(error.data.code).toBe('AI_PROVIDER_ERROR');
    expect(error.data.message).not.toContain(canary);
    expect(error.data.message).not.toContain(prompt);
    const row = await generationRow(providerApp, events[0].data.id);
    expect(row).toMatchObject({ status: 'FAILED', error_code: 'AI_PROVIDER_ERROR' });
    expect(await workspaceCounter(providerApp, user.workspaceId)).toBe(before);
    expect(providerApp.logs.join('\n')).not.toContain(canary);
  });

  it('when the client goes away, then the provider sees its connection close and the record says CANCELED', async () => {
    fake.setMode('slow');
    fake.setChunkDelay(150);
    const before = await workspaceCounter(providerApp, user.workspaceId);
    const stream = await openStream(providerApp, '/ai/generate', {
      token: user.accessToken,
      body: { prompt: uniquePrompt() },
    });
    const started = await stream.nextEvent();
    const delta = await stream.nextEvent();
    expect(delta?.event).toBe('delta');
    stream.abort();
    const recorded = fake.requests.at(-1)!;
    await waitFor(() => recorded.clientClosed === true, { message: 'the fake provider saw the connection close' });
    const row = await waitFor(
      async () => {
        const r = await generationRow(providerApp, started!.data.id);
        return r.status === 'CANCELED' ? r : undefined;
      },
      { message: 'the generation stored CANCELED' },
    );
    expect(recorded.answered!.output.startsWith(row.output)).toBe(true);
    expect(row.output.length).toBeGreaterThan(0);
    expect(row.output.length).toBeLessThan(recorded.answered!.output.length);
    expect(row.prompt_tokens).toBeGreaterThan(0);
    expect(await workspaceCounter(providerApp, user.workspaceId)).toBe(before + 1);
  });
});

describe('the sweep of abandoned streams', () => {
  it('closes a generation whose heartbeat stopped (FAILED, INTERRUPTED, uncounted) and leaves a live one', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'ai-stream-sweep' });
    const { db } = app.deps;
    // What an API process that died mid-stream leaves: a RUNNING generation, counted, its heartbeat old.
    const row = (id: string, heartbeat: Date) => ({
      id,
      workspace_id: owner.workspaceId,
      user_id: owner.userId,
      provider: 'MOCK' as const,
      model: 'mock-writer-1',
      prompt: 'left running',
      status: 'RUNNING' as const,
      heartbeat_at: heartbeat,
    });
    const abandoned = crypto.randomUUID();
    const live = crypto.randomUUID();
    await db
      .insertInto('ai_generations')
      .values([row(abandoned, new Date(Date.now() - 10 * 60_000)), row(live, new Date())])
      .execute();
    await db
      .insertInto('ai_usage_counters')
      .values({ workspace_id: owner.workspaceId, period: new Date().toISOString().slice(0, 8) + '01', generations: 2 })
      .execute();

    expect(await closeAbandonedStreams(app.deps)).toBeGreaterThanOrEqual(1);
    expect(await generationRow(app, abandoned)).toMatchObject({ status: 'FAILED', error_code: 'INTERRUPTED' });
    expect(await generationRow(app, live)).toMatchObject({ status: 'RUNNING' });
    expect(await workspaceCounter(app, owner.workspaceId)).toBe(1);
  });
});

describe('/openapi.json', () => {
  it('declares the text/event-stream answer of both generate routes, beside the JSON one', async () => {
    const doc = (await app.api('GET', '/openapi.json')).body;
    for (const path of ['/ai/generate', '/workspaces/{workspaceId}/ai/generate']) {
      const ok = doc.paths[path].post.responses['200'];
      expect(Object.keys(ok.content).sort()).toEqual(['application/json', 'text/event-stream']);
      expect(ok.content['text/event-stream'].schema.description).toMatch(
        /event: started.*event: delta.*event: completed/s,
      );
      expect(Object.keys(ok.headers)).toEqual(expect.arrayContaining(['Cache-Control', 'X-Accel-Buffering']));
    }
  });
});
