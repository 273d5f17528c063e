// The hot frames of /mcp, answered without the SDK's per-request Server and transport: a single, well-formed
// JSON-RPC request for tools/list or tools/call. The SDK builds a Server (with its JSON Schema validator),
// a transport and a web Request and Response for each POST, and parses each message with Zod: several
// times the CPU of the tool itself. Everything else (initialize, notifications, batches, prompts, other
// methods, anything the SDK would refuse or answer with an error) still goes to the SDK, so its answers
// stay the SDK's; a test compares the two paths' answers.
import type { Request, Response } from 'express';
import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';

/** The methods answered here. */
export type HotMethod = 'tools/list' | 'tools/call';

/** A request answered here: its id, method and params (as sent: a plain object, or undefined). */
export interface HotFrame {
  id: string | number;
  method: HotMethod;
  params: Record<string, unknown> | undefined;
}

const FRAME_KEYS = new Set(['jsonrpc', 'id', 'method', 'params']);
/** `_meta` keys the SDK acts on (progress notifications, tasks): their requests go to the SDK. */
const SDK_META_KEYS = ['progressToken', 'io.modelcontextprotocol/related-task'];

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Whether the params are ones the SDK would take as they are, for this method. */
function plainParams(method: HotMethod, params: Record<string, unknown> | undefined): boolean {
  if (params === undefined) return method === 'tools/list';
  const meta = params._meta;
  if (meta !== undefined && (!isPlainObject(meta) || SDK_META_KEYS.some((k) => k in meta))) return false;
  if (method === 'tools/list') return params.cursor === undefined || typeof params.cursor === 'string';
  return (
    typeof params.name === 'string' &&
    !('task' in params) &&
    (params.arguments === undefined || isPlainObject(params.arguments))
  );
}

/**
 * The request of a POST when it is one this module answers: the headers the SDK's transport requires
 * (Accept of JSON and event streams, a JSON Content-Type, a supported MCP-Protocol-Version if any) and one
 * JSON-RPC request of a hot method whose id and params the SDK's schemas accept. Undefined otherwise.
 */
export function hotFrame(req: Request): HotFrame | undefined {
  const accept = req.headers.accept;
  if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) return undefined;
  if (!isJsonContentType(req.headers['content-type'])) return undefined;
  const version = req.headers['mcp-protocol-version'];
  if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version as string)) return undefined;
  const body: unknown = req.body;
  if (!isPlainObject(body) || body.jsonrpc !== '2.0') return undefined;
  for (const key in body) if (!FRAME_KEYS.has(key)) return undefined;
  const { id, method, params } = body;
  if (typeof id !== 'string' && !Number.isSafeInteger(id)) return undefined;
  if (method !== 'tools/list' && method !== 'tools/call') return undefined;
  if (params !== undefined && !isPlainObject(params)) return undefined;
  if (!plainParams(method, params)) return undefined;
  return { id: id as string | number, method, params };
}

/** The JSON-RPC answer to `id`, its result already serialised, as the SDK's transport sends it. */
export function sendResult(res: Response, id: string | number, resultJson: string): void {
  const body = `{"result":${resultJson},"jsonrpc":"2.0","id":${JSON.stringify(id)}}`;
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
