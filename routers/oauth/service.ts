// Sign-in and account linking through identity providers: the enabled providers and where the browser
// goes, the one-time code the web app exchanges for a session, and the identities of an account. A flow's
// start and callback are in flows.ts. No HTTP here: the browser redirects are in redirects.ts, the
// procedures in router.ts.
import type { Kysely, Transaction } from 'kysely';
import type { Database, IdentityProviderId } from '../../db/schema.js';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import type { Principal } from '../../server/platform/principal.js';
import { sha256Hex } from '../../server/platform/security/tokens.js';
import { actorOf, signedInUser, type Actor } from '../../server/platform/actor.js';
import { recordAudit } from '../audit/service.js';
import { createSessionResult } from '../auth/service.js';
import { USER_COLUMNS } from '../auth/schemas.js';
import { linkSsoIdentity } from '../sso/links.js';
import { providerName } from './providers/index.js';
import type { IdentityProvider } from './providers/types.js';

export type Deps = Pick<AppDeps, 'config' | 'db' | 'logger' | 'mailer' | 'identityProviders'>;

/** How long a flow may take between its start and its callback. */
export const FLOW_TTL_MS = 10 * 60_000;
/** Where the web app lands when `redirectTo` is missing or not one of its paths. */
export const DEFAULT_REDIRECT = '/dashboard';
const MAX_REDIRECT_LENGTH = 2048;

const notEnabled = () =>
  new AppError('OAUTH_PROVIDER_NOT_ENABLED', 'Sign-in with this identity provider is not enabled on this service.');
const codeInvalid = () =>
  new AppError('INVALID_TOKEN', 'This sign-in code is invalid, expired or already used. Sign in again.');
export const suspended = () =>
  new AppError('USER_SUSPENDED', 'This account is suspended. Contact support to restore access.');
export const alreadyLinked = (provider: string) =>
  new AppError(
    'IDENTITY_ALREADY_LINKED',
    `This ${provider} identity belongs to another account, or this account already has a ${provider} identity.`,
  );

// ---------------------------------------------------------------------------------------------------
// Providers and where the browser goes

export function listProviders({ identityProviders }: Pick<AppDeps, 'identityProviders'>) {
  return { items: [...identityProviders.values()].map(({ id, name }) => ({ id, name })) };
}

/** The enabled provider of that name, or OAUTH_PROVIDER_NOT_ENABLED. */
export function enabledProvider(
  deps: Pick<AppDeps, 'identityProviders'>,
  { provider: id }: { provider: string },
): IdentityProvider {
  const provider = deps.identityProviders.get(id as IdentityProviderId);
  if (!provider) throw notEnabled();
  return provider;
}

/**
 * `redirectTo` when it is a path of the web app (`/settings?tab=1`), else /dashboard: never another origin
 * (`//evil.example`, `https://...`), a backslash (read as `/` by browsers) or invisible characters. The
 * checks hold for the value as given and for what URL normalisation makes of it: `/.//evil.example` or
 * `/%2e%2e//evil.example` normalise to `//evil.example`, another host to a browser.
 */
export function safeRedirectPath(redirectTo: unknown): string {
  if (typeof redirectTo !== 'string' || !isAppPath(redirectTo)) return DEFAULT_REDIRECT;
  const base = 'http://app.invalid';
  const url = new URL(redirectTo, base);
  if (url.origin !== base) return DEFAULT_REDIRECT;
  const path = url.pathname + url.search + url.hash;
  if (!isAppPath(path) || opensAnotherHostOnceDecoded(url.pathname)) return DEFAULT_REDIRECT;
  return path;
}

/**
 * `/%2F%2Fevil.example`, `/%5C...` or `/%252e%252e//...`: a web app that decodes the path before navigating
 * would leave the app. Decodes a few rounds, normalising each, and refuses what keeps changing.
 */
function opensAnotherHostOnceDecoded(pathname: string): boolean {
  let current = pathname;
  for (let round = 0; round < 3; round++) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(current);
    } catch {
      return false; // not decodable, so read as it is: checked above
    }
    if (decoded === current) return false;
    if (/^\/[/\\]/.test(decoded)) return true;
    const normalised = new URL(decoded, 'http://app.invalid').pathname;
    if (/^\/[/\\]/.test(normalised)) return true;
    if (normalised === current) return false; // `/a%20b`: decoding and encoding again gives it back
    current = normalised;
  }
  return true;
}

