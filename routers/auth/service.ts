// Accounts: register, sign in, refresh, sign out, password reset and e-mail verification. Plain functions
// over the database; no HTTP here.
import type { Kysely } from 'kysely';
import type { Database, UserTokenKind } from '../../db/schema.js';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import {
  emailVerificationMail,
  newSignInMail,
  passwordResetMail,
  tokenLink,
} from '../../server/platform/email/templates.js';
import { sendAfterCommit } from '../../server/platform/email/mailer.js';
import { randomToken, sha256Hex } from '../../server/platform/security/tokens.js';
import { membershipsOf, workspaceContext, type WorkspaceAccess } from '../workspaces/access.js';
import { insertWorkspace } from '../workspaces/service.js';
import { USER_COLUMNS, toContextOutput, toUserOutput, type UserRow } from './schemas.js';
import { openSession, revokeAllSessions, revokeSessionOf, type Principal, type TokenPair } from './sessions.js';
import { recordAudit } from '../audit/service.js';
import { endMfaChallenges, startMfaChallenge, verifyMfaChallenge, type MfaAttempts, type MfaChallenge } from './mfa.js';
import { actorOf, type Actor } from '../../server/platform/actor.js';
import { revokeUserGrants } from '../mcp/grants.js';

type Deps = Pick<AppDeps, 'config' | 'db' | 'logger' | 'mailer' | 'passwords'>;

export const normalizeEmail = (email: string) => email.trim().toLowerCase();

/** Creates a single-use token of `kind` and returns the raw value (only its SHA-256 is stored). */
async function createUserToken(db: Kysely<Database>, userId: string, kind: UserTokenKind, ttlSeconds: number) {
  const token = randomToken(32);
  await db
    .insertInto('user_tokens')
    .values({
      user_id: userId,
      kind,
      token_hash: sha256Hex(token),
      expires_at: new Date(Date.now() + ttlSeconds * 1000),
    })
    .execute();
  return token;
}

/** Marks a valid token used and returns its user; undefined when unknown, used or expired. Atomic. */
async function consumeUserToken(db: Kysely<Database>, token: string, kind: UserTokenKind) {
  return db
    .updateTable('user_tokens')
    .set({ used_at: new Date() })
    .where('token_hash', '=', sha256Hex(token))
    .where('kind', '=', kind)
    .where('used_at', 'is', null)
    .where('expires_at', '>', new Date())
    .returning('user_id')
    .executeTakeFirst();
}

const invalidToken = (what: string) =>
  new AppError('INVALID_TOKEN', `This ${what} link is invalid, expired or already used.`);

/** The user, a personal workspace (OWNER, edition LITE) and a verification mail. */
export async function register(deps: Deps, input: { email: string; password: string; name: string }) {
  const passwordHash = await deps.passwords.hash(input.password);
  const { user, workspace, verificationToken } = await deps.db
    .transaction()
    .execute((trx) => insertAccount(deps, trx, { email: input.email, name: input.name, passwordHash }));
  if (verificationToken) await sendVerificationMail(deps, user, verificationToken);
  return { user: toUserOutput(user), workspace };
}

/**
 * A new account, as register makes it and a first sign-in through an identity provider too: the user and a
 * personal workspace; for an address not known to be verified, a verification token to mail once the
 * transaction commits (sendVerificationMail). EMAIL_TAKEN when the address has an account. `passwordHash`
 * null: an account that signs in through identity providers until it sets a password.
 */
export async function insertAccount(
  deps: Pick<Deps, 'config'>,
  trx: Kysely<Database>,
  input: { email: string; name: string; passwordHash: string | null; emailVerified?: boolean },
): Promise<{ user: UserRow; workspace: WorkspaceAccess; verificationToken?: string }> {
  const user = await trx
    .insertInto('users')
    .values({
      email: normalizeEmail(input.email),
      name: input.name,
      password_hash: input.passwordHash,
      email_verified_at: input.emailVerified ? new Date() : null,
    })
    .onConflict((oc) => oc.column('email').doNothing())
    .returning(USER_COLUMNS)
    .executeTakeFirst();
  if (!user) throw new AppError('EMAIL_TAKEN', 'An account with this e-mail address already exists.');
  const workspace = await createPersonalWorkspace(trx, user);
  if (input.emailVerified) return { user, workspace };
  const verificationToken = await createUserToken(
    trx,
    user.id,
    'EMAIL_VERIFICATION',
    deps.config.EMAIL_VERIFICATION_TTL,
  );
  return { user, workspace, verificationToken };
}

