// Outbound webhooks of a workspace (webhooks.manage) and their delivery log. Demo accounts are refused
// every change of an endpoint.
import { z } from 'zod';
import { listOutput } from '../../server/platform/pagination.js';
import { router, workspaceProcedure } from '../../server/platform/trpc.js';
import { actorOf } from '../../server/platform/actor.js';
import {
  createWebhookInput,
  deliveriesInput,
  deliveryInput,
  deliveryOutput,
  rotateSecretInput,
  updateWebhookInput,
  webhookInput,
  webhookOutput,
  withSecretOutput,
  workspaceInput,
} from './schemas.js';
import * as hooks from './service.js';

const tags = ['Webhooks'];
const reader = workspaceProcedure('webhooks.manage');
const writer = workspaceProcedure('webhooks.manage', { refuseDemoAccounts: true });

export const webhooksRouter = router({
  list: reader
    .meta({
      mcp: { scopes: ['read'] },
      openapi: {
        method: 'GET',
        path: '/workspaces/{workspaceId}/webhooks',
        description: 'The webhooks of the workspace: URL, events, whether active. Never their signing secrets.',
        tags,
        summary: 'Webhooks of the workspace (never their secrets)',
      },
    })
    .input(workspaceInput)
    .output(z.object({ items: z.array(webhookOutput) }))
    .query(({ ctx, input }) => hooks.listWebhooks(ctx, input)),

  create: writer
    .meta({
      openapi: {
        method: 'POST',
        path: '/workspaces/{workspaceId}/webhooks',
        description:
          "Creates a webhook: the workspace's events you subscribe to are POSTed to the URL, signed (see the `webhooks` section of this document for the events, their payloads and how to verify a delivery). The answer carries the signing secret this once. The URL must be public http(s): private and loopback addresses are refused (400 WEBHOOK_URL_NOT_ALLOWED).",
        tags,
        summary: 'Create a webhook; the answer carries the signing secret once',
      },
      errors: ['WEBHOOK_URL_NOT_ALLOWED'],
      successStatus: 201,
    })
    .input(createWebhookInput)
    .output(withSecretOutput)
    .mutation(({ ctx, input }) => hooks.createWebhook(ctx, actorOf(ctx), input)),

  update: writer
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/workspaces/{workspaceId}/webhooks/{webhookId}',
        description: 'Changes the name, URL, events or isActive of a webhook (an inactive webhook receives nothing).',
        tags,
        summary: 'Change name, URL, events or isActive',
      },
      errors: ['WEBHOOK_URL_NOT_ALLOWED'],
    })
    .input(updateWebhookInput)
    .output(webhookOutput)
    .mutation(({ ctx, input }) => hooks.updateWebhook(ctx, actorOf(ctx), input)),

  delete: writer
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/workspaces/{workspaceId}/webhooks/{webhookId}',
        description: 'Deletes a webhook and its delivery log.',
        tags,
        summary: 'Delete a webhook and its delivery log',
      },
    })
    .input(webhookInput)
    .output(z.object({ message: z.string() }))
    .mutation(({ ctx, input }) => hooks.deleteWebhook(ctx, actorOf(ctx), input)),

  test: reader
    .meta({
      openapi: {
        method: 'POST',
        path: '/workspaces/{workspaceId}/webhooks/{webhookId}/test',
        description:
          'Sends a webhook.test delivery to the webhook now and answers the delivery with its outcome (status, HTTP status, duration), so you can check your endpoint and its signature check.',
        tags,
        summary: 'Send a webhook.test delivery',
      },
    })
    .input(webhookInput)
    .output(deliveryOutput)
    .mutation(({ ctx, input }) => hooks.sendTest(ctx, input)),

  rotateSecret: writer
    .meta({
      openapi: {
        method: 'POST',
        path: '/workspaces/{workspaceId}/webhooks/{webhookId}/rotate-secret',
        description:
          'Issues a new signing secret (shown once). During the grace period deliveries carry a signature with each secret, so the receiver can switch over without missing one.',
        tags,
        summary: 'A new signing secret; the old one also signs during the grace period',
      },
    })
    .input(rotateSecretInput)
    .output(withSecretOutput)
    .mutation(({ ctx, input }) => hooks.rotateSecret(ctx, actorOf(ctx), input)),

  deliveries: reader
    .meta({
      mcp: { scopes: ['read'] },
      openapi: {
        method: 'GET',
        path: '/workspaces/{workspaceId}/webhook-deliveries',
        description:
          "The workspace's webhook deliveries, newest first: event, status, attempts, the endpoint's answer status and the last error.",
        tags,
        summary: 'The delivery log, newest first',
      },
    })
    .input(deliveriesInput)
    .output(listOutput(deliveryOutput))
    .query(({ ctx, input }) => hooks.listDeliveries(ctx, input)),

  retry: reader
    .meta({
      mcp: { scopes: ['write'], write: true },
      openapi: {
        method: 'POST',
        path: '/workspaces/{workspaceId}/webhook-deliveries/{deliveryId}/retry',
        description:
          'Sends a failed delivery again now, with the same id and body (a receiver that deduplicates by id sees it once).',
        tags,
        summary: 'Send a failed delivery again',
      },
      errors: ['INVALID_STATE'],
    })
    .input(deliveryInput)
    .output(deliveryOutput)
    .mutation(({ ctx, input }) => hooks.retryDelivery(ctx, actorOf(ctx), input)),
});