/** One leading `/` not followed by `/` or `\`, no backslash, space or control character, not too long. */
function isAppPath(value: string): boolean {
  if (value.length > MAX_REDIRECT_LENGTH) return false;
  // eslint-disable-next-line no-control-regex -- control characters are what it refuses
  return /^\/(?![/\\])/.test(value) && !/[\\\s\u0000-\u001f\u007f]/.test(value);
}

/** This API's callback of a provider, under API_URL or else the base of the request (`https://host`). */
export function callbackUrl(config: Pick<AppDeps['config'], 'API_URL'>, requestBase: string, provider: string) {
  return `${(config.API_URL ?? requestBase).replace(/\/+$/, '')}/auth/oauth/${provider}/callback`;
}

/** The web app's callback page with `params`: `APP_URL/auth/callback?code=...` or `?error=CODE`. */
export function appCallbackUrl(config: Pick<AppDeps['config'], 'APP_URL'>, params: Record<string, string>) {
  return `${config.APP_URL.replace(/\/+$/, '')}/auth/callback?${new URLSearchParams(params).toString()}`;
}

/** An account's row as authentication loads it (the account must exist). */
export const userById = (db: Kysely<Database>, id: string) =>
  db.selectFrom('users').select(USER_COLUMNS).where('id', '=', id).executeTakeFirstOrThrow();

// ---------------------------------------------------------------------------------------------------
// The exchange

/**
 * Exchanges a one-time code of the callback for the session result (createSessionResult of the auth
 * domain, which also decides a second sign-in step). Single use, within OAUTH_EXCHANGE_CODE_TTL. A link's
 * code is taken only with the access token of the account that started the link (`caller`, authenticated
 * only for such a code), and links the identity then; any other caller leaves it untouched for the right
 * one. The actor is the anonymous request's: the code says whose session it opens, and that account acts
 * (actorOf(actor, user)).
 */
export async function exchangeCode(
  deps: Deps,
  actor: Actor,
  input: { code: string; caller: () => Promise<Principal | undefined> },
) {
  const { caller } = input;
  const digest = sha256Hex(input.code);
  const pending = await deps.db
    .selectFrom('oauth_exchange_codes')
    .select(['id', 'kind', 'user_id', 'provider', 'subject', 'email', 'email_verified', 'sso_connection_id'])
    .where('code_hash', '=', digest)
    .where('used_at', 'is', null)
    .where('expires_at', '>', new Date())
    .executeTakeFirst();
  if (!pending) throw codeInvalid();
  if (pending.kind === 'LINK' && (await caller())?.user.id !== pending.user_id)
    throw new AppError(
      'INVALID_TOKEN',
      'This code links an identity to an account: send it with the access token of the account that started the link.',
    );

  const user = await deps.db.transaction().execute(async (trx) => {
    const now = new Date();
    const taken = await trx
      .updateTable('oauth_exchange_codes')
      .set({ used_at: now })
      .where('id', '=', pending.id)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .returning('id')
      .executeTakeFirst();
    if (!taken) throw codeInvalid();
    if (pending.kind === 'LINK' && pending.provider === 'sso')
      await linkSsoIdentity(trx, actorOf(actor, { id: pending.user_id }), pending);
    else if (pending.kind === 'LINK' && pending.provider !== 'sso')
      await linkIdentity(deps, trx, { ...pending, provider: pending.provider }, actor);
    return userById(trx, pending.user_id);
  });
  // An SSO sign-in: the identity provider is responsible for second factors; the session keeps its connection.
  const sso =
    pending.provider === 'sso' && pending.sso_connection_id ? { connectionId: pending.sso_connection_id } : undefined;
  const result = await createSessionResult(deps, actor, { user, sso });
  await recordAudit(deps.db, actorOf(actor, user), {
    action: sso ? 'sso.sign_in' : 'auth.oauth_login',
    targetType: 'user',
    targetId: user.id,
    metadata: { provider: pending.provider, ...(sso ? { connectionId: sso.connectionId } : {}) },
  });
  return result;
}

