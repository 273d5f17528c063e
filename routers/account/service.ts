// The signed-in user's own account: their name, and a change of e-mail address confirmed at the new address
// (with a notice to the old one). Deleting the account is in erasure.ts, data exports in exports.ts.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { isDemoAccount } from '../../server/platform/accounts.js';
import { actorOf, signedInUser, type Actor } from '../../server/platform/actor.js';
import type { AppDeps } from '../../server/platform/context.js';
import { isUniqueViolation } from '../../db/errors.js';
import { sendAfterCommit } from '../../server/platform/email/mailer.js';
import {
  emailChangeConfirmationMail,
  emailChangeNoticeMail,
  tokenLink,
} from '../../server/platform/email/templates.js';
import { AppError } from '../../server/platform/errors.js';
import { randomToken, sha256Hex } from '../../server/platform/security/tokens.js';
import { recordAudit } from '../audit/service.js';
import { USER_COLUMNS, toUserOutput } from '../auth/schemas.js';

type Db = Kysely<Database>;
type Deps = Pick<AppDeps, 'db' | 'config' | 'mailer' | 'logger' | 'passwords'>;

/** How long the link to confirm a new address works. */
export const EMAIL_CHANGE_TTL_MINUTES = 60;
/** Accounts without a password prove who they are by a sign-in this recent. */
export const RECENT_SIGN_IN_MS = 10 * 60_000;

const emailTaken = () => new AppError('EMAIL_TAKEN', 'An account already uses this e-mail address.');

/** The user's row with what re-authentication needs. */
export async function accountOf(db: Db, userId: string) {
  const user = await db
    .selectFrom('users')
    .select([...USER_COLUMNS, 'password_hash'])
    .where('id', '=', userId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!user) throw new AppError('UNAUTHORIZED', 'This account no longer exists.');
  return user;
}

/** Demo accounts (the demo admin, AI_DEMO_RESTRICTED_EMAILS) keep their address and their account. */
export function refuseDemoAccount(
  config: AppDeps['config'],
  user: { email: string; platform_role: string },
  what: string,
) {
  if (user.platform_role === 'DEMO_ADMIN' || isDemoAccount(config, user.email))
    throw new AppError('DEMO_READ_ONLY', `Demo accounts cannot ${what}.`);
}

/**
 * Proves the caller is the account's owner again: its password when it has one; without one, a session
 * created within RECENT_SIGN_IN_MS (signing in again through the identity provider gives one).
 */
export async function reauthenticate(
  deps: Pick<AppDeps, 'db' | 'passwords'>,
  actor: Actor,
  user: { password_hash: string | null },
  password: string | undefined,
) {
  if (user.password_hash) {
    if (password === undefined)
      throw new AppError('REAUTHENTICATION_REQUIRED', 'Enter your current password to confirm.');
    if (!(await deps.passwords.verify(password, user.password_hash)))
      throw new AppError('INVALID_CREDENTIALS', 'The password is not right.');
    return;
  }
  const session = actor.sessionId
    ? await deps.db.selectFrom('sessions').select('created_at').where('id', '=', actor.sessionId).executeTakeFirst()
    : undefined;
  if (!session || Date.now() - session.created_at.getTime() > RECENT_SIGN_IN_MS)
    throw new AppError(
      'REAUTHENTICATION_REQUIRED',
      'Sign in again (within the last 10 minutes) to confirm: this account has no password.',
    );
}

export async function updateProfile({ db }: Pick<AppDeps, 'db'>, actor: Actor, input: { name: string }) {
  const { id } = signedInUser(actor);
  const user = await db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable('users')
      .set({ name: input.name, updated_at: new Date() })
      .where('id', '=', id)
      .where('deleted_at', 'is', null)
      .returning(USER_COLUMNS)
      .executeTakeFirst();
    if (!row) throw new AppError('UNAUTHORIZED', 'This account no longer exists.');
    // The fields changed, not their values: the log keeps no personal data of its own.
    await recordAudit(trx, actor, {
      action: 'auth.profile_updated',
      targetType: 'user',
      targetId: id,
      metadata: { fields: 'name' },
    });
    return row;
  });
  return toUserOutput(user);
}

