// A real OpenID Connect provider (the `oidc-provider` package) on a loopback port, for the `oidc` and
// `google` sign-ins: discovery, the authorization code flow with PKCE, ID tokens signed with its own RSA
// key, userinfo. The interaction (login and consent) is answered at once for the account `signInAs` names,
// or refused. Faults the tests need are set on the provider itself: an ID token that has already expired
// (its lifetime is negative) or one issued for another client (another audience).
import crypto from 'node:crypto';
import http from 'node:http';
import Provider, { type ClientMetadata } from 'oidc-provider';
import { closeHttpServer, listenOnLoopback } from './fake-openai.js';

export interface OidcAccount {
  sub: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
}

export interface TestOidcProvider {
  /** The issuer identifier, e.g. http://127.0.0.1:40123 (discovery at /.well-known/openid-configuration). */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Starts answering, once the redirect URIs of the client are known (the app's URL). */
  serve(redirectUris: string[]): void;
  accounts: Map<string, OidcAccount>;
  /** Who signs in at the next authorization: a `sub` of `accounts`, or 'deny' to refuse. */
  signInAs(sub: string): void;
  /** Faults of the ID tokens it issues from now on. */
  faults: { expiredIdToken: boolean; audience: string | undefined };
  /** A second registered client: `faults.audience = provider.otherClientId` issues ID tokens for it. */
  otherClientId: string;
  close(): Promise<void>;
}

/**
 * `claimsInIdToken`: whether the ID token carries the e-mail and name (as Google's do); otherwise they are
 * only at userinfo (oidc-provider's default), which the service then asks.
 */
export async function startOidcProvider(opts: { claimsInIdToken: boolean }): Promise<TestOidcProvider> {
  let handler: http.RequestListener | undefined;
  const server = http.createServer((req, res) => {
    if (handler) return handler(req, res);
    res.statusCode = 503;
    res.end();
  });
  const issuer = await listenOnLoopback(server);
  const clientId = `oidc-client-${crypto.randomBytes(4).toString('hex')}`;
  const clientSecret = `oidc-secret-${crypto.randomBytes(16).toString('hex')}`;
  const otherClientId = `${clientId}-other`;
  const accounts = new Map<string, OidcAccount>();
  const faults = { expiredIdToken: false, audience: undefined as string | undefined };
  let approver = 'deny';

  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'test-signing-key', use: 'sig', alg: 'RS256' };

  function serve(redirectUris: string[]) {
    const client = (id: string): ClientMetadata => ({
      client_id: id,
      client_secret: clientSecret,
      redirect_uris: redirectUris,
      grant_types: ['authorization_code'],
      response_types: ['code'],
    });
    const provider = new Provider(issuer, {
      clients: [client(clientId), client(otherClientId)],
      jwks: { keys: [jwk] },
      cookies: { keys: [crypto.randomBytes(16).toString('hex')] },
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
      conformIdTokenClaims: !opts.claimsInIdToken,
      features: { devInteractions: { enabled: false } },
      findAccount: (_ctx, id) => {
        const account = accounts.get(id);
        return account && { accountId: id, claims: () => ({ ...account }) };
      },
      interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
      pkce: { required: () => true },
      // Negative: the token expired ten minutes before it was issued (beyond any clock tolerance).
      ttl: {
        IdToken: () => (faults.expiredIdToken ? -600 : 3600),
        AccessToken: 3600,
        Interaction: 600,
        Grant: 3600,
        Session: 3600,
      },
    });
    const issue = provider.IdToken.prototype.issue;
    provider.IdToken.prototype.issue = async function (options) {
      // Signed by the provider as usual, but for the other client: its audience is not our client id.
      if (faults.audience) this.client = await provider.Client.find(faults.audience);
      return issue.call(this, options);
    };
    const callback = provider.callback();
    handler = (req, res) => {
      if (!req.url?.startsWith('/interaction/')) return callback(req, res);
      void interact(provider, req, res).catch(() => {
        res.statusCode = 500;
        res.end();
      });
    };
  }

  /** The login and consent of the interaction, answered for the account `signInAs` named. */
  async function interact(provider: Provider, req: http.IncomingMessage, res: http.ServerResponse) {
    const details = await provider.interactionDetails(req, res);
    if (approver === 'deny') {
      return provider.interactionFinished(
        req,
        res,
        { error: 'access_denied', error_description: 'The user refused.' },
        { mergeWithLastSubmission: false },
      );
    }
    const grant = new provider.Grant({ accountId: approver, clientId: details.params.client_id });
    grant.addOIDCScope(details.params.scope ?? 'openid');
    const grantId = await grant.save();
    await provider.interactionFinished(
      req,
      res,
      { login: { accountId: approver }, consent: { grantId } },
      { mergeWithLastSubmission: false },
    );
  }

  return {
    issuer,
    clientId,
    clientSecret,
    otherClientId,
    serve,
    accounts,
    signInAs: (sub) => {
      approver = sub;
    },
    faults,
    close: () => closeHttpServer(server),
  };
}
