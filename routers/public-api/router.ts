// The public API: authenticated by a workspace API key (X-API-Key or Authorization: Bearer wsk_...).
import { z } from 'zod';
import { EDITIONS, WORKSPACE_STATUSES, API_KEY_SCOPES } from '../../db/schema.js';
import { apiKeyProcedure, router } from '../../server/platform/trpc.js';
import { loadWorkspace } from '../workspaces/service.js';

const tags = ['Public API'];
const security = { protect: true };

export const publicApiRouter = router({
  me: apiKeyProcedure()
    .meta({
      rateLimit: 'publicApi',
      openapi: {
        method: 'GET',
        path: '/public-api/me',
        description:
          'The API key making the call (id, name, scopes) and its workspace. A first call to check a key works.',
        tags,
        ...security,
        summary: 'The API key making the call, and its workspace',
      },
    })
    .input(z.void())
    .output(
      z.object({
        apiKey: z.object({
          id: z.uuid(),
          name: z.string(),
          prefix: z.string(),
          scopes: z.array(z.enum(API_KEY_SCOPES)),
          expiresAt: z.iso.datetime({ offset: true }).nullable(),
        }),
        workspace: z.object({ id: z.uuid(), name: z.string() }),
      }),
    )
    .query(({ ctx: { apiKey } }) => ({
      apiKey: {
        id: apiKey.id,
        name: apiKey.name,
        prefix: apiKey.prefix,
        scopes: apiKey.scopes,
        expiresAt: apiKey.expires_at?.toISOString() ?? null,
      },
      workspace: { id: apiKey.workspace_id, name: apiKey.workspace_name },
    })),

  workspace: apiKeyProcedure(['workspace:read', 'read'])
    .meta({
      rateLimit: 'publicApi',
      openapi: {
        method: 'GET',
        path: '/public-api/workspace',
        description: "The key's workspace: name, status, edition and plan.",
        tags,
        ...security,
        summary: "The key's workspace (scope workspace:read or read)",
      },
    })
    .input(z.void())
    .output(
      z.object({
        id: z.uuid(),
        name: z.string(),
        status: z.enum(WORKSPACE_STATUSES),
        edition: z.enum(EDITIONS),
        memberCount: z.number().int(),
        createdAt: z.iso.datetime({ offset: true }),
      }),
    )
    .query(({ ctx }) => loadWorkspace(ctx.db, ctx.apiKey.workspace_id)),
});