/** A workspace owned by the new user, on the default plan; every account starts with one. */
export function createPersonalWorkspace(
  db: Kysely<Database>,
  user: Pick<UserRow, 'id' | 'name'>,
): Promise<WorkspaceAccess> {
  return insertWorkspace(db, { name: personalWorkspaceName(user.name), ownerId: user.id, isPersonal: true });
}

/** The longest workspace name, as its inputs take it and its outputs declare it. */
const WORKSPACE_NAME_MAX = 100;
const PERSONAL_SUFFIX = "'s workspace";

/**
 * `<name>'s workspace`, within the 100 characters of a workspace name: a user name too long for it (89 to
 * 100 characters) is cut, whole characters only, and ends with `…`.
 */
export function personalWorkspaceName(userName: string): string {
  const room = WORKSPACE_NAME_MAX - PERSONAL_SUFFIX.length;
  if (userName.length <= room) return `${userName}${PERSONAL_SUFFIX}`;
  let head = '';
  for (const char of userName) {
    if (head.length + char.length > room - 1) break;
    head += char;
  }
  return `${head.trimEnd()}…${PERSONAL_SUFFIX}`;
}

export function sendVerificationMail(
  deps: Pick<Deps, 'config' | 'db' | 'logger' | 'mailer'>,
  user: Pick<UserRow, 'email' | 'name'>,
  token: string,
) {
  return sendAfterCommit(
    deps,
    emailVerificationMail({
      to: user.email,
      name: user.name,
      link: tokenLink(deps.config.APP_URL, '/verify-email', token),
      validHours: Math.round(deps.config.EMAIL_VERIFICATION_TTL / 3600),
    }),
  );
}

/**
 * Unknown e-mail and wrong password answer alike and cost one bcrypt comparison each. A suspended user
 * learns of the suspension only with the right password.
 */
export async function login(deps: Deps, actor: Actor, input: { email: string; password: string }) {
  const user = await deps.db
    .selectFrom('users')
    .select([...USER_COLUMNS, 'password_hash'])
    .where('email', '=', normalizeEmail(input.email))
    .executeTakeFirst();
  // An account without a password (identity providers only) costs the same comparison and answers alike.
  const passwordOk = await deps.passwords.verify(input.password, user?.password_hash);
  if (!user?.password_hash || !passwordOk) {
    // Anonymous: the address tried is a fact about the attempt, not an actor.
    const reason = !user ? 'unknown_email' : user.password_hash ? 'wrong_password' : 'no_password';
    await recordAudit(deps.db, actorOf(actor, null), {
      action: 'auth.login_failed',
      targetType: 'user',
      targetId: user?.id,
      metadata: { email: normalizeEmail(input.email), reason },
    });
    throw new AppError('INVALID_CREDENTIALS', 'Invalid e-mail or password.');
  }
  return createSessionResult(deps, actor, { user, passwordHash: user.password_hash });
}

/**
 * What a completed first step of a sign-in answers, by password (login) or through an identity provider
 * (the exchange of routers/oauth): a new session and the user's workspace context; or, for a user with
 * two-factor sign-in on, the token of the second step (POST /auth/mfa/verify, which then opens the session). The one place where a sign-in becomes a session. A suspended user is refused. With
 * `passwordHash`, the session (or the second step) opens only while the password is still that one
 * (openSession). A sign-in from a device (user agent and address) none of the user's earlier sessions
 * had is told to the user by mail.
 */
export async function createSessionResult(
  deps: Pick<Deps, 'config' | 'db' | 'logger' | 'mailer'>,
  actor: Actor,
  { user, passwordHash, sso }: { user: UserRow; passwordHash?: string; sso?: { connectionId: string } },
): Promise<SessionResult | MfaChallenge> {
  if (user.status !== 'ACTIVE')
    throw new AppError('USER_SUSPENDED', 'This account is suspended. Contact support to restore access.');
  // Through a workspace's single sign-on, second factors are the identity provider's.
  if (sso) return openSessionResult(deps, actor, user, passwordHash, sso);
  if (user.mfa_enabled) {
    const challenge = await startMfaChallenge(deps, user.id, passwordHash);
    if (!challenge) throw new AppError('INVALID_CREDENTIALS', 'Invalid e-mail or password.');
    return challenge;
  }
  return openSessionResult(deps, actor, user, passwordHash);
}

