// Enterprise sign-in set-up of a workspace: its verified domains. Every route, reads included, takes
// ownership.manage (OWNER only): a workspace's domains decide which addresses its single sign-on and
// directory sync may act on, owners' addresses included.
import { router, workspaceProcedure } from '../../server/platform/trpc.js';
import { actorOf } from '../../server/platform/actor.js';
import { messageOutput } from '../auth/schemas.js';
import { requestBase } from '../oauth/redirects.js';
import * as connections from './connections.js';
import * as domains from './domains.js';
import {
  addDomainInput,
  connectionIdInput,
  connectionListOutput,
  connectionOutput,
  createConnectionInput,
  domainIdInput,
  domainListOutput,
  domainOutput,
  updateConnectionInput,
  workspaceIdInput,
} from './schemas.js';

const tags = ['Single sign-on'];
/** The base URL identity providers reach this API at: API_URL, else the request's. */
const baseOf = (ctx: { config: Parameters<typeof connections.apiBase>[0]; req: Parameters<typeof requestBase>[0] }) =>
  connections.apiBase(ctx.config, requestBase(ctx.req));

export const ssoRouter = router({
  domains: workspaceProcedure('ownership.manage')
    .meta({
      openapi: {
        method: 'GET',
        path: '/workspaces/{workspaceId}/domains',
        description: "The workspace's domains, with the TXT record that verifies each.",
        tags,
        summary: 'Domains of a workspace',
      },
    })
    .input(workspaceIdInput)
    .output(domainListOutput)
    .query(({ ctx, input }) => domains.listDomains(ctx, input)),

  addDomain: workspaceProcedure('ownership.manage')
    .meta({
      openapi: {
        method: 'POST',
        path: '/workspaces/{workspaceId}/domains',
        description:
          'Claims a domain for the workspace: PENDING, with the TXT record (`verification`) to publish before POST .../verify. Public mail domains (gmail.com, outlook.com, ...) are 400. The owners are mailed.',
        tags,
        summary: 'Claim a domain',
      },
      errors: ['CONFLICT'],
      successStatus: 201,
    })
    .input(addDomainInput)
    .output(domainOutput)
    .mutation(({ ctx, input }) => domains.addDomain(ctx, actorOf(ctx), input)),

  verifyDomain: workspaceProcedure('ownership.manage')
    .meta({
      openapi: {
        method: 'POST',
        path: '/workspaces/{workspaceId}/domains/{domainId}/verify',
        description:
          'Looks the TXT record up: VERIFIED when it holds the value, else 409 DOMAIN_NOT_VERIFIED (DNS changes take a while to show: try again). A domain another workspace verified is 409 DOMAIN_TAKEN.',
        tags,
        summary: 'Verify a domain',
      },
      errors: ['DOMAIN_NOT_VERIFIED', 'DOMAIN_TAKEN', 'SERVICE_UNAVAILABLE'],
    })
    .input(domainIdInput)
    .output(domainOutput)
    .mutation(({ ctx, input }) => domains.verifyDomain(ctx, actorOf(ctx), input)),

  removeDomain: workspaceProcedure('ownership.manage')
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/workspaces/{workspaceId}/domains/{domainId}',
        description: 'Removes a domain; single sign-on and directory sync no longer act on its addresses.',
        tags,
        summary: 'Remove a domain',
      },
    })
    .input(domainIdInput)
    .output(messageOutput)
    .mutation(({ ctx, input }) => domains.removeDomain(ctx, actorOf(ctx), input)),

  connections: workspaceProcedure('ownership.manage')
    .meta({
      openapi: {
        method: 'GET',
        path: '/workspaces/{workspaceId}/sso/connections',
        description: "The workspace's SAML and OIDC connections (client secrets are never answered).",
        tags,
        summary: 'Single sign-on connections',
      },
    })
    .input(workspaceIdInput)
    .output(connectionListOutput)
    .query(({ ctx, input }) => connections.listConnections(ctx, { ...input, base: baseOf(ctx) })),

  connection: workspaceProcedure('ownership.manage')
    .meta({
      openapi: {
        method: 'GET',
        path: '/workspaces/{workspaceId}/sso/connections/{connectionId}',
        description: 'One connection, with what to register at the identity provider (`sp`).',
        tags,
        summary: 'A single sign-on connection',
      },
    })
    .input(connectionIdInput)
    .output(connectionOutput)
    .query(({ ctx, input }) => connections.getConnection(ctx, { ...input, base: baseOf(ctx) })),

  createConnection: workspaceProcedure('ownership.manage')
    .meta({
      openapi: {
        method: 'POST',
        path: '/workspaces/{workspaceId}/sso/connections',
        description:
          'SAML by `metadataXml`, or by `idpEntityId`, `idpSsoUrl` and `idpCertificate`; OIDC by `issuer`, `clientId` and `clientSecret` (sealed at rest, never answered). Members of the verified domains may then sign in through it (GET /auth/sso/start). The owners are mailed.',
        tags,
        summary: 'Add a single sign-on connection',
      },
      successStatus: 201,
    })
    .input(createConnectionInput)
    .output(connectionOutput)
    .mutation(({ ctx, input }) => connections.createConnection(ctx, actorOf(ctx), { ...input, base: baseOf(ctx) })),

  updateConnection: workspaceProcedure('ownership.manage')
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/workspaces/{workspaceId}/sso/connections/{connectionId}',
        description:
          '`name`, `defaultRole` (MEMBER, VIEWER or ADMIN; never OWNER), `status`, `allowIdpInitiated` (open to login CSRF), and for SAML `idpSsoUrl`, `idpCertificate` and `nextIdpCertificate` (a second certificate accepted during a roll-over), for OIDC `clientSecret`. The owners are mailed.',
        tags,
        summary: 'Change a single sign-on connection',
      },
    })
    .input(updateConnectionInput)
    .output(connectionOutput)
    .mutation(({ ctx, input }) => connections.updateConnection(ctx, actorOf(ctx), { ...input, base: baseOf(ctx) })),

  deleteConnection: workspaceProcedure('ownership.manage')
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/workspaces/{workspaceId}/sso/connections/{connectionId}',
        description: 'Removes the connection; nobody signs in through it any more. The owners are mailed.',
        tags,
        summary: 'Remove a single sign-on connection',
      },
    })
    .input(connectionIdInput)
    .output(messageOutput)
    .mutation(({ ctx, input }) => connections.deleteConnection(ctx, actorOf(ctx), input)),
});
