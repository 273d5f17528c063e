// The auth routes: accounts and sign-in, two-factor sign-in, sessions and password change.
import { z } from 'zod';
import { authedProcedure, publicProcedure, router } from '../../server/platform/trpc.js';
import type { Context } from '../../server/platform/context.js';
import {
  backupCodesOutput,
  changePasswordInput,
  changePasswordOutput,
  emailInput,
  loginInput,
  loginOutput,
  meOutput,
  messageOutput,
  mfaCodeInput,
  mfaDisableInput,
  mfaSetupOutput,
  mfaVerifyInput,
  refreshTokenInput,
  registerInput,
  registerOutput,
  resetPasswordInput,
  revokedOutput,
  sessionIdInput,
  sessionResultOutput,
  sessionsOutput,
  tokenInput,
  tokenPairOutput,
} from './schemas.js';
import * as auth from './service.js';
import * as mfa from './mfa.js';
import * as security from './security.js';
import { actorOf } from '../../server/platform/actor.js';
import { rotateRefreshToken } from './sessions.js';

const tags = ['Auth'];

/** The failed-sign-in limiter, while rate limiting is on, bound to this request's response (for its 429). */
const signInAttempts = ({ failedSignIns, res }: Context): auth.SignInAttempts | undefined =>
  failedSignIns && { begin: (key) => failedSignIns.begin(res, key) };

