// Sign-in with GitHub: plain OAuth 2 (GitHub issues no ID token) through openid-client, with PKCE (S256) and
// state; then who signed in from GitHub's API: the numeric user id (`GET /user`) is the identity, the
// e-mail and whether GitHub verified it come from `GET /user/emails` (scope user:email). GITHUB_BASE_URL
// and GITHUB_API_URL point elsewhere only for GitHub Enterprise or the tests.
import * as client from 'openid-client';
import { z } from 'zod';
import type { Config } from '../../../server/platform/config.js';
import { ProviderUnavailable, SignInNotVerified, providerFailure } from './failure.js';
import { authorizationParameters, plainHttpAllowed, prepare } from './oidc.js';
import type { IdentityProvider, ProviderProfile } from './types.js';

const NAME = 'GitHub';
const SCOPES = 'read:user user:email';

const githubUser = z.object({
  id: z.number().int(),
  login: z.string(),
  name: z.string().nullish(),
  email: z.string().nullish(),
});
const githubEmails = z.array(z.object({ email: z.string(), primary: z.boolean(), verified: z.boolean() }));

/**
 * The address to use: the primary one when GitHub verified it, else another verified one, else the
 * primary (unverified), else the public profile address (never verified by this answer).
 */
function chooseEmail(emails: z.infer<typeof githubEmails>, publicEmail: string | null | undefined) {
  const primary = emails.find((e) => e.primary);
  const chosen = primary?.verified ? primary : (emails.find((e) => e.verified) ?? primary);
  if (chosen) return { email: chosen.email, verified: chosen.verified };
  return { email: publicEmail ?? undefined, verified: false };
}

export function githubProvider(
  config: Pick<Config, 'GITHUB_BASE_URL' | 'GITHUB_API_URL'> & {
    GITHUB_CLIENT_ID: string;
    GITHUB_CLIENT_SECRET: string;
  },
): IdentityProvider {
  const base = config.GITHUB_BASE_URL.replace(/\/+$/, '');
  const api = config.GITHUB_API_URL.replace(/\/+$/, '');
  const server: client.ServerMetadata = {
    issuer: base,
    authorization_endpoint: `${base}/login/oauth/authorize`,
    token_endpoint: `${base}/login/oauth/access_token`,
  };
  // GitHub takes the client secret in the body (client_secret_post, openid-client's default).
  const oauth = prepare(
    new client.Configuration(server, config.GITHUB_CLIENT_ID, config.GITHUB_CLIENT_SECRET),
    plainHttpAllowed(base) || plainHttpAllowed(api),
  );

  /** A GET of GitHub's REST API with the user's token; undefined for a 403 or 404 when `optional`. */
  async function apiGet(accessToken: string, path: string, optional = false): Promise<unknown> {
    const headers = new Headers({
      accept: 'application/vnd.github+json',
      'user-agent': 'workspace-saas-api',
      'x-github-api-version': '2022-11-28',
    });
    const res = await client.fetchProtectedResource(oauth, accessToken, new URL(api + path), 'GET', null, headers);
    if (optional && (res.status === 403 || res.status === 404)) return undefined;
    if (res.status >= 500) throw new ProviderUnavailable(NAME, `GET ${path} answered ${res.status}`);
    if (!res.ok) throw new SignInNotVerified(NAME, `GET ${path} answered ${res.status}`);
    return res.json();
  }

  return {
    id: 'github',
    name: NAME,
    usesNonce: false,
    async authorizationUrl(checks) {
      return client.buildAuthorizationUrl(oauth, await authorizationParameters(checks, SCOPES));
    },
    async profile(callbackUrl, checks): Promise<ProviderProfile> {
      try {
        const tokens = await client.authorizationCodeGrant(oauth, callbackUrl, {
          pkceCodeVerifier: checks.codeVerifier,
          expectedState: checks.state,
        });
        const user = githubUser.safeParse(await apiGet(tokens.access_token, '/user'));
        if (!user.success) throw new ProviderUnavailable(NAME, 'GET /user answered an unexpected body');
        // Without the user:email scope granted, GitHub answers 403/404: only the public address is known.
        const emails = githubEmails.safeParse((await apiGet(tokens.access_token, '/user/emails', true)) ?? []);
        if (!emails.success) throw new ProviderUnavailable(NAME, 'GET /user/emails answered an unexpected body');
        const { email, verified } = chooseEmail(emails.data, user.data.email);
        return {
          subject: String(user.data.id),
          email: email?.trim().toLowerCase(),
          emailVerified: verified,
          name: user.data.name?.trim() || user.data.login,
        };
      } catch (err) {
        throw providerFailure(NAME, err);
      }
    },
  };
}
