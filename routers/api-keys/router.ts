// Workspace API keys (api_keys.manage). Demo accounts are refused every change.
import { z } from 'zod';
import { displayName, exact } from '../../server/platform/validation.js';
import { API_KEY_SCOPES } from '../../db/schema.js';
import { router, workspaceProcedure } from '../../server/platform/trpc.js';
import { actorOf } from '../audit/service.js';
import * as keys from './service.js';

const tags = ['API keys'];
const isoDate = z.iso.datetime({ offset: true });
const keyManager = workspaceProcedure('api_keys.manage', { refuseDemoAccounts: true });

const scopes = z
  .array(z.enum(API_KEY_SCOPES))
  .min(1, { error: 'Give the key at least one scope.' })
  .max(API_KEY_SCOPES.length)
  .refine((s) => new Set(s).size === s.length, { error: 'Each scope once.' });
const keyName = displayName(100);

const apiKeyOutput = z.object({
  id: z.uuid(),
  workspaceId: z.uuid(),
  name: z.string(),
  prefix: z.string().meta({ description: 'The first 12 characters of the key, to recognise it.' }),
  scopes: z.array(z.enum(API_KEY_SCOPES)),
  status: z.enum(['ACTIVE', 'EXPIRED', 'REVOKED']),
  expiresAt: isoDate.nullable(),
  lastUsedAt: isoDate.nullable(),
  createdAt: isoDate,
  updatedAt: isoDate,
});
const createdKeyOutput = apiKeyOutput.extend({ rawKey: z.string().meta({ description: 'The key itself: shown this once, never again.' }) });

const workspaceInput = z.object({ workspaceId: z.uuid() });
const keyInput = workspaceInput.extend({ apiKeyId: z.uuid() });

export const apiKeysRouter = router({
  list: workspaceProcedure('api_keys.manage')
    .meta({ openapi: { method: 'GET', path: '/workspaces/{workspaceId}/api-keys', tags, summary: 'API keys of the workspace (never the keys themselves)' } })
    .input(workspaceInput)
    .output(z.object({ items: z.array(apiKeyOutput) }))
    .query(({ ctx }) => keys.listKeys(ctx.db, ctx.workspace.id)),

  create: keyManager
    .meta({ openapi: { method: 'POST', path: '/workspaces/{workspaceId}/api-keys', tags, summary: 'Create an API key; the answer carries rawKey once' }, errors: ['API_KEY_LIMIT_REACHED', 'API_KEYS_NOT_IN_PLAN'], successStatus: 201 })
    .input(
      workspaceInput.extend({
        name: keyName,
        scopes,
        expiresAt: isoDate.refine((d) => new Date(d).getTime() > Date.now(), { error: 'expiresAt must be in the future.' }).optional(),
      }),
    )
    .output(createdKeyOutput)
    .mutation(({ ctx, input }) => keys.createKey(ctx.db, actorOf(ctx), ctx.workspace.id, input)),

  update: keyManager
    .meta({ openapi: { method: 'PATCH', path: '/workspaces/{workspaceId}/api-keys/{apiKeyId}', tags, summary: "Change a key's name or scopes" } })
    .input(keyInput.extend({ name: keyName.optional(), scopes: scopes.optional() }).refine((i) => i.name !== undefined || i.scopes !== undefined, { error: 'Send name, scopes or both.' }))
    .output(apiKeyOutput)
    .mutation(({ ctx, input: { apiKeyId, name, scopes } }) => keys.updateKey(ctx.db, actorOf(ctx), ctx.workspace.id, apiKeyId, { name, scopes })),

  revoke: keyManager
    .meta({ openapi: { method: 'DELETE', path: '/workspaces/{workspaceId}/api-keys/{apiKeyId}', tags, summary: 'Revoke a key (it stops working at once)' } })
    .input(keyInput)
    .output(z.object({ message: z.string() }))
    .mutation(({ ctx, input }) => keys.revokeKey(ctx.db, actorOf(ctx), ctx.workspace.id, input.apiKeyId)),

  rotate: keyManager
    .meta({ openapi: { method: 'POST', path: '/workspaces/{workspaceId}/api-keys/{apiKeyId}/rotate', tags, summary: 'A new raw key; the old one works for the grace period' }, errors: ['API_KEYS_NOT_IN_PLAN', 'INVALID_STATE'] })
    .input(keyInput.extend({ gracePeriodSeconds: exact(z.number().int().min(0).max(7 * 86_400)).default(0) }))
    .output(createdKeyOutput)
    .mutation(({ ctx, input }) => keys.rotateKey(ctx.db, actorOf(ctx), ctx.workspace.id, input.apiKeyId, input.gracePeriodSeconds)),
});