/** The dependencies of a sign-in step, with this request's failed-sign-in counter. */
const withAttempts = (ctx: Context) => ({ ...ctx, attempts: signInAttempts(ctx) });

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
        tags,
        protect: false,
        summary: 'Sign in with e-mail and password',
        description:
          'Signs in with e-mail and password. A wrong address or password is 401 INVALID_CREDENTIALS either way; ' +
          'repeated failures of one account are rate-limited whoever sends them. ' +
          'Answers the session (tokens, user, workspace context); or, when the account has two-factor sign-in ' +
          'on, `{ mfaRequired: true, mfaToken, methods }` and no tokens: send the token with a code to ' +
          '`POST /auth/mfa/verify` within `MFA_TOKEN_TTL` (5 minutes).',
      },
      // RATE_LIMITED: the address's auth tier, or too many failed sign-ins of this account.
      errors: ['INVALID_CREDENTIALS', 'USER_SUSPENDED', 'RATE_LIMITED'],
    })
    .input(loginInput)
    .output(loginOutput)
    .mutation(({ ctx, input }) => auth.countedLogin(withAttempts(ctx), actorOf(ctx), input)),

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
    .mutation(({ ctx, input }) => rotateRefreshToken(ctx, actorOf(ctx), input)),

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
    .mutation(({ ctx, input }) => auth.logout(ctx, input)),

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
    .mutation(({ ctx, input }) => auth.resetPassword(ctx, actorOf(ctx), input)),

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

  // ---- two-factor sign-in

  mfaVerify: publicProcedure
    .meta({
      rateLimit: 'auth',
      openapi: {
        method: 'POST',
        path: '/auth/mfa/verify',
        tags,
        protect: false,
        summary: 'Finish a sign-in with a second factor',
        description:
          'The second step of a sign-in whose first step (`POST /auth/login`, `POST /auth/oauth/exchange`) ' +
          'answered `mfaRequired`: the `mfaToken` with either `code` (the authenticator app) or `backupCode`. ' +
          'Answers the session, as login does. The token is single use, lives `MFA_TOKEN_TTL` and allows 5 ' +
          'codes; unknown, used, expired or spent: 401 `UNAUTHORIZED` (sign in again). A wrong code: 400 ' +
          '`INVALID_MFA_CODE`. 10 wrong codes for the account within 10 minutes (through any token) lock its ' +
          'codes for the rest of those minutes: 429 `RATE_LIMITED` with `Retry-After`, whatever the code.',
      },
      // RATE_LIMITED: the address's auth tier, or too many wrong codes for this account.
      errors: ['UNAUTHORIZED', 'USER_SUSPENDED', 'INVALID_MFA_CODE', 'RATE_LIMITED'],
    })
    .input(mfaVerifyInput)
    .output(sessionResultOutput)
    .mutation(({ ctx, input }) => auth.verifyMfa(withAttempts(ctx), actorOf(ctx), input)),

  mfaSetup: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/auth/mfa/totp/setup',
        tags,
        summary: 'Start setting up an authenticator app',
        description:
          'A new TOTP secret (SHA-1, 6 digits, 30 seconds), pending until confirmed: its base32 form, its ' +
          '`otpauth://` URI and that URI as a QR code (PNG data URL) to scan. Shown by this answer only; ' +
          'starting again replaces a pending secret. 409 `MFA_ALREADY_ENABLED` when two-factor sign-in is on.',
      },
      errors: ['MFA_ALREADY_ENABLED'],
    })
    .input(z.void())
    .output(mfaSetupOutput)
    .mutation(({ ctx }) => mfa.setupTotp(ctx, { user: ctx.user })),

  mfaConfirm: authedProcedure
    .meta({
      rateLimit: 'auth',
      openapi: {
        method: 'POST',
        path: '/auth/mfa/totp/confirm',
        tags,
        summary: 'Turn two-factor sign-in on with a first code',
        description:
          'A code of the pending secret turns two-factor sign-in on and answers 10 single-use backup codes, ' +
          'shown this once. 409 `MFA_NOT_ENABLED` without a setup under way; 400 `INVALID_MFA_CODE` for a wrong code.',
      },
      errors: ['MFA_ALREADY_ENABLED', 'MFA_NOT_ENABLED', 'INVALID_MFA_CODE', 'RATE_LIMITED'],
    })
    .input(mfaCodeInput)
    .output(backupCodesOutput)
    .mutation(({ ctx, input }) =>
      auth.countedMfa(signInAttempts(ctx), ctx.user.id, () =>
        mfa.confirmTotp(ctx, actorOf(ctx), { ...input, user: ctx.user }),
      ),
    ),

  mfaDisable: authedProcedure
    .meta({
      rateLimit: 'auth',
      openapi: {
        method: 'POST',
        path: '/auth/mfa/disable',
        tags,
        summary: 'Turn two-factor sign-in off',
        description:
          'With the password and a code (of the authenticator app, or a backup code). The secret and the backup ' +
          'codes are deleted, and the account is told by mail. An account without a password sets one first ' +
          '(`POST /auth/forgot-password`).',
      },
      errors: ['INVALID_CREDENTIALS', 'MFA_NOT_ENABLED', 'INVALID_MFA_CODE', 'RATE_LIMITED'],
    })
    .input(mfaDisableInput)
    .output(messageOutput)
    .mutation(({ ctx, input }) =>
      auth.countedMfa(signInAttempts(ctx), ctx.user.id, () =>
        mfa.disableMfa(ctx, actorOf(ctx), { ...input, user: ctx.user }),
      ),
    ),

  mfaBackupCodes: authedProcedure
    .meta({
      rateLimit: 'auth',
      openapi: {
        method: 'POST',
        path: '/auth/mfa/backup-codes',
        tags,
        summary: 'Replace the backup codes',
        description:
          'With a code (of the authenticator app, or a backup code): 10 new backup codes, shown this once; ' +
          'the earlier ones stop working.',
      },
      errors: ['MFA_NOT_ENABLED', 'INVALID_MFA_CODE', 'RATE_LIMITED'],
    })
    .input(mfaCodeInput)
    .output(backupCodesOutput)
    .mutation(({ ctx, input }) =>
      auth.countedMfa(signInAttempts(ctx), ctx.user.id, () =>
        mfa.regenerateBackupCodes(ctx, actorOf(ctx), { ...input, user: ctx.user }),
      ),
    ),

  // ---- password and sessions

  changePassword: authedProcedure
    .meta({
      rateLimit: 'auth',
      openapi: {
        method: 'POST',
        path: '/auth/change-password',
        tags,
        summary: 'Change my password',
        description:
          'With the current password. Every other session of the account ends at once (their access tokens ' +
          'stop at their next request); this one stays signed in. `revoked`: how many ended.',
      },
      errors: ['INVALID_CREDENTIALS', 'WEAK_PASSWORD'],
    })
    .input(changePasswordInput)
    .output(changePasswordOutput)
    .mutation(({ ctx, input }) => security.changePassword(ctx, actorOf(ctx), input)),

  sessions: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/auth/sessions',
        tags,
        summary: 'My sessions (signed-in devices)',
        description:
          'Every session of the account that has not ended: one per sign-in, with when it began and was last ' +
          'used (the sign-in or its last token refresh), its user agent and address; `current` marks the ' +
          "session of this request's access token. Newest use first.",
      },
    })
    .input(z.void())
    .output(sessionsOutput)
    .query(({ ctx }) => security.listSessions(ctx, actorOf(ctx))),

  revokeOtherSessions: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/auth/sessions/revoke-others',
        tags,
        summary: 'Sign out everywhere else',
        description:
          'Ends every session of the account but the current one; their access tokens stop at their next ' +
          'request and their refresh tokens are revoked. `revoked`: how many ended.',
      },
    })
    .input(z.void())
    .output(revokedOutput)
    .mutation(({ ctx }) => security.endOtherSessions(ctx, actorOf(ctx))),

  endSession: authedProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/auth/sessions/{sessionId}',
        tags,
        summary: 'End one of my sessions',
        description:
          'Signs that device out: its access token stops at its next request, its refresh token is revoked. ' +
          'Ending the current session signs this client out too. 404 when the session is not one of mine or ' +
          'has ended.',
      },
      errors: ['NOT_FOUND'],
    })
    .input(sessionIdInput)
    .output(messageOutput)
    .mutation(({ ctx, input }) => security.endSession(ctx, actorOf(ctx), input)),
});