/** Links the identity of a LINK code to its account (an identity already linked to that account is kept). */
async function linkIdentity(
  deps: Deps,
  trx: Transaction<Database>,
  code: {
    user_id: string;
    provider: IdentityProviderId;
    subject: string;
    email: string | null;
    email_verified: boolean;
  },
  actor: Actor,
) {
  const name = providerName(deps.config, code.provider);
  // The account's row lock serialises this with unlinking and other links of the same account.
  const user = await trx
    .selectFrom('users')
    .select(['id', 'email', 'status'])
    .where('id', '=', code.user_id)
    .forUpdate()
    .executeTakeFirstOrThrow();
  if (user.status !== 'ACTIVE') throw suspended();
  const current = await trx
    .selectFrom('user_identities')
    .select(['id', 'subject'])
    .where('user_id', '=', user.id)
    .where('provider', '=', code.provider)
    .executeTakeFirst();
  if (current?.subject === code.subject) return;
  if (current) throw alreadyLinked(name);
  const row = await trx
    .insertInto('user_identities')
    .values({
      user_id: user.id,
      provider: code.provider,
      subject: code.subject,
      email: code.email,
      email_verified: code.email_verified,
      last_used_at: new Date(),
    })
    .onConflict((oc) => oc.columns(['provider', 'subject']).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (!row) throw alreadyLinked(name);
  await recordAudit(trx, actorOf(actor, user), {
    action: 'auth.identity_linked',
    targetType: 'user',
    targetId: user.id,
    metadata: { provider: code.provider, identityId: row.id, via: 'settings' },
  });
}

// ---------------------------------------------------------------------------------------------------
// The identities of an account

/** The actor's identities, oldest first. */
export async function listIdentities(deps: Pick<Deps, 'config' | 'db'>, actor: Actor) {
  const userId = signedInUser(actor).id;
  const rows = await deps.db
    .selectFrom('user_identities')
    .select(['id', 'provider', 'email', 'email_verified', 'created_at', 'last_used_at'])
    .where('user_id', '=', userId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return {
    items: rows.map((r) => ({
      id: r.id,
      provider: r.provider,
      providerName: providerName(deps.config, r.provider),
      email: r.email,
      emailVerified: r.email_verified,
      createdAt: r.created_at.toISOString(),
      lastUsedAt: r.last_used_at?.toISOString() ?? null,
    })),
  };
}

/**
 * Unlinks one identity of the account: refused (LAST_SIGN_IN_METHOD) when the account would be left with
 * no way to sign in, no password and no other identity. Under the account's row lock, so two unlinks at
 * once cannot both leave it without one.
 */
export async function unlinkIdentity(
  deps: Pick<Deps, 'config' | 'db'>,
  actor: Actor,
  { identityId }: { identityId: string },
) {
  const userId = signedInUser(actor).id;
  await deps.db.transaction().execute(async (trx) => {
    const user = await trx
      .selectFrom('users')
      .select(['id', 'password_hash'])
      .where('id', '=', userId)
      .forUpdate()
      .executeTakeFirstOrThrow();
    const identities = await trx
      .selectFrom('user_identities')
      .select(['id', 'provider'])
      .where('user_id', '=', user.id)
      .execute();
    const identity = identities.find((i) => i.id === identityId);
    if (!identity) throw new AppError('NOT_FOUND', 'Identity not found.');
    if (!user.password_hash && identities.length === 1)
      throw new AppError(
        'LAST_SIGN_IN_METHOD',
        'This is the only way to sign in to this account. ' +
          'Set a password (forgot password) or link another identity first.',
      );
    await trx.deleteFrom('user_identities').where('id', '=', identity.id).execute();
    await recordAudit(trx, actor, {
      action: 'auth.identity_unlinked',
      targetType: 'user',
      targetId: user.id,
      metadata: { provider: identity.provider, identityId: identity.id },
    });
  });
  return { message: 'The identity is unlinked.' };
}
