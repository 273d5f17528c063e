// A sign-in or link through an identity provider, from its start (state, PKCE, nonce kept in Postgres,
// single use, 10 minutes) to its callback (the provider's answer verified, the account found, linked or
// created, and the one-time code the web app exchanges in service.ts). No HTTP here: redirects.ts.
import { sql, type Kysely, type Transaction } from 'kysely';
import { z } from 'zod';
import type { Database, IdentityProviderId, OAuthPurpose } from '../../db/schema.js';
import { AppError } from '../../server/platform/errors.js';
import { randomToken, sha256Hex } from '../../server/platform/security/tokens.js';
import { withoutInvisibleCharacters } from '../../server/platform/validation.js';
import { actorOf, signedInUser, type Actor } from '../../server/platform/actor.js';
import { recordAudit } from '../audit/service.js';
import { insertAccount, sendVerificationMail } from '../auth/service.js';
import { USER_COLUMNS, type UserRow } from '../auth/schemas.js';
import { ProviderUnavailable } from './providers/errors.js';
import type { IdentityProvider, FlowChecks, ProviderProfile } from './providers/types.js';
import {
  FLOW_TTL_MS,
  alreadyLinked,
  appCallbackUrl,
  callbackUrl,
  enabledProvider,
  safeRedirectPath,
  suspended,
  userById,
  type Deps,
} from './service.js';

const stateInvalid = () =>
  new AppError(
    'OAUTH_STATE_INVALID',
    'This sign-in is unknown, expired or already finished, or was started in another browser. Start again.',
  );

export interface FlowStart {
  provider: string;
  /** LINK: a link to the account of the actor, who must be signed in. */
  purpose: OAuthPurpose;
  /** SIGN_IN: the value of the browser's binding cookie (redirects.ts); the callback must bring it back. */
  browserBinding?: string;
  redirectTo: unknown;
  /** The base URL of the request, for the callback URL when API_URL is unset. */
  requestBase: string;
}

/**
 * Starts a flow: its state, PKCE verifier and (OpenID Connect) nonce, kept server-side, and the provider's
 * authorization URL to send the browser to. Nothing is stored when the provider cannot be reached. A sign-in
 * is anyone's (the actor of the request, signed in or not); a link is the signed-in actor's.
 */
export async function startFlow(deps: Deps, actor: Actor, start: FlowStart): Promise<string> {
  const provider = enabledProvider(deps, { provider: start.provider });
  const userId = start.purpose === 'LINK' ? signedInUser(actor).id : undefined;
  if (userId) {
    const existing = await deps.db
      .selectFrom('user_identities')
      .select('id')
      .where('user_id', '=', userId)
      .where('provider', '=', provider.id)
      .executeTakeFirst();
    if (existing) throw alreadyLinked(provider.name);
  }
  const checks: FlowChecks = {
    state: randomToken(32),
    codeVerifier: randomToken(48),
    nonce: provider.usesNonce ? randomToken(32) : undefined,
    redirectUri: callbackUrl(deps.config, start.requestBase, provider.id),
  };
  const url = await provider.authorizationUrl(checks);
  await deps.db
    .insertInto('oauth_states')
    .values({
      state_hash: sha256Hex(checks.state),
      provider: provider.id,
      purpose: start.purpose,
      user_id: userId ?? null,
      browser_hash: start.browserBinding ? sha256Hex(start.browserBinding) : null,
      code_verifier: checks.codeVerifier,
      nonce: checks.nonce ?? null,
      redirect_uri: checks.redirectUri,
      redirect_to: safeRedirectPath(start.redirectTo),
      expires_at: new Date(Date.now() + FLOW_TTL_MS),
    })
    .execute();
  return url.href;
}

// ---------------------------------------------------------------------------------------------------
// The callback

/** A flow as its start stored it, once taken. */
interface Flow {
  purpose: OAuthPurpose;
  user_id: string | null;
  code_verifier: string;
  nonce: string | null;
  redirect_uri: string;
  redirect_to: string;
  state: string;
}

/**
 * Takes the flow of `state` for good (single use): one of this provider, not expired, and of this browser
 * when it was a sign-in (its binding cookie). Atomic: of two callbacks with one state, one gets it.
 */
