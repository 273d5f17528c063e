// Workspace API keys (api_keys.manage). Demo accounts are refused every change.
import { z } from 'zod';
import { router, workspaceProcedure } from '../../server/platform/trpc.js';
import { actorOf } from '../../server/platform/actor.js';
import {
  apiKeyOutput,
  createKeyInput,
  createdKeyOutput,
  keyInput,
  rotateKeyInput,
  updateKeyInput,
  workspaceInput,
} from './schemas.js';
import * as keys from './service.js';

const tags = ['API keys'];
const keyManager = workspaceProcedure('api_keys.manage', { refuseDemoAccounts: true });

export const apiKeysRouter = router({
  list: workspaceProcedure('api_keys.manage')
    .meta({
      openapi: {
        method: 'GET',
        path: '/workspaces/{workspaceId}/api-keys',
        description:
          'The API keys of the workspace: name, prefix, scopes, last use and expiry. Never the keys themselves.',
        tags,
        summary: 'API keys of the workspace (never the keys themselves)',
      },
    })
    .input(workspaceInput)
    .output(z.object({ items: z.array(apiKeyOutput) }))
    .query(({ ctx, input }) => keys.listKeys(ctx, input)),

  create: keyManager
    .meta({
      openapi: {
        method: 'POST',
        path: '/workspaces/{workspaceId}/api-keys',
        description:
          'Creates an API key for the public API with the scopes given. The answer carries the key (rawKey, wsk_...) this once: store it, it cannot be shown again. Needs a plan that includes API keys (403 API_KEYS_NOT_IN_PLAN). Webhooks subscribed to api_key.created are told.',
        tags,
        summary: 'Create an API key; the answer carries rawKey once',
      },
      errors: ['API_KEY_LIMIT_REACHED', 'API_KEYS_NOT_IN_PLAN'],
      successStatus: 201,
    })
    .input(createKeyInput)
    .output(createdKeyOutput)
    .mutation(({ ctx, input }) => keys.createKey(ctx, actorOf(ctx), input)),

  update: keyManager
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/workspaces/{workspaceId}/api-keys/{apiKeyId}',
        description: "Changes a key's name or scopes; the key itself stays the same.",
        tags,
        summary: "Change a key's name or scopes",
      },
    })
    .input(updateKeyInput)
    .output(apiKeyOutput)
    .mutation(({ ctx, input }) => keys.updateKey(ctx, actorOf(ctx), input)),

  revoke: keyManager
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/workspaces/{workspaceId}/api-keys/{apiKeyId}',
        description:
          'Revokes a key: it stops working at once, on every instance. Webhooks subscribed to api_key.revoked are told.',
        tags,
        summary: 'Revoke a key (it stops working at once)',
      },
    })
    .input(keyInput)
    .output(z.object({ message: z.string() }))
    .mutation(({ ctx, input }) => keys.revokeKey(ctx, actorOf(ctx), input)),

  rotate: keyManager
    .meta({
      openapi: {
        method: 'POST',
        path: '/workspaces/{workspaceId}/api-keys/{apiKeyId}/rotate',
        description:
          'Issues a new key in place of this one (shown once, as on creation); the old key keeps working for the grace period given, so clients can switch over.',
        tags,
        summary: 'A new raw key; the old one works for the grace period',
      },
      errors: ['API_KEYS_NOT_IN_PLAN', 'INVALID_STATE'],
    })
    .input(rotateKeyInput)
    .output(createdKeyOutput)
    .mutation(({ ctx, input }) => keys.rotateKey(ctx, actorOf(ctx), input)),
});
