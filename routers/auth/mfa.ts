// Two-factor sign-in: a TOTP authenticator (RFC 6238: SHA-1, 6 digits, 30-second steps, one step of drift
// either way) with ten single-use backup codes, and the second step of a sign-in. The TOTP secret is sealed
// with the service's SecretBox (as webhook secrets are); backup codes and sign-in step tokens are kept as
// SHA-256 digests only. Each accepted TOTP code records its time step, and no code of that step or an
// earlier one is accepted again (no replay).
import crypto from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import * as OTPAuth from 'otpauth';
import QRCode from 'qrcode';
import type { Database } from '../../db/schema.js';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import { sendAfterCommit } from '../../server/platform/email/mailer.js';
import { mfaDisabledMail, mfaEnabledMail } from '../../server/platform/email/templates.js';
import { randomToken, sha256Hex } from '../../server/platform/security/tokens.js';
import { actorOf, type Actor } from '../../server/platform/actor.js';
import { recordAudit } from '../audit/service.js';
import { USER_COLUMNS, type UserRow } from './schemas.js';
import { lockSessionsOf, passwordStill } from './sessions.js';
import { WRONG_CODE, cappedSecondFactorCheck } from './second-factor-cap.js';

type Deps = Pick<AppDeps, 'config' | 'db' | 'logger' | 'mailer' | 'passwords' | 'secrets'>;

const PERIOD = 30;
const DIGITS = 6;
/** Steps of clock drift accepted either side of the current one. */
const WINDOW = 1;
export const BACKUP_CODE_COUNT = 10;
/** Codes a sign-in step token may try before it is spent. */
export const MFA_MAX_ATTEMPTS = 5;
export const MFA_METHODS = ['totp', 'backup_code'] as const;
/** Lower-case letters and digits without the look-alikes (0/o, 1/l/i). */
const BACKUP_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

const invalidCode = () =>
  new AppError('INVALID_MFA_CODE', 'This code is not valid: check the authenticator app (or use a backup code).');
const alreadyEnabled = () => new AppError('MFA_ALREADY_ENABLED', 'Two-factor sign-in is already on for this account.');
const notEnabled = () => new AppError('MFA_NOT_ENABLED', 'Two-factor sign-in is not on for this account.');
const stepInvalid = () =>
  new AppError('UNAUTHORIZED', 'This sign-in step is unknown, used, expired or out of attempts. Sign in again.');

function totpOf(deps: Pick<Deps, 'config'>, secret: string, label: string) {
  return new OTPAuth.TOTP({
    issuer: deps.config.MFA_ISSUER,
    label,
    algorithm: 'SHA1',
    digits: DIGITS,
    period: PERIOD,
    secret: OTPAuth.Secret.fromBase32(secret),
  });
}

/** "123 456", "123-456" as typed: the digits. */
const normalizeCode = (code: string) => code.replace(/[\s-]/g, '').toLowerCase();
const isTotpCode = (code: string) => /^\d{6}$/.test(code);
const backupDigest = (code: string) => sha256Hex(`backup:${normalizeCode(code)}`);

function newBackupCodes(): string[] {
  return Array.from({ length: BACKUP_CODE_COUNT }, () => {
    const chars = Array.from({ length: 10 }, () => BACKUP_ALPHABET[crypto.randomInt(BACKUP_ALPHABET.length)]);
    return `${chars.slice(0, 5).join('')}-${chars.slice(5).join('')}`;
  });
}

/** Replaces the user's backup codes with a new set; answers the codes (shown once). */
async function replaceBackupCodes(trx: Kysely<Database>, userId: string): Promise<string[]> {
  const codes = newBackupCodes();
  await trx.deleteFrom('mfa_backup_codes').where('user_id', '=', userId).execute();
  await trx
    .insertInto('mfa_backup_codes')
    .values(codes.map((code) => ({ user_id: userId, code_hash: backupDigest(code) })))
    .execute();
  return codes;
}

/**
 * Accepts a TOTP code of the user's secret (confirmed, or the pending one with `pending`): within WINDOW
 * steps of now, and of a later step than any code accepted before, which it records. Atomic: of two
 * requests with the same code, one is accepted.
 */
