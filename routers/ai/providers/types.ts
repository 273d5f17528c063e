// What a text-generation provider does. MOCK answers locally; PROVIDER_A speaks OpenAI Chat Completions
// and PROVIDER_B Anthropic Messages, each through its official SDK.
import type { AiProvider } from '../../../db/schema.js';

export interface GenerationRequest {
  prompt: string;
  systemPrompt?: string;
  model: string;
  temperature?: number;
  maxTokens: number;
}

export interface GenerationResult {
  output: string;
  promptTokens: number;
  completionTokens: number;
}

/** One piece of a streamed answer: text as it is written, or the tokens the provider reports at the end. */
export type StreamChunk =
  { type: 'delta'; text: string } | { type: 'usage'; promptTokens?: number; completionTokens?: number };

export interface TextProvider {
  readonly name: AiProvider;
  /** The key the provider needs is set (MOCK needs none). */
  readonly configured: boolean;
  /** The model used when neither the request nor AI_DEFAULT_MODEL names one. */
  readonly defaultModel: string;
  /** Answers in this process, without a network call (MOCK): its answer may be made before the limits
   * are checked, and is then stored by the statement that counts it. */
  readonly inProcess?: boolean;
  /** Throws AppError('AI_PROVIDER_ERROR') with a friendly message when the provider fails. */
  generate(request: GenerationRequest): Promise<GenerationResult>;
  /**
   * The answer as the provider writes it. Aborting `signal` closes the provider's connection (the
   * iteration then throws). A provider failure throws AppError('AI_PROVIDER_ERROR'), as generate() does.
   */
  stream(request: GenerationRequest, signal: AbortSignal): AsyncIterable<StreamChunk>;
}
