// Inputs and outputs of the auth routes, and the mapping from rows to what clients see.
import { z } from 'zod';
import { EDITIONS, PLATFORM_ROLES, USER_STATUSES, WORKSPACE_ROLES, WORKSPACE_STATUSES } from '../../db/schema.js';
import { newPasswordSchema } from '../../server/platform/security/passwords.js';
import { displayName } from '../../server/platform/validation.js';
import type { UserRow } from '../../server/platform/principal.js';
import type { WorkspaceContext } from '../workspaces/access.js';

export const emailSchema = z
  .email({ error: 'Enter a valid e-mail address.' })
  .max(254)
  .meta({ examples: ['jane@example.com'] });
/** Any string: a wrong or unknown token is INVALID_TOKEN / UNAUTHORIZED, decided by the service. */
// Bounded well past any token the service issues, so a long wrong token is still refused as a wrong token.
const tokenString = z.string({ error: 'Expected a token string.' }).max(16_384);

export const registerInput = z.object({
  email: emailSchema.meta({ examples: ['jane@example.com'] }),
  password: newPasswordSchema,
  name: displayName(100).meta({ examples: ['Jane Doe'] }),
});

export const loginInput = z.object({
  email: emailSchema.meta({ examples: ['jane@example.com'] }),
  // No policy here: a password longer than bcrypt's 72 bytes simply matches no account.
  password: z
    .string()
    .min(1, { error: 'Password is required.' })
    .max(1024)
    .meta({ examples: ['Correct-horse-42'] }),
});

export const refreshTokenInput = z.object({ refreshToken: tokenString });
export const emailInput = z.object({ email: emailSchema });
export const tokenInput = z.object({ token: tokenString });
export const resetPasswordInput = z.object({ token: tokenString, newPassword: newPasswordSchema });

const isoDate = z.iso.datetime({ offset: true });

export const userOutput = z
  .object({
    id: z.uuid(),
    email: z.string().meta({ maxLength: 254, examples: ['jane@example.com'] }),
    name: z.string().meta({ maxLength: 100, examples: ['Jane Doe'] }),
    status: z.enum(USER_STATUSES),
    platformRole: z.enum(PLATFORM_ROLES),
    emailVerified: z.boolean(),
    emailVerifiedAt: isoDate.nullable(),
    /** Two-factor sign-in is on. */
    mfaEnabled: z.boolean(),
    createdAt: isoDate,
  })
  .meta({ id: 'User' });

export const workspaceSummaryOutput = z
  .object({
    id: z.uuid(),
    name: z.string().meta({ maxLength: 100, examples: ['Acme'] }),
    status: z.enum(WORKSPACE_STATUSES),
    edition: z.enum(EDITIONS),
    role: z.enum(WORKSPACE_ROLES),
  })
  .meta({ id: 'WorkspaceSummary' });

export const workspaceContextOutput = z
  .object({
    activeWorkspace: workspaceSummaryOutput.nullable(),
    hasActiveWorkspace: z.boolean(),
    workspaceUnavailableReason: z
      .enum([
        'WORKSPACE_SUSPENDED',
        'WORKSPACE_ARCHIVED',
        'WORKSPACE_PENDING_DELETION',
        'MEMBERSHIP_SUSPENDED',
        'NO_WORKSPACE',
      ])
      .optional(),
  })
  .meta({ id: 'WorkspaceContext' });

export const tokenPairOutput = z
  .object({
    accessToken: z.string().meta({ description: 'A JWT: send it as `Authorization: Bearer <accessToken>`.' }),
    refreshToken: z.string().meta({ description: 'Good once, for POST /auth/refresh.' }),
    tokenType: z.literal('Bearer'),
    /** Seconds until the access token expires. */
    expiresIn: z
      .number()
      .int()
      .meta({
        description: 'Seconds until the access token expires.',
        minimum: 1,
        maximum: Number.MAX_SAFE_INTEGER,
        examples: [900],
      }),
  })
  .meta({ id: 'TokenPair' });

/** A completed sign-in: a new session and the user's workspace context. */
export const sessionResultOutput = tokenPairOutput
  .extend({ user: userOutput })
  .extend(workspaceContextOutput.shape)
  .meta({ id: 'Session' });

