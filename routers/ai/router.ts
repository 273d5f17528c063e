// The AI routes. Static paths (/ai/provider-status, /ai/templates) come before /ai/templates/{templateId}:
// the REST matcher takes the first match in declaration order.
import { z } from 'zod';
import { actorOf } from '../../server/platform/actor.js';
import { authedProcedure, platformProcedure, router, workspaceProcedure } from '../../server/platform/trpc.js';
import {
  adminUsageOutput,
  generateInput,
  generateOutput,
  historyInput,
  historyOutput,
  providerStatusOutput,
  templateIdInput,
  templateOutput,
  usageOutput,
  usageInput,
  workspaceGenerateInput,
  workspaceHistoryInput,
  workspaceInput,
} from './schemas.js';
import * as ai from './service.js';
import * as history from './history.js';
import { generateStream, startedStream } from './stream.js';

const tags = ['AI'];
const activeOrNamed = { orActiveWorkspace: true };
const NEVER_ABORTED = new AbortController().signal;

/** The streamed answer of the generate routes (stream-http.ts), for /openapi.json. */
const GENERATION_EVENTS =
  'With `Accept: text/event-stream`: server-sent events as the text is written. `event: started` (`{ id }`), ' +
  '`event: delta` (`{ text }`) for each piece, then `event: completed` with the generation as the JSON answer ' +
  'gives it; a failure after the stream began is `event: error` (`{ code, message }`, the generation stored ' +
  'FAILED and not counted). A `: keep-alive` comment every 15 s. Refusals before the stream (validation, ' +
  'limits, demo rules, permissions) are the JSON errors listed; an `Idempotency-Key` with a stream is a 400. ' +
  'A client that disconnects cancels the generation (stored CANCELED with its partial text, counted).';

