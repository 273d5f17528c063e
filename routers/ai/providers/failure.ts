// A provider failure as the client sees it: friendly and empty of anything the provider said (its answer
// may echo the prompt, a key prefix or internal details). The cause goes to the server log only.
import { AppError } from '../../../server/platform/errors.js';

const KIND_BY_STATUS: Record<number, string> = {
  401: 'rejected our credentials',
  403: 'refused the request',
  404: 'does not know the requested model',
  429: 'is rate limiting us',
};

export class ProviderFailure extends AppError {
  constructor(
    provider: string,
    readonly detail: { status?: number; kind: string },
  ) {
    super(
      'AI_PROVIDER_ERROR',
      `The AI provider ${detail.kind}. Nothing was counted against your quota; please try again in a moment.`,
    );
    this.name = `ProviderFailure(${provider})`;
  }
}

/** `midStream`: what to say of a failure after the answer began (the SDKs give such errors no status). */
export function providerFailure(provider: string, err: unknown, midStream?: string): ProviderFailure {
  const status =
    typeof (err as { status?: unknown })?.status === 'number' ? (err as { status: number }).status : undefined;
  // The SDKs' timeout errors: Anthropic's sets its `name`, OpenAI's only has its class name.
  const names = err instanceof Error ? `${err.name} ${err.constructor.name}` : '';
  let kind = 'could not be reached';
  if (/timeout/i.test(names)) kind = 'did not answer in time';
  else if (midStream) kind = midStream;
  else if (status !== undefined)
    kind = KIND_BY_STATUS[status] ?? (status >= 500 ? 'had an internal error' : 'answered with an error');
  return new ProviderFailure(provider, { status, kind });
}
