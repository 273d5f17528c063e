// The real providers through their official SDKs, against local fakes of their protocols: PROVIDER_A
// (OpenAI Chat Completions, tests/helpers/fake-openai.ts) and PROVIDER_B (Anthropic Messages,
// tests/helpers/fake-anthropic.ts). Success passes every request field and takes output and token counts
// from the provider; 429, 500, a malformed answer, a rejected key and a timeout are a friendly 502
// AI_PROVIDER_ERROR that repeats nothing the provider said and costs no quota; a missing key is 503
// AI_PROVIDER_NOT_CONFIGURED without stopping start-up. The API keys never come back in a response or log.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, registerAndLogin, uniqueEmail, type ApiResponse, type Session } from '../helpers/http.js';
import { ledger } from '../helpers/secret-ledger.js';
import { FAKE_OPENAI_CANARY, startFakeOpenAI, type FakeProviderMode } from '../helpers/fake-openai.js';
import { FAKE_ANTHROPIC_CANARY, startFakeAnthropic } from '../helpers/fake-anthropic.js';
import { registerAs } from '../workspaces/helpers.js';
import {
  domainEvents,
  generate,
  generationRow,
  generationRows,
  providerStatusOf,
  subscribeWebhook,
  uniquePrompt,
  usageOf,
  userCounter,
  workspaceCounter,
} from './helpers.js';

const hex = (n: number) => crypto.randomBytes(n).toString('hex');

/** Everything a fake's request record carries that the tests read. */
interface Recorded {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  model?: string;
  temperature?: number;
  max_tokens?: number;
  answered?: { output: string; promptTokens: number; completionTokens: number };
}

interface Fake {
  url: string;
  requests: Recorded[];
  setMode(mode: FakeProviderMode): void;
  close(): Promise<void>;
}

interface ProviderCase {
  name: 'PROVIDER_A' | 'PROVIDER_B';
  protocol: string;
  apiKey: string;
  wrongKey: string;
  defaultModel: string;
  canary: string;
  startFake(apiKey: string): Promise<Fake>;
  env(fakeUrl: string, apiKey: string): Record<string, string>;
  path: string;
  /** Checks the authentication headers the SDK sent. */
  expectAuth(req: Recorded, apiKey: string): void;
  /** The system prompt and the user prompt as the provider received them. */
  promptsOf(req: Recorded): { system: string | undefined; user: string | undefined };
}

const PROVIDERS: ProviderCase[] = [
  {
    name: 'PROVIDER_A',
    protocol: 'OpenAI Chat Completions',
    apiKey: `sk-test-providerA-${hex(16)}`,
    wrongKey: `sk-test-wrongA-${hex(16)}`,
    defaultModel: 'fake-gpt-4o-test',
    canary: FAKE_OPENAI_CANARY,
    startFake: (apiKey) => startFakeOpenAI({ apiKey }),
    env: (url, apiKey) => ({
      AI_PROVIDER: 'PROVIDER_A',
      PROVIDER_A_API_KEY: apiKey,
      PROVIDER_A_BASE_URL: `${url}/v1`,
      AI_PROVIDER_A_MODEL: 'fake-gpt-4o-test',
    }),
    path: '/v1/chat/completions',
    expectAuth(req, apiKey) {
      expect(req.headers.authorization).toBe(`Bearer ${apiKey}`);
    },
    promptsOf(req) {
      const messages = (req as unknown as { messages?: Array<{ role: string; content: string }> }).messages ?? [];
      const system = messages.filter((m) => m.role === 'system');
      const user = messages.filter((m) => m.role === 'user');
      expect(user).toHaveLength(1);
      expect(messages.at(-1)!.role).toBe('user');
      expect(system.length).toBeLessThanOrEqual(1);
      return { system: system[0]?.content, user: user[0]?.content };
    },
  },
  {
    name: 'PROVIDER_B',
    protocol: 'Anthropic Messages',
    apiKey: `sk-ant-test-providerB-${hex(16)}`,
    wrongKey: `sk-ant-test-wrongB-${hex(16)}`,
    defaultModel: 'fake-claude-test',
    canary: FAKE_ANTHROPIC_CANARY,
    startFake: (apiKey) => startFakeAnthropic({ apiKey }),
    env: (url, apiKey) => ({
      AI_PROVIDER: 'PROVIDER_B',
      PROVIDER_B_API_KEY: apiKey,
      PROVIDER_B_BASE_URL: url,
      AI_PROVIDER_B_MODEL: 'fake-claude-test',
    }),
    path: '/v1/messages',
    expectAuth(req, apiKey) {
      // The protocol's x-api-key, or the bearer token the installed SDK (1.12) sends.
      const sent = req.headers['x-api-key'] ?? String(req.headers.authorization ?? '').replace(/^Bearer /, '');
      expect(sent).toBe(apiKey);
      expect(req.headers['anthropic-version']).toBeTruthy();
    },
    promptsOf(req) {
      const r = req as unknown as { system?: unknown; messages?: Array<{ role: string; content: unknown }> };
      const messages = r.messages ?? [];
      expect(messages).toHaveLength(1);
      expect(messages[0].role).toBe('user');
      const content = messages[0].content;
      const user =
        typeof content === 'string' ? content : (content as Array<{ text?: string }>).map((b) => b.text ?? '').join('');
      const system =
        r.system === undefined
          ? undefined
          : typeof r.system === 'string'
            ? r.system
            : (r.system as Array<{ text?: string }>).map((b) => b.text ?? '').join('');
      return { system, user };
    },
  },
];

