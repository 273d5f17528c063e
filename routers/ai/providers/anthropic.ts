// PROVIDER_B: the Anthropic Messages protocol through the official `@anthropic-ai/sdk`, with the base URL
// as a setting.
import Anthropic from '@anthropic-ai/sdk';
import type { Config } from '../../../server/platform/config.js';
import { providerFailure } from './failure.js';
import type { GenerationRequest, GenerationResult, StreamChunk, TextProvider } from './types.js';

type AnthropicConfig = Pick<
  Config,
  'PROVIDER_B_API_KEY' | 'PROVIDER_B_BASE_URL' | 'AI_PROVIDER_B_MODEL' | 'AI_REQUEST_TIMEOUT_MS'
>;

export function createAnthropicProvider(config: AnthropicConfig): TextProvider {
  const client = config.PROVIDER_B_API_KEY
    ? new Anthropic({
        apiKey: config.PROVIDER_B_API_KEY,
        baseURL: config.PROVIDER_B_BASE_URL,
        timeout: config.AI_REQUEST_TIMEOUT_MS,
        maxRetries: 0,
      })
    : undefined;
  return {
    name: 'PROVIDER_B',
    configured: Boolean(client),
    defaultModel: config.AI_PROVIDER_B_MODEL,
    async generate(req: GenerationRequest): Promise<GenerationResult> {
      if (!client) throw new Error('PROVIDER_B is not configured');
      let message: Anthropic.Message;
      try {
        message = await client.messages.create({
          model: req.model,
          max_tokens: req.maxTokens,
          ...(req.systemPrompt ? { system: req.systemPrompt } : {}),
          ...(req.temperature !== undefined && { temperature: req.temperature }),
          messages: [{ role: 'user', content: req.prompt }],
        });
      } catch (err) {
        throw providerFailure('PROVIDER_B', err);
      }
      const blocks = Array.isArray(message?.content) ? message.content : [];
      const output = blocks.map((b) => (b.type === 'text' ? b.text : '')).join('');
      if (!blocks.some((b) => b.type === 'text')) throw providerFailure('PROVIDER_B', new Error('answer without text'));
      return {
        output,
        promptTokens: message.usage?.input_tokens ?? 0,
        completionTokens: message.usage?.output_tokens ?? 0,
      };
    },
    async *stream(req: GenerationRequest, signal: AbortSignal): AsyncGenerator<StreamChunk> {
      if (!client) throw new Error('PROVIDER_B is not configured');
      let started = false;
      try {
        // message_start carries the input tokens, message_delta the output tokens so far, text arrives in
        // content_block_delta events; an `error` event mid-stream is thrown by the SDK.
        const stream = await client.messages.create(
          {
            model: req.model,
            max_tokens: req.maxTokens,
            ...(req.systemPrompt ? { system: req.systemPrompt } : {}),
            ...(req.temperature !== undefined && { temperature: req.temperature }),
            messages: [{ role: 'user', content: req.prompt }],
            stream: true,
          },
          { signal },
        );
        for await (const event of stream) {
          if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') {
            started = true;
            if (event.delta.text) yield { type: 'delta', text: event.delta.text };
          } else if (event.type === 'message_start') {
            yield { type: 'usage', promptTokens: event.message.usage?.input_tokens };
          } else if (event.type === 'message_delta') {
            yield { type: 'usage', completionTokens: event.usage?.output_tokens };
          }
        }
        // The SDK ends an aborted stream quietly: the caller must still learn it ended unfinished.
        signal.throwIfAborted();
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        throw providerFailure('PROVIDER_B', err, started ? 'stopped in the middle of its answer' : undefined);
      }
    },
  };
}