export const aiRouter = router({
  providerStatus: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/ai/provider-status',
        description:
          'The AI provider and model this instance uses, whether it is configured, and whether demo accounts may generate.',
        tags,
        summary: 'Active provider, model, configured flag, demo restriction',
      },
    })
    .input(z.void())
    .output(providerStatusOutput)
    .query(({ ctx }) => ai.providerStatus(ctx, actorOf(ctx))),

  templates: authedProcedure
    .meta({
      mcp: { scopes: ['read', 'ai:generate'] },
      openapi: {
        method: 'GET',
        path: '/ai/templates',
        description: 'The active prompt templates, with the {{variables}} each expects.',
        tags,
        summary: 'Active prompt templates',
      },
    })
    .input(z.void())
    .output(z.object({ items: z.array(templateOutput) }))
    .query(({ ctx }) => ai.listTemplates(ctx)),

  template: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/ai/templates/{templateId}',
        description: 'One active prompt template.',
        tags,
        summary: 'One prompt template',
      },
    })
    .input(templateIdInput)
    .output(templateOutput)
    .query(({ ctx, input }) => ai.getTemplate(ctx, input)),

  generate: workspaceProcedure('ai.generate', activeOrNamed)
    .meta({
      mcp: { scopes: ['ai:generate', 'write'], write: true },
      openapi: {
        method: 'POST',
        path: '/ai/generate',
        description:
          "Generates text from a prompt or a template with its variables, in the workspace named by workspaceId (body or query), else the caller's active workspace. Each generation counts against the workspace's monthly allowance (403 AI_MONTHLY_LIMIT_REACHED once it is used up). The answer carries the text, the tokens used and the generation's id.",
        tags,
        summary: 'Generate text for a workspace (body or query workspaceId, else the active one)',
      },
      eventStream: GENERATION_EVENTS,
      errors: [
        'AI_MONTHLY_LIMIT_REACHED',
        'AI_PROVIDER_ERROR',
        'AI_PROVIDER_NOT_CONFIGURED',
        'DEMO_GENERATION_DISABLED',
        'TEST_ACCOUNT_LIMIT_REACHED',
      ],
    })
    .input(generateInput)
    .output(generateOutput)
    .mutation(({ ctx, input }) => ai.generate(ctx, actorOf(ctx), { ...input, workspace: ctx.workspace })),

  // /trpc only (httpBatchStreamLink): REST streams the generate routes with Accept: text/event-stream
  // (stream-http.ts).
  generateStream: workspaceProcedure('ai.generate', activeOrNamed)
    .meta({
      errors: [
        'AI_MONTHLY_LIMIT_REACHED',
        'AI_PROVIDER_ERROR',
        'AI_PROVIDER_NOT_CONFIGURED',
        'DEMO_GENERATION_DISABLED',
        'TEST_ACCOUNT_LIMIT_REACHED',
      ],
    })
    .input(generateInput)
    .mutation(async ({ ctx, input, signal }) => {
      const events = generateStream(ctx, actorOf(ctx), { ...input, workspace: ctx.workspace }, signal ?? NEVER_ABORTED);
      // Run to the first event, so that a refusal (limits, demo rule) is the call's error, not the stream's.
      return startedStream(events, await events.next());
    }),

  history: workspaceProcedure('ai.view', activeOrNamed)
    .meta({
      mcp: { scopes: ['read'] },
      openapi: {
        method: 'GET',
        path: '/ai/history',
        description: "The workspace's generations, newest first, paginated.",
        tags,
        summary: 'Generations, newest first',
      },
    })
    .input(historyInput)
    .output(historyOutput)
    .query(({ ctx, input }) => history.history(ctx, actorOf(ctx), { ...input, workspaceId: ctx.workspace.id })),

  usage: workspaceProcedure('ai.view_usage', activeOrNamed)
    .meta({
      mcp: { scopes: ['read'] },
      openapi: {
        method: 'GET',
        path: '/ai/usage',
        description:
          "This month's AI usage of the workspace: generations used, the limit and where it comes from (plan or setting), what remains, when it resets, tokens, and a breakdown by model.",
        tags,
        summary: 'This month: used, limit and its source, remaining, reset date, tokens, by model',
      },
    })
    .input(usageInput)
    .output(usageOutput)
    .query(({ ctx }) => history.usage(ctx, actorOf(ctx), { workspace: ctx.workspace })),

  workspaceGenerate: workspaceProcedure('ai.generate')
    .meta({
      openapi: {
        method: 'POST',
        path: '/workspaces/{workspaceId}/ai/generate',
        description: 'Generates text in this workspace; the same as POST /ai/generate with the workspace in the path.',
        tags,
        summary: 'Generate text in this workspace',
      },
      eventStream: GENERATION_EVENTS,
      errors: [
        'AI_MONTHLY_LIMIT_REACHED',
        'AI_PROVIDER_ERROR',
        'AI_PROVIDER_NOT_CONFIGURED',
        'DEMO_GENERATION_DISABLED',
        'TEST_ACCOUNT_LIMIT_REACHED',
      ],
    })
    .input(workspaceGenerateInput)
    .output(generateOutput)
    .mutation(({ ctx, input }) => ai.generate(ctx, actorOf(ctx), { ...input, workspace: ctx.workspace })),

  workspaceGenerations: workspaceProcedure('ai.view')
    .meta({
      openapi: {
        method: 'GET',
        path: '/workspaces/{workspaceId}/ai/generations',
        description: "This workspace's generations, newest first, paginated.",
        tags,
        summary: "This workspace's generations, newest first",
      },
    })
    .input(workspaceHistoryInput)
    .output(historyOutput)
    .query(({ ctx, input }) => history.history(ctx, actorOf(ctx), { ...input, workspaceId: ctx.workspace.id })),

  workspaceUsage: workspaceProcedure('ai.view_usage')
    .meta({
      openapi: {
        method: 'GET',
        path: '/workspaces/{workspaceId}/ai/usage',
        description: "This workspace's AI usage this month; the same as GET /ai/usage.",
        tags,
        summary: "This workspace's usage this month",
      },
    })
    .input(workspaceInput)
    .output(usageOutput)
    .query(({ ctx }) => history.usage(ctx, actorOf(ctx), { workspace: ctx.workspace })),

  adminUsage: platformProcedure('admin.ai_usage.view')
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/ai-usage',
        description:
          'AI usage across the platform: totals, by provider and model, by workspace, and the latest generations.',
        tags: ['Admin'],
        summary: 'Platform AI usage: totals, by provider and model, by workspace, recent',
      },
    })
    .input(z.void())
    .output(adminUsageOutput)
    .query(({ ctx }) => history.adminUsage(ctx)),
});
