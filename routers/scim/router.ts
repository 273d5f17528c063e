// Directory sync (SCIM 2.0) set-up of a workspace: the tokens its directory calls /scim/v2 with, and the
// roles its groups give. Every route, reads included, takes ownership.manage (OWNER only): a token can add
// and remove any member of the workspace's verified domains. The protocol itself is protocol.ts.
import { router, workspaceProcedure } from '../../server/platform/trpc.js';
import { actorOf } from '../../server/platform/actor.js';
import { messageOutput } from '../auth/schemas.js';
import * as tokens from './tokens.js';
import {
  createTokenInput,
  createdTokenOutput,
  putRoleMappingsInput,
  roleMappingsOutput,
  tokenIdInput,
  tokenListOutput,
  workspaceIdInput,
} from './schemas.js';

const tags = ['Directory sync (SCIM)'];
const owner = workspaceProcedure('ownership.manage');

export const scimRouter = router({
  tokens: owner
    .meta({
      openapi: {
        method: 'GET',
        path: '/workspaces/{workspaceId}/scim/tokens',
        description: 'The live SCIM tokens of the workspace: name, prefix, last use. Never the tokens themselves.',
        tags,
        summary: 'SCIM tokens of a workspace',
      },
    })
    .input(workspaceIdInput)
    .output(tokenListOutput)
    .query(({ ctx, input }) => tokens.listTokens(ctx, input)),

  createToken: owner
    .meta({
      openapi: {
        method: 'POST',
        path: '/workspaces/{workspaceId}/scim/tokens',
        description:
          "Creates a bearer token for the workspace's directory (Okta, Microsoft Entra ID, ...) to call /scim/v2 with. The answer carries it (rawToken, scim_...) this once. The owners are mailed.",
        tags,
        summary: 'Create a SCIM token; the answer carries rawToken once',
      },
      successStatus: 201,
    })
    .input(createTokenInput)
    .output(createdTokenOutput)
    .mutation(({ ctx, input }) => tokens.createToken(ctx, actorOf(ctx), input)),

  revokeToken: owner
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/workspaces/{workspaceId}/scim/tokens/{tokenId}',
        description:
          'Revokes a SCIM token: the directory is refused with it from the next call. The owners are mailed.',
        tags,
        summary: 'Revoke a SCIM token',
      },
    })
    .input(tokenIdInput)
    .output(messageOutput)
    .mutation(({ ctx, input }) => tokens.revokeToken(ctx, actorOf(ctx), input)),

  roleMappings: owner
    .meta({
      openapi: {
        method: 'GET',
        path: '/workspaces/{workspaceId}/scim/role-mappings',
        description: "The roles the directory's groups give, by group display name.",
        tags,
        summary: 'Roles of directory groups',
      },
    })
    .input(workspaceIdInput)
    .output(roleMappingsOutput)
    .query(({ ctx, input }) => tokens.getRoleMappings(ctx, input)),

  putRoleMappings: owner
    .meta({
      openapi: {
        method: 'PUT',
        path: '/workspaces/{workspaceId}/scim/role-mappings',
        description:
          "Replaces the roles the directory's groups give (ADMIN, MEMBER or VIEWER; never OWNER). A member the directory manages gets the highest role of their groups, MEMBER when none is mapped; owners keep theirs. The owners are mailed.",
        tags,
        summary: 'Replace the roles of directory groups',
      },
    })
    .input(putRoleMappingsInput)
    .output(roleMappingsOutput)
    .mutation(({ ctx, input }) => tokens.putRoleMappings(ctx, actorOf(ctx), input)),
});