/**
 * Starts a change of address: a single-use link (EMAIL_CHANGE_TTL_MINUTES) to the new address, and a notice
 * to the current one. An earlier request still open stops working.
 */
export async function requestEmailChange(deps: Deps, actor: Actor, input: { newEmail: string; password?: string }) {
  const { id } = signedInUser(actor);
  const user = await accountOf(deps.db, id);
  refuseDemoAccount(deps.config, user, 'change their e-mail address');
  const newEmail = input.newEmail.trim().toLowerCase();
  if (newEmail === user.email)
    throw new AppError('BAD_REQUEST', 'This is already your address.', [
      { path: 'newEmail', message: 'Same as the current address.', code: 'custom' },
    ]);
  await reauthenticate(deps, actor, user, input.password);
  const taken = await deps.db.selectFrom('users').select('id').where('email', '=', newEmail).executeTakeFirst();
  if (taken) throw emailTaken();
  const token = randomToken(32);
  await deps.db.transaction().execute(async (trx) => {
    await trx
      .updateTable('email_changes')
      .set({ used_at: new Date() })
      .where('user_id', '=', id)
      .where('used_at', 'is', null)
      .execute();
    await trx
      .insertInto('email_changes')
      .values({
        user_id: id,
        new_email: newEmail,
        token_hash: sha256Hex(token),
        expires_at: new Date(Date.now() + EMAIL_CHANGE_TTL_MINUTES * 60_000),
      })
      .execute();
    await recordAudit(trx, actor, { action: 'auth.email_change_requested', targetType: 'user', targetId: id });
  });
  await sendAfterCommit(
    deps,
    emailChangeConfirmationMail({
      to: newEmail,
      name: user.name,
      link: tokenLink(deps.config.APP_URL, '/confirm-email-change', token),
      validMinutes: EMAIL_CHANGE_TTL_MINUTES,
    }),
  );
  await sendAfterCommit(deps, emailChangeNoticeMail({ to: user.email, name: user.name, appUrl: deps.config.APP_URL }));
  return { message: `We sent a link to ${newEmail}: your address changes when you open it.` };
}

/** Uses the link of a change: the account's address becomes the new one, verified. */
export async function confirmEmailChange({ db }: Pick<AppDeps, 'db'>, actor: Actor, input: { token: string }) {
  const invalid = () => new AppError('INVALID_TOKEN', 'This confirmation link is invalid, expired or already used.');
  const user = await db
    .transaction()
    .execute(async (trx) => {
      const change = await trx
        .updateTable('email_changes')
        .set({ used_at: new Date() })
        .where('token_hash', '=', sha256Hex(input.token))
        .where('used_at', 'is', null)
        .where('expires_at', '>', new Date())
        .returning(['user_id', 'new_email'])
        .executeTakeFirst();
      if (!change) throw invalid();
      const before = await trx.selectFrom('users').select('email').where('id', '=', change.user_id).executeTakeFirst();
      const row = await trx
        .updateTable('users')
        .set({ email: change.new_email, email_verified_at: new Date(), updated_at: new Date() })
        .where('id', '=', change.user_id)
        .where('deleted_at', 'is', null)
        .returning(USER_COLUMNS)
        .executeTakeFirst();
      if (!row) throw invalid();
      // The link is opened without a session: the account it belongs to acts.
      await recordAudit(trx, actorOf(actor, row), {
        action: 'auth.email_changed',
        targetType: 'user',
        targetId: row.id,
        // Which address the account had: for support, and for the erasure, which scrubs it too.
        metadata: { previousEmail: before?.email ?? null },
      });
      return row;
    })
    .catch((err: unknown) => {
      // Someone registered the address between the request and now: the link stays unused.
      if (isUniqueViolation(err, 'users_email_key')) throw emailTaken();
      throw err;
    });
  return toUserOutput(user);
}
