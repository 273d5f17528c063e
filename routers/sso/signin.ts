// Sign-in through a workspace's connection: the start by e-mail (the ACTIVE connection of the workspace that
// VERIFIED the address's domain), the SAML ACS and the OIDC callback, then the account (found, linked or
// created just in time, with membership at the connection's defaultRole) and the one-time code the web app
// exchanges at POST /auth/oauth/exchange. A request is single use, 10 minutes, for one connection and one
// browser (its binding cookie). No HTTP here: redirects.ts.
import type { Kysely, Selectable } from 'kysely';
import { fromTheSameBrowser } from '../oauth/flows.js';
import type { CacheProvider } from '@node-saml/node-saml';
import { z } from 'zod';
import type { Database, OAuthPurpose, SsoConnectionsTable } from '../../db/schema.js';
import { actorOf, signedInUser, type Actor } from '../../server/platform/actor.js';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import { randomToken, sha256Hex } from '../../server/platform/security/tokens.js';
import { recordAudit } from '../audit/service.js';
import { USER_COLUMNS, type UserRow } from '../auth/schemas.js';
import { FLOW_TTL_MS, appCallbackUrl, safeRedirectPath } from '../oauth/service.js';
import { oidcRedirectUri } from './connections.js';
import { connectionById, ensureMember, insertIdentity } from './links.js';
import { AssertionRefused, authnRequestUrl, verifyResponse } from './saml.js';

export type Deps = Pick<AppDeps, 'config' | 'db' | 'logger' | 'mailer' | 'secrets'>;
type Connection = Selectable<SsoConnectionsTable>;
export { connectionById };

const notConfigured = () =>
  new AppError('SSO_NOT_CONFIGURED', 'Single sign-on is not set up for this e-mail address. Sign in as usual.');
const assertionInvalid = (why: string) =>
  Object.assign(new AppError('SSO_ASSERTION_INVALID', 'The identity provider’s answer was refused. Try again.'), {
    reason: why,
  });
const emailOf = (value: string | undefined) => {
  const parsed = z.email().max(254).safeParse(value?.trim().toLowerCase());
  return parsed.success ? parsed.data : undefined;
};

/** The ACTIVE connection (oldest first) of the workspace that verified `email`'s domain. */
async function connectionFor(db: Kysely<Database>, email: string): Promise<Connection> {
  const domain = email.split('@')[1]?.toLowerCase() ?? '';
  const row = await db
    .selectFrom('sso_connections as c')
    .innerJoin('workspace_domains as d', 'd.workspace_id', 'c.workspace_id')
    .innerJoin('workspaces as w', 'w.id', 'c.workspace_id')
    .selectAll('c')
    .where('d.domain', '=', domain)
    .where('d.status', '=', 'VERIFIED')
    .where('c.status', '=', 'ACTIVE')
    .where('w.status', '=', 'ACTIVE')
    .orderBy('c.created_at')
    .orderBy('c.id')
    .executeTakeFirst();
  if (!row) throw notConfigured();
  return row;
}

/** The OIDC client of a connection; openid-client is loaded on the first OIDC sign-in, not at start-up. */
async function oidcOf(deps: Pick<Deps, 'secrets'>, c: Connection) {
  const { openIdConnectProvider } = await import('../oauth/providers/oidc.js');
  return openIdConnectProvider({
    id: 'oidc',
    name: c.name,
    issuer: c.issuer ?? '',
    clientId: c.client_id ?? '',
    clientSecret: deps.secrets.open(c.client_secret_encrypted ?? ''),
  });
}

export interface Start {
  email: string;
  redirectTo: unknown;
  browserBinding?: string;
  base: string;
  purpose: OAuthPurpose;
  userId?: string;
}

