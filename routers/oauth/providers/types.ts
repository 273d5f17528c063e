// What the sign-in flow needs from an identity provider, whichever protocol it speaks (OpenID Connect for
// Google and the generic provider, plain OAuth 2 for GitHub).
import type { IdentityProviderId } from '../../../db/schema.js';

export type { IdentityProviderId };

/** What a provider asserts about the person who signed in. */
export interface ProviderProfile {
  /** The provider's stable id of the person: never reused, unlike an e-mail address. */
  subject: string;
  /** Lower-cased, when the provider shares one. */
  email: string | undefined;
  /** True only when the provider says it has verified the address. */
  emailVerified: boolean;
  name: string | undefined;
}

/** The values of one flow, made at its start and kept server-side until its callback. */
export interface FlowChecks {
  state: string;
  /** PKCE (S256): only its challenge goes to the provider with the user; the verifier with the code. */
  codeVerifier: string;
  /** OpenID Connect only: the ID token must carry it. */
  nonce: string | undefined;
  /** Where the provider sends the user back: this API's callback of the provider. */
  redirectUri: string;
}

export interface IdentityProvider {
  readonly id: IdentityProviderId;
  /** Shown on the sign-in button. */
  readonly name: string;
  /** Whether its flows carry a nonce (OpenID Connect). */
  readonly usesNonce: boolean;
  /** The provider's authorization URL for this flow; OAUTH_PROVIDER_ERROR when the provider cannot be reached. */
  authorizationUrl(checks: FlowChecks): Promise<URL>;
  /**
   * Redeems the code of `callbackUrl` (the callback as the provider called it) and answers who signed in;
   * the ID token, where there is one, is validated (signature, issuer, audience, expiry, nonce).
   * OAUTH_SIGN_IN_FAILED when the answer does not verify, OAUTH_PROVIDER_ERROR when the provider fails.
   */
  profile(callbackUrl: URL, checks: FlowChecks): Promise<ProviderProfile>;
}

/** The enabled providers, by id, in the order of the sign-in page. */
export type IdentityProviders = ReadonlyMap<IdentityProviderId, IdentityProvider>;
