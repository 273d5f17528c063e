// The OAuth grants of MCP clients in a workspace: listed and revoked by those who manage API keys.
import { z } from 'zod';
import { actorOf } from '../../server/platform/actor.js';
import { router, workspaceProcedure } from '../../server/platform/trpc.js';
import * as grants from './grants.js';

const tags = ['MCP'];
const manager = workspaceProcedure('api_keys.manage');

const grantOutput = z
  .object({
    id: z.string(),
    clientId: z.string(),
    clientName: z.string().nullable(),
    scopes: z.array(z.string()),
    user: z.object({ id: z.uuid(), email: z.string() }),
    createdAt: z.iso.datetime(),
    lastUsedAt: z.iso.datetime().nullable(),
  })
  .meta({ id: 'OAuthGrant' });

export const mcpRouter = router({
  grants: manager
    .meta({
      openapi: {
        method: 'GET',
        path: '/workspaces/{workspaceId}/oauth-grants',
        description:
          'The apps connected to the workspace over OAuth (MCP clients): who connected them, with which scopes, and when.',
        tags,
        summary: 'Apps connected over OAuth',
      },
    })
    .input(z.object({ workspaceId: z.uuid() }))
    .output(z.object({ items: z.array(grantOutput) }))
    .query(({ ctx, input }) => grants.listGrants(ctx, input)),

  revokeGrant: manager
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/workspaces/{workspaceId}/oauth-grants/{grantId}',
        description:
          "Disconnects an app: the grant and its tokens are revoked at once, so the app's next call is a 401.",
        tags,
        summary: 'Disconnect an app (revoke its grant)',
      },
    })
    .input(z.object({ workspaceId: z.uuid(), grantId: z.string().min(1).max(128) }))
    .output(z.object({ message: z.string() }))
    .mutation(({ ctx, input }) => grants.revokeGrant(ctx, actorOf(ctx), input)),
});