/** Stores a request for the connection of `email` and answers the identity provider's URL. */
export async function startSignIn(deps: Deps, start: Start): Promise<string> {
  const email = emailOf(start.email);
  if (!email) throw notConfigured();
  const connection = await connectionFor(deps.db, email);
  const row = {
    connection_id: connection.id,
    purpose: start.purpose,
    user_id: start.userId ?? null,
    browser_hash: start.browserBinding ? sha256Hex(start.browserBinding) : null,
    redirect_to: safeRedirectPath(start.redirectTo),
    expires_at: new Date(Date.now() + FLOW_TTL_MS),
  };
  if (connection.type === 'SAML') {
    const requestId = `_${randomToken(24)}`;
    const url = await authnRequestUrl(start.base, connection, requestId, '');
    await deps.db
      .insertInto('sso_requests')
      .values({ id: requestId, ...row })
      .execute();
    return url;
  }
  const checks = {
    state: randomToken(32),
    codeVerifier: randomToken(48),
    nonce: randomToken(32),
    redirectUri: oidcRedirectUri(start.base, connection.id),
  };
  const url = await (await oidcOf(deps, connection)).authorizationUrl(checks);
  await deps.db
    .insertInto('sso_requests')
    .values({ id: sha256Hex(checks.state), code_verifier: checks.codeVerifier, nonce: checks.nonce, ...row })
    .execute();
  return url.href;
}

/** A request of ours, taken once: this connection's, unused, not expired, from this browser. */
interface Taken {
  id: string;
  purpose: OAuthPurpose;
  user_id: string | null;
  redirect_to: string;
  code_verifier: string | null;
  nonce: string | null;
}

async function takeRequest(db: Kysely<Database>, id: string, connectionId: string, browserBinding?: string) {
  const now = new Date();
  return db
    .updateTable('sso_requests')
    .set({ used_at: now })
    .where('id', '=', id)
    .where('connection_id', '=', connectionId)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .where(fromTheSameBrowser(browserBinding))
    .returning(['id', 'purpose', 'user_id', 'redirect_to', 'code_verifier', 'nonce'])
    .executeTakeFirst() as Promise<Taken | undefined>;
}

export interface Answer {
  connectionId: string;
  base: string;
  browserBinding?: string;
}

/** The SAML ACS: where the browser goes next (the web app's callback, with a code or an error). */
export async function finishSaml(deps: Deps, actor: Actor, answer: Answer & { samlResponse: unknown }) {
  const connection = await connectionById(deps.db, answer.connectionId);
  if (!connection || connection.type !== 'SAML' || connection.status !== 'ACTIVE')
    return appCallbackUrl(deps.config, { error: 'SSO_NOT_CONFIGURED' });
  let taken: Taken | undefined;
  const requests: CacheProvider = {
    saveAsync: () => Promise.resolve(null),
    removeAsync: () => Promise.resolve(null),
    // node-saml reads the value as the request's time: the SQL has checked the expiry already.
    async getAsync(key) {
      if (!taken) taken = await takeRequest(deps.db, key, connection.id, answer.browserBinding);
      return taken?.id === key ? new Date().toISOString() : null;
    },
  };
  return finish(deps, actor, connection, async () => {
    if (typeof answer.samlResponse !== 'string' || answer.samlResponse.length > 1_000_000)
      throw assertionInvalid('no SAMLResponse');
    let verified;
    try {
      verified = await verifyResponse(answer.base, connection, answer.samlResponse, requests);
    } catch (err) {
      if (err instanceof AssertionRefused) throw assertionInvalid(err.message);
      throw err;
    }
    // The signed assertion answers the request taken (unless IdP-initiated answers are allowed and none was).
    if (taken ? verified.inResponseTo !== taken.id : !connection.allow_idp_initiated || verified.inResponseTo)
      throw assertionInvalid('InResponseTo of the assertion is not the request taken');
    const fresh = await deps.db
      .insertInto('sso_assertions')
      .values({ connection_id: connection.id, assertion_id: verified.assertionId, expires_at: verified.validUntil })
      .onConflict((oc) => oc.doNothing())
      .returning('assertion_id')
      .executeTakeFirst();
    if (!fresh) throw assertionInvalid('assertion replayed');
    return { subject: verified.subject, email: verified.email, request: taken };
  });
}

