// PROVIDER_A: the OpenAI Chat Completions protocol through the official `openai` SDK. The base URL is a
// setting, so tests and compatible gateways can stand in for the real API.
import OpenAI from 'openai';
import type { Config } from '../../../server/platform/config.js';
import { providerFailure } from './failure.js';
import type { GenerationRequest, GenerationResult, StreamChunk, TextProvider } from './types.js';

type OpenAIConfig = Pick<
  Config,
  'PROVIDER_A_API_KEY' | 'PROVIDER_A_BASE_URL' | 'AI_PROVIDER_A_MODEL' | 'AI_REQUEST_TIMEOUT_MS'
>;

export function createOpenAIProvider(config: OpenAIConfig): TextProvider {
  const client = config.PROVIDER_A_API_KEY
    ? new OpenAI({
        apiKey: config.PROVIDER_A_API_KEY,
        baseURL: config.PROVIDER_A_BASE_URL,
        timeout: config.AI_REQUEST_TIMEOUT_MS,
        // One attempt: a retry would double the wait the user sees; the user can retry.
        maxRetries: 0,
      })
    : undefined;
  return {
    name: 'PROVIDER_A',
    configured: Boolean(client),
    defaultModel: config.AI_PROVIDER_A_MODEL,
    async generate(req: GenerationRequest): Promise<GenerationResult> {
      if (!client) throw new Error('PROVIDER_A is not configured');
      let completion: OpenAI.Chat.Completions.ChatCompletion;
      try {
        completion = await client.chat.completions.create({
          model: req.model,
          messages: messagesOf(req),
          ...(req.temperature !== undefined && { temperature: req.temperature }),
          max_tokens: req.maxTokens,
        });
      } catch (err) {
        throw providerFailure('PROVIDER_A', err);
      }
      const output = completion.choices?.[0]?.message?.content;
      if (typeof output !== 'string') throw providerFailure('PROVIDER_A', new Error('answer without text'));
      return {
        output,
        promptTokens: completion.usage?.prompt_tokens ?? 0,
        completionTokens: completion.usage?.completion_tokens ?? 0,
      };
    },
    async *stream(req: GenerationRequest, signal: AbortSignal): AsyncGenerator<StreamChunk> {
      if (!client) throw new Error('PROVIDER_A is not configured');
      let started = false;
      try {
        // The last chunk (no choices) carries the usage of the whole answer (`include_usage`).
        const stream = await client.chat.completions.create(
          {
            model: req.model,
            messages: messagesOf(req),
            ...(req.temperature !== undefined && { temperature: req.temperature }),
            max_tokens: req.maxTokens,
            stream: true,
            stream_options: { include_usage: true },
          },
          { signal },
        );
        for await (const chunk of stream) {
          const text = chunk.choices?.[0]?.delta?.content;
          if (text) {
            started = true;
            yield { type: 'delta', text };
          }
          if (chunk.usage) {
            yield {
              type: 'usage',
              promptTokens: chunk.usage.prompt_tokens,
              completionTokens: chunk.usage.completion_tokens,
            };
          }
        }
        // The SDK ends an aborted stream quietly: the caller must still learn it ended unfinished.
        signal.throwIfAborted();
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        throw providerFailure('PROVIDER_A', err, started ? 'stopped in the middle of its answer' : undefined);
      }
    },
  };
}

const messagesOf = (req: GenerationRequest) => [
  ...(req.systemPrompt ? [{ role: 'system' as const, content: req.systemPrompt }] : []),
  { role: 'user' as const, content: req.prompt },
];
