// POST /mcp: the Model Context Protocol over Streamable HTTP, stateless, answered as JSON, on the official
// SDK. Each request gets its own Server and transport (no session to keep between instances), except the
// hot frames (a single tools/list or tools/call, routers/mcp/frames.ts), answered here with the same
// handlers. Origin is checked before anything else (DNS rebinding), then the credential (401 points at the
// OAuth metadata).
import type { AnyTRPCRouter } from '@trpc/server';
import type { Request, RequestHandler, Response } from 'express';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type Prompt,
} from '@modelcontextprotocol/sdk/types.js';
import type { AppDeps, Context } from '../../server/platform/context.js';
import { contextFactory } from '../../server/platform/context.js';
import { startedApiKeyLookup } from '../../server/platform/trpc.js';
import { errorBody, errorHeaders, toApiError, type ApiError } from '../../server/platform/errors.js';
import { noteRequest } from '../../server/platform/monitoring.js';
import type { McpCredential } from '../../server/platform/principal.js';
import { credentialOf, mcpCredential } from './credentials.js';
import { PROTECTED_RESOURCE_METADATA_PATH, apiBase } from './oauth.js';
import { callTool, callToolJson, mcpTools, toolError, type McpTool } from './tools.js';
import { hotFrame, sendResult } from './frames.js';
import { runOnce } from '../../server/platform/idempotency.js';
import { fillTemplate } from '../ai/service.js';

export const MCP_PATH = '/mcp';

/**
 * The origins a browser may call /mcp from: CORS_ORIGINS, APP_URL's and API_URL's. A request without
 * Origin is not a browser's (agents and their bridges send none) and passes.
 */
export function allowedOrigins(config: AppDeps['config']): Set<string> {
  const origins = new Set(config.CORS_ORIGINS.map((o) => o.replace(/\/+$/, '')));
  for (const url of [config.APP_URL, config.API_URL]) if (url) origins.add(new URL(url).origin);
  return origins;
}

/** The template of an active prompt, as the ai.templates procedure answers it. */
interface Template {
  slug: string;
  name: string;
  description: string;
  body: string;
  variables: string[];
}

/** What a tools/call names: the tool, its arguments, and `_meta` (which may carry an idempotency key). */
interface CallParams {
  name?: unknown;
  arguments?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
}

/**
 * The Idempotency-Key of a tool call: the request's header (one call per request), else the call's
 * `_meta.idempotencyKey` (for clients that cannot set headers per call).
 */
function idempotencyKeyOf(req: Request, meta: Record<string, unknown> | undefined): string | undefined {
  const header = req.headers['idempotency-key'];
  if (header !== undefined) return Array.isArray(header) ? header.join(', ') : header;
  const fromMeta = meta?.idempotencyKey;
  return typeof fromMeta === 'string' ? fromMeta : undefined;
}

