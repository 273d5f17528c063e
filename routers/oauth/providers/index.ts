// The identity providers whose settings are present, built once at start-up by the composition root.
// A provider without its settings is simply absent: its routes answer OAUTH_PROVIDER_NOT_ENABLED. The
// providers' modules (and openid-client) are loaded only when one is configured.
import type { Config } from '../../../server/platform/config.js';
import type { IdentityProviderId } from '../../../db/schema.js';
import type { IdentityProvider, IdentityProviders } from './types.js';

export type { IdentityProvider, IdentityProviders };

export async function createIdentityProviders(config: Config): Promise<IdentityProviders> {
  const providers = new Map<IdentityProviderId, IdentityProvider>();
  const { GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET, GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET } = config;
  if (GITHUB_CLIENT_ID && GITHUB_CLIENT_SECRET) {
    const { githubProvider } = await import('./github.js');
    providers.set('github', githubProvider({ ...config, GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET }));
  }
  if (GOOGLE_CLIENT_ID && GOOGLE_CLIENT_SECRET) {
    const { googleProvider } = await import('./google.js');
    providers.set('google', googleProvider({ ...config, GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET }));
  }
  if (config.OIDC_ISSUER_URL && config.OIDC_CLIENT_ID && config.OIDC_CLIENT_SECRET) {
    const { openIdConnectProvider } = await import('./oidc.js');
    providers.set(
      'oidc',
      openIdConnectProvider({
        id: 'oidc',
        name: config.OIDC_DISPLAY_NAME,
        issuer: config.OIDC_ISSUER_URL,
        clientId: config.OIDC_CLIENT_ID,
        clientSecret: config.OIDC_CLIENT_SECRET,
      }),
    );
  }
  return providers;
}

/** A provider's name for people, also when it is no longer enabled (an identity linked earlier). */
export function providerName(config: Pick<Config, 'OIDC_DISPLAY_NAME'>, id: IdentityProviderId): string {
  return { github: 'GitHub', google: 'Google', oidc: config.OIDC_DISPLAY_NAME }[id];
}
