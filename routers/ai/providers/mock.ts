// MOCK: no external call; the same request always gives the same answer, with token counts of a
// realistic size (about four characters a token, as the real providers count English).
import crypto from 'node:crypto';
import type { GenerationRequest, GenerationResult, StreamChunk, TextProvider } from './types.js';

const SENTENCES = [
  'Start with the reader: say in one line what they will get from this.',
  'Keep each paragraph to a single idea and open it with that idea.',
  'Concrete numbers and examples persuade better than adjectives.',
  'Close with one clear next step the reader can take today.',
  'Cut every sentence that would not be missed.',
  'Name the audience explicitly, then write only for them.',
  'Lead with the outcome, then explain how to get there.',
  'A short list beats a long paragraph when the order matters.',
  'Plain words travel further than clever ones.',
  'Check that the title promises exactly what the text delivers.',
  'Group related points under headings so the text can be skimmed.',
  'End each section by linking it to the next one.',
];

export const estimateTokens = (text: string) => Math.max(1, Math.ceil(text.length / 4));

/** The answer streamed a word at a time (with the spaces that follow it), `chunkDelayMs` apart. */
export function createMockProvider({ chunkDelayMs = 20 }: { chunkDelayMs?: number } = {}): TextProvider {
  const provider: TextProvider = {
    name: 'MOCK',
    configured: true,
    defaultModel: 'mock-writer-1',
    inProcess: true,
    async generate(req: GenerationRequest): Promise<GenerationResult> {
      const digest = crypto
        .createHash('sha256')
        .update(JSON.stringify([req.model, req.systemPrompt ?? '', req.prompt, req.temperature ?? null]))
        .digest();
      const count = 3 + (digest[0] % 4);
      const picked = Array.from({ length: count }, (_, i) => SENTENCES[digest[i + 1] % SENTENCES.length]);
      const topic = req.prompt.replace(/\s+/g, ' ').trim().slice(0, 80);
      const output = `Draft for "${topic}":\n\n${picked.map((s, i) => `${i + 1}. ${s}`).join('\n')}`;
      const completion = output.slice(0, req.maxTokens * 4);
      return {
        output: completion,
        promptTokens: estimateTokens((req.systemPrompt ?? '') + req.prompt),
        completionTokens: estimateTokens(completion),
      };
    },
    async *stream(req: GenerationRequest, signal: AbortSignal): AsyncGenerator<StreamChunk> {
      const result = await provider.generate(req);
      yield { type: 'usage', promptTokens: result.promptTokens };
      // One abort listener for the whole stream: it ends the wait at hand (timers/promises' delay with a
      // signal adds and removes a listener per chunk, the larger part of a chunk's cost at 1,000 streams).
      let wake: (() => void) | undefined;
      const onAbort = () => wake?.();
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        for (const [i, text] of (result.output.match(/\S+\s*|\s+/g) ?? []).entries()) {
          if (i > 0 && chunkDelayMs > 0 && !signal.aborted) {
            await new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, chunkDelayMs);
              wake = () => {
                clearTimeout(timer);
                resolve();
              };
            });
          }
          signal.throwIfAborted();
          yield { type: 'delta', text };
        }
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
      yield { type: 'usage', completionTokens: result.completionTokens };
    },
  };
  return provider;
}