/** The session of a sign-in whose every step has passed, and the mail of a new device. */
async function openSessionResult(
  deps: Pick<Deps, 'config' | 'db' | 'logger' | 'mailer'>,
  actor: Actor,
  user: UserRow,
  passwordHash: string | undefined,
  sso?: { connectionId: string },
): Promise<SessionResult> {
  // Undefined when a password reset committed during the check: the password given is no longer it.
  const opened = await openSession(deps, user.id, passwordHash, actor, sso);
  if (!opened) throw new AppError('INVALID_CREDENTIALS', 'Invalid e-mail or password.');
  const [memberships] = await Promise.all([
    membershipsOf(deps.db, user.id),
    deps.db.updateTable('users').set({ last_login_at: new Date() }).where('id', '=', user.id).execute(),
  ]);
  if (opened.newDevice) {
    await sendAfterCommit(
      deps,
      newSignInMail({
        to: user.email,
        name: user.name,
        appUrl: deps.config.APP_URL,
        userAgent: actor.userAgent ?? undefined,
        ip: actor.ip ?? 'unknown',
        at: new Date(),
      }),
    );
  }
  return { ...opened.tokens, user: toUserOutput(user), ...toContextOutput(workspaceContext(memberships)) };
}

export type SessionResult = TokenPair & { user: ReturnType<typeof toUserOutput> } & ReturnType<typeof toContextOutput>;

/**
 * The second step of a sign-in with two factors (mfa.ts decides the code), then the session. Wrong codes
 * are counted against the account like wrong passwords, while rate limiting is on.
 */
export async function verifyMfa(
  deps: Deps & Pick<AppDeps, 'secrets'> & { attempts?: MfaAttempts },
  actor: Actor,
  input: { mfaToken: string; code?: string; backupCode?: string },
) {
  // verifyMfaChallenge refused a suspended user already.
  const user = await verifyMfaChallenge(deps, actor, input);
  return openSessionResult(deps, actor, user, undefined);
}

/**
 * A call that checks a second-factor code of a signed-in user (confirm, disable, new backup codes): wrong
 * codes are counted against the account, as at sign-in, so a stolen access token cannot try them all.
 */
export async function countedMfa<T>(attempts: SignInAttempts | undefined, userId: string, run: () => Promise<T>) {
  const attempt = await attempts?.begin(`mfa:${userId}`);
  try {
    const result = await run();
    attempt?.settle(false);
    return result;
  } catch (err) {
    attempt?.settle(err instanceof AppError && (err.code === 'INVALID_MFA_CODE' || err.code === 'INVALID_CREDENTIALS'));
    throw err;
  }
}

/**
 * Where failed sign-ins are counted per account, while rate limiting is on (FailureLimiter,
 * server/platform/rate-limit.ts): `begin` takes an attempt's place, or refuses it with the 429.
 */
export interface SignInAttempts {
  begin(key: string): Promise<{ settle(failed: boolean): void }>;
}

/**
 * login(), counted against its account when it fails (wrong password or unknown address): past
 * RATE_LIMIT_AUTH_MAX_REQUESTS failures in the window, 429 whatever the address or password. Anything
 * else, a success included, is not counted and clears nothing.
 */
export async function countedLogin(
  deps: Deps & { attempts?: SignInAttempts },
  actor: Actor,
  input: { email: string; password: string },
) {
  const attempt = await deps.attempts?.begin(`login:${normalizeEmail(input.email)}`);
  try {
    const signedIn = await login(deps, actor, input);
    attempt?.settle(false);
    return signedIn;
  } catch (err) {
    attempt?.settle(err instanceof AppError && err.code === 'INVALID_CREDENTIALS');
    throw err;
  }
}

/** Ends the session the refresh token belongs to. An unknown token is ignored: logout is idempotent. */
export async function logout(deps: Deps, { refreshToken }: { refreshToken: string }) {
  await revokeSessionOf(deps, refreshToken);
  return { message: 'Signed out.' };
}

/** The signed-in user and workspace context, from what authentication already loaded. */
export function me(principal: Pick<Principal, 'user' | 'memberships'>) {
  return { user: toUserOutput(principal.user), ...toContextOutput(workspaceContext(principal.memberships)) };
}

