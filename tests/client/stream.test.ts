// ai.generateStream through the built client package (client/dist) in Node: the mutation's async iterable
// read as the text arrives (httpBatchStreamLink), the access token renewed once when it has expired, a
// refusal before the stream thrown as an ApiError with its code, a provider failure in the middle of the
// stream thrown by the iteration with its code, and an abort that cancels the generation (CANCELED, the
// provider's connection closed).
import crypto from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { builtClient } from '../helpers/client-build.js';
import { registerAndLogin, signedInOf } from '../helpers/http.js';
import { signAccessToken } from '../../server/platform/security/jwt.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { waitFor } from '../helpers/wait.js';
import { generationRow, uniquePrompt } from '../ai/helpers.js';
import type * as ClientModule from '../../client/src/index.js';

type Client = typeof ClientModule;

let c: Client;
let app: TestApp;
let limitedApp: TestApp;
let providerApp: TestApp;
let fake: FakeOpenAI;
beforeAll(async () => {
  const dist = await builtClient();
  c = (await import(path.join(dist, 'index.js'))) as Client;
  const apiKey = `sk-test-client-stream-${crypto.randomBytes(10).toString('hex')}`;
  fake = await startFakeOpenAI({ apiKey });
  [app, limitedApp, providerApp] = await Promise.all([
    startTestApp({ AI_MOCK_STREAM_CHUNK_DELAY_MS: '1' }),
    startTestApp({ AI_MONTHLY_GENERATION_LIMIT: '0' }),
    startTestApp({ AI_PROVIDER: 'PROVIDER_A', PROVIDER_A_API_KEY: apiKey, PROVIDER_A_BASE_URL: `${fake.url}/v1` }),
  ]);
}, 240_000);
afterAll(async () => {
  await Promise.all([app?.close(), limitedApp?.close(), providerApp?.close()]);
  await fake?.close();
});

async function signedIn(target: TestApp) {
  const account = await registerAndLogin(target.api, { prefix: 'client-stream' });
  let refreshes = 0;
  const api = c.createApiClient({
    baseUrl: target.url,
    fetch: (input, init) => {
      if (String(input instanceof Request ? input.url : input).includes('auth.refresh')) refreshes += 1;
      return fetch(input, init);
    },
  });
  const login = signedInOf(await api.session.signIn(account.email, account.password));
  return { api, account, login, refreshes: () => refreshes };
}

type StreamEvent =
  Awaited<ReturnType<ClientModule.ApiClient['ai']['generateStream']['mutate']>> extends AsyncIterable<infer E>
    ? E
    : never;

async function collect(iterable: AsyncIterable<StreamEvent>) {
  const events: StreamEvent[] = [];
  for await (const event of iterable) events.push(event);
  return events;
}

describe('ai.generateStream through the client package', () => {
  it('yields started, the text in deltas, and completed with the stored generation', async () => {
    const { api, account } = await signedIn(app);
    const prompt = uniquePrompt('Stream through the client');
    const events = await collect(await api.ai.generateStream.mutate({ prompt }));
    expect(events[0].type).toBe('started');
    const last = events.at(-1)!;
    if (last.type !== 'completed') throw new Error(`ended with ${last.type}`);
    const deltas = events.filter((e) => e.type === 'delta');
    expect(deltas.length).toBeGreaterThan(5);
    expect(deltas.map((e) => (e.type === 'delta' ? e.text : '')).join('')).toBe(last.generation.output);
    expect(last.generation).toMatchObject({ workspaceId: account.workspaceId, prompt, status: 'SUCCEEDED' });
    expect(last.generation.usage.used).toBe(1);
    expect(events[0].type === 'started' && events[0].id).toBe(last.generation.id);
    expect((await generationRow(app, last.generation.id)).status).toBe('SUCCEEDED');
  });

  it('renews an expired access token once and then streams', async () => {
    const { api, account, login, refreshes } = await signedIn(app);
    const expired = signAccessToken({ ...app.config, JWT_ACCESS_TTL: -60 }, account.userId).token;
    await api.session.setTokens({ accessToken: expired, refreshToken: login.refreshToken });
    const events = await collect(await api.ai.generateStream.mutate({ prompt: uniquePrompt() }));
    expect(events.at(-1)!.type).toBe('completed');
    expect(refreshes()).toBe(1);
  });

  it('throws a refusal before the stream as an ApiError with its code', async () => {
    const { api } = await signedIn(limitedApp);
    const failure = await api.ai.generateStream.mutate({ prompt: uniquePrompt() }).then(
      async (events) => collect(events),
      (err: unknown) => err,
    );
    expect(c.isApiError(failure), String(failure)).toBe(true);
    expect((failure as ClientModule.ApiError).code).toBe('AI_MONTHLY_LIMIT_REACHED');
    expect((failure as ClientModule.ApiError).status).toBe(403);
  });

  it('throws a provider failure mid-stream from the iteration, with its code, after the first deltas', async () => {
    fake.setMode('error-mid-stream');
    const { api } = await signedIn(providerApp);
    const seen: StreamEvent[] = [];
    const failure = await (async () => {
      for await (const event of await api.ai.generateStream.mutate({ prompt: uniquePrompt() })) seen.push(event);
    })().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(seen.some((e) => e.type === 'delta')).toBe(true);
    expect(c.isApiError(failure), String(failure)).toBe(true);
    expect((failure as ClientModule.ApiError).code).toBe('AI_PROVIDER_ERROR');
  });

  it('when the call is aborted mid-stream, the provider sees the close and the generation is CANCELED', async () => {
    fake.setMode('slow');
    fake.setChunkDelay(150);
    const { api } = await signedIn(providerApp);
    const abort = new AbortController();
    const events = await api.ai.generateStream.mutate({ prompt: uniquePrompt() }, { signal: abort.signal });
    let id: string | undefined;
    const ended = (async () => {
      for await (const event of events) {
        if (event.type === 'started') id = event.id;
        if (event.type === 'delta') abort.abort();
      }
    })().catch(() => undefined);
    await ended;
    expect(id).toBeDefined();
    const recorded = fake.requests.at(-1)!;
    await waitFor(() => recorded.clientClosed === true, { message: 'the fake provider saw the connection close' });
    await waitFor(async () => (await generationRow(providerApp, id!)).status === 'CANCELED', {
      message: 'the generation stored CANCELED',
    });
  });
});