/**
 * The condition on a stored flow's `browser_hash` that the browser finishing it is the one that started it:
 * the flow carries no binding, or the binding cookie sent now hashes to it. Identity-provider flows and
 * single sign-on requests share it.
 */
export const fromTheSameBrowser = (browserBinding: string | undefined) =>
  sql<boolean>`(browser_hash is null or browser_hash = ${browserBinding === undefined ? '' : sha256Hex(browserBinding)})`;

async function takeFlow(db: Kysely<Database>, provider: IdentityProviderId, state: string, browserBinding?: string) {
  const now = new Date();
  const row = await db
    .updateTable('oauth_states')
    .set({ used_at: now })
    .where('state_hash', '=', sha256Hex(state))
    .where('provider', '=', provider)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .where(fromTheSameBrowser(browserBinding))
    .returning(['purpose', 'user_id', 'code_verifier', 'nonce', 'redirect_uri', 'redirect_to'])
    .executeTakeFirst();
  return row && { ...row, state };
}

export interface Callback {
  provider: string;
  /** The query of the callback as the provider sent it (`code`, `state`, `iss`, or `error`). */
  query: URLSearchParams;
  browserBinding: string | undefined;
}

/**
 * Finishes a flow and answers where to send the browser: the web app's callback page with a one-time code
 * (`?code=`), or with the refusal's code (`?error=`) once the flow is known. Before that (no such state,
 * used, expired, another browser's) OAUTH_STATE_INVALID is thrown: an answer to whoever sent the request,
 * not a redirect into the app. The actor is the browser's anonymous request; the account the flow finds acts
 * from then on (actorOf(actor, user)), and its audit entries are that account's.
 */
export async function finishFlow(deps: Deps, actor: Actor, callback: Callback): Promise<string> {
  const provider = enabledProvider(deps, { provider: callback.provider });
  const state = callback.query.get('state');
  const flow = state ? await takeFlow(deps.db, provider.id, state, callback.browserBinding) : undefined;
  if (!flow) throw stateInvalid();
  try {
    const profile = await identify(provider, flow, callback.query);
    const code =
      flow.purpose === 'LINK' && flow.user_id
        ? await prepareLink(deps, provider, flow.user_id, profile)
        : await signIn(deps, actor, provider, profile);
    return appCallbackUrl(deps.config, { code, redirectTo: flow.redirect_to });
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    await recordRefusal(deps, actor, provider, flow, err);
    return appCallbackUrl(deps.config, { error: err.code });
  }
}

/** Who signed in, as the provider asserts it once its answer is verified. */
async function identify(provider: IdentityProvider, flow: Flow, query: URLSearchParams): Promise<ProviderProfile> {
  const error = query.get('error');
  if (error === 'access_denied')
    throw new AppError('OAUTH_ACCESS_DENIED', `The sign-in was cancelled or refused at ${provider.name}.`);
  if (error) throw new ProviderUnavailable(provider.name, `the callback carried error=${error.slice(0, 64)}`);
  const url = new URL(flow.redirect_uri);
  url.search = query.toString();
  return provider.profile(url, {
    state: flow.state,
    codeVerifier: flow.code_verifier,
    nonce: flow.nonce ?? undefined,
    redirectUri: flow.redirect_uri,
  });
}

/** The address of a profile when it is a usable one (the sign-up form's rule), lower-cased. */
function usableEmail(email: string | undefined): string | undefined {
  const parsed = z.email().max(254).safeParse(email?.trim().toLowerCase());
  return parsed.success ? parsed.data : undefined;
}

/** A display name from the profile: the provider's name without invisible characters, else the address's name. */
function nameOf(profile: ProviderProfile, email: string): string {
  const name = withoutInvisibleCharacters(profile.name ?? '')
    .trim()
    .slice(0, 100)
    .trim();
  return name || email.split('@')[0].slice(0, 100) || 'New user';
}

/** Thrown inside the sign-in's transaction when a concurrent sign-in won a race: the sign-in runs once more. */
class LostRace extends Error {}

