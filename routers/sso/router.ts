// Enterprise sign-in set-up of a workspace: its verified domains. Every route, reads included, takes
// ownership.manage (OWNER only): a workspace's domains decide which addresses its single sign-on and
// directory sync may act on, owners' addresses included.
import { router, workspaceProcedure } from '../../server/platform/trpc.js';
import { actorOf } from '../../server/platform/actor.js';
import { messageOutput } from '../auth/schemas.js';
import * as domains from './domains.js';
import { addDomainInput, domainIdInput, domainListOutput, domainOutput, workspaceIdInput } from './schemas.js';

const tags = ['Single sign-on'];

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
});
