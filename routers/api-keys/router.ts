// Workspace API keys (api_keys.manage). Demo accounts are refused every change.
import { z } from 'zod';
import { router, workspaceProcedure } from '../../server/platform/trpc.js';
import { actorOf } from '../audit/service.js';
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
        tags,
        summary: 'API keys of the workspace (never the keys themselves)',
      },
    })
    .input(workspaceInput)
    .output(z.object({ items: z.array(apiKeyOutput) }))
    .query(({ ctx }) => keys.listKeys(ctx.db, ctx.workspace.id)),

  create: keyManager
    .meta({
      openapi: {
        method: 'POST',
        path: '/workspaces/{workspaceId}/api-keys',
        tags,
        summary: 'Create an API key; the answer carries rawKey once',
      },
      errors: ['API_KEY_LIMIT_REACHED', 'API_KEYS_NOT_IN_PLAN'],
      successStatus: 201,
    })
    .input(createKeyInput)
    .output(createdKeyOutput)
    .mutation(({ ctx, input }) => keys.createKey(ctx.db, actorOf(ctx), ctx.workspace.id, input)),

  update: keyManager
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/workspaces/{workspaceId}/api-keys/{apiKeyId}',
        tags,
        summary: "Change a key's name or scopes",
      },
    })
    .input(updateKeyInput)
    .output(apiKeyOutput)
    .mutation(({ ctx, input: { apiKeyId, name, scopes } }) =>
      keys.updateKey(ctx.db, actorOf(ctx), ctx.workspace.id, apiKeyId, { name, scopes }),
    ),

  revoke: keyManager
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/workspaces/{workspaceId}/api-keys/{apiKeyId}',
        tags,
        summary: 'Revoke a key (it stops working at once)',
      },
    })
    .input(keyInput)
    .output(z.object({ message: z.string() }))
    .mutation(({ ctx, input }) => keys.revokeKey(ctx.db, actorOf(ctx), ctx.workspace.id, input.apiKeyId)),

  rotate: keyManager
    .meta({
      openapi: {
        method: 'POST',
        path: '/workspaces/{workspaceId}/api-keys/{apiKeyId}/rotate',
        tags,
        summary: 'A new raw key; the old one works for the grace period',
      },
      errors: ['API_KEYS_NOT_IN_PLAN', 'INVALID_STATE'],
    })
    .input(rotateKeyInput)
    .output(createdKeyOutput)
    .mutation(({ ctx, input }) =>
      keys.rotateKey(ctx.db, actorOf(ctx), ctx.workspace.id, input.apiKeyId, input.gracePeriodSeconds),
    ),
});