interface SignedIn {
  user: UserRow;
  /** Set when the account was created now and its address is not verified: mailed after the commit. */
  verificationToken?: string;
}

/** The account of a sign-in, and how it was found. */
type Account =
  | { kind: 'identity'; user: UserRow }
  | { kind: 'linked'; user: UserRow; identityId: string }
  | { kind: 'created'; user: UserRow; identityId: string; verificationToken?: string };

/**
 * The account of a sign-in: the one the identity is linked to; else the account of the same address,
 * linked now when the provider verified the address and the account had verified it too; else a new
 * account (with a personal workspace, as register makes it). Suspended accounts are refused, and an
 * address that matches an account without both verifications is ACCOUNT_LINK_REQUIRED: nothing is created.
 */
async function accountOf(
  deps: Deps,
  trx: Transaction<Database>,
  provider: IdentityProvider,
  profile: ProviderProfile,
): Promise<Account> {
  const now = new Date();
  const identity = await trx
    .selectFrom('user_identities')
    .select(['id', 'user_id'])
    .where('provider', '=', provider.id)
    .where('subject', '=', profile.subject)
    .executeTakeFirst();
  if (identity) {
    const user = await userById(trx, identity.user_id);
    if (user.status !== 'ACTIVE') throw suspended();
    await trx
      .updateTable('user_identities')
      .set({ email: usableEmail(profile.email) ?? null, email_verified: profile.emailVerified, last_used_at: now })
      .where('id', '=', identity.id)
      .execute();
    return { kind: 'identity', user };
  }

  const email = usableEmail(profile.email);
  if (!email)
    throw new AppError(
      'OAUTH_EMAIL_REQUIRED',
      `${provider.name} did not share an e-mail address, which a new account needs. Share one with this app ` +
        `at ${provider.name}, or sign up with e-mail and link ${provider.name} from the settings.`,
    );
  const account = await trx
    .selectFrom('users')
    .select(USER_COLUMNS)
    .where('email', '=', email)
    .forUpdate()
    .executeTakeFirst();
  if (account) {
    if (account.status !== 'ACTIVE') throw suspended();
    const hasOne = await trx
      .selectFrom('user_identities')
      .select('id')
      .where('user_id', '=', account.id)
      .where('provider', '=', provider.id)
      .executeTakeFirst();
    if (!profile.emailVerified || !account.email_verified_at || hasOne)
      throw new AppError(
        'ACCOUNT_LINK_REQUIRED',
        'An account with this e-mail address exists. ' +
          `Sign in to it as before, then link ${provider.name} from the account's settings.`,
      );
    const identityId = await insertIdentity(trx, account.id, provider.id, profile, email, now);
    return { kind: 'linked', user: account, identityId };
  }

  let created;
  try {
    created = await insertAccount(deps, trx, {
      email,
      name: nameOf(profile, email),
      passwordHash: null,
      emailVerified: profile.emailVerified,
    });
  } catch (err) {
    // The address was registered meanwhile: the next try finds that account.
    if (err instanceof AppError && err.code === 'EMAIL_TAKEN') throw new LostRace();
    throw err;
  }
  const identityId = await insertIdentity(trx, created.user.id, provider.id, profile, email, now);
  return { kind: 'created', user: created.user, identityId, verificationToken: created.verificationToken };
}

