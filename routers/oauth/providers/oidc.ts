// Sign-in through an OpenID Connect provider (the generic `oidc` one, and Google): the provider's settings by
// discovery, the authorization code flow with PKCE (S256) and a nonce, and the ID token validated by
// openid-client: its signature against the provider's published keys, issuer, audience, expiry and nonce.
// When the ID token carries no e-mail (providers that give claims only at userinfo), userinfo is asked.
import * as client from 'openid-client';
import { isLoopbackHost } from '../../../server/platform/config.js';
import { ProviderUnavailable, SignInNotVerified, providerFailure } from './failure.js';
import type { FlowChecks, IdentityProvider, IdentityProviderId, ProviderProfile } from './types.js';

/** How long one request to a provider may take (discovery, keys, token, userinfo), in seconds. */
export const PROVIDER_TIMEOUT_SECONDS = 10;
const SCOPES = 'openid email profile';

export interface OpenIdConnectSettings {
  id: IdentityProviderId;
  name: string;
  /** The issuer identifier: discovery reads `<issuer>/.well-known/openid-configuration`. */
  issuer: string;
  clientId: string;
  clientSecret: string;
}

/**
 * Whether openid-client may speak plain http to `url`: only on a loopback address, the one case the
 * settings allow (server/platform/config.ts), for a provider run locally and for the tests.
 */
export const plainHttpAllowed = (url: string) => {
  const parsed = new URL(url);
  return parsed.protocol === 'http:' && isLoopbackHost(parsed.hostname);
};

/** Applies the request timeout and, for a loopback provider, plain http to a configuration. */
export function prepare(config: client.Configuration, plainHttp: boolean): client.Configuration {
  config.timeout = PROVIDER_TIMEOUT_SECONDS;
  if (plainHttp) client.allowInsecureRequests(config);
  return config;
}

/** The parameters of an authorization request every provider gets: PKCE S256, state, and where to return. */
export async function authorizationParameters(checks: FlowChecks, scope: string): Promise<Record<string, string>> {
  return {
    redirect_uri: checks.redirectUri,
    scope,
    state: checks.state,
    code_challenge: await client.calculatePKCECodeChallenge(checks.codeVerifier),
    code_challenge_method: 'S256',
  };
}

/** A claim as a string, when it is one. */
const text = (value: unknown) => (typeof value === 'string' && value.trim() ? value.trim() : undefined);
/** `email_verified` as providers send it: a boolean, or (some) the string "true". */
const verified = (value: unknown) => value === true || value === 'true';

export function openIdConnectProvider(settings: OpenIdConnectSettings): IdentityProvider {
  const plainHttp = plainHttpAllowed(settings.issuer);
  // Discovered once and kept; a failed discovery is not kept, so the next request tries again.
  let configuration: Promise<client.Configuration> | undefined;

  async function discover(): Promise<client.Configuration> {
    const discovered = await client.discovery(new URL(settings.issuer), settings.clientId, undefined, undefined, {
      execute: plainHttp ? [client.allowInsecureRequests] : [],
      timeout: PROVIDER_TIMEOUT_SECONDS,
    });
    const metadata = discovered.serverMetadata();
    // client_secret_basic is OpenID Connect's default method, used unless the provider offers only POST.
    const methods = metadata.token_endpoint_auth_methods_supported;
    const auth =
      !methods || methods.includes('client_secret_basic') || !methods.includes('client_secret_post')
        ? client.ClientSecretBasic(settings.clientSecret)
        : client.ClientSecretPost(settings.clientSecret);
    return prepare(new client.Configuration(metadata, settings.clientId, settings.clientSecret, auth), plainHttp);
  }

  function configured(): Promise<client.Configuration> {
    configuration ??= discover().catch((err: unknown) => {
      configuration = undefined;
      throw new ProviderUnavailable(settings.name, err);
    });
    return configuration;
  }

  return {
    id: settings.id,
    name: settings.name,
    usesNonce: true,
    async authorizationUrl(checks) {
      const config = await configured();
      const parameters = await authorizationParameters(checks, SCOPES);
      if (checks.nonce) parameters.nonce = checks.nonce;
      return client.buildAuthorizationUrl(config, parameters);
    },
    async profile(callbackUrl, checks): Promise<ProviderProfile> {
      const config = await configured();
      try {
        const tokens = await client.authorizationCodeGrant(config, callbackUrl, {
          pkceCodeVerifier: checks.codeVerifier,
          expectedState: checks.state,
          expectedNonce: checks.nonce,
          idTokenExpected: true,
        });
        const claims = tokens.claims();
        if (!claims) throw new SignInNotVerified(settings.name, 'no ID token');
        let email = text(claims.email);
        let emailVerified = verified(claims.email_verified);
        let name = text(claims.name);
        if (!email && config.serverMetadata().userinfo_endpoint) {
          // Bound to the ID token's subject: userinfo of another person is refused by openid-client.
          const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
          email = text(info.email);
          emailVerified = verified(info.email_verified);
          name ??= text(info.name);
        }
        return { subject: claims.sub, email: email?.toLowerCase(), emailVerified, name };
      } catch (err) {
        throw providerFailure(settings.name, err);
      }
    },
  };
}