async function acceptTotp(
  deps: Pick<Deps, 'config' | 'secrets'>,
  trx: Kysely<Database>,
  userId: string,
  code: string,
  opts: { pending?: boolean } = {},
): Promise<boolean> {
  const normalized = normalizeCode(code);
  if (!isTotpCode(normalized)) return false;
  const row = await trx
    .selectFrom('user_totp')
    .select(['secret_encrypted', 'confirmed_at'])
    .where('user_id', '=', userId)
    .executeTakeFirst();
  if (!row || (row.confirmed_at === null) !== (opts.pending ?? false)) return false;
  const totp = totpOf(deps, deps.secrets.open(row.secret_encrypted), 'account');
  const now = Date.now();
  const delta = totp.validate({ token: normalized, timestamp: now, window: WINDOW });
  if (delta === null) return false;
  const step = totp.counter({ timestamp: now }) + delta;
  const taken = await trx
    .updateTable('user_totp')
    .set({ last_used_step: step })
    .where('user_id', '=', userId)
    .where((eb) => eb.or([eb('last_used_step', 'is', null), eb('last_used_step', '<', String(step))]))
    .returning('user_id')
    .executeTakeFirst();
  return taken !== undefined;
}

/** Uses up one of the user's backup codes; false when it is not one, or already used. Atomic. */
async function acceptBackupCode(trx: Kysely<Database>, userId: string, code: string): Promise<boolean> {
  const used = await trx
    .updateTable('mfa_backup_codes')
    .set({ used_at: new Date() })
    .where('user_id', '=', userId)
    .where('code_hash', '=', backupDigest(code))
    .where('used_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
  return used !== undefined;
}

/** A second factor: a TOTP code (6 digits) or, otherwise, a backup code. */
export async function acceptSecondFactor(
  deps: Pick<Deps, 'config' | 'secrets'>,
  trx: Kysely<Database>,
  userId: string,
  code: string,
) {
  return isTotpCode(normalizeCode(code)) ? acceptTotp(deps, trx, userId, code) : acceptBackupCode(trx, userId, code);
}

/** The user's row, locked: every change of a user's 2FA runs under it, one at a time. */
async function lockUser(trx: Transaction<Database>, userId: string) {
  return trx
    .selectFrom('users')
    .select(['id', 'email', 'name', 'mfa_enabled', 'password_hash'])
    .where('id', '=', userId)
    .forUpdate()
    .executeTakeFirstOrThrow();
}

// ---------------------------------------------------------------------------------------------------
// Setting up, confirming, turning off

/**
 * A new TOTP secret, pending until confirmed (a setup started again replaces the pending one). The secret
 * is answered here once, with its otpauth:// URI and that URI as a QR code.
 */
export async function setupTotp(deps: Deps, { user }: { user: UserRow }) {
  if (user.mfa_enabled) throw alreadyEnabled();
  const secret = new OTPAuth.Secret({ size: 20 }).base32;
  const sealed = deps.secrets.seal(secret);
  const stored = await deps.db
    .insertInto('user_totp')
    .values({ user_id: user.id, secret_encrypted: sealed })
    .onConflict((oc) =>
      oc
        .column('user_id')
        .doUpdateSet({ secret_encrypted: sealed, last_used_step: null })
        .where('user_totp.confirmed_at', 'is', null),
    )
    .returning('user_id')
    .executeTakeFirst();
  if (!stored) throw alreadyEnabled();
  const otpauthUrl = totpOf(deps, secret, user.email).toString();
  const qrCodeDataUrl = await QRCode.toDataURL(otpauthUrl, { errorCorrectionLevel: 'M', margin: 2 });
  return { secret, otpauthUrl, qrCodeDataUrl };
}

/** Turns 2FA on with a code of the pending secret; answers the ten backup codes, shown this once. */
export async function confirmTotp(deps: Deps, actor: Actor, { user, code }: { user: UserRow; code: string }) {
  const backupCodes = await deps.db.transaction().execute(async (trx) => {
    const locked = await lockUser(trx, user.id);
    if (locked.mfa_enabled) throw alreadyEnabled();
    const pending = await trx
      .selectFrom('user_totp')
      .select('user_id')
      .where('user_id', '=', user.id)
      .executeTakeFirst();
    if (!pending) throw new AppError('MFA_NOT_ENABLED', 'Start with POST /auth/mfa/totp/setup, then confirm a code.');
    if (!(await acceptTotp(deps, trx, user.id, code, { pending: true }))) throw invalidCode();
    const now = new Date();
    await trx.updateTable('user_totp').set({ confirmed_at: now }).where('user_id', '=', user.id).execute();
    await trx.updateTable('users').set({ mfa_enabled: true, updated_at: now }).where('id', '=', user.id).execute();
    const codes = await replaceBackupCodes(trx, user.id);
    await recordAudit(trx, actor, {
      action: 'auth.mfa_enabled',
      targetType: 'user',
      targetId: user.id,
    });
    return codes;
  });
  await sendAfterCommit(deps, mfaEnabledMail({ to: user.email, name: user.name, appUrl: deps.config.APP_URL }));
  return { backupCodes };
}

/** Turns 2FA off, with the password and a code (TOTP or backup). */
export async function disableMfa(deps: Deps, actor: Actor, input: { user: UserRow; password: string; code: string }) {
  const { user } = input;
  const current = await deps.db
    .selectFrom('users')
    .select('password_hash')
    .where('id', '=', user.id)
    .executeTakeFirst();
  if (!(await deps.passwords.verify(input.password, current?.password_hash)) || !current?.password_hash)
    throw new AppError('INVALID_CREDENTIALS', 'The password is not right.');
  const outcome = await cappedSecondFactorCheck(deps, user, actor, async (trx) => {
    const locked = await lockUser(trx, user.id);
    if (!locked.mfa_enabled) throw notEnabled();
    // The password checked is still the password (a change while bcrypt ran would void it).
    if (locked.password_hash !== current.password_hash)
      throw new AppError('INVALID_CREDENTIALS', 'The password is not right.');
    if (!(await acceptSecondFactor(deps, trx, user.id, input.code))) return WRONG_CODE;
    await clearMfa(trx, user.id);
    await recordAudit(trx, actor, {
      action: 'auth.mfa_disabled',
      targetType: 'user',
      targetId: user.id,
    });
    return 'off' as const;
  });
  if (outcome === WRONG_CODE) throw invalidCode();
  await sendAfterCommit(deps, mfaDisabledMail({ to: user.email, name: user.name, appUrl: deps.config.APP_URL }));
  return { message: 'Two-factor sign-in is off.' };
}

/** A new set of backup codes (the old ones stop working), with a code (TOTP or backup). */
export async function regenerateBackupCodes(deps: Deps, actor: Actor, { user, code }: { user: UserRow; code: string }) {
  const backupCodes = await cappedSecondFactorCheck(deps, user, actor, async (trx) => {
    const locked = await lockUser(trx, user.id);
    if (!locked.mfa_enabled) throw notEnabled();
    if (!(await acceptSecondFactor(deps, trx, user.id, code))) return WRONG_CODE;
    const codes = await replaceBackupCodes(trx, user.id);
    await recordAudit(trx, actor, {
      action: 'auth.mfa_backup_codes_regenerated',
      targetType: 'user',
      targetId: user.id,
    });
    return codes;
  });
  if (backupCodes === WRONG_CODE) throw invalidCode();
  return { backupCodes };
}

/** Everything of the user's 2FA: secret, backup codes, sign-in steps under way. */
async function clearMfa(trx: Kysely<Database>, userId: string) {
  await trx.deleteFrom('user_totp').where('user_id', '=', userId).execute();
  await trx.deleteFrom('mfa_backup_codes').where('user_id', '=', userId).execute();
  await trx.deleteFrom('mfa_challenges').where('user_id', '=', userId).execute();
  await trx.updateTable('users').set({ mfa_enabled: false, updated_at: new Date() }).where('id', '=', userId).execute();
}

/**
 * A platform admin turns a user's 2FA off (a lost phone and lost backup codes): audited, and the user is
 * told by mail. NOT_FOUND for an unknown user; a user without 2FA is left as is (MFA_NOT_ENABLED).
 */
export async function adminResetMfa(
  deps: Pick<Deps, 'config' | 'db' | 'logger' | 'mailer'>,
  actor: Actor,
  userId: string,
) {
  const user = await deps.db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom('users')
      .select(['id', 'email', 'name', 'mfa_enabled'])
      .where('id', '=', userId)
      .forUpdate()
      .executeTakeFirst();
    if (!row) throw new AppError('NOT_FOUND', 'User not found.');
    if (!row.mfa_enabled) throw notEnabled();
    await clearMfa(trx, userId);
    await recordAudit(trx, actor, { action: 'user.mfa_reset', targetType: 'user', targetId: userId });
    return row;
  });
  await sendAfterCommit(
    deps,
    mfaDisabledMail({ to: user.email, name: user.name, appUrl: deps.config.APP_URL, byAdmin: true }),
  );
}

