// The MCP scenarios of `npm run bench` (bench/run.ts runs them in its list, beside their REST baselines):
//   POST /mcp tools/call ai_history, 1,000 rows   the same page as GET /ai/history, 1,000 rows (page 1, 20
//                                                 items), with an API key of that workspace: target >= 0.7x
//   POST /mcp tools/list                          the tool catalogue: ratio to GET /auth/me, target >= 0.8x
// MCP is stateless here: each request stands alone (no initialize first), as a JSON answer.

/** A JSON-RPC request of MCP, as autocannon sends it. */
const rpc = (method: string, params: Record<string, unknown> = {}) =>
  JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });

export const mcpHeaders = (apiKey: string) => ({
  authorization: `Bearer ${apiKey}`,
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
});

export const MCP_HISTORY_BODY = rpc('tools/call', { name: 'ai_history', arguments: { page: 1, limit: 20 } });
export const MCP_LIST_BODY = rpc('tools/list');

/** A tools/call answer carrying a full page of `total` generations. */
export const mcpHistoryPage = (total: number) => (status: number, body: string) => {
  const answer = JSON.parse(body) as {
    result?: { isError?: boolean; structuredContent?: { items?: unknown[]; total?: number } };
  };
  const page = answer.result?.structuredContent;
  const ok = status === 200 && !answer.result?.isError && page?.items?.length === 20 && page.total === total;
  return ok ? undefined : `answered ${status}: ${body.slice(0, 300)}`;
};

/** A tools/list answer naming ai_history. */
export const mcpToolList = (status: number, body: string) => {
  const tools = (JSON.parse(body) as { result?: { tools?: Array<{ name: string }> } }).result?.tools ?? [];
  return status === 200 && tools.some((t) => t.name === 'ai_history')
    ? undefined
    : `answered ${status}: ${body.slice(0, 300)}`;
};
