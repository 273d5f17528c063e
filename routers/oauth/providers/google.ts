// Sign-in with Google: an OpenID Connect provider found by discovery at GOOGLE_ISSUER_URL
// (https://accounts.google.com; another issuer only for tests or a compatible stand-in).
import type { Config } from '../../../server/platform/config.js';
import { openIdConnectProvider } from './oidc.js';
import type { IdentityProvider } from './types.js';

export function googleProvider(
  config: Pick<Config, 'GOOGLE_ISSUER_URL'> & { GOOGLE_CLIENT_ID: string; GOOGLE_CLIENT_SECRET: string },
): IdentityProvider {
  return openIdConnectProvider({
    id: 'google',
    name: 'Google',
    issuer: config.GOOGLE_ISSUER_URL,
    clientId: config.GOOGLE_CLIENT_ID,
    clientSecret: config.GOOGLE_CLIENT_SECRET,
  });
}
