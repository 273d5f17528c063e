// A provider's failure as the client sees it: one of two codes, and nothing of what the provider said (its
// answers may name the client id, a code or internal details). The cause goes to the server log only.
import * as client from 'openid-client';
import { AppError } from '../../../server/platform/errors.js';
import { ProviderUnavailable, SignInNotVerified } from './errors.js';

export { ProviderUnavailable, SignInNotVerified };

/** Errors of openid-client that mean the provider itself failed (unreachable, slow, or answering nonsense). */
const PROVIDER_DOWN_CODES = new Set([
  'OAUTH_TIMEOUT',
  'OAUTH_ABORT',
  'OAUTH_RESPONSE_IS_NOT_CONFORM',
  'OAUTH_RESPONSE_IS_NOT_JSON',
]);

/**
 * Classifies what openid-client (or a provider's API call) threw. A fetch that failed (TypeError), a
 * timeout, a 5xx or a body that is not JSON: the provider is down. A refusal at the token endpoint
 * (invalid_grant: a code used, expired or issued for another PKCE verifier) or an ID token that fails a
 * check (signature, issuer, audience, expiry, nonce): the sign-in is not verified.
 */
export function providerFailure(provider: string, err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof client.ResponseBodyError)
    return err.status >= 500 ? new ProviderUnavailable(provider, err) : new SignInNotVerified(provider, err);
  if (err instanceof TypeError) return new ProviderUnavailable(provider, err);
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && PROVIDER_DOWN_CODES.has(code)) return new ProviderUnavailable(provider, err);
  return new SignInNotVerified(provider, err);
}
