// A local stand-in for the OpenAI Chat Completions API (PROVIDER_A), as a real HTTP server the official
// `openai` SDK talks to through PROVIDER_A_BASE_URL = `${url}/v1`. It checks the bearer key, records every
// request, and answers according to its mode: a normal completion, a 429 or a 500 whose bodies carry a
// secret-looking canary and an echo of the prompt (so tests can prove neither reaches a client or a log),
// a request left hanging, or a 200 that is not a usable completion. A request with `stream: true` is answered
// as the API streams (server-sent `chat.completion.chunk` events, the usage chunk when
// `stream_options.include_usage`, then `data: [DONE]`); 'slow' spaces the chunks out, 'error-mid-stream'
// sends an error event after the first chunks, and the record notes a client that closed the connection.
import crypto from 'node:crypto';
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as pace } from 'node:timers/promises';

/**
 * ok: a chat.completion. rate-limit: 429. error: 500. hang: never answered. malformed: 200 with `{}`.
 * invalid-json: 200, JSON content type, a body that does not parse.
 */
/** 'ok-with-nul': as 'ok', with a NUL character in the answer (which Postgres cannot store as text). */
/** 'slow': as 'ok', a streamed answer's chunks `setChunkDelay` apart (default 100 ms); 'error-mid-stream':
 * a streamed answer that breaks off with the protocol's error event after two chunks. */
export type FakeProviderMode =
  'ok' | 'ok-with-nul' | 'rate-limit' | 'error' | 'hang' | 'malformed' | 'invalid-json' | 'slow' | 'error-mid-stream';

/** The answer of a fake in `mode` ('ok' or 'ok-with-nul'). */
export const answerIn = (mode: FakeProviderMode, answer: string) =>
  mode === 'ok-with-nul' ? `${answer}\u0000(after a NUL)` : answer;

/** Carried by every error body of the fake; must never reach a response or a log line of the app. */
export const FAKE_OPENAI_CANARY = 'sk-leak-canary-openai-3f9a1c7e5b2d4f60a8e1';

export interface ChatMessage {
  role: string;
  content: unknown;
}

/** A request as a fake provider recorded it (both fakes: the fields their protocols share). */
export interface RecordedProviderRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (undefined when it did not parse). */
  body: Record<string, any> | undefined;
  model?: string;
  messages?: ChatMessage[];
  temperature?: number;
  max_tokens?: number;
  /** What the fake answered with, for 'ok' answers. */
  answered?: { output: string; promptTokens: number; completionTokens: number };
  /** The request asked for a streamed answer. */
  stream?: boolean;
  /** The chunks of text sent before the stream ended (or broke off). */
  sentChunks?: number;
  /** The client closed the connection before the answer was complete. */
  clientClosed?: boolean;
}

export type RecordedChatRequest = RecordedProviderRequest;

/** A running fake provider. */
export interface FakeProvider<R extends RecordedProviderRequest> {
  /** Origin of the server, e.g. http://127.0.0.1:40123. */
  url: string;
  requests: R[];
  setMode(mode: FakeProviderMode): void;
  /** The pause between two streamed chunks in 'slow' mode. */
  setChunkDelay(ms: number): void;
  close(): Promise<void>;
}

/** PROVIDER_A_BASE_URL is `${url}/v1`. */
export type FakeOpenAI = FakeProvider<RecordedChatRequest>;

/** The answer text the fake gives to a user message (also used by tests to predict it). */
export const fakeOpenAIAnswer = (lastUserMessage: string) =>
  `fake-openai answer #${digest(lastUserMessage)}: ${lastUserMessage.slice(0, 60)}`;

/** A message's text: its content when a string, else the parts' JSON. */
const textOf = (content: unknown) => (typeof content === 'string' ? content : JSON.stringify(content ?? ''));

const digest = (text: string) => crypto.createHash('sha256').update(text).digest('hex').slice(0, 12);

/** Token counts the fake reports: deliberately unlike the MOCK provider's estimate (chars / 4). */
export const fakeOpenAIUsage = (messages: ChatMessage[], output: string) => ({
  prompt_tokens: 17 + messages.reduce((n, m) => n + textOf(m.content).split(/\s+/).filter(Boolean).length, 0),
  completion_tokens: 5 + output.split(/\s+/).filter(Boolean).length,
});

