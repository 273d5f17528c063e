// The cap on failed second-factor checks of an account: a security control, not a rate limit, so it holds
// whatever RATE_LIMIT_ENABLED says. 10 wrong codes (TOTP or backup) within 10 minutes lock that account's
// second-factor checks until the window ends: 429 RATE_LIMITED with Retry-After, whatever the code, the
// mfaToken or the instance, and its owner is told by mail. The count is kept in Postgres
// (second_factor_failures), so every instance shares it, with or without Redis.
//
// Every route that checks a second factor runs the check through cappedSecondFactorCheck: the second step
// of a sign-in, turning 2FA off, new backup codes, and account deletion (routers/account/erasure.ts).
import { sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import { sendAfterCommit } from '../../server/platform/email/mailer.js';
import { secondFactorLockedMail } from '../../server/platform/email/templates.js';
import { recordAudit } from '../audit/service.js';
import { actorOf } from '../../server/platform/actor.js';

/** Wrong codes an account may have in a window; the next check of the window is refused. */
export const SECOND_FACTOR_MAX_FAILURES = 10;
/** The window, from its first wrong code. */
export const SECOND_FACTOR_WINDOW_SECONDS = 10 * 60;

/** What a check answers for a wrong code: it is counted, and the check's other writes are kept. */
export const WRONG_CODE: unique symbol = Symbol('wrong second-factor code');

type Deps = Pick<AppDeps, 'config' | 'db' | 'logger' | 'mailer'>;

const locked = (retryAfterSeconds: number) => {
  const minutes = Math.max(1, Math.ceil(retryAfterSeconds / 60));
  const error = new AppError(
    'RATE_LIMITED',
    `Too many wrong codes for this account: two-factor checks are locked for ${minutes} more ` +
      `minute${minutes === 1 ? '' : 's'}. Try again after that.`,
  );
  error.retryAfterSeconds = Math.max(1, retryAfterSeconds);
  return error;
};

/**
 * Runs `check`, a second-factor check of `user` and what follows a right code, in one transaction, under
 * the account's cap:
 * - while the account's window holds SECOND_FACTOR_MAX_FAILURES wrong codes, throws 429 RATE_LIMITED (with
 *   `retryAfterSeconds`: the rest of the window) before `check` runs, so even the right code is refused;
 * - `check` answers WRONG_CODE for a wrong code: counted in the same transaction, which commits (the caller
 *   throws its INVALID_MFA_CODE after); the failure that reaches the cap is audited and mails the owner;
 * - anything else `check` answers or throws is the caller's, as without the cap.
 * The account's row of second_factor_failures is locked for the transaction: its checks run one at a time,
 * on every instance, so concurrent guesses cannot pass the cap together.
 */
export async function cappedSecondFactorCheck<T>(
  deps: Deps,
  user: { id: string; email: string; name: string },
  /** Where the check comes from: a request's facts, or its actor. */
  meta: { requestId: string | null; ip: string | null },
  check: (trx: Transaction<Database>) => Promise<T | typeof WRONG_CODE>,
): Promise<T | typeof WRONG_CODE> {
  let capReached = false;
  const outcome = await deps.db.transaction().execute(async (trx) => {
    // The account's row, created or locked; a window past its end starts over.
    const { rows } = await sql<{ failures: number; retry_after: number }>`
      insert into second_factor_failures as f (user_id) values (${user.id})
      on conflict (user_id) do update set
        failures = case
          when f.window_started_at <= now() - make_interval(secs => ${SECOND_FACTOR_WINDOW_SECONDS}) then 0
          else f.failures end
      returning f.failures,
        ceil(extract(epoch from f.window_started_at + make_interval(secs => ${SECOND_FACTOR_WINDOW_SECONDS}) - now()))::int
          as retry_after`.execute(trx);
    const state = rows[0];
    if (state.failures >= SECOND_FACTOR_MAX_FAILURES) throw locked(state.retry_after);
    const result = await check(trx);
    if (result !== WRONG_CODE) return result;
    const counted = await trx
      .updateTable('second_factor_failures')
      .set((eb) => ({
        failures: eb('failures', '+', 1),
        // The window opens at its first wrong code.
        window_started_at: eb
          .case()
          .when('failures', '=', 0)
          .then(sql<Date>`now()`)
          .else(eb.ref('window_started_at'))
          .end(),
      }))
      .where('user_id', '=', user.id)
      .returning('failures')
      .executeTakeFirstOrThrow();
    if (counted.failures === SECOND_FACTOR_MAX_FAILURES) {
      capReached = true;
      await recordAudit(trx, actorOf({ requestId: meta.requestId ?? undefined, ip: meta.ip ?? undefined }, null), {
        action: 'auth.mfa_locked',
        targetType: 'user',
        targetId: user.id,
        metadata: { failures: counted.failures, windowSeconds: SECOND_FACTOR_WINDOW_SECONDS },
      });
    }
    return result;
  });
  if (capReached) {
    await sendAfterCommit(
      deps,
      secondFactorLockedMail({
        to: user.email,
        name: user.name,
        appUrl: deps.config.APP_URL,
        failures: SECOND_FACTOR_MAX_FAILURES,
        minutes: SECOND_FACTOR_WINDOW_SECONDS / 60,
      }),
    );
  }
  return outcome;
}
