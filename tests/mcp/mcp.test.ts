// POST /mcp with the SDK's own client over Streamable HTTP: initialize, tools and prompts listed and called
// with a workspace API key, scopes refused, an unknown tool, a domain error carried as { code, message },
// the public-API rate limit, 401 with the OAuth metadata's address, and a foreign Origin refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { registerAndLogin, type Session } from '../helpers/http.js';
import { createKey, ownerOn, trackSecret } from '../developer/helpers.js';
import { failedDelivery, retryAudits } from './helpers.js';

let app: TestApp;
let limited: TestApp;
let owner: Session;

beforeAll(async () => {
  [app, limited] = await Promise.all([
    startTestApp({
      RATE_LIMIT_ENABLED: 'false',
      AI_MONTHLY_GENERATION_LIMIT: '1',
      CORS_ORIGINS: 'https://console.tests.local',
    }),
    startTestApp({
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_PUBLIC_API_MAX_REQUESTS: '4',
      RATE_LIMIT_MAX_REQUESTS: '1000',
    }),
  ]);
  owner = await ownerOn(app, 'enterprise', 'mcp');
});
afterAll(async () => {
  await Promise.all([app?.close(), limited?.close()]);
});

/** An SDK client connected to `on`'s /mcp with `rawKey` as Bearer. */
async function connect(rawKey: string, on: TestApp = app) {
  trackSecret(rawKey, 'an API key sent to /mcp');
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', on.url), {
    requestInit: { headers: { authorization: `Bearer ${rawKey}` } },
  });
  const client = new Client({ name: 'mcp-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

const post = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(new URL('/mcp', app.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

describe('POST /mcp with an API key', () => {
  it('initializes, and lists the marked procedures as tools with input and output schemas', async () => {
    const key = await createKey(app, owner, { scopes: ['read'] });
    const client = await connect(key.rawKey);
    expect(client.getServerVersion()?.name).toBe('workspace-saas-api');
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const name of [
      'ai_generate',
      'ai_history',
      'ai_usage',
      'ai_templates',
      'workspaces_get',
      'workspaces_members',
      'webhooks_list',
      'webhooks_deliveries',
      'webhooks_retry',
      'billing_current',
    ])
      expect(names).toContain(name);
    // Only marked procedures: nothing of accounts, keys or admin.
    expect(names.some((n) => n.startsWith('auth_') || n.startsWith('apiKeys_') || n.startsWith('admin'))).toBe(false);
    const history = tools.find((t) => t.name === 'ai_history')!;
    // The workspace comes from the key, never from the arguments.
    expect(Object.keys(history.inputSchema.properties ?? {})).not.toContain('workspaceId');
    expect(history.inputSchema.properties).toHaveProperty('limit');
    expect(history.outputSchema).toBeDefined();
    expect(history.annotations?.readOnlyHint).toBe(true);
    expect(tools.find((t) => t.name === 'ai_generate')!.annotations?.readOnlyHint).toBe(false);
    await client.close();
  });

  it('calls read tools in the key workspace, with structuredContent matching the REST answer', async () => {
    const key = await createKey(app, owner, { scopes: ['read'] });
    const client = await connect(key.rawKey);
    const ws = (await client.callTool({ name: 'workspaces_get', arguments: {} })) as CallToolResult;
    expect(ws.isError, JSON.stringify(ws)).toBeFalsy();
    expect(ws.structuredContent).toMatchObject({ id: owner.workspaceId });
    const members = (await client.callTool({ name: 'workspaces_members', arguments: {} })) as CallToolResult;
    expect((members.structuredContent as { items: Array<{ email: string }> }).items.map((m) => m.email)).toContain(
      owner.email,
    );
    const plan = (await client.callTool({ name: 'billing_current', arguments: {} })) as CallToolResult;
    const rest = await app.api('GET', `/billing/current?workspaceId=${owner.workspaceId}`, {
      token: owner.accessToken,
    });
    expect(plan.structuredContent).toEqual(rest.body);
    const history = (await client.callTool({ name: 'ai_history', arguments: { limit: 5 } })) as CallToolResult;
    expect(history.structuredContent).toMatchObject({ items: expect.any(Array), limit: 5 });
    await client.close();
  });

  it('refuses a tool whose scope the key lacks, as a tool error PERMISSION_DENIED', async () => {
    const key = await createKey(app, owner, { scopes: ['files:read'] });
    const client = await connect(key.rawKey);
    const result = (await client.callTool({ name: 'ai_history', arguments: {} })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ code: 'PERMISSION_DENIED' });
    const write = await createKey(app, owner, { scopes: ['read'] });
    const reader = await connect(write.rawKey);
    const generated = (await reader.callTool({ name: 'ai_generate', arguments: { prompt: 'hi' } })) as CallToolResult;
    expect(generated.structuredContent).toMatchObject({ code: 'PERMISSION_DENIED' });
    await Promise.all([client.close(), reader.close()]);
  });

  it('generates with ai:generate, then carries AI_MONTHLY_LIMIT_REACHED as the tool error code', async () => {
    const own = await ownerOn(app, 'enterprise', 'mcp-gen');
    const key = await createKey(app, own, { scopes: ['ai:generate'] });
    const client = await connect(key.rawKey);
    const first = (await client.callTool({
      name: 'ai_generate',
      arguments: { prompt: 'A haiku on keys' },
    })) as CallToolResult;
    expect(first.isError, JSON.stringify(first)).toBeFalsy();
    expect(first.structuredContent).toMatchObject({
      workspaceId: own.workspaceId,
      userId: own.userId,
      output: expect.any(String),
    });
    const second = (await client.callTool({ name: 'ai_generate', arguments: { prompt: 'Another' } })) as CallToolResult;
    expect(second.isError).toBe(true);
    expect(second.structuredContent).toMatchObject({ code: 'AI_MONTHLY_LIMIT_REACHED', message: expect.any(String) });
    // The generation is in the workspace's history over REST, made by the key's creator.
    const rest = await app.api('GET', `/ai/history?workspaceId=${own.workspaceId}`, { token: own.accessToken });
    expect(rest.body.items.map((g: { id: string }) => g.id)).toContain((first.structuredContent as { id: string }).id);
    await client.close();
  });

  it('runs a write once per Idempotency-Key and replays its answer; another request with the key is refused', async () => {
    const own = await ownerOn(app, 'enterprise', 'mcp-idem');
    const key = await createKey(app, own, { scopes: ['write'] });
    const client = await connect(key.rawKey);
    const call = (prompt: string, idempotencyKey: string) =>
      client.callTool({
        name: 'ai_generate',
        arguments: { prompt },
        _meta: { idempotencyKey },
      }) as Promise<CallToolResult>;
    const first = await call('Once only', 'gen-1');
    expect(first.isError, JSON.stringify(first)).toBeFalsy();
    // The workspace allows one generation a month: a second run would be refused, the replay is not.
    const again = await call('Once only', 'gen-1');
    expect(again.structuredContent).toEqual(first.structuredContent);
    expect(again._meta).toMatchObject({ idempotentReplayed: true });
    const reused = await call('Something else', 'gen-1');
    expect(reused.structuredContent).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED' });
    const rest = await app.api('GET', `/ai/history?workspaceId=${own.workspaceId}`, { token: own.accessToken });
    expect(rest.body.items).toHaveLength(1);
    await client.close();
  });

  it('names the API key in the audit entry of a write tool, beside the user it acts for', async () => {
    const own = await ownerOn(app, 'enterprise', 'mcp-audit');
    const key = await createKey(app, own, { scopes: ['read', 'write'] });
    const { deliveryId, webhookId } = await failedDelivery(app, own.workspaceId);
    const client = await connect(key.rawKey);
    const retried = (await client.callTool({ name: 'webhooks_retry', arguments: { deliveryId } })) as CallToolResult;
    expect(retried.isError, JSON.stringify(retried)).toBeFalsy();
    const [entry, ...more] = await retryAudits(app, deliveryId);
    expect(more).toHaveLength(0);
    expect(entry).toMatchObject({
      actor_user_id: own.userId,
      workspace_id: own.workspaceId,
      target_type: 'webhook',
      target_id: webhookId,
    });
    expect(entry.metadata).toEqual({ deliveryId, event: 'billing.updated', apiKeyId: key.id });
    // The same retry by the user over REST names no key.
    const rest = await app.api('POST', `/workspaces/${own.workspaceId}/webhook-deliveries/${deliveryId}/retry`, {
      token: own.accessToken,
    });
    expect(rest.status, rest.text).toBe(200);
    const byUser = (await retryAudits(app, deliveryId)).find((e) => e.id !== entry.id)!;
    expect(byUser.metadata).toEqual({ deliveryId, event: 'billing.updated' });
    await client.close();
  });

  it('answers a bad argument as a tool error BAD_REQUEST with its issues', async () => {
    const key = await createKey(app, owner, { scopes: ['read'] });
    const client = await connect(key.rawKey);
    const result = (await client.callTool({ name: 'ai_history', arguments: { limit: 1000 } })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ code: 'BAD_REQUEST', issues: expect.any(Array) });
    await client.close();
  });

  it('answers an unknown tool with a JSON-RPC error', async () => {
    const key = await createKey(app, owner, { scopes: ['read', 'write'] });
    const client = await connect(key.rawKey);
    await expect(client.callTool({ name: 'auth_me', arguments: {} })).rejects.toThrow(/Unknown tool: auth_me/);
    await expect(client.callTool({ name: 'nope', arguments: {} })).rejects.toThrow(/Unknown tool/);
    await client.close();
  });

  it('lists the active prompt templates as prompts, their variables the arguments', async () => {
    const key = await createKey(app, owner, { scopes: ['read'] });
    const client = await connect(key.rawKey);
    const { prompts } = await client.listPrompts();
    const summary = prompts.find((p) => p.name === 'summary');
    expect(summary).toBeDefined();
    expect(summary!.arguments!.length).toBeGreaterThan(0);
    const args = Object.fromEntries(summary!.arguments!.map((a) => [a.name, 'the MCP endpoint']));
    const prompt = await client.getPrompt({ name: 'summary', arguments: args });
    const content = prompt.messages[0].content as { type: string; text: string };
    expect(content.text).toContain('the MCP endpoint');
    expect(content.text).not.toMatch(/\{\{/);
    await expect(client.getPrompt({ name: 'summary', arguments: {} })).rejects.toThrow(/needs/);
    await expect(client.getPrompt({ name: 'no-such-prompt' })).rejects.toThrow(/Unknown prompt/);
    // A key without read or ai:generate sees no templates.
    const other = await connect((await createKey(app, owner, { scopes: ['files:read'] })).rawKey);
    await expect(other.listPrompts()).rejects.toThrow(/PERMISSION_DENIED/);
    await Promise.all([client.close(), other.close()]);
  });
});

describe('POST /mcp refusals', () => {
  it('answers 401 with WWW-Authenticate naming the protected-resource metadata, without credentials', async () => {
    const res = await post(INITIALIZE);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${app.url}/.well-known/oauth-protected-resource"`,
    );
    expect(await res.json()).toMatchObject({ code: 'UNAUTHORIZED' });
  });

  it('refuses a user access token and an unknown key with 401 invalid_token', async () => {
    const user = await registerAndLogin(app.api, { prefix: 'mcp-user' });
    const withToken = await post(INITIALIZE, { authorization: `Bearer ${user.accessToken}` });
    expect(withToken.status).toBe(401);
    expect(withToken.headers.get('www-authenticate')).toContain('error="invalid_token"');
    const unknown = `wsk_${'A'.repeat(40)}`;
    trackSecret(unknown, 'an unknown API key');
    expect((await post(INITIALIZE, { authorization: `Bearer ${unknown}` })).status).toBe(401);
  });

  it('refuses a foreign Origin with 403, and lets an allowed one and none through', async () => {
    const key = await createKey(app, owner, { scopes: ['read'] });
    trackSecret(key.rawKey, 'an API key');
    const auth = { authorization: `Bearer ${key.rawKey}` };
    const foreign = await post(INITIALIZE, { ...auth, origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);
    expect(await foreign.json()).toMatchObject({ code: 'FORBIDDEN' });
    expect((await post(INITIALIZE, { ...auth, origin: 'https://console.tests.local' })).status).toBe(200);
    expect((await post(INITIALIZE, { ...auth, origin: 'http://app.tests.local' })).status).toBe(200);
    expect((await post(INITIALIZE, auth)).status).toBe(200);
  });

  it('answers GET with 405 (stateless: no stream to open)', async () => {
    const res = await fetch(new URL('/mcp', app.url), { headers: { accept: 'text/event-stream' } });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
  });

  it('counts calls in the public-API tier and answers 429 past it', async () => {
    const own = await ownerOn(limited, 'enterprise', 'mcp-rl');
    const key = await createKey(limited, own, { scopes: ['read'] });
    const client = await connect(key.rawKey, limited);
    let refused: unknown;
    for (let i = 0; i < 10 && !refused; i++) {
      await client.callTool({ name: 'ai_usage', arguments: {} }).catch((err: unknown) => (refused = err));
    }
    expect(String(refused)).toMatch(/429|Too many requests/i);
    await client.close().catch(() => undefined);
  });
});
