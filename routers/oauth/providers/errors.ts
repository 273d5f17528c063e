// The two ways a sign-in through a provider fails, as the client sees them (failure.ts classifies what the
// provider's library threw into one of them). Apart from failure.ts so that the oauth service can name them
// without loading openid-client, which only a configured provider needs.
import { AppError } from '../../../server/platform/errors.js';

/** The provider could not be reached or failed: nothing is wrong with the sign-in itself, try again later. */
export class ProviderUnavailable extends AppError {
  constructor(
    provider: string,
    /** What failed, for the server log. */
    readonly reason?: unknown,
  ) {
    super('OAUTH_PROVIDER_ERROR', `${provider} could not be reached or failed. Please try again in a moment.`);
    this.name = 'ProviderUnavailable';
  }
}

/** The provider's answer did not verify (a code refused, an ID token that fails a check). */
export class SignInNotVerified extends AppError {
  constructor(
    provider: string,
    /** Which check failed, for the server log. */
    readonly reason?: unknown,
  ) {
    super('OAUTH_SIGN_IN_FAILED', `The sign-in with ${provider} could not be verified. Please start again.`);
    this.name = 'SignInNotVerified';
  }
}