/** Inserts an identity; a concurrent sign-in that inserted the same one first makes this one run again. */
async function insertIdentity(
  trx: Transaction<Database>,
  userId: string,
  provider: IdentityProviderId,
  profile: ProviderProfile,
  email: string | undefined,
  now: Date,
): Promise<string> {
  const row = await trx
    .insertInto('user_identities')
    .values({
      user_id: userId,
      provider,
      subject: profile.subject,
      email: email ?? null,
      email_verified: profile.emailVerified,
      last_used_at: now,
    })
    .onConflict((oc) => oc.columns(['provider', 'subject']).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (!row) throw new LostRace();
  return row.id;
}

/** A sign-in (or sign-up): the account, then the one-time code the web app exchanges for its session. */
async function signIn(deps: Deps, requester: Actor, provider: IdentityProvider, profile: ProviderProfile) {
  let outcome: SignedIn;
  for (let attempt = 1; ; attempt++) {
    try {
      outcome = await deps.db.transaction().execute(async (trx) => {
        const account = await accountOf(deps, trx, provider, profile);
        const { user } = account;
        if (account.kind !== 'identity') {
          const actor = actorOf(requester, user);
          await recordAudit(trx, actor, {
            action: account.kind === 'created' ? 'auth.oauth_account_created' : 'auth.identity_linked',
            targetType: 'user',
            targetId: user.id,
            metadata: {
              provider: provider.id,
              identityId: account.identityId,
              ...(account.kind === 'created' ? { emailVerified: profile.emailVerified } : { via: 'verified_email' }),
            },
          });
        }
        return { user, verificationToken: account.kind === 'created' ? account.verificationToken : undefined };
      });
      break;
    } catch (err) {
      if (err instanceof LostRace && attempt < 3) continue;
      throw err;
    }
  }
  if (outcome.verificationToken) await sendVerificationMail(deps, outcome.user, outcome.verificationToken);
  return issueCode(deps, 'SIGN_IN', outcome.user.id, provider.id, profile);
}

/**
 * The callback of a link started from the settings: nothing is linked yet. The identity travels in a
 * one-time code that only the account that started the link may exchange (with its access token), so a
 * link URL sent to someone else cannot attach their identity to the sender's account.
 */
async function prepareLink(deps: Deps, provider: IdentityProvider, userId: string, profile: ProviderProfile) {
  const user = await userById(deps.db, userId);
  if (user.status !== 'ACTIVE') throw suspended();
  const owner = await deps.db
    .selectFrom('user_identities')
    .select('user_id')
    .where('provider', '=', provider.id)
    .where('subject', '=', profile.subject)
    .executeTakeFirst();
  if (owner && owner.user_id !== userId) throw alreadyLinked(provider.name);
  return issueCode(deps, 'LINK', userId, provider.id, profile);
}

async function issueCode(
  deps: Deps,
  kind: OAuthPurpose,
  userId: string,
  provider: IdentityProviderId,
  profile: ProviderProfile,
) {
  const code = randomToken(32);
  await deps.db
    .insertInto('oauth_exchange_codes')
    .values({
      code_hash: sha256Hex(code),
      kind,
      user_id: userId,
      provider,
      subject: profile.subject,
      email: usableEmail(profile.email) ?? null,
      email_verified: profile.emailVerified,
      expires_at: new Date(Date.now() + deps.config.OAUTH_EXCHANGE_CODE_TTL * 1000),
    })
    .execute();
  return code;
}

/**
 * What failed, for the log: the messages of the error and its causes (openid-client wraps the check that
 * failed, e.g. 'unexpected ID Token "nonce" claim value'). Never the causes' data, which holds claims.
 */
function describeReason(reason: unknown): string | undefined {
  const messages: string[] = [];
  for (let e = reason; e !== undefined && messages.length < 4; e = e instanceof Error ? e.cause : undefined) {
    if (e instanceof Error) messages.push(`${e.name}: ${e.message}`);
    else if (typeof e === 'string') messages.push(e);
    else break;
  }
  return messages.length ? messages.join(' <- ') : undefined;
}

/** A refused callback: audited (anonymous for a sign-in, the account for a link) and logged with its cause. */
async function recordRefusal(deps: Deps, actor: Actor, provider: IdentityProvider, flow: Flow, err: AppError) {
  const reason = (err as { reason?: unknown }).reason;
  deps.logger.info(
    {
      provider: provider.id,
      purpose: flow.purpose,
      code: err.code,
      reason: describeReason(reason),
      requestId: actor.requestId,
    },
    'identity provider callback refused',
  );
  await recordAudit(deps.db, actorOf(actor, flow.user_id ? { id: flow.user_id } : null), {
    action: flow.purpose === 'LINK' ? 'auth.identity_link_failed' : 'auth.oauth_login_failed',
    targetType: flow.user_id ? 'user' : undefined,
    targetId: flow.user_id ?? undefined,
    metadata: { provider: provider.id, reason: err.code },
  });
}
