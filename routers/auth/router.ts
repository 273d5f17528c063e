// The nine auth routes of the spec.
import { z } from 'zod';
import { authedProcedure, publicProcedure, router } from '../../server/platform/trpc.js';
import type { Context } from '../../server/platform/context.js';
import {
  emailInput,
  loginInput,
  loginOutput,
  meOutput,
  messageOutput,
  refreshTokenInput,
  registerInput,
  registerOutput,
  resetPasswordInput,
  tokenInput,
  tokenPairOutput,
} from './schemas.js';
import * as auth from './service.js';
import { rotateRefreshToken } from './sessions.js';

const tags = ['Auth'];

/** The failed-sign-in limiter, while rate limiting is on, bound to this request's response (for its 429). */
const signInAttempts = ({ failedSignIns, res }: Context): auth.SignInAttempts | undefined =>
  failedSignIns && { begin: (key) => failedSignIns.begin(res, key) };

export const authRouter = router({
  register: publicProcedure
    .meta({
      rateLimit: 'auth',
      openapi: {
        method: 'POST',
        path: '/auth/register',
        description:
          'Creates an account and its personal workspace (the caller is its OWNER), mails an e-mail verification link, and answers the user and the workspace. Sign in afterwards with POST /auth/login. An address already registered is 409 EMAIL_TAKEN; a password outside the policy is 400 WEAK_PASSWORD.',
        tags,
        protect: false,
        summary: 'Create an account and its personal workspace',
      },
      errors: ['EMAIL_TAKEN', 'WEAK_PASSWORD'],
      successStatus: 201,
    })
    .input(registerInput)
    .output(registerOutput)
    .mutation(({ ctx, input }) => auth.register(ctx, input)),

  login: publicProcedure
    .meta({
      rateLimit: 'auth',
      openapi: {
        method: 'POST',
        path: '/auth/login',
        description:
          'Signs in with e-mail and password: answers an access token (for `Authorization: Bearer`), a refresh token, the user and the active workspace. A wrong address or password is 401 INVALID_CREDENTIALS either way; repeated failures of one account are rate-limited whoever sends them.',
        tags,
        protect: false,
        summary: 'Sign in with e-mail and password',
      },
      // RATE_LIMITED: the address's auth tier, or too many failed sign-ins of this account.
      errors: ['INVALID_CREDENTIALS', 'USER_SUSPENDED', 'RATE_LIMITED'],
    })
    .input(loginInput)
    .output(loginOutput)
    .mutation(({ ctx, input }) => auth.countedLogin(ctx, input, ctx, signInAttempts(ctx))),

  refresh: publicProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/auth/refresh',
        description:
          'Exchanges a refresh token for a new token pair. Each refresh token is good once: presenting an already rotated token again (after a short grace for concurrent refreshes) is taken as reuse of a stolen token and revokes the whole session.',
        tags,
        protect: false,
        summary: 'Rotate a refresh token for a new token pair',
      },
      errors: ['UNAUTHORIZED', 'USER_SUSPENDED'],
    })
    .input(refreshTokenInput)
    .output(tokenPairOutput)
    .mutation(({ ctx, input }) => rotateRefreshToken(ctx, input.refreshToken, ctx)),

  logout: publicProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/auth/logout',
        description:
          'Revokes the session of a refresh token: neither it nor any token refreshed from it works again. Access tokens already issued expire on their own (`expiresIn`).',
        tags,
        protect: false,
        summary: 'Revoke a refresh token and its session',
      },
    })
    .input(refreshTokenInput)
    .output(messageOutput)
    .mutation(({ ctx, input }) => auth.logout(ctx, input.refreshToken)),

  me: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/auth/me',
        description: 'The signed-in user and their workspace context: the active workspace, or why there is none.',
        tags,
        summary: 'The signed-in user and workspace context',
      },
    })
    .input(z.void())
    .output(meOutput)
    .query(({ ctx }) => auth.me(ctx)),

  forgotPassword: publicProcedure
    .meta({
      rateLimit: 'auth',
      openapi: {
        method: 'POST',
        path: '/auth/forgot-password',
        description:
          'Mails a password reset link if the address has an account. The answer is the same whether or not it has one, so it does not tell which addresses are registered.',
        tags,
        protect: false,
        summary: 'Mail a password reset link',
      },
    })
    .input(emailInput)
    .output(messageOutput)
    .mutation(({ ctx, input }) => auth.forgotPassword(ctx, input)),

  resetPassword: publicProcedure
    .meta({
      rateLimit: 'auth',
      openapi: {
        method: 'POST',
        path: '/auth/reset-password',
        description:
          'Sets a new password with the token of a reset link (good once, for a limited time) and revokes every session of the account; access tokens issued before stop working.',
        tags,
        protect: false,
        summary: 'Set a new password with a reset token',
      },
      errors: ['INVALID_TOKEN', 'WEAK_PASSWORD'],
    })
    .input(resetPasswordInput)
    .output(messageOutput)
    .mutation(({ ctx, input }) => auth.resetPassword(ctx, input, ctx)),

  resendVerification: publicProcedure
    .meta({
      rateLimit: 'auth',
      openapi: {
        method: 'POST',
        path: '/auth/resend-verification',
        description:
          'Mails a new e-mail verification link if the address has an unverified account; the answer is the same either way.',
        tags,
        protect: false,
        summary: 'Mail a new e-mail verification link',
      },
    })
    .input(emailInput)
    .output(messageOutput)
    .mutation(({ ctx, input }) => auth.resendVerification(ctx, input)),

  verifyEmail: publicProcedure
    .meta({
      rateLimit: 'auth',
      openapi: {
        method: 'POST',
        path: '/auth/verify-email',
        description:
          'Marks the e-mail address as verified with the token of a verification link (good once, for a limited time).',
        tags,
        protect: false,
        summary: 'Verify an e-mail address with a token',
      },
      errors: ['INVALID_TOKEN'],
    })
    .input(tokenInput)
    .output(messageOutput)
    .mutation(({ ctx, input }) => auth.verifyEmail(ctx, input)),
});