/** The OIDC callback: the code redeemed with the PKCE verifier, the ID token checked (nonce included). */
export async function finishOidc(deps: Deps, actor: Actor, answer: Answer & { query: URLSearchParams }) {
  const connection = await connectionById(deps.db, answer.connectionId);
  const state = answer.query.get('state');
  if (!connection || connection.type !== 'OIDC' || connection.status !== 'ACTIVE' || !state)
    return appCallbackUrl(deps.config, { error: 'SSO_NOT_CONFIGURED' });
  const taken = await takeRequest(deps.db, sha256Hex(state), connection.id, answer.browserBinding);
  if (!taken) return appCallbackUrl(deps.config, { error: 'OAUTH_STATE_INVALID' });
  return finish(deps, actor, connection, async () => {
    const redirectUri = oidcRedirectUri(answer.base, connection.id);
    const url = new URL(redirectUri);
    url.search = answer.query.toString();
    let profile;
    try {
      profile = await (
        await oidcOf(deps, connection)
      ).profile(url, {
        state,
        codeVerifier: taken.code_verifier ?? '',
        nonce: taken.nonce ?? undefined,
        redirectUri,
      });
    } catch (err) {
      throw assertionInvalid(err instanceof Error ? err.message : 'refused');
    }
    if (!profile.emailVerified) throw assertionInvalid('e-mail not verified by the provider');
    return { subject: profile.subject, email: profile.email, request: taken };
  });
}

interface Identified {
  subject: string;
  email: string | undefined;
  request: Taken | undefined;
}

async function finish(deps: Deps, actor: Actor, connection: Connection, identify: () => Promise<Identified>) {
  let request: Taken | undefined;
  try {
    const who = await identify();
    request = who.request;
    const email = emailOf(who.email);
    if (!email || !(await onVerifiedDomain(deps.db, connection.workspace_id, email)))
      throw new AppError('SSO_DOMAIN_MISMATCH', 'This address is not on a verified domain of the workspace.');
    const code =
      request?.purpose === 'LINK' && request.user_id
        ? await issueCode(deps, 'LINK', request.user_id, connection, who.subject, email)
        : await signIn(deps, actor, connection, who.subject, email);
    return appCallbackUrl(deps.config, { code, redirectTo: request?.redirect_to ?? '/dashboard' });
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    deps.logger.info(
      {
        connectionId: connection.id,
        code: err.code,
        reason: (err as { reason?: string }).reason,
        requestId: actor.requestId,
      },
      'sso sign-in refused',
    );
    await recordAudit(deps.db, actor, {
      action: 'sso.sign_in_failed',
      targetType: 'sso_connection',
      targetId: connection.id,
      workspaceId: connection.workspace_id,
      metadata: { reason: err.code },
    });
    return appCallbackUrl(deps.config, { error: err.code });
  }
}

async function onVerifiedDomain(db: Kysely<Database>, workspaceId: string, email: string) {
  const domain = email.split('@')[1] ?? '';
  const row = await db
    .selectFrom('workspace_domains')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('domain', '=', domain)
    .where('status', '=', 'VERIFIED')
    .executeTakeFirst();
  return Boolean(row);
}

const linkRequired = () =>
  new AppError(
    'ACCOUNT_LINK_REQUIRED',
    'An account with this e-mail address exists. Sign in to it as usual, then link single sign-on from its settings.',
  );

/**
 * The account of an SSO sign-in: the one this connection signed in before; else the account of the address
 * when it is a member of the workspace or was created by its SSO; else (no account) a new one, verified,
 * without password or personal workspace. Membership with the connection's defaultRole when missing.
 */
