// Sign-in with identity providers, the procedures: the providers on offer, the exchange of the callback's
// one-time code for a session, and the identities of the signed-in account. The two browser redirects
// (start, callback) are plain Express routes: redirects.ts.
import { z } from 'zod';
import { authedProcedure, authenticateRequest, publicProcedure, router } from '../../server/platform/trpc.js';
import { actorOf } from '../../server/platform/actor.js';
import {
  exchangeInput,
  exchangeOutput,
  identitiesOutput,
  linkStartInput,
  linkStartOutput,
  providersOutput,
  unlinkInput,
  unlinkOutput,
} from './schemas.js';
import * as oauth from './service.js';
import * as flows from './flows.js';
import { requestBase } from './redirects.js';
import { apiBase } from '../sso/connections.js';
import { startLink as startSsoLink } from '../sso/signin.js';

const tags = ['Auth'];

export const oauthRouter = router({
  providers: publicProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/auth/providers',
        tags,
        protect: false,
        summary: 'The identity providers one can sign in with',
        description:
          'The enabled providers (`github`, `google`, `oidc`), each on only once its settings are present, in the ' +
          'order of the sign-in page. Send the browser to `GET /auth/oauth/{id}/start` to sign in with one.',
      },
    })
    .input(z.void())
    .output(providersOutput)
    .query(({ ctx }) => oauth.listProviders(ctx)),

  exchange: publicProcedure
    .meta({
      rateLimit: 'auth',
      openapi: {
        method: 'POST',
        path: '/auth/oauth/exchange',
        tags,
        protect: false,
        summary: "Exchange the callback's one-time code for a session",
        description:
          'The web app calls this from `APP_URL/auth/callback?code=...` and answers what `POST /auth/login` answers. ' +
          'A code is single use and valid for 60 seconds (`OAUTH_EXCHANGE_CODE_TTL`). The code of a link started ' +
          'with `POST /auth/identities/{provider}/link/start` is taken only with the access token of that account ' +
          '(sent as usual, `Authorization: Bearer`); it links the identity and opens a session as a sign-in does.',
      },
      errors: ['INVALID_TOKEN', 'UNAUTHORIZED', 'USER_SUSPENDED', 'IDENTITY_ALREADY_LINKED'],
    })
    .input(exchangeInput)
    .output(exchangeOutput)
    .mutation(({ ctx, input }) =>
      oauth.exchangeCode(ctx, actorOf(ctx), {
        ...input,
        caller: () => (ctx.req.headers.authorization ? authenticateRequest(ctx, ctx.req) : Promise.resolve(undefined)),
      }),
    ),

  identities: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/auth/identities',
        tags,
        summary: 'The identities linked to my account',
        description:
          'Each identity provider account that can sign in to this account, oldest first, with the address the ' +
          'provider last gave. Providers no longer enabled are listed too (their identities cannot sign in).',
      },
    })
    .input(z.void())
    .output(identitiesOutput)
    .query(({ ctx }) => oauth.listIdentities(ctx, actorOf(ctx))),

  linkStart: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/auth/identities/{provider}/link/start',
        tags,
        summary: 'Start linking an identity provider account to mine',
        description:
          "Answers the provider's authorization URL: navigate the browser there. The provider sends it back to " +
          '`APP_URL/auth/callback?code=...` (or `?error=CODE`); post that code to `POST /auth/oauth/exchange` with ' +
          "this account's access token to finish the link. `redirectTo` (a path of the web app) comes back with it. " +
          'With `sso` and `email`: the identity provider of the connection of the workspace that verified the ' +
          "address's domain; the link also makes the account a member of that workspace.",
      },
      errors: ['OAUTH_PROVIDER_NOT_ENABLED', 'IDENTITY_ALREADY_LINKED', 'OAUTH_PROVIDER_ERROR', 'SSO_NOT_CONFIGURED'],
    })
    .input(linkStartInput)
    .output(linkStartOutput)
    .mutation(async ({ ctx, input }) => ({
      url:
        input.provider === 'sso'
          ? await startSsoLink(ctx, actorOf(ctx), {
              email: input.email ?? '',
              redirectTo: input.redirectTo,
              base: apiBase(ctx.config, requestBase(ctx.req)),
            })
          : await flows.startFlow(ctx, actorOf(ctx), {
              provider: input.provider,
              purpose: 'LINK',
              redirectTo: input.redirectTo,
              requestBase: requestBase(ctx.req),
            }),
    })),

  unlink: authedProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/auth/identities/{identityId}',
        tags,
        summary: 'Unlink an identity from my account',
        description:
          'The identity can no longer sign in to this account. Refused with 409 `LAST_SIGN_IN_METHOD` when it is ' +
          'the only way left to sign in: the account has no password and no other identity.',
      },
      errors: ['LAST_SIGN_IN_METHOD'],
    })
    .input(unlinkInput)
    .output(unlinkOutput)
    .mutation(({ ctx, input }) => oauth.unlinkIdentity(ctx, actorOf(ctx), input)),
});