export async function startFakeOpenAI({ apiKey }: { apiKey: string }): Promise<FakeOpenAI> {
  const requests: RecordedChatRequest[] = [];
  let mode: FakeProviderMode = 'ok';
  let chunkDelayMs = 100;

  const server = http.createServer(async (req, res) => {
    const record: RecordedChatRequest = await recordedRequest(req, res);
    const { body } = record;
    requests.push(record);

    if (record.method !== 'POST' || record.path !== '/v1/chat/completions') {
      return json(res, 404, {
        error: {
          message: `Unknown request URL: ${record.method} ${record.path}.`,
          type: 'invalid_request_error',
          param: null,
          code: 'unknown_url',
        },
      });
    }
    if (req.headers.authorization !== `Bearer ${apiKey}`) {
      // OpenAI names (part of) the key it was given; this fake names all of it, to prove it never leaks.
      const given = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
      return json(res, 401, {
        error: {
          message: `Incorrect API key provided: ${given}. ${FAKE_OPENAI_CANARY}`,
          type: 'invalid_request_error',
          param: null,
          code: 'invalid_api_key',
        },
      });
    }
    const messages = Array.isArray(body?.messages) ? (body.messages as ChatMessage[]) : [];
    const lastUser = [...messages].reverse().find((m) => m.role === 'user');
    const prompt = textOf(lastUser?.content);

    switch (mode) {
      case 'hang':
        return; // never answered; close() drops the connection
      case 'rate-limit':
        res.setHeader('retry-after', '0');
        return json(res, 429, {
          error: {
            message: `Rate limit reached for ${body?.model} in organization org-canary on requests per min. Key ${FAKE_OPENAI_CANARY}. Prompt was: ${prompt}`,
            type: 'requests',
            param: null,
            code: 'rate_limit_exceeded',
          },
        });
      case 'error':
        return json(res, 500, {
          error: {
            message: `The server had an error (trace ${FAKE_OPENAI_CANARY}) while processing: ${prompt}`,
            type: 'server_error',
            param: null,
            code: null,
          },
        });
      case 'malformed':
        return json(res, 200, {});
      case 'invalid-json':
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(`{"id": "chatcmpl-broken", "choices": [ ${FAKE_OPENAI_CANARY}`);
      case 'ok':
      case 'ok-with-nul':
      case 'slow':
      case 'error-mid-stream': {
        const output = answerIn(mode, fakeOpenAIAnswer(prompt));
        const usage = fakeOpenAIUsage(messages, output);
        record.answered = { output, promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens };
        if (record.stream) {
          const id = `chatcmpl-${crypto.randomBytes(8).toString('hex')}`;
          const created = Math.floor(Date.now() / 1000);
          const chunk = (delta: object, finish: string | null, extra: object = {}) => ({
            data: JSON.stringify({
              id,
              object: 'chat.completion.chunk',
              created,
              model: body?.model,
              system_fingerprint: 'fp_fake',
              choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
              ...(body?.stream_options?.include_usage ? { usage: null } : {}),
              ...extra,
            }),
          });
          const pieces = textChunks(output);
          const events: SseEvent[] = [
            chunk({ role: 'assistant', content: '', refusal: null }, null),
            ...pieces.map((text) => chunk({ content: text }, null)),
            chunk({}, 'stop'),
          ];
          if (body?.stream_options?.include_usage) {
            events.push({
              data: JSON.stringify({
                id,
                object: 'chat.completion.chunk',
                created,
                model: body?.model,
                system_fingerprint: 'fp_fake',
                choices: [],
                usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
              }),
            });
          }
          events.push({ data: '[DONE]' });
          const broken: SseEvent[] = [
            ...events.slice(0, 3),
            {
              data: JSON.stringify({
                error: {
                  message: `The server had an error (trace ${FAKE_OPENAI_CANARY}) while processing: ${prompt}`,
                  type: 'server_error',
                  param: null,
                  code: null,
                },
              }),
            },
          ];
          return writeSse(res, record, mode === 'error-mid-stream' ? broken : events, {
            delayMs: mode === 'slow' ? chunkDelayMs : 0,
            isText: (e) => e.data.includes('"content":"') && !e.data.includes('"content":""'),
          });
        }
        return json(res, 200, {
          id: `chatcmpl-${crypto.randomBytes(8).toString('hex')}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: body?.model,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: output, refusal: null },
              logprobs: null,
              finish_reason: 'stop',
            },
          ],
          usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
        });
      }
    }
  });

  return {
    url: await listenOnLoopback(server),
    requests,
    setMode(next) {
      mode = next;
    },
    setChunkDelay(ms) {
      chunkDelayMs = ms;
    },
    close: () => closeHttpServer(server),
  };
}

/** One server-sent event: its `event:` line (Anthropic names its events; OpenAI does not) and its data. */
export interface SseEvent {
  event?: string;
  data: string;
}

/** An answer cut where the real APIs cut theirs: a word and the spaces after it. */
export const textChunks = (text: string) => text.match(/\S+\s*|\s+/g) ?? [];

/**
 * Writes `events` as a text/event-stream, `delayMs` apart, counting the text chunks sent; stops (and notes
 * it) when the client closes the connection first.
 */
export async function writeSse(
  res: ServerResponse,
  record: RecordedProviderRequest,
  events: SseEvent[],
  { delayMs, isText }: { delayMs: number; isText: (event: SseEvent) => boolean },
) {
  record.sentChunks = 0;
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  for (const [i, e] of events.entries()) {
    // The provider's pace (a slow stream), not a test waiting on the clock.
    if (i > 0 && delayMs > 0) await pace(delayMs);
    if (record.clientClosed || res.destroyed) return;
    res.write(`${e.event ? `event: ${e.event}\n` : ''}data: ${e.data}\n\n`);
    if (isText(e)) record.sentChunks += 1;
  }
  res.end();
}

/** Starts `server` on a free loopback port; answers its origin. */
export async function listenOnLoopback(server: http.Server): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** What a fake provider records of a request: the protocols share these fields. */
export async function recordedRequest(req: IncomingMessage, res: ServerResponse): Promise<RecordedProviderRequest> {
  const body = await readJsonBody(req);
  const record: RecordedProviderRequest = {
    method: req.method ?? '',
    path: (req.url ?? '').split('?')[0],
    headers: req.headers,
    body,
    model: body?.model,
    messages: body?.messages,
    temperature: body?.temperature,
    max_tokens: body?.max_tokens,
    stream: body?.stream === true,
  };
  // The connection closed before the answer was all written: the client went away.
  res.once('close', () => {
    if (!res.writableFinished) record.clientClosed = true;
  });
  return record;
}

/** A request's body parsed as JSON; undefined when it is empty or does not parse. */
export async function readJsonBody(req: IncomingMessage): Promise<Record<string, any> | undefined> {
  const raw = await readBody(req);
  try {
    return raw ? (JSON.parse(raw) as Record<string, any>) : undefined;
  } catch {
    return undefined;
  }
}

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export function json(res: ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Closes the server, dropping connections still open (keep-alive, or a request left hanging). */
export function closeHttpServer(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
