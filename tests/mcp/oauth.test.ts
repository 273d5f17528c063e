// OAuth 2.1 for MCP clients, end to end with the SDK's client-side auth helpers: discovery from the 401,
// dynamic registration, PKCE, the sign-in and consent pages posted as a browser would, the token, the
// tools called with it, refresh; and the refusals: PKCE plain, a missing or foreign resource, a redirect
// URI not registered, a token of another resource.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { auth, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { TEST_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { login, type Session } from '../helpers/http.js';
import { latestMailToken } from '../helpers/mail.js';
import { ownerOn } from '../developer/helpers.js';
import { ledger } from '../helpers/secret-ledger.js';
import { failedDelivery, retryAudits } from './helpers.js';
import { signingKeys } from '../../routers/mcp/oauth.js';
import { freshLoopback, rateLimitHeader, send } from '../limits/helpers.js';
import { ConfigError, parseConfig } from '../../server/platform/config.js';

let app: TestApp;
let owner: Session;
const REDIRECT = 'http://127.0.0.1:53682/callback';

beforeAll(async () => {
  // The limiter on, out of reach except where a test reads its count (per grant, not per address).
  const unlimited = '100000';
  app = await startTestApp({
    RATE_LIMIT_ENABLED: 'true',
    RATE_LIMIT_MAX_REQUESTS: unlimited,
    RATE_LIMIT_AUTH_MAX_REQUESTS: unlimited,
    RATE_LIMIT_PUBLIC_API_MAX_REQUESTS: unlimited,
    TRUST_PROXY: 'false',
  });
  owner = await ownerOn(app, 'enterprise', 'mcp-oauth');
});
afterAll(() => app?.close());

/** The SDK's OAuthClientProvider, kept in memory; the authorization URL is caught instead of opened. */
class MemoryProvider implements OAuthClientProvider {
  info?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = '';
  authorizationUrl?: URL;
  constructor(readonly scope = 'read workspace:read') {}
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Test agent',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      scope: this.scope,
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
    ledger.sent(tokens.access_token, 'an OAuth access token');
    if (tokens.refresh_token) ledger.sent(tokens.refresh_token, 'an OAuth refresh token');
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** A browser: follows redirects by hand, keeps cookies, posts forms. */
class Browser {
  private cookies = new Map<string, string>();
  async go(url: string | URL, init: { method?: string; form?: Record<string, string | string[]> } = {}) {
    const body = init.form ? new URLSearchParams() : undefined;
    for (const [k, v] of Object.entries(init.form ?? {})) for (const one of [v].flat()) body!.append(k, one);
    const res = await fetch(new URL(url, app.url), {
      method: init.method ?? 'GET',
      redirect: 'manual',
      headers: {
        cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      body,
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair.indexOf('=');
      this.cookies.set(pair.slice(0, i), pair.slice(i + 1));
    }
    return res;
  }
  /** Follows redirects within the app; stops at the client's redirect URI (returned) or a page. */
  async follow(res: Response): Promise<{ res: Response; location?: URL }> {
    while (res.status >= 300 && res.status < 400) {
      const location = new URL(res.headers.get('location')!, app.url);
      if (location.href.startsWith(REDIRECT)) return { res, location };
      res = await this.go(location);
    }
    return { res };
  }
}

/** Signs in and consents on the pages, as a user would; answers the authorization code. */
async function consent(url: URL, who: Session = owner, opts: { scopes?: string[] } = {}) {
  const browser = new Browser();
  let { res } = await browser.follow(await browser.go(url));
  expect(res.status, await res.clone().text()).toBe(200);
  const login = await res.text();
  expect(login).toContain('Sign in');
  const loginAction = /action="([^"]+\/login)"/.exec(login)![1];
  ({ res } = await browser.follow(
    await browser.go(loginAction, { method: 'POST', form: { email: who.email, password: who.password } }),
  ));
  const page = await res.text();
  expect(page).toContain('Connect');
  const action = /action="([^"]+\/consent)"/.exec(page)![1];
  const done = await browser.follow(
    await browser.go(action, {
      method: 'POST',
      form: {
        workspaceId: who.workspaceId,
        scope: opts.scopes ?? ['read', 'workspace:read'],
        allow: '1',
      },
    }),
  );
  expect(done.location, `redirected to the client: ${done.res.status} ${await done.res.clone().text()}`).toBeDefined();
  const code = done.location!.searchParams.get('code');
  expect(code, done.location!.href).toBeTruthy();
  return code!;
}