// The keys the apps are configured with (and the canaries of the fakes' error bodies) must never come back
// in a response body or a log line (checked by tests/helpers/secret-ledger-check.ts after this file too).
for (const p of PROVIDERS) {
  ledger.sent(p.apiKey, `${p.name}_API_KEY`);
  ledger.sent(p.wrongKey, `a rejected ${p.name}_API_KEY`);
  ledger.sent(p.canary, `the ${p.name} fake's error body`);
}

/** The body of a provider failure says nothing of what the provider answered, nor the prompt. */
function expectFriendlyProviderError(res: ApiResponse, p: ProviderCase, prompt: string) {
  const err = expectError(res, 502, 'AI_PROVIDER_ERROR');
  // Phrases of the fakes' own bodies (the product's friendly summary may say "rate limiting" itself).
  const providerSaid = [
    'Rate limit reached for',
    'Number of request tokens',
    'The server had an error',
    'Internal server error',
    'Incorrect API key',
    'invalid x-api-key',
    'Prompt was',
    'while processing',
    'chatcmpl',
    'msg_broken',
    'trace',
  ];
  for (const text of [p.canary, prompt, p.apiKey, p.wrongKey, ...providerSaid]) {
    expect(res.text, `error body repeats "${text}"`).not.toContain(text);
  }
  expect(res.text).not.toMatch(/organization|org-canary|invalid_api_key|authentication_error|api_error|server_error/);
  return err;
}

