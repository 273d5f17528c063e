// A local stand-in for the Anthropic Messages API (PROVIDER_B), as a real HTTP server the official
// `@anthropic-ai/sdk` talks to through PROVIDER_B_BASE_URL = `url` (the SDK appends /v1/messages). It
// checks the key (`x-api-key`, or the bearer token the current SDK sends) and the presence of
// `anthropic-version`, records every request, and answers per its
// mode, like tests/helpers/fake-openai.ts: a message, a 429 or a 500 carrying a canary and the prompt, a
// hanging request, or a 200 that is not a usable message. A request with `stream: true` is answered with the
// Messages API's server-sent events (message_start, content_block_start, content_block_delta...,
// content_block_stop, message_delta with the output tokens, message_stop); 'slow' and 'error-mid-stream'
// as in the OpenAI fake (the error is Anthropic's `event: error`).
import crypto from 'node:crypto';
import http from 'node:http';
import {
  answerIn,
  closeHttpServer,
  json,
  listenOnLoopback,
  recordedRequest,
  textChunks,
  writeSse,
  type SseEvent,
  type ChatMessage,
  type FakeProvider,
  type FakeProviderMode,
  type RecordedProviderRequest,
} from './fake-openai.js';

export type { FakeProviderMode } from './fake-openai.js';

/** Carried by every error body of the fake; must never reach a response or a log line of the app. */
export const FAKE_ANTHROPIC_CANARY = 'sk-ant-leak-canary-9d2e6b1f0c4a7e3d5b8f';

export type AnthropicMessage = ChatMessage;

export interface RecordedMessagesRequest extends RecordedProviderRequest {
  system?: unknown;
}

/** PROVIDER_B_BASE_URL is `url` itself. */
export type FakeAnthropic = FakeProvider<RecordedMessagesRequest>;

const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((b: { type?: string; text?: string }) => (b?.type === 'text' ? (b.text ?? '') : '')).join('')
      : '';

export const fakeAnthropicAnswer = (lastUserMessage: string) =>
  `fake-anthropic answer #${crypto.createHash('sha256').update(lastUserMessage).digest('hex').slice(0, 12)}: ${lastUserMessage.slice(0, 60)}`;

export async function startFakeAnthropic({ apiKey }: { apiKey: string }): Promise<FakeAnthropic> {
  const requests: RecordedMessagesRequest[] = [];
  let mode: FakeProviderMode = 'ok';
  let chunkDelayMs = 100;

  const error = (type: string, message: string) => ({
    type: 'error',
    error: { type, message },
    request_id: `req_${crypto.randomBytes(6).toString('hex')}`,
  });

  const server = http.createServer(async (req, res) => {
    const record: RecordedMessagesRequest = await recordedRequest(req, res);
    const { body } = record;
    record.system = body?.system;
    requests.push(record);

    if (record.method !== 'POST' || record.path !== '/v1/messages') {
      return json(res, 404, error('not_found_error', `Not found: ${record.method} ${record.path}`));
    }
    // The Messages API documents `x-api-key`; the installed official SDK (1.12) sends the key as
    // `Authorization: Bearer <key>` instead. Either carries the key; anything else is refused.
    const given =
      typeof req.headers['x-api-key'] === 'string'
        ? req.headers['x-api-key']
        : String(req.headers.authorization ?? '').replace(/^Bearer /, '');
    if (given !== apiKey) {
      return json(res, 401, error('authentication_error', `invalid x-api-key: ${given} ${FAKE_ANTHROPIC_CANARY}`));
    }
    if (!req.headers['anthropic-version']) {
      return json(res, 400, error('invalid_request_error', 'anthropic-version: header is required'));
    }
    const messages = Array.isArray(body?.messages) ? (body.messages as AnthropicMessage[]) : [];
    const lastUser = [...messages].reverse().find((m) => m.role === 'user');
    const prompt = textOf(lastUser?.content);

    switch (mode) {
      case 'hang':
        return;
      case 'rate-limit':
        res.setHeader('retry-after', '0');
        return json(
          res,
          429,
          error(
            'rate_limit_error',
            `Number of request tokens has exceeded your rate limit (key ${FAKE_ANTHROPIC_CANARY}). Prompt was: ${prompt}`,
          ),
        );
      case 'error':
        return json(
          res,
          500,
          error('api_error', `Internal server error (trace ${FAKE_ANTHROPIC_CANARY}) while processing: ${prompt}`),
        );
      case 'malformed':
        return json(res, 200, {});
      case 'invalid-json':
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(`{"id": "msg_broken", "content": [ ${FAKE_ANTHROPIC_CANARY}`);
      case 'ok':
      case 'ok-with-nul':
      case 'slow':
      case 'error-mid-stream': {
        const output = answerIn(mode, fakeAnthropicAnswer(prompt));
        const inputTokens = 23 + (textOf(body?.system) + prompt).split(/\s+/).filter(Boolean).length;
        const outputTokens = 3 + output.split(/\s+/).filter(Boolean).length;
        record.answered = { output, promptTokens: inputTokens, completionTokens: outputTokens };
        const id = `msg_${crypto.randomBytes(10).toString('hex')}`;
        if (record.stream) {
          const event = (name: string, data: object): SseEvent => ({
            event: name,
            data: JSON.stringify({ type: name, ...data }),
          });
          const events: SseEvent[] = [
            event('message_start', {
              message: {
                id,
                type: 'message',
                role: 'assistant',
                content: [],
                model: body?.model,
                stop_reason: null,
                stop_sequence: null,
                usage: { input_tokens: inputTokens, output_tokens: 1 },
              },
            }),
            event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
            event('ping', {}),
            ...textChunks(output).map((text) =>
              event('content_block_delta', { index: 0, delta: { type: 'text_delta', text } }),
            ),
            event('content_block_stop', { index: 0 }),
            event('message_delta', {
              delta: { stop_reason: 'end_turn', stop_sequence: null },
              usage: { output_tokens: outputTokens },
            }),
            event('message_stop', {}),
          ];
          const broken = [
            ...events.slice(0, 5),
            {
              event: 'error',
              data: JSON.stringify(
                error('overloaded_error', `Overloaded (trace ${FAKE_ANTHROPIC_CANARY}) while processing: ${prompt}`),
              ),
            },
          ];
          return writeSse(res, record, mode === 'error-mid-stream' ? broken : events, {
            delayMs: mode === 'slow' ? chunkDelayMs : 0,
            isText: (e) => e.event === 'content_block_delta',
          });
        }
        return json(res, 200, {
          id,
          type: 'message',
          role: 'assistant',
          content: [{ type: 'text', text: output }],
          model: body?.model,
          stop_reason: 'end_turn',
          stop_sequence: null,
          usage: { input_tokens: inputTokens, output_tokens: outputTokens },
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
