// The MCP tools, made from the procedures whose meta marks them (`mcp` in server/platform/route-meta.ts):
// one tool per procedure, named after its path with `_` for `.`, its schemas from the procedure's Zod input
// and output. A call goes through the tRPC caller with the credential in the context, so the builders'
// checks (scopes, workspace state, permissions), the input and output schemas and the services' audit
// entries apply as on REST.
import { z } from 'zod';
import type { AnyTRPCRouter } from '@trpc/server';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { createCallerFactory } from '../../server/platform/trpc.js';
import type { Context } from '../../server/platform/context.js';
import type { McpToolMeta, Meta } from '../../server/platform/route-meta.js';
import { toApiError } from '../../server/platform/errors.js';

type JsonSchema = Record<string, unknown>;

export interface McpTool {
  /** The procedure's path (`ai.history`). */
  path: string;
  tool: Tool;
  /** The procedure's input names a workspace: the credential's is put in. */
  takesWorkspace: boolean;
  /** The procedure takes no input at all (z.void()). */
  takesNothing: boolean;
  /** It changes something: an Idempotency-Key runs it once. */
  write: boolean;
  meta: McpToolMeta;
}

interface ProcedureDef {
  _def: { meta?: Meta; inputs: z.ZodType[]; output?: z.ZodType; type: 'query' | 'mutation' | 'subscription' };
}

/** What a failed call's structuredContent holds: the error body's code and message (and issues on a 400). */
const TOOL_ERROR_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    code: { type: 'string' },
    message: { type: 'string' },
    issues: { type: 'array', items: { type: 'object' } },
  },
  required: ['code', 'message'],
};

export const toolName = (path: string) => path.replaceAll('.', '_');

/**
 * Without the regular expressions Zod adds beside a `format` (uuid, date-time): the format says the same,
 * and the list of tools, sent on every tools/list, is a fraction of the size.
 */
function withoutFormatPatterns(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutFormatPatterns);
  if (!node || typeof node !== 'object') return node;
  const entries = Object.entries(node as JsonSchema);
  const hasFormat = entries.some(([k, v]) => k === 'format' && typeof v === 'string');
  return Object.fromEntries(
    entries.filter(([k]) => !(hasFormat && k === 'pattern')).map(([k, v]) => [k, withoutFormatPatterns(v)]),
  );
}

/** JSON Schema (draft 7, as the SDK's client validates) of a Zod schema, split into body and definitions. */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output') {
  const {
    $schema: _,
    definitions,
    ...body
  } = withoutFormatPatterns(z.toJSONSchema(schema, { io, target: 'draft-7', unrepresentable: 'any' })) as JsonSchema;
  return { body, definitions: definitions as JsonSchema | undefined };
}

function inputSchemaOf(input: z.ZodType | undefined) {
  if (!input || input instanceof z.ZodVoid) {
    return { schema: { type: 'object', properties: {} } as Tool['inputSchema'], takesWorkspace: false, empty: true };
  }
  const { body, definitions } = jsonSchema(input, 'input');
  const properties = { ...((body.properties as JsonSchema | undefined) ?? {}) };
  const takesWorkspace = 'workspaceId' in properties;
  delete properties.workspaceId;
  const required = ((body.required as string[] | undefined) ?? []).filter((k) => k !== 'workspaceId');
  const schema = {
    ...body,
    type: 'object',
    properties,
    ...(required.length ? { required } : { required: undefined }),
    ...(definitions ? { definitions } : {}),
  } as Tool['inputSchema'];
  if (!required.length) delete (schema as JsonSchema).required;
  return { schema, takesWorkspace, empty: false };
}

/** The output's schema, or the error's: a failed call carries { code, message } in structuredContent. */
function outputSchemaOf(output: z.ZodType | undefined): Tool['outputSchema'] {
  if (!output) return undefined;
  const { body, definitions } = jsonSchema(output, 'output');
  return { type: 'object', anyOf: [body, TOOL_ERROR_SCHEMA], ...(definitions ? { definitions } : {}) };
}

