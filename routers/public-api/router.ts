// The public API: authenticated by a workspace API key (X-API-Key or Authorization: Bearer wsk_...).
import { z } from 'zod';
import { apiKeyProcedure, router } from '../../server/platform/trpc.js';
import { keyOutput, keyWorkspaceOutput } from './schemas.js';
import * as publicApi from './service.js';

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
    .output(keyOutput)
    .query(({ ctx }) => publicApi.describeKey({ apiKey: ctx.apiKey })),

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
    .output(keyWorkspaceOutput)
    .query(({ ctx }) => publicApi.keyWorkspace(ctx, { workspaceId: ctx.apiKey.workspace_id })),
});