async function signIn(deps: Deps, requester: Actor, connection: Connection, subject: string, email: string) {
  const user = await deps.db.transaction().execute(async (trx) => {
    const identity = await trx
      .selectFrom('sso_identities')
      .select(['id', 'user_id'])
      .where('connection_id', '=', connection.id)
      .where('subject', '=', subject)
      .executeTakeFirst();
    let account: UserRow | undefined;
    if (identity) {
      account = await trx
        .selectFrom('users')
        .select(USER_COLUMNS)
        .where('id', '=', identity.user_id)
        .executeTakeFirstOrThrow();
      await trx.updateTable('sso_identities').set({ last_used_at: new Date() }).where('id', '=', identity.id).execute();
    } else {
      account = await trx
        .selectFrom('users')
        .select(USER_COLUMNS)
        .where('email', '=', email)
        .forUpdate()
        .executeTakeFirst();
      if (account) {
        const known = await trx
          .selectFrom('workspace_members')
          .select('user_id')
          .where('workspace_id', '=', connection.workspace_id)
          .where('user_id', '=', account.id)
          .unionAll(
            trx
              .selectFrom('sso_identities')
              .select('user_id')
              .where('workspace_id', '=', connection.workspace_id)
              .where('user_id', '=', account.id)
              .where('created_account', '=', true),
          )
          // An account the workspace's directory sync (or its SSO) created.
          .unionAll(
            trx
              .selectFrom('users')
              .select('id as user_id')
              .where('id', '=', account.id)
              .where('provisioned_by_workspace_id', '=', connection.workspace_id),
          )
          .executeTakeFirst();
        if (!known) throw linkRequired();
        await insertIdentity(trx, connection, account.id, subject, false);
      } else {
        account = await trx
          .insertInto('users')
          .values({
            email,
            name: email.split('@')[0].slice(0, 100) || 'New user',
            password_hash: null,
            email_verified_at: new Date(),
            // Directory sync's removal suspends an account the workspace made and nothing else holds.
            provisioned_by_workspace_id: connection.workspace_id,
          })
          .returning(USER_COLUMNS)
          .executeTakeFirstOrThrow();
        await insertIdentity(trx, connection, account.id, subject, true);
        await recordAudit(trx, actorOf(requester, account), {
          action: 'sso.account_created',
          targetType: 'user',
          targetId: account.id,
          workspaceId: connection.workspace_id,
          metadata: { connectionId: connection.id },
        });
      }
    }
    if (account.status !== 'ACTIVE')
      throw new AppError('USER_SUSPENDED', 'This account is suspended. Contact support to restore access.');
    await ensureMember(trx, connection, account.id);
    return account;
  });
  return issueCode(deps, 'SIGN_IN', user.id, connection, subject, email);
}

async function issueCode(
  deps: Deps,
  kind: OAuthPurpose,
  userId: string,
  connection: Connection,
  subject: string,
  email: string,
) {
  if (kind === 'LINK') {
    const owner = await deps.db
      .selectFrom('sso_identities')
      .select('user_id')
      .where('connection_id', '=', connection.id)
      .where('subject', '=', subject)
      .executeTakeFirst();
    if (owner && owner.user_id !== userId)
      throw new AppError('IDENTITY_ALREADY_LINKED', 'This single sign-on identity belongs to another account.');
  }
  const code = randomToken(32);
  await deps.db
    .insertInto('oauth_exchange_codes')
    .values({
      code_hash: sha256Hex(code),
      kind,
      user_id: userId,
      provider: 'sso',
      subject,
      email,
      email_verified: true,
      sso_connection_id: connection.id,
      expires_at: new Date(Date.now() + deps.config.OAUTH_EXCHANGE_CODE_TTL * 1000),
    })
    .execute();
  return code;
}

/** POST /auth/identities/sso/link/start: the identity provider's URL of the connection of `email`. */
export function startLink(deps: Deps, actor: Actor, input: { email: string; redirectTo: unknown; base: string }) {
  return startSignIn(deps, {
    email: input.email,
    redirectTo: input.redirectTo,
    base: input.base,
    purpose: 'LINK',
    userId: signedInUser(actor).id,
  });
}
