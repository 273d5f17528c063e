import type { Config } from '../../../server/platform/config.js';
import { createMockProvider } from './mock.js';
import type { TextProvider } from './types.js';
import { storableText } from '../../../server/platform/unstorable-text.js';

/**
 * The provider AI_PROVIDER selects. Built at start-up; a missing key is reported, never fatal. Only the
 * selected provider's module (and so its SDK) is loaded.
 */
export async function createTextProvider(config: Config): Promise<TextProvider> {
  if (config.AI_PROVIDER === 'PROVIDER_A') {
    const { createOpenAIProvider } = await import('./openai.js');
    return withStorableOutput(createOpenAIProvider(config));
  }
  if (config.AI_PROVIDER === 'PROVIDER_B') {
    const { createAnthropicProvider } = await import('./anthropic.js');
    return withStorableOutput(createAnthropicProvider(config));
  }
  return createMockProvider({ chunkDelayMs: config.AI_MOCK_STREAM_CHUNK_DELAY_MS });
}

/** A provider's output as Postgres can store it (a NUL in it failed the generation's insert: a 500). */
function withStorableOutput(provider: TextProvider): TextProvider {
  return {
    ...provider,
    async generate(request) {
      const result = await provider.generate(request);
      return { ...result, output: storableText(result.output) };
    },
    async *stream(request, signal) {
      for await (const chunk of provider.stream(request, signal)) {
        yield chunk.type === 'delta' ? { type: 'delta', text: storableText(chunk.text) } : chunk;
      }
    },
  };
}
