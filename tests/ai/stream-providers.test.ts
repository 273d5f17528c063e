// The providers' streams through their official SDKs, against the loopback fakes speaking the providers'
// streaming formats (tests/helpers/fake-openai.ts, fake-anthropic.ts), and MOCK's chunks: the text arrives
// in pieces that make up the whole answer, the tokens come from the providers' final events, an error in
// the middle of the stream is a friendly AI_PROVIDER_ERROR that repeats nothing the provider said, and an
// abort closes the provider's connection (the fake sees it).
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOpenAIProvider } from '../../routers/ai/providers/openai.js';
import { createAnthropicProvider } from '../../routers/ai/providers/anthropic.js';
import { createMockProvider } from '../../routers/ai/providers/mock.js';
import type { StreamChunk, TextProvider } from '../../routers/ai/providers/types.js';
import { AppError } from '../../server/platform/errors.js';
import { FAKE_OPENAI_CANARY, fakeOpenAIAnswer, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { FAKE_ANTHROPIC_CANARY, fakeAnthropicAnswer, startFakeAnthropic } from '../helpers/fake-anthropic.js';
import { waitFor } from '../helpers/wait.js';

const key = () => `sk-test-stream-${crypto.randomBytes(12).toString('hex')}`;
const request = (prompt: string) => ({ prompt, model: 'fake-model', maxTokens: 256 });

async function collect(iterable: AsyncIterable<StreamChunk>) {
  const deltas: string[] = [];
  const usage: { promptTokens?: number; completionTokens?: number } = {};
  for await (const chunk of iterable) {
    if (chunk.type === 'delta') deltas.push(chunk.text);
    else
      Object.assign(
        usage,
        Object.fromEntries(Object.entries(chunk).filter(([k, v]) => k !== 'type' && v !== undefined)),
      );
  }
  return { deltas, usage };
}

const CASES = [
  {
    name: 'PROVIDER_A (OpenAI chat.completion.chunk events)',
    canary: FAKE_OPENAI_CANARY,
    answer: fakeOpenAIAnswer,
    async start() {
      const apiKey = key();
      const fake = await startFakeOpenAI({ apiKey });
      const provider = createOpenAIProvider({
        PROVIDER_A_API_KEY: apiKey,
        PROVIDER_A_BASE_URL: `${fake.url}/v1`,
        AI_PROVIDER_A_MODEL: 'fake-model',
        AI_REQUEST_TIMEOUT_MS: 10_000,
      });
      return { fake: fake, provider };
    },
  },
  {
    name: 'PROVIDER_B (Anthropic message events)',
    canary: FAKE_ANTHROPIC_CANARY,
    answer: fakeAnthropicAnswer,
    async start() {
      const apiKey = key();
      const fake = await startFakeAnthropic({ apiKey });
      const provider = createAnthropicProvider({
        PROVIDER_B_API_KEY: apiKey,
        PROVIDER_B_BASE_URL: fake.url,
        AI_PROVIDER_B_MODEL: 'fake-model',
        AI_REQUEST_TIMEOUT_MS: 10_000,
      });
      return { fake: fake as unknown as FakeOpenAI, provider };
    },
  },
];

describe.each(CASES)('$name', ({ start, answer, canary }) => {
  let fake: FakeOpenAI;
  let provider: TextProvider;
  beforeAll(async () => {
    ({ fake, provider } = await start());
  });
  afterAll(() => fake.close());

  it('streams the answer in several pieces, with the tokens of the final events', async () => {
    fake.setMode('ok');
    const prompt = `stream me ${crypto.randomUUID()}`;
    const { deltas, usage } = await collect(provider.stream(request(prompt), new AbortController().signal));
    const recorded = fake.requests.at(-1)!;
    expect(recorded.stream).toBe(true);
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.join('')).toBe(answer(prompt));
    expect(usage).toEqual({
      promptTokens: recorded.answered!.promptTokens,
      completionTokens: recorded.answered!.completionTokens,
    });
    expect(recorded.clientClosed).toBeUndefined();
  });

  it('when the provider fails mid-stream, then a friendly AI_PROVIDER_ERROR after the first pieces', async () => {
    fake.setMode('error-mid-stream');
    const prompt = `break me ${crypto.randomUUID()}`;
    const deltas: string[] = [];
    const failure = await (async () => {
      for await (const chunk of provider.stream(request(prompt), new AbortController().signal)) {
        if (chunk.type === 'delta') deltas.push(chunk.text);
      }
    })().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(deltas.length).toBeGreaterThan(0);
    expect(failure).toBeInstanceOf(AppError);
    expect((failure as AppError).code).toBe('AI_PROVIDER_ERROR');
    expect((failure as AppError).message).not.toContain(canary);
    expect((failure as AppError).message).not.toContain(prompt);
  });

  it('when the signal aborts mid-stream, then the provider sees its connection close', async () => {
    fake.setMode('slow');
    fake.setChunkDelay(200);
    const abort = new AbortController();
    const iterator = provider.stream(request(`slow ${crypto.randomUUID()}`), abort.signal)[Symbol.asyncIterator]();
    let first = await iterator.next();
    while (!first.done && first.value.type !== 'delta') first = await iterator.next();
    expect(first.done).toBe(false);
    const pending = iterator.next();
    abort.abort();
    await expect(pending).rejects.toThrow();
    const recorded = fake.requests.at(-1)!;
    await waitFor(() => recorded.clientClosed === true, { message: 'the fake saw the connection close' });
    expect(recorded.sentChunks).toBeLessThan(textLength(recorded.answered!.output));
  });
});

const textLength = (text: string) => text.split(/\s+/).length;

describe('MOCK', () => {
  it('streams its usual answer a word at a time, with its token estimates', async () => {
    const mock = createMockProvider({ chunkDelayMs: 1 });
    const req = request(`mock ${crypto.randomUUID()}`);
    const whole = await mock.generate(req);
    const { deltas, usage } = await collect(mock.stream(req, new AbortController().signal));
    expect(deltas.length).toBeGreaterThan(10);
    expect(deltas.join('')).toBe(whole.output);
    expect(usage).toEqual({ promptTokens: whole.promptTokens, completionTokens: whole.completionTokens });
  });

  it('stops when the signal aborts', async () => {
    const mock = createMockProvider({ chunkDelayMs: 50 });
    const abort = new AbortController();
    const deltas: string[] = [];
    const ended = (async () => {
      for await (const chunk of mock.stream(request('abort me'), abort.signal)) {
        if (chunk.type === 'delta') deltas.push(chunk.text);
        if (deltas.length === 2) abort.abort();
      }
    })();
    await expect(ended).rejects.toThrow();
    expect(deltas).toHaveLength(2);
  });
});