/** Ends the sign-in steps under way of a user (a password reset or change voids the password they checked). */
export async function endMfaChallenges(trx: Kysely<Database>, userId: string) {
  await trx
    .updateTable('mfa_challenges')
    .set({ used_at: new Date() })
    .where('user_id', '=', userId)
    .where('used_at', 'is', null)
    .execute();
}

// ---------------------------------------------------------------------------------------------------
// The second step of a sign-in

export interface MfaChallenge {
  mfaRequired: true;
  mfaToken: string;
  methods: Array<(typeof MFA_METHODS)[number]>;
}

/**
 * The first step of a sign-in of a user with 2FA on has passed: a single-use token for the second step,
 * valid MFA_TOKEN_TTL. With `passwordHash`, only while the password is still that one (under the session
 * lock, as openSession); undefined otherwise.
 */
export async function startMfaChallenge(
  deps: Pick<Deps, 'config' | 'db'>,
  userId: string,
  passwordHash: string | undefined,
): Promise<MfaChallenge | undefined> {
  const mfaToken = `mfa_${randomToken(32)}`;
  const started = await deps.db.transaction().execute(async (trx) => {
    await lockSessionsOf(trx, userId);
    if (!(await passwordStill(trx, userId, passwordHash))) return false;
    await trx
      .insertInto('mfa_challenges')
      .values({
        user_id: userId,
        token_hash: sha256Hex(mfaToken),
        expires_at: new Date(Date.now() + deps.config.MFA_TOKEN_TTL * 1000),
      })
      .execute();
    return true;
  });
  return started ? { mfaRequired: true, mfaToken, methods: [...MFA_METHODS] } : undefined;
}

