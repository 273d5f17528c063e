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
        tags,
        protect: false,
        summary: 'Revoke a refresh token and its session',
      },
    })
    .input(refreshTokenInput)
    .output(messageOutput)
    .mutation(({ ctx, input }) => auth.logout(ctx, input.refreshToken)),

  me: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/auth/me', tags, summary: 'The signed-in user and workspace context' } })
    .input(z.void())
    .output(meOutput)
    .query(({ ctx }) => auth.me(ctx)),

  forgotPassword: publicProcedure
    .meta({
      rateLimit: 'auth',
      openapi: {
        method: 'POST',
        path: '/auth/forgot-password',
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