/** The first step of a sign-in whose account has two-factor sign-in on: no tokens yet. */
export const mfaChallengeOutput = z
  .object({
    mfaRequired: z.literal(true),
    /** Single use, for POST /auth/mfa/verify within MFA_TOKEN_TTL. */
    mfaToken: z.string().meta({ description: 'Single use, for POST /auth/mfa/verify within MFA_TOKEN_TTL.' }),
    methods: z.array(z.enum(['totp', 'backup_code'])).max(2),
  })
  .meta({ id: 'MfaChallenge' });

/** What a sign-in answers: the session, or (2FA on) the token of the second step. */
export const loginOutput = z.union([sessionResultOutput, mfaChallengeOutput]);
export const meOutput = z.object({ user: userOutput }).extend(workspaceContextOutput.shape).meta({ id: 'Me' });
export const registerOutput = z
  .object({ user: userOutput, workspace: workspaceSummaryOutput })
  .meta({ id: 'Registration' });
export const messageOutput = z.object({ message: z.string() }).meta({ id: 'Message' });

export type { UserRow };
export const USER_COLUMNS = [
  'id',
  'email',
  'name',
  'status',
  'platform_role',
  'email_verified_at',
  'mfa_enabled',
  'created_at',
] as const;

export function toUserOutput(u: UserRow): z.infer<typeof userOutput> {
  return {
    id: u.id,
    email: u.email,
    name: u.name,
    status: u.status,
    platformRole: u.platform_role,
    emailVerified: u.email_verified_at !== null,
    emailVerifiedAt: u.email_verified_at?.toISOString() ?? null,
    mfaEnabled: u.mfa_enabled,
    createdAt: u.created_at.toISOString(),
  };
}

export function toContextOutput(c: WorkspaceContext): z.infer<typeof workspaceContextOutput> {
  return {
    activeWorkspace: c.activeWorkspace,
    hasActiveWorkspace: c.hasActiveWorkspace,
    ...(c.workspaceUnavailableReason ? { workspaceUnavailableReason: c.workspaceUnavailableReason } : {}),
  };
}

// ---- two-factor sign-in and sessions

/** A TOTP code as typed (6 digits, spaces allowed); whether it is right is the service's answer. */
const mfaCode = z.string({ error: 'Expected a code string.' }).min(1, { error: 'Enter a code.' }).max(32);

export const mfaSetupOutput = z.object({
  /** Base32, for typing into an authenticator app by hand. Shown by this answer only. */
  secret: z.string(),
  otpauthUrl: z.string(),
  /** The otpauth URL as a PNG QR code, `data:image/png;base64,...`. */
  qrCodeDataUrl: z.string(),
});
export const mfaCodeInput = z.object({ code: mfaCode });
export const backupCodesOutput = z.object({ backupCodes: z.array(z.string()) });
export const mfaDisableInput = z.object({
  password: z.string().min(1, { error: 'Password is required.' }).max(1024),
  code: mfaCode,
});
export const mfaVerifyInput = z
  .object({
    mfaToken: tokenString.max(256),
    code: mfaCode.optional(),
    backupCode: z.string().min(1).max(64).optional(),
  })
  .refine((i) => (i.code === undefined) !== (i.backupCode === undefined), {
    error: 'Send either code (from the authenticator app) or backupCode, not both.',
  });

export const changePasswordInput = z.object({
  currentPassword: z.string().min(1, { error: 'Current password is required.' }).max(1024),
  newPassword: newPasswordSchema,
});
export const changePasswordOutput = messageOutput.extend({
  /** How many other sessions were ended. */
  revoked: z.number().int(),
});

export const sessionOutput = z.object({
  id: z.uuid(),
  createdAt: isoDate,
  /** The sign-in or the last refresh of its tokens. */
  lastUsedAt: isoDate,
  userAgent: z.string().nullable(),
  ipAddress: z.string().nullable(),
  /** The session of the access token this request came with. */
  current: z.boolean(),
});
export const sessionsOutput = z.object({ items: z.array(sessionOutput) });
export const sessionIdInput = z.object({ sessionId: z.uuid() });
export const revokedOutput = z.object({ revoked: z.number().int() });