/** The tools of a router: its procedures marked for MCP, in declaration order. */
export function mcpTools(router: AnyTRPCRouter): McpTool[] {
  const procedures = router._def.procedures as Record<string, ProcedureDef>;
  const tools: McpTool[] = [];
  for (const [path, procedure] of Object.entries(procedures)) {
    const { meta, inputs, output, type } = procedure._def;
    if (!meta?.mcp) continue;
    const input = inputSchemaOf(inputs[0]);
    const write = meta.mcp.write ?? type === 'mutation';
    const description = [meta.openapi?.summary, meta.openapi?.description].filter(Boolean).join('. ');
    tools.push({
      path,
      takesWorkspace: input.takesWorkspace,
      takesNothing: input.empty,
      write,
      meta: meta.mcp,
      tool: {
        name: toolName(path),
        title: meta.openapi?.summary,
        description: `${description} Scopes: ${meta.mcp.scopes.join(' or ')}.`,
        inputSchema: input.schema,
        outputSchema: outputSchemaOf(output),
        annotations: { readOnlyHint: !write, destructiveHint: false, openWorldHint: false },
      },
    });
  }
  return tools;
}

/** A failed call: the error body's code and message (and issues) as structuredContent, and its status. */
export function toolError(err: unknown, ctx: Pick<Context, 'logger' | 'requestId'>, tool?: string) {
  const api = toApiError(err);
  if (api.status >= 500) ctx.logger.error({ err, requestId: ctx.requestId, tool }, 'MCP tool failed');
  const structured = { code: api.code, message: api.message, ...(api.issues ? { issues: api.issues } : {}) };
  const result: CallToolResult = {
    isError: true,
    content: [{ type: 'text', text: `${api.code}: ${api.message}` }],
    structuredContent: structured,
  };
  return { result, status: api.status };
}

/** The callers of each router's procedures, made once per router. */
const callerFactories = new WeakMap<AnyTRPCRouter, (ctx: Context) => unknown>();

/**
 * A tool's answer, serialised: the procedure's output as structuredContent (and as text), or its error as
 * { code, message }; with the HTTP status REST would have answered (for idempotency keys). The output is
 * serialised once: its JSON is the text, and the structuredContent as it stands in the answer.
 */
export async function callToolJson(
  router: AnyTRPCRouter,
  ctx: Context,
  tool: McpTool,
  args: Record<string, unknown> | undefined,
): Promise<{ json: string; status: number }> {
  let factory = callerFactories.get(router);
  if (!factory) callerFactories.set(router, (factory = createCallerFactory(router) as (ctx: Context) => unknown));
  const caller = factory(ctx) as Record<string, unknown>;
  const call = tool.path.split('.').reduce<unknown>((at, key) => (at as Record<string, unknown>)[key], caller) as (
    input: unknown,
  ) => Promise<unknown>;
  const input = tool.takesNothing
    ? undefined
    : { ...args, ...(tool.takesWorkspace && ctx.mcp ? { workspaceId: ctx.mcp.workspaceId } : {}) };
  try {
    const output = await call(input);
    // As the REST answer would carry it: dates as ISO strings, undefined fields left out.
    const text = JSON.stringify(output ?? {});
    return {
      json: `{"content":[{"type":"text","text":${JSON.stringify(text)}}],"structuredContent":${text}}`,
      status: 200,
    };
  } catch (err) {
    const { result, status } = toolError(err, ctx, tool.tool.name);
    return { json: JSON.stringify(result), status };
  }
}

/** callToolJson's answer as an object. */
export async function callTool(
  router: AnyTRPCRouter,
  ctx: Context,
  tool: McpTool,
  args: Record<string, unknown> | undefined,
): Promise<{ result: CallToolResult; status: number }> {
  const { json, status } = await callToolJson(router, ctx, tool, args);
  return { result: JSON.parse(json) as CallToolResult, status };
}
