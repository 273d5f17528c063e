// The hot frames of /mcp (routers/mcp/frames.ts: a single tools/list or tools/call answered without the
// SDK's per-request Server) answer as the SDK does: each is compared with the same request sent as a batch
// of one, which the endpoint leaves to the SDK and which the SDK answers with the bare response. Requests
// the fast path does not take (bad params, an unknown tool, missing Accept) still get the SDK's answers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import type { Session } from '../helpers/http.js';
import { createKey, ownerOn, trackSecret } from '../developer/helpers.js';

let app: TestApp;
let owner: Session;
let readKey: string;

beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
  owner = await ownerOn(app, 'enterprise', 'mcp-frames');
  readKey = (await createKey(app, owner, { scopes: ['read'] })).rawKey;
  trackSecret(readKey, 'an API key sent to /mcp');
});
afterAll(async () => {
  await app?.close();
});

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** Header names compared between the two paths: all but the date. */
const VOLATILE = new Set<string>(['date']);

async function post(body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(new URL('/mcp', app.url), {
    method: 'POST',
    headers: { ...HEADERS, authorization: `Bearer ${readKey}`, ...headers },
    body: JSON.stringify(body),
  });
  const names = [...res.headers.keys()].filter((h) => !VOLATILE.has(h)).sort();
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    headers: names,
    body: await res.json(),
  };
}

/** The answer to `frame` alone (the fast path) and as a batch of one (the SDK). */
async function bothWays(frame: Record<string, unknown>, headers: Record<string, string> = {}) {
  const [alone, batched] = await Promise.all([post(frame, headers), post([frame], headers)]);
  return { alone, batched };
}

const rpc = (id: string | number, method: string, params?: Record<string, unknown>) => ({
  jsonrpc: '2.0',
  id,
  method,
  ...(params ? { params } : {}),
});

describe('the hot frames of /mcp', () => {
  it('answers tools/list as the SDK does, with or without params and protocol version', async () => {
    for (const [frame, headers] of [
      [rpc(1, 'tools/list'), {}],
      [
        rpc('list-a', 'tools/list', { cursor: 'x', _meta: { client: 'test' } }),
        { 'mcp-protocol-version': '2025-06-18' },
      ],
    ] as const) {
      const { alone, batched } = await bothWays(frame, headers);
      expect(alone.status).toBe(200);
      expect(alone).toEqual(batched);
      expect(alone.type).toBe('application/json');
      expect((alone.body as { id: unknown }).id).toBe(frame.id);
      const tools = (alone.body as { result: { tools: Array<{ name: string }> } }).result.tools;
      expect(tools.map((t) => t.name)).toContain('ai_history');
    }
  });

  it('answers tools/call as the SDK does: a result, a tool error, a bad argument', async () => {
    for (const params of [
      { name: 'ai_history', arguments: { page: 1, limit: 5 } },
      { name: 'workspaces_get' },
      { name: 'ai_generate', arguments: { prompt: 'no scope for this' } },
      { name: 'ai_history', arguments: { limit: 1000 } },
    ]) {
      const { alone, batched } = await bothWays(rpc(7, 'tools/call', params));
      expect(alone.status, JSON.stringify(alone.body)).toBe(200);
      expect(alone).toEqual(batched);
      expect(alone.body).toMatchObject({ jsonrpc: '2.0', id: 7, result: { content: expect.any(Array) } });
    }
  });

  it('leaves what it does not take to the SDK, which answers it as before', async () => {
    // An unknown tool, params of the wrong shape, an unsupported protocol version: JSON-RPC errors or 400s.
    for (const [frame, headers] of [
      [rpc(2, 'tools/call', { name: 'nope' }), {}],
      [rpc(3, 'tools/call', { name: 5 }), {}],
      [rpc(4, 'tools/call', { name: 'ai_history', arguments: [1] }), {}],
      [rpc(5, 'tools/list', { cursor: 5 }), {}],
      [rpc(6, 'tools/list'), { 'mcp-protocol-version': '1999-01-01' }],
      [{ ...rpc(8, 'tools/list'), extra: true }, {}],
      [rpc(1.5, 'tools/list'), {}],
    ] as const) {
      const answer = await post(frame, headers);
      const error = answer.body as { error?: { code: number; message: string } };
      expect(error.error, JSON.stringify(answer)).toMatchObject({ code: expect.any(Number) });
    }
    const unknown = (await post(rpc(2, 'tools/call', { name: 'nope' }))).body as { error: { message: string } };
    expect(unknown.error.message).toMatch(/Unknown tool: nope/);
    // Without an Accept of both JSON and event streams the SDK refuses with 406, as it always did.
    const refused = await post(rpc(9, 'tools/list'), { accept: 'application/json' });
    expect(refused.status).toBe(406);
  });
});