export function mcpEndpoint(
  deps: AppDeps,
  router: AnyTRPCRouter,
  oauth: (issuer: string, token: string) => Promise<McpCredential>,
): RequestHandler {
  const tools = mcpTools(router);
  const byName = new Map(tools.map((t) => [t.tool.name, t]));
  const origins = allowedOrigins(deps.config);
  const contextOf = contextFactory(deps);
  const templatesTool = tools.find((t) => t.path === 'ai.templates');
  const toolList = { tools: tools.map((t) => t.tool) };
  /** The tools/list result, serialised once: the list is the same for every caller. */
  const toolListJson = JSON.stringify(toolList);

  function refuse(req: Request, res: Response, api: ApiError, headers: Record<string, string> = {}) {
    noteRequest(req, { error: api, errorName: 'Mcp' });
    res.set({ ...errorHeaders(api), ...headers });
    res.status(api.status).json(errorBody(api, req.id));
  }

  /** The active templates, through the ai.templates procedure (its scopes apply). */
  async function templates(ctx: Context): Promise<Template[]> {
    if (!templatesTool) return [];
    const { result } = await callTool(router, ctx, templatesTool, undefined);
    if (result.isError) {
      const { code, message } = result.structuredContent as { code: string; message: string };
      throw new McpError(ErrorCode.InvalidRequest, `${code}: ${message}`);
    }
    return (result.structuredContent as { items: Template[] }).items;
  }

  /** A tools/call of a known tool, its result serialised: the procedure's answer, once per Idempotency-Key for a write. */
  async function callKnownTool(ctx: Context, tool: McpTool, params: CallParams): Promise<string> {
    const key = tool.write ? idempotencyKeyOf(ctx.req, params._meta) : undefined;
    if (key === undefined) return (await callToolJson(router, ctx, tool, params.arguments)).json;
    // As on REST: one run per caller and key, the first answer replayed to a retry.
    try {
      const answer = await runOnce(
        deps,
        {
          scope: `${ctx.mcp!.kind}:${ctx.mcp!.id}`,
          key,
          request: `MCP ${tool.tool.name}\n${JSON.stringify(params.arguments ?? {})}`,
        },
        async () => {
          const { json, status } = await callToolJson(router, ctx, tool, params.arguments);
          return { status, body: json };
        },
      );
      if (!answer.replayed) return answer.body;
      const result = JSON.parse(answer.body) as CallToolResult;
      return JSON.stringify({ ...result, _meta: { ...result._meta, idempotentReplayed: true } });
    } catch (err) {
      return JSON.stringify(toolError(err, ctx, tool.tool.name).result);
    }
  }

  function serverFor(ctx: Context) {
    const server = new Server(
      { name: 'workspace-saas-api', version: deps.config.SERVICE_VERSION },
      { capabilities: { tools: {}, prompts: {} } },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => toolList);
    server.setRequestHandler(CallToolRequestSchema, async ({ params }) => {
      const tool: McpTool | undefined = byName.get(params.name);
      if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${params.name}`);
      return JSON.parse(await callKnownTool(ctx, tool, params)) as CallToolResult;
    });
    server.setRequestHandler(ListPromptsRequestSchema, async () => ({
      prompts: (await templates(ctx)).map((t): Prompt => ({
        name: t.slug,
        title: t.name,
        description: t.description,
        arguments: t.variables.map((v) => ({ name: v, required: true })),
      })),
    }));
    server.setRequestHandler(GetPromptRequestSchema, async ({ params }) => {
      const template = (await templates(ctx)).find((t) => t.slug === params.name);
      if (!template) throw new McpError(ErrorCode.InvalidParams, `Unknown prompt: ${params.name}`);
      let text: string;
      try {
        text = fillTemplate(template, params.arguments ?? {}, '');
      } catch (err) {
        throw new McpError(ErrorCode.InvalidParams, toApiError(err).message);
      }
      return {
        description: template.description,
        messages: [{ role: 'user' as const, content: { type: 'text' as const, text } }],
      };
    });
    return server;
  }

  return (req, res, next) => {
    void (async () => {
      const origin = req.headers.origin;
      if (origin !== undefined && !origins.has(origin)) {
        return refuse(req, res, { status: 403, code: 'FORBIDDEN', message: 'This Origin may not call /mcp.' });
      }
      if (req.method !== 'POST') {
        // Stateless: no stream to open (GET) and no session to end (DELETE).
        return refuse(
          req,
          res,
          { status: 405, code: 'METHOD_NOT_ALLOWED', message: 'POST JSON-RPC messages to /mcp.' },
          { Allow: 'POST' },
        );
      }
      const raw = credentialOf(req.headers);
      let credential: McpCredential;
      try {
        credential = await mcpCredential(
          deps,
          raw,
          (token) => oauth(apiBase(deps.config, req), token),
          (key) => startedApiKeyLookup(req, key),
        );
      } catch (err) {
        const api = toApiError(err);
        if (api.status !== 401) return refuse(req, res, api);
        const metadata = `${apiBase(deps.config, req)}${PROTECTED_RESOURCE_METADATA_PATH}`;
        const challenge = `Bearer resource_metadata="${metadata}"${raw ? ', error="invalid_token"' : ''}`;
        return refuse(req, res, api, { 'WWW-Authenticate': challenge });
      }
      noteRequest(req, { userId: credential.principal.user.id, workspaceId: credential.workspaceId });
      const ctx: Context = { ...contextOf({ req, res }), mcp: credential };
      const frame = hotFrame(req);
      const tool = frame?.method === 'tools/call' ? byName.get(frame.params!.name as string) : undefined;
      if (frame && (frame.method === 'tools/list' || tool)) {
        return deps.inFlight.run(async () => {
          const json = tool ? await callKnownTool(ctx, tool, frame.params!) : toolListJson;
          sendResult(res, frame.id, json);
        });
      }
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      const server = serverFor(ctx);
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await deps.inFlight.run(() => transport.handleRequest(req, res, req.body));
    })().catch(next);
  };
}