for (const p of PROVIDERS) {
  describe(`${p.name} (${p.protocol}, official SDK against a local fake)`, () => {
    const tester = uniqueEmail(`ai-${p.name.toLowerCase()}-tester`);
    let fake: Fake;
    let hangingFake: Fake;
    let app: TestApp;
    /** AI_REQUEST_TIMEOUT_MS = 300, against a fake that never answers. */
    let timeoutApp: TestApp;
    /** Configured with a key the provider rejects. */
    let wrongKeyApp: TestApp;
    let user: Session;

    beforeAll(async () => {
      [fake, hangingFake] = await Promise.all([p.startFake(p.apiKey), p.startFake(p.apiKey)]);
      hangingFake.setMode('hang');
      // The webhook subscribed so that events are written is never called: deliveries are recorded, not sent.
      const common = {
        RATE_LIMIT_ENABLED: 'false',
        AI_TEST_USER_EMAILS: tester,
        AI_TEST_USER_MONTHLY_LIMIT: '5',
        WEBHOOK_DELIVERY_ENABLED: 'false',
      };
      [app, timeoutApp, wrongKeyApp] = await Promise.all([
        startTestApp({ ...common, ...p.env(fake.url, p.apiKey), AI_REQUEST_TIMEOUT_MS: '10000' }),
        startTestApp({ ...common, ...p.env(hangingFake.url, p.apiKey), AI_REQUEST_TIMEOUT_MS: '300' }),
        startTestApp({ ...common, ...p.env(fake.url, p.wrongKey), AI_REQUEST_TIMEOUT_MS: '10000' }),
      ]);
      user = await registerAndLogin(app.api, { prefix: `ai-${p.name.toLowerCase()}` });
      await subscribeWebhook(app, user);
    });
    afterAll(async () => {
      await Promise.all([app?.close(), timeoutApp?.close(), wrongKeyApp?.close()]);
      await Promise.all([fake?.close(), hangingFake?.close()]);
    });

    const lastRequest = () => fake.requests.at(-1)!;

    it('reports the provider, its model setting and configured true in provider status', async () => {
      expect(await providerStatusOf(app, user.accessToken)).toMatchObject({
        provider: p.name,
        model: p.defaultModel,
        configured: true,
      });
    });

    it('sends model, system prompt, prompt, temperature and max tokens, and answers with the output and token counts of the provider', async () => {
      fake.setMode('ok');
      const prompt = uniquePrompt('Write a product blurb for');
      const before = fake.requests.length;
      const res = await generate(app, user.accessToken, {
        prompt,
        systemPrompt: 'You are a concise copywriter.',
        model: 'fake-model-x',
        temperature: 0.3,
        maxTokens: 256,
      });
      expect(res.status, res.text).toBe(200);
      expect(fake.requests.length).toBe(before + 1);

      const req = lastRequest();
      expect(req.path).toBe(p.path);
      p.expectAuth(req, p.apiKey);
      expect(req.model).toBe('fake-model-x');
      expect(req.temperature).toBeCloseTo(0.3, 5);
      expect(req.max_tokens).toBe(256);
      expect(p.promptsOf(req)).toEqual({ system: 'You are a concise copywriter.', user: prompt });

      const answered = req.answered!;
      expect(answered).toBeDefined();
      expect(res.body).toMatchObject({
        provider: p.name,
        model: 'fake-model-x',
        status: 'SUCCEEDED',
        output: answered.output,
        promptTokens: answered.promptTokens,
        completionTokens: answered.completionTokens,
        totalTokens: answered.promptTokens + answered.completionTokens,
      });
      const row = await generationRow(app, res.body.id);
      expect(row).toMatchObject({
        provider: p.name,
        model: 'fake-model-x',
        prompt,
        system_prompt: 'You are a concise copywriter.',
        output: answered.output,
        status: 'SUCCEEDED',
        prompt_tokens: answered.promptTokens,
        completion_tokens: answered.completionTokens,
        user_id: user.userId,
      });
      const events = await domainEvents(app, user.workspaceId, 'ai.generation.completed');
      expect(events.some((e) => e.payload.generationId === res.body.id)).toBe(true);
    });

    it('keeps an answer with a NUL character, with U+FFFD in its place (Postgres refused it: a 500, nothing stored)', async () => {
      fake.setMode('ok-with-nul');
      const res = await generate(app, user.accessToken, { prompt: uniquePrompt('Answer with a NUL for') });
      fake.setMode('ok');
      expect(res.status, res.text).toBe(200);
      const sent = lastRequest().answered!.output;
      expect(sent).toContain('\u0000');
      expect(res.body).toMatchObject({ status: 'SUCCEEDED', output: sent.replaceAll('\u0000', '\ufffd') });
      expect((await generationRow(app, res.body.id)).output).toBe(res.body.output);
    });

    it('answers exactly what history shows of the generation afterwards', async () => {
      fake.setMode('ok');
      const res = await generate(app, user.accessToken, {
        prompt: uniquePrompt('Name a bakery'),
        temperature: 0.123456789,
      });
      expect(res.status, res.text).toBe(200);
      const history = await app.api('GET', '/ai/history?limit=1', { token: user.accessToken });
      expect(history.status, history.text).toBe(200);
      const { usage: _, ...answered } = res.body;
      expect(history.body.items[0]).toEqual(answered);
    });

    it(`uses AI_${p.name}_MODEL when the request names no model, and sends no system prompt or temperature it was not given`, async () => {
      fake.setMode('ok');
      const prompt = uniquePrompt('Say hello to');
      const res = await generate(app, user.accessToken, { prompt });
      expect(res.status, res.text).toBe(200);
      expect(res.body.model).toBe(p.defaultModel);
      const req = lastRequest();
      expect(req.model).toBe(p.defaultModel);
      expect(req.temperature).toBeUndefined();
      expect(req.max_tokens).toBeGreaterThan(0);
      expect(p.promptsOf(req)).toEqual({ system: undefined, user: prompt });
    });

    const failures: Array<[FakeProviderMode, string]> = [
      ['rate-limit', 'a 429 rate-limit answer'],
      ['error', 'a 500 answer'],
      ['malformed', 'a 200 answer without a message ({})'],
      ['invalid-json', 'a 200 answer that is not valid JSON'],
    ];

    for (const [mode, label] of failures) {
      it(`maps ${label} to a friendly 502 AI_PROVIDER_ERROR that leaks nothing, stores a FAILED generation and consumes no quota`, async () => {
        fake.setMode('ok');
        // A success first, so the counter row exists and its value is known.
        expect((await generate(app, user.accessToken, { prompt: uniquePrompt() })).status).toBe(200);
        const usedBefore = (await usageOf(app, user.accessToken)).used;
        const counterBefore = await workspaceCounter(app, user.workspaceId);
        const failedBefore = (await generationRows(app, user.workspaceId)).filter((r) => r.status === 'FAILED').length;
        const eventsBefore = (await domainEvents(app, user.workspaceId, 'ai.generation.completed')).length;

        fake.setMode(mode);
        const prompt = uniquePrompt(`Canary prompt ${mode}`);
        const sent = fake.requests.length;
        const res = await generate(app, user.accessToken, { prompt });
        fake.setMode('ok');
        expect(fake.requests.length, 'the provider was called').toBe(sent + 1);
        expectFriendlyProviderError(res, p, prompt);

        expect((await usageOf(app, user.accessToken)).used).toBe(usedBefore);
        expect(await workspaceCounter(app, user.workspaceId)).toBe(counterBefore);
        const failed = (await generationRows(app, user.workspaceId)).filter((r) => r.status === 'FAILED');
        expect(failed).toHaveLength(failedBefore + 1);
        expect(failed.at(-1)).toMatchObject({
          prompt,
          provider: p.name,
          model: p.defaultModel,
          user_id: user.userId,
          error_code: 'AI_PROVIDER_ERROR',
          output: '',
          completion_tokens: 0,
        });
        expect((await domainEvents(app, user.workspaceId, 'ai.generation.completed')).length).toBe(eventsBefore);
      });
    }

    it('a failure costs a test account nothing of its monthly cap either', async () => {
      const account = await registerAs(app, tester);
      fake.setMode('error');
      const res = await generate(app, account.accessToken, { prompt: uniquePrompt() });
      fake.setMode('ok');
      expectError(res, 502, 'AI_PROVIDER_ERROR');
      expect(await userCounter(app, account.userId)).toBe(0);
      expect(await workspaceCounter(app, account.workspaceId)).toBe(0);
      expect((await generate(app, account.accessToken, { prompt: uniquePrompt() })).status).toBe(200);
      expect(await userCounter(app, account.userId)).toBe(1);
    });

    it('maps a rejected API key to a friendly 502 that names neither key', async () => {
      const other = await registerAndLogin(wrongKeyApp.api, { prefix: `ai-${p.name.toLowerCase()}-wrongkey` });
      const prompt = uniquePrompt('Wrong key');
      const sent = fake.requests.length;
      const res = await generate(wrongKeyApp, other.accessToken, { prompt });
      expect(fake.requests.length).toBe(sent + 1);
      p.expectAuth(fake.requests.at(-1)!, p.wrongKey);
      expectFriendlyProviderError(res, p, prompt);
      expect(await workspaceCounter(wrongKeyApp, other.workspaceId)).toBe(0);
    });

    it('gives up after AI_REQUEST_TIMEOUT_MS when the provider never answers: 502 within about 2 s, nothing counted', async () => {
      const other = await registerAndLogin(timeoutApp.api, { prefix: `ai-${p.name.toLowerCase()}-timeout` });
      const prompt = uniquePrompt('Hanging');
      const started = Date.now();
      const res = await generate(timeoutApp, other.accessToken, { prompt });
      const elapsed = Date.now() - started;
      expectFriendlyProviderError(res, p, prompt);
      expect(elapsed).toBeGreaterThanOrEqual(250);
      expect(elapsed).toBeLessThan(2_000);
      expect(hangingFake.requests.some((r) => r.path === p.path)).toBe(true);
      expect(await workspaceCounter(timeoutApp, other.workspaceId)).toBe(0);
      expect(await generationRows(timeoutApp, other.workspaceId)).toMatchObject([
        { status: 'FAILED', error_code: 'AI_PROVIDER_ERROR' },
      ]);
    });

    it('says that the provider did not answer in time (not that it could not be reached) when the request times out', async () => {
      const other = await registerAndLogin(timeoutApp.api, { prefix: `ai-${p.name.toLowerCase()}-timeout2` });
      const prompt = uniquePrompt('Hanging again');
      const err = expectFriendlyProviderError(await generate(timeoutApp, other.accessToken, { prompt }), p, prompt);
      // routers/ai/providers/failure.ts maps timeouts to "did not answer in time".
      expect(err.message).toMatch(/in time|timed out/i);
    });

    it("never writes the API key or the provider's error bodies to the log", () => {
      const logs = [...app.logs, ...timeoutApp.logs, ...wrongKeyApp.logs].join('\n');
      expect(app.logs.length).toBeGreaterThan(0);
      expect(logs).not.toContain(p.apiKey);
      expect(logs).not.toContain(p.wrongKey);
      expect(logs).not.toContain(p.canary);
    });
  });
}