const mcpUrl = () => new URL('/mcp', app.url);

async function authorize(provider = new MemoryProvider(), who: Session = owner) {
  expect(await auth(provider, { serverUrl: mcpUrl() })).toBe('REDIRECT');
  const code = await consent(provider.authorizationUrl!, who);
  expect(await auth(provider, { serverUrl: mcpUrl(), authorizationCode: code })).toBe('AUTHORIZED');
  return provider;
}

async function connectWith(provider: OAuthClientProvider) {
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider }));
  return client;
}

const mcpStatus = (token: string) =>
  fetch(mcpUrl(), {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  }).then((r) => r.status);

describe('OAuth for MCP clients', () => {
  it('publishes the protected-resource and authorization-server metadata', async () => {
    const resource = await (await fetch(new URL('/.well-known/oauth-protected-resource', app.url))).json();
    expect(resource).toMatchObject({ resource: `${app.url}/mcp`, authorization_servers: [app.url] });
    const as = await (await fetch(new URL('/.well-known/oauth-authorization-server', app.url))).json();
    expect(as).toMatchObject({
      issuer: app.url,
      authorization_endpoint: `${app.url}/oauth/authorize`,
      token_endpoint: `${app.url}/oauth/token`,
      registration_endpoint: `${app.url}/oauth/register`,
      code_challenge_methods_supported: ['S256'],
    });
  });

  it("signs with a key of its own, never oidc-provider's development keys, and serves only its public half", async () => {
    const jwks = (await (await fetch(new URL('/oauth/jwks', app.url))).json()) as {
      keys: Array<Record<string, unknown>>;
    };
    // The development keys are three (RSA, EC, OKP); this is the process's one RSA key.
    expect(jwks.keys).toHaveLength(1);
    const [served] = jwks.keys;
    const { keys } = signingKeys(app.deps);
    expect(served).toMatchObject({ kty: 'RSA', use: 'sig', alg: 'RS256', kid: keys[0].kid, n: keys[0].n });
    for (const part of ['d', 'p', 'q', 'dp', 'dq', 'qi']) expect(served).not.toHaveProperty(part);
    // OAUTH_SIGNING_KEY, when set, is the key; it must be an RSA private key.
    const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    const configured = signingKeys({ ...app.deps, config: { ...app.deps.config, OAUTH_SIGNING_KEY: pem } });
    expect(configured.keys[0].n).toBe(privateKey.export({ format: 'jwk' }).n);
    const ec = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    const env = { NODE_ENV: 'test', OAUTH_SIGNING_KEY: ec.export({ format: 'pem', type: 'pkcs8' }).toString() };
    expect(() => parseConfig(env)).toThrow(ConfigError);
    expect(() => parseConfig(env)).toThrow(/OAUTH_SIGNING_KEY: must be an RSA private key in PEM/);
  });

  it('registers, authorizes with PKCE and consent, and calls tools with the token in the chosen workspace', async () => {
    const provider = await authorize();
    expect(provider.saved?.access_token).toBeTruthy();
    expect(provider.saved?.expires_in).toBeLessThanOrEqual(3600);
    expect(provider.saved?.refresh_token).toBeTruthy();
    const client = await connectWith(provider);
    const ws = (await client.callTool({ name: 'workspaces_get', arguments: {} })) as CallToolResult;
    expect(ws.structuredContent).toMatchObject({ id: owner.workspaceId });
    // Not granted: write.
    const retry = (await client.callTool({
      name: 'webhooks_retry',
      arguments: { deliveryId: crypto.randomUUID() },
    })) as CallToolResult;
    expect(retry.structuredContent).toMatchObject({ code: 'PERMISSION_DENIED' });
    await client.close();
  });

  it('names the grant and its client in the audit entry of a write tool', async () => {
    const provider = new MemoryProvider('read write');
    expect(await auth(provider, { serverUrl: mcpUrl() })).toBe('REDIRECT');
    const code = await consent(provider.authorizationUrl!, owner, { scopes: ['read', 'write'] });
    expect(await auth(provider, { serverUrl: mcpUrl(), authorizationCode: code })).toBe('AUTHORIZED');
    const { deliveryId } = await failedDelivery(app, owner.workspaceId);
    const client = await connectWith(provider);
    const retried = (await client.callTool({ name: 'webhooks_retry', arguments: { deliveryId } })) as CallToolResult;
    expect(retried.isError, JSON.stringify(retried)).toBeFalsy();
    const clientId = provider.info!.client_id;
    const grant = await app.deps.db
      .selectFrom('oauth_grants')
      .select('id')
      .where('client_id', '=', clientId)
      .where('revoked_at', 'is', null)
      .executeTakeFirstOrThrow();
    const [entry] = await retryAudits(app, deliveryId);
    expect(entry.actor_user_id).toBe(owner.userId);
    expect(entry.metadata).toEqual({
      deliveryId,
      event: 'billing.updated',
      oauthGrantId: grant.id,
      oauthClientId: clientId,
    });
    await client.close();
  });

  it('refreshes with a rotating refresh token: the old one is refused after use', async () => {
    const provider = await authorize();
    const first = provider.saved!;
    const refresh = (token: string) =>
      fetch(new URL('/oauth/token', app.url), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          refresh_token: token,
          client_id: provider.info!.client_id,
          resource: `${app.url}/mcp`,
        }),
      });
    const res = await refresh(first.refresh_token!);
    expect(res.status, await res.clone().text()).toBe(200);
    const next = (await res.json()) as OAuthTokens;
    ledger.sent(next.access_token, 'an OAuth access token');
    ledger.sent(next.refresh_token, 'an OAuth refresh token');
    expect(next.refresh_token).not.toBe(first.refresh_token);
    expect(await mcpStatus(next.access_token)).toBe(200);
    expect((await refresh(first.refresh_token!)).status).toBe(400);
  });

  it('refuses PKCE plain, a missing or foreign resource, and an unregistered redirect URI', async () => {
    const provider = await authorize();
    const clientId = provider.info!.client_id;
    const authorizeWith = (params: Record<string, string>) => {
      const query = new URLSearchParams({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: REDIRECT,
        scope: 'read',
        code_challenge: 'a'.repeat(43),
        code_challenge_method: 'S256',
        resource: `${app.url}/mcp`,
        state: 'xyz',
        ...params,
      });
      // An empty value: the parameter is left out.
      for (const [k, v] of Object.entries(params)) if (v === '') query.delete(k);
      return fetch(new URL(`/oauth/authorize?${query.toString()}`, app.url), { redirect: 'manual' });
    };
    const errorOf = async (res: Response) => {
      const location = res.headers.get('location');
      if (location) return new URL(location, app.url).searchParams.get('error');
      return res.status >= 400 ? `status ${res.status}` : null;
    };
    expect(await errorOf(await authorizeWith({ code_challenge_method: 'plain' }))).toBe('invalid_request');
    expect(await errorOf(await authorizeWith({ resource: 'https://elsewhere.example/mcp' }))).toBe('invalid_target');
    expect(await errorOf(await authorizeWith({ resource: '' }))).toBe('invalid_target');
    // An unregistered redirect URI is never redirected to.
    const bad = await authorizeWith({ redirect_uri: 'https://attacker.example/cb' });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('location')).toBeNull();
  });

  it('shows the sign-in form again, with the reason, after a wrong password', async () => {
    const provider = new MemoryProvider();
    expect(await auth(provider, { serverUrl: mcpUrl() })).toBe('REDIRECT');
    const browser = new Browser();
    const { res } = await browser.follow(await browser.go(provider.authorizationUrl!));
    const action = /action="([^"]+\/login)"/.exec(await res.text())![1];
    const wrong = await browser.go(action, {
      method: 'POST',
      form: { email: owner.email, password: 'Wrong-pass-000' },
    });
    expect(wrong.status).toBe(401);
    const page = await wrong.text();
    expect(page).toContain('Invalid e-mail or password.');
    expect(page).toContain('name="password"');
  });

  it('lists the grant in its workspace, and a revocation stops its tokens at once', async () => {
    const provider = await authorize();
    const token = provider.saved!.access_token;
    expect(await mcpStatus(token)).toBe(200);
    const list = await app.api('GET', `/workspaces/${owner.workspaceId}/oauth-grants`, { token: owner.accessToken });
    expect(list.status, list.text).toBe(200);
    const grant = list.body.items.find((g: { clientId: string }) => g.clientId === provider.info!.client_id);
    expect(grant).toMatchObject({
      clientName: 'Test agent',
      scopes: ['read', 'workspace:read'],
      user: { id: owner.userId, email: owner.email },
      lastUsedAt: expect.any(String),
    });
    expect(list.text).not.toContain(token);
    const revoked = await app.api('DELETE', `/workspaces/${owner.workspaceId}/oauth-grants/${grant.id}`, {
      token: owner.accessToken,
    });
    expect(revoked.status, revoked.text).toBe(200);
    expect(await mcpStatus(token)).toBe(401);
    const refreshed = await fetch(new URL('/oauth/token', app.url), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: provider.saved!.refresh_token!,
        client_id: provider.info!.client_id,
      }),
    });
    expect(refreshed.status).toBe(400);
    const again = await app.api('DELETE', `/workspaces/${owner.workspaceId}/oauth-grants/${grant.id}`, {
      token: owner.accessToken,
    });
    expect(again.status).toBe(404);
  });

  it("revokes a user's grants when their password is reset or they are suspended", async () => {
    const resetting = await ownerOn(app, 'enterprise', 'mcp-reset');
    const reset = await authorize(new MemoryProvider(), resetting);
    expect(await mcpStatus(reset.saved!.access_token)).toBe(200);
    expect((await app.api('POST', '/auth/forgot-password', { body: { email: resetting.email } })).status).toBe(200);
    const resetToken = await latestMailToken(app, resetting.email, 'password-reset');
    const done = await app.api('POST', '/auth/reset-password', {
      body: { token: resetToken, newPassword: 'Brand-new-pass-456' },
    });
    expect(done.status, done.text).toBe(200);
    expect(await mcpStatus(reset.saved!.access_token)).toBe(401);

    const suspending = await ownerOn(app, 'enterprise', 'mcp-suspend');
    const suspended = await authorize(new MemoryProvider(), suspending);
    expect(await mcpStatus(suspended.saved!.access_token)).toBe(200);
    const admin = await login(app.api, TEST_ADMIN.email, TEST_ADMIN.password);
    const moved = await app.api('POST', `/admin/users/${suspending.userId}/suspend`, { token: admin.accessToken });
    expect(moved.status, moved.text).toBe(200);
    expect(await mcpStatus(suspended.saved!.access_token)).toBe(401);
    // Activated again, the app stays disconnected: the grant was revoked, not paused.
    await app.api('POST', `/admin/users/${suspending.userId}/activate`, { token: admin.accessToken });
    expect(await mcpStatus(suspended.saved!.access_token)).toBe(401);
  });

  it('counts an MCP client by its grant once its token is known here, whatever its address', async () => {
    const token = (await authorize()).saved!.access_token;
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    };
    const call = (from: string, bearer: string) =>
      send(app.url, 'POST', '/mcp', {
        from,
        token: bearer,
        body: initialize,
        headers: { accept: 'application/json, text/event-stream' },
      });
    // The first call verifies the token on this instance (counted by its address, as the limiter runs first).
    expect((await call(freshLoopback(), token)).status).toBe(200);
    const here = await call(freshLoopback(), token);
    const elsewhere = await call(freshLoopback(), token);
    expect([here.status, elsewhere.status]).toEqual([200, 200]);
    // Two fresh addresses, one count: the grant's.
    expect(rateLimitHeader(elsewhere).remaining).toBe(rateLimitHeader(here).remaining - 1);
    // A made-up token is counted by its address: a fresh address starts a count of its own.
    const madeUp = crypto.randomBytes(32).toString('base64url');
    const address = freshLoopback();
    const first = await call(address, madeUp);
    const second = await call(address, madeUp);
    expect([first.status, second.status]).toEqual([401, 401]);
    expect(rateLimitHeader(first).remaining).toBe(rateLimitHeader(first).limit - 1);
    expect(rateLimitHeader(second).remaining).toBe(rateLimitHeader(first).remaining - 1);
  });

  it('refuses a token of another resource, and a made-up one, at /mcp', async () => {
    const provider = await authorize();
    const token = provider.saved!.access_token;
    expect(await mcpStatus(token)).toBe(200);
    // The same token, as if issued for another resource server.
    const row = await app.deps.db
      .selectFrom('oauth_payloads')
      .selectAll()
      .where('model', '=', 'AccessToken')
      .where('id', '=', token)
      .executeTakeFirstOrThrow();
    const foreign = `foreign-${crypto.randomBytes(16).toString('hex')}`;
    await app.deps.db
      .insertInto('oauth_payloads')
      .values({
        ...row,
        id: foreign,
        payload: JSON.stringify({ ...row.payload, jti: foreign, aud: 'https://other.example/mcp' }),
      })
      .execute();
    expect(await mcpStatus(foreign)).toBe(401);
    expect(await mcpStatus(`not-a-token-${crypto.randomUUID()}`)).toBe(401);
  });
});