const FORGOT_PASSWORD_MESSAGE = 'If an account exists for this address, a link to reset its password is on its way.';

/** Always the same answer, so it tells nothing about which addresses have accounts. */
export async function forgotPassword(deps: Deps, input: { email: string }) {
  const user = await deps.db
    .selectFrom('users')
    .select(['id', 'email', 'name', 'status'])
    .where('email', '=', normalizeEmail(input.email))
    .executeTakeFirst();
  if (user && user.status === 'ACTIVE') {
    const token = await createUserToken(deps.db, user.id, 'PASSWORD_RESET', deps.config.PASSWORD_RESET_TTL);
    await sendAfterCommit(
      deps,
      passwordResetMail({
        to: user.email,
        name: user.name,
        link: tokenLink(deps.config.APP_URL, '/reset-password', token),
        validMinutes: Math.round(deps.config.PASSWORD_RESET_TTL / 60),
      }),
    );
  }
  return { message: FORGOT_PASSWORD_MESSAGE };
}

/**
 * Sets the new password, uses up every open reset link of the user, and ends every session: refresh
 * tokens are revoked and access tokens issued before now stop working.
 */
export async function resetPassword(deps: Deps, actor: Actor, input: { token: string; newPassword: string }) {
  // A cheap look first, so a made-up token never costs a bcrypt hash.
  const known = await deps.db
    .selectFrom('user_tokens')
    .select('id')
    .where('token_hash', '=', sha256Hex(input.token))
    .where('kind', '=', 'PASSWORD_RESET')
    .where('used_at', 'is', null)
    .where('expires_at', '>', new Date())
    .executeTakeFirst();
  if (!known) throw invalidToken('password reset');
  const passwordHash = await deps.passwords.hash(input.newPassword);

  await deps.db.transaction().execute(async (trx) => {
    const used = await consumeUserToken(trx, input.token, 'PASSWORD_RESET');
    if (!used) throw invalidToken('password reset');
    // Sessions first: this waits out a refresh in flight, so the access token it issued is older than
    // tokens_valid_after below.
    await revokeAllSessions(trx, used.user_id, 'password_reset');
    await revokeUserGrants(trx, used.user_id);
    await endMfaChallenges(trx, used.user_id);
    const now = new Date();
    await trx
      .updateTable('users')
      .set((eb) => ({
        password_hash: passwordHash,
        tokens_valid_after: now,
        // The reset link reached the inbox, which proves the address.
        email_verified_at: eb.fn.coalesce('email_verified_at', eb.val(now)),
        updated_at: now,
      }))
      .where('id', '=', used.user_id)
      .execute();
    await trx
      .updateTable('user_tokens')
      .set({ used_at: now })
      .where('user_id', '=', used.user_id)
      .where('kind', '=', 'PASSWORD_RESET')
      .where('used_at', 'is', null)
      .execute();
    await recordAudit(trx, actorOf(actor, { id: used.user_id }), {
      action: 'auth.password_reset',
      targetType: 'user',
      targetId: used.user_id,
    });
  });
  return { message: 'Your password has been reset. Sign in with the new password.' };
}

export async function verifyEmail(deps: Deps, input: { token: string }) {
  await deps.db.transaction().execute(async (trx) => {
    const used = await consumeUserToken(trx, input.token, 'EMAIL_VERIFICATION');
    if (!used) throw invalidToken('verification');
    await trx
      .updateTable('users')
      .set((eb) => ({
        email_verified_at: eb.fn.coalesce('email_verified_at', eb.val(new Date())),
        updated_at: new Date(),
      }))
      .where('id', '=', used.user_id)
      .execute();
  });
  return { message: 'Your e-mail address is verified.' };
}

const RESEND_MESSAGE = 'If this address has an unverified account, a new verification link is on its way.';

export async function resendVerification(deps: Deps, input: { email: string }) {
  const user = await deps.db
    .selectFrom('users')
    .select(['id', 'email', 'name', 'status', 'email_verified_at'])
    .where('email', '=', normalizeEmail(input.email))
    .executeTakeFirst();
  if (user && user.status === 'ACTIVE' && !user.email_verified_at) {
    const token = await createUserToken(deps.db, user.id, 'EMAIL_VERIFICATION', deps.config.EMAIL_VERIFICATION_TTL);
    await sendVerificationMail(deps, user, token);
  }
  return { message: RESEND_MESSAGE };
}
