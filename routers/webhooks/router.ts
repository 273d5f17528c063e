// Outbound webhooks of a workspace (webhooks.manage) and their delivery log. Demo accounts are refused
// every change of an endpoint.
import { z } from 'zod';
import { displayName, exact } from '../../server/platform/validation.js';
import { DELIVERY_STATUSES, WEBHOOK_EVENTS } from '../../db/schema.js';
import { pageOutput, paginationInput } from '../../server/platform/pagination.js';
import { router, workspaceProcedure } from '../../server/platform/trpc.js';
import { actorOf } from '../audit/service.js';
import * as hooks from './service.js';
import { MAX_WEBHOOK_URL_LENGTH } from './url-policy.js';

const tags = ['Webhooks'];
const isoDate = z.iso.datetime({ offset: true });
const reader = workspaceProcedure('webhooks.manage');
const writer = workspaceProcedure('webhooks.manage', { refuseDemoAccounts: true });

// Length and safety of the URL are checked by the URL policy (400 WEBHOOK_URL_NOT_ALLOWED).
const url = z.string().meta({ description: `Public http(s) URL, at most ${MAX_WEBHOOK_URL_LENGTH} characters.` });
const events = z
  .array(z.enum(WEBHOOK_EVENTS, { error: `Unknown event. Known events: ${WEBHOOK_EVENTS.join(', ')}.` }))
  .min(1, { error: 'Subscribe to at least one event.' })
  .max(WEBHOOK_EVENTS.length)
  .transform((e) => [...new Set(e)]);
const name = displayName(100);

const webhookOutput = z.object({
  id: z.uuid(),
  workspaceId: z.uuid(),
  name: z.string(),
  url: z.string(),
  events: z.array(z.enum(WEBHOOK_EVENTS)),
  isActive: z.boolean(),
  disabledReason: z.string().nullable(),
  consecutiveFailures: z.number().int(),
  secretRotationEndsAt: isoDate.nullable(),
  createdAt: isoDate,
  updatedAt: isoDate,
});
const withSecretOutput = webhookOutput.extend({ secret: z.string().meta({ description: 'The whsec_ signing secret: shown this once, never again.' }) });

const deliveryOutput = z.object({
  id: z.uuid(),
  webhookId: z.uuid(),
  event: z.string(),
  status: z.enum(DELIVERY_STATUSES),
  attempts: z.number().int(),
  requestHeaders: z.record(z.string(), z.string()).nullable(),
  payload: z.record(z.string(), z.unknown()),
  responseStatus: z.number().int().nullable(),
  responsePreview: z.string().nullable(),
  durationMs: z.number().int().nullable(),
  nextRetryAt: isoDate.nullable(),
  error: z.string().nullable(),
  createdAt: isoDate,
  updatedAt: isoDate,
});

const workspaceInput = z.object({ workspaceId: z.uuid() });
const webhookInput = workspaceInput.extend({ webhookId: z.uuid() });

export const webhooksRouter = router({
  list: reader
    .meta({ openapi: { method: 'GET', path: '/workspaces/{workspaceId}/webhooks', tags, summary: 'Webhooks of the workspace (never their secrets)' } })
    .input(workspaceInput)
    .output(z.object({ items: z.array(webhookOutput) }))
    .query(({ ctx }) => hooks.listWebhooks(ctx.db, ctx.workspace.id)),

  create: writer
    .meta({ openapi: { method: 'POST', path: '/workspaces/{workspaceId}/webhooks', tags, summary: 'Create a webhook; the answer carries the signing secret once' }, errors: ['WEBHOOK_URL_NOT_ALLOWED'], successStatus: 201 })
    .input(workspaceInput.extend({ name, url, events }))
    .output(withSecretOutput)
    .mutation(({ ctx, input }) => hooks.createWebhook(ctx, actorOf(ctx), ctx.workspace.id, input)),

  update: writer
    .meta({ openapi: { method: 'PATCH', path: '/workspaces/{workspaceId}/webhooks/{webhookId}', tags, summary: 'Change name, URL, events or isActive' }, errors: ['WEBHOOK_URL_NOT_ALLOWED'] })
    .input(
      webhookInput
        .extend({ name: name.optional(), url: url.optional(), events: events.optional(), isActive: exact(z.boolean()).optional() })
        .refine((i) => i.name !== undefined || i.url !== undefined || i.events !== undefined || i.isActive !== undefined, { error: 'Send at least one of name, url, events, isActive.' }),
    )
    .output(webhookOutput)
    .mutation(({ ctx, input: { webhookId, workspaceId: _, ...changes } }) => hooks.updateWebhook(ctx, actorOf(ctx), ctx.workspace.id, webhookId, changes)),

  delete: writer
    .meta({ openapi: { method: 'DELETE', path: '/workspaces/{workspaceId}/webhooks/{webhookId}', tags, summary: 'Delete a webhook and its delivery log' } })
    .input(webhookInput)
    .output(z.object({ message: z.string() }))
    .mutation(({ ctx, input }) => hooks.deleteWebhook(ctx.db, actorOf(ctx), ctx.workspace.id, input.webhookId)),

  test: reader
    .meta({ openapi: { method: 'POST', path: '/workspaces/{workspaceId}/webhooks/{webhookId}/test', tags, summary: 'Send a webhook.test delivery' } })
    .input(webhookInput)
    .output(deliveryOutput)
    .mutation(({ ctx, input }) => hooks.sendTest(ctx, ctx.webhooks, ctx.workspace.id, input.webhookId)),

  rotateSecret: writer
    .meta({ openapi: { method: 'POST', path: '/workspaces/{workspaceId}/webhooks/{webhookId}/rotate-secret', tags, summary: 'A new signing secret; the old one also signs during the grace period' } })
    .input(webhookInput.extend({ gracePeriodSeconds: exact(z.number().int().min(0).max(7 * 86_400)).default(86_400) }))
    .output(withSecretOutput)
    .mutation(({ ctx, input }) => hooks.rotateSecret(ctx, actorOf(ctx), ctx.workspace.id, input.webhookId, input.gracePeriodSeconds)),

  deliveries: reader
    .meta({ openapi: { method: 'GET', path: '/workspaces/{workspaceId}/webhook-deliveries', tags, summary: 'The delivery log, newest first' } })
    .input(workspaceInput.extend(paginationInput.shape).extend({ webhookId: z.uuid().optional(), status: z.enum(DELIVERY_STATUSES).optional() }))
    .output(pageOutput(deliveryOutput))
    .query(({ ctx, input: { page, limit, webhookId, status } }) => hooks.listDeliveries(ctx.db, ctx.workspace.id, { webhookId, status }, { page, limit })),

  retry: reader
    .meta({ openapi: { method: 'POST', path: '/workspaces/{workspaceId}/webhook-deliveries/{deliveryId}/retry', tags, summary: 'Send a failed delivery again' }, errors: ['INVALID_STATE'] })
    .input(workspaceInput.extend({ deliveryId: z.uuid() }))
    .output(deliveryOutput)
    .mutation(({ ctx, input }) => hooks.retryDelivery(ctx.db, ctx.webhooks, ctx.workspace.id, input.deliveryId)),
});