/** Counts failed codes per account while rate limiting is on (as failed passwords are). */
export interface MfaAttempts {
  begin(key: string): Promise<{ settle(failed: boolean): void }>;
}

/**
 * The second step: the token of the first and a TOTP code or a backup code. Each try spends one of the
 * token's MFA_MAX_ATTEMPTS; the right code spends the token. Answers the user, whose session the caller
 * opens. An unknown, used, expired or spent token: UNAUTHORIZED; a suspended user: USER_SUSPENDED; a wrong
 * code: INVALID_MFA_CODE (audited, and counted against the account: by the auth tier while rate limiting is
 * on, and always by the cap of second-factor-cap.ts, whose lock answers RATE_LIMITED).
 */
export async function verifyMfaChallenge(
  deps: Pick<Deps, 'config' | 'db' | 'logger' | 'mailer' | 'secrets'> & { attempts?: MfaAttempts },
  actor: Actor,
  input: { mfaToken: string; code?: string; backupCode?: string },
): Promise<UserRow> {
  const now = new Date();
  const challenge = await deps.db
    .updateTable('mfa_challenges')
    .set((eb) => ({ attempts: eb('attempts', '+', 1) }))
    .where('token_hash', '=', sha256Hex(input.mfaToken))
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .where('attempts', '<', MFA_MAX_ATTEMPTS)
    .returning(['id', 'user_id'])
    .executeTakeFirst();
  if (!challenge) throw stepInvalid();
  const attempt = await deps.attempts?.begin(`mfa:${challenge.user_id}`);
  const user = await deps.db
    .selectFrom('users')
    .select(USER_COLUMNS)
    .where('id', '=', challenge.user_id)
    .executeTakeFirst();
  // 2FA reset by an admin meanwhile: this step means nothing any more; signing in again works without it.
  if (!user || !user.mfa_enabled) {
    attempt?.settle(false);
    throw stepInvalid();
  }
  if (user.status !== 'ACTIVE') {
    attempt?.settle(false);
    throw new AppError('USER_SUSPENDED', 'This account is suspended. Contact support to restore access.');
  }
  const method = input.code !== undefined ? 'totp' : 'backup_code';
  const outcome = await cappedSecondFactorCheck(deps, user, actor, async (trx) => {
    const ok =
      method === 'totp'
        ? await acceptTotp(deps, trx, user.id, input.code!)
        : await acceptBackupCode(trx, user.id, input.backupCode!);
    if (!ok) return WRONG_CODE;
    const taken = await trx
      .updateTable('mfa_challenges')
      .set({ used_at: new Date() })
      .where('id', '=', challenge.id)
      .where('used_at', 'is', null)
      .returning('id')
      .executeTakeFirst();
    // Used by a concurrent request with the same token: roll back, so this code stays unused.
    if (!taken) throw stepInvalid();
    return 'ok' as const;
  }).catch((err: unknown) => {
    attempt?.settle(false);
    throw err;
  });
  if (outcome === WRONG_CODE) {
    attempt?.settle(true);
    await recordAudit(deps.db, actorOf(actor, null), {
      action: 'auth.mfa_failed',
      targetType: 'user',
      targetId: user.id,
      metadata: { method },
    });
    throw invalidCode();
  }
  attempt?.settle(false);
  return user;
}