describe('a real provider without its API key', () => {
  for (const name of ['PROVIDER_A', 'PROVIDER_B'] as const) {
    describe(name, () => {
      let app: TestApp;
      let user: Session;
      beforeAll(async () => {
        // Start-up must not fail because of the missing key.
        app = await startTestApp({
          RATE_LIMIT_ENABLED: 'false',
          AI_PROVIDER: name,
          PROVIDER_A_API_KEY: undefined,
          PROVIDER_B_API_KEY: undefined,
        });
        user = await registerAndLogin(app.api, { prefix: `ai-${name.toLowerCase()}-nokey` });
      });
      afterAll(() => app?.close());

      it('starts, and provider status says configured false', async () => {
        const health = await app.api('GET', '/health');
        expect(health.status, health.text).toBe(200);
        expect(await providerStatusOf(app, user.accessToken)).toMatchObject({ provider: name, configured: false });
      });

      it('answers generation with 503 AI_PROVIDER_NOT_CONFIGURED, a configuration message, and counts nothing', async () => {
        const err = expectError(
          await generate(app, user.accessToken, { prompt: uniquePrompt() }),
          503,
          'AI_PROVIDER_NOT_CONFIGURED',
        );
        expect(err.message).toMatch(/not (configured|set)|api key|configur/i);
        const onPath = await app.api('POST', `/workspaces/${user.workspaceId}/ai/generate`, {
          token: user.accessToken,
          body: { prompt: uniquePrompt() },
        });
        expectError(onPath, 503, 'AI_PROVIDER_NOT_CONFIGURED');
        expect(await workspaceCounter(app, user.workspaceId)).toBe(0);
        expect(await generationRows(app, user.workspaceId)).toHaveLength(0);
      });

      it('still serves templates, history and usage', async () => {
        expect((await app.api('GET', '/ai/templates', { token: user.accessToken })).status).toBe(200);
        expect((await app.api('GET', '/ai/history', { token: user.accessToken })).status).toBe(200);
        expect((await usageOf(app, user.accessToken)).used).toBe(0);
      });
    });
  }
});
