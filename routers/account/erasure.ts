// Deleting one's own account (GDPR article 17): re-authentication, the ownership guard, then the person is
// erased in one transaction. The user row stays with a tombstone address and name, so the rows others need
// (audit entries, a workspace's generations, payments) keep its id without naming anyone; the workspaces
// only they belonged to go with them. docs/api.md ("Account settings") lists what goes and what stays.
import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { actorOf, signedInUser, type Actor } from '../../server/platform/actor.js';
import type { AppDeps } from '../../server/platform/context.js';
import { accountDeletedMail } from '../../server/platform/email/templates.js';
import { AppError } from '../../server/platform/errors.js';
import { recordAudit } from '../audit/service.js';
import { acceptSecondFactor } from '../auth/mfa.js';
import { WRONG_CODE, cappedSecondFactorCheck } from '../auth/second-factor-cap.js';
import { personalWorkspaceName } from '../auth/service.js';
import { emitEvent } from '../events/emit.js';
import { accountOf, reauthenticate, refuseDemoAccount } from './service.js';
import { revokeUserGrants } from '../mcp/grants.js';

type Trx = Transaction<Database>;
type Deps = Pick<AppDeps, 'db' | 'config' | 'mailer' | 'logger' | 'passwords' | 'secrets' | 'storage' | 'monitor'>;

export const DELETED_NAME = 'Deleted user';
export const DELETED_WORKSPACE_NAME = 'Deleted workspace';
/** The address an erased account keeps: unique, and not deliverable anywhere (`.invalid`, RFC 2606). */
export const tombstoneEmail = (userId: string) => `deleted+${userId}@invalid`;

/** What ends a workspace's subscription at its processor (the billing domain's cancel, handed in). */
export type EndSubscription = (workspaceId: string) => Promise<void>;

/**
 * Deletes the caller's account. Refused while they are the only OWNER of a workspace that has other members
 * (409 OWNERSHIP_TRANSFER_REQUIRED, the workspaces in `issues`). The confirmation mail goes to the address
 * before it is erased (its log row is then erased with the others).
 */
export async function deleteAccount(
  deps: Deps & { endSubscription: EndSubscription },
  actor: Actor,
  input: { password?: string; code?: string },
) {
  const { id: userId } = signedInUser(actor);
  const account = await accountOf(deps.db, userId);
  refuseDemoAccount(deps.config, account, 'delete their account');
  await reauthenticate(deps, actor, account, input.password);
  if (account.mfa_enabled && input.code === undefined)
    throw new AppError('REAUTHENTICATION_REQUIRED', 'Enter a code of your authenticator app (or a backup code).');

  const person = { email: account.email, name: account.name };
  // Everything that can refuse the deletion comes before anything is canceled or erased.
  refuseSoleOwnership(await membershipsToEnd(deps.db, userId));
  if (account.mfa_enabled) {
    // Counted by the account's cap on wrong codes, as every second-factor check is.
    const outcome = await cappedSecondFactorCheck(deps, account, actor, async (trx) =>
      (await acceptSecondFactor(deps, trx, userId, input.code ?? '')) ? true : WRONG_CODE,
    );
    if (outcome === WRONG_CODE) throw new AppError('INVALID_MFA_CODE', 'The code is not right.');
  }
  // The subscriptions of the workspaces that go are canceled first: a processor that cannot be reached
  // leaves the account as it was, and the request answers that error.
  for (const m of await membershipsToEnd(deps.db, userId))
    if (m.members === 1) await deps.endSubscription(m.workspace_id);

  const { avatarKey, exportKeys, known } = await deps.db.transaction().execute(async (trx) => {
    // Locked and checked again: of two deletions at once, the second finds the account gone.
    const locked = await trx
      .selectFrom('users')
      .select(['id', 'avatar_key'])
      .where('id', '=', userId)
      .where('deleted_at', 'is', null)
      .forUpdate()
      .executeTakeFirst();
    if (!locked) throw new AppError('UNAUTHORIZED', 'This account no longer exists.');
    const memberships = await membershipsToEnd(trx, userId, { lock: true });
    refuseSoleOwnership(memberships);
    // The last mail to the address, sent before it is erased (its log row is erased below with the rest).
    await deps.mailer.send(accountDeletedMail({ to: person.email, name: person.name, appUrl: deps.config.APP_URL }));
    const sole = memberships.filter((m) => m.members === 1).map((m) => m.workspace_id);
    await leaveSharedWorkspaces(
      trx,
      userId,
      memberships.filter((m) => m.members > 1),
    );
    await scheduleImmediatePurge(trx, sole);
    const exports = await trx.selectFrom('user_exports').select('storage_key').where('user_id', '=', userId).execute();
    const known = await whoThePersonWas(trx, userId, person);
    const shared = memberships.filter((m) => m.members > 1).map((m) => m.workspace_id);
    await eraseThePerson(trx, userId, known, { sole, shared });
    await forgetAnonymousAnswersNaming(trx, deps.secrets, known.addresses);
    await recordAudit(trx, actorOf(actor, { id: userId, email: tombstoneEmail(userId) }), {
      action: 'auth.account_deleted',
      targetType: 'user',
      targetId: userId,
      metadata: { workspacesDeleted: sole.length },
    });
    return {
      avatarKey: locked.avatar_key,
      exportKeys: exports.flatMap((e) => (e.storage_key ? [e.storage_key] : [])),
      known,
    };
  });

  // After the commit: what lives outside the database.
  deps.monitor.erase([...known.addresses, ...known.names], '[deleted]');
  for (const key of [avatarKey, ...exportKeys]) if (key) await deps.storage.delete(key).catch(() => undefined);
  return { message: 'Your account is deleted.' };
}

/** 409 OWNERSHIP_TRANSFER_REQUIRED while the user is the only owner of a workspace others belong to. */
function refuseSoleOwnership(memberships: Awaited<ReturnType<typeof membershipsToEnd>>) {
  const blocking = memberships.filter((m) => m.role === 'OWNER' && m.owners === 1 && m.members > 1);
  if (blocking.length > 0)
    throw new AppError(
      'OWNERSHIP_TRANSFER_REQUIRED',
      'You are the only owner of workspaces that have other members: hand them over or delete them first.',
      blocking.map((w) => ({ path: w.workspace_id, message: w.name, code: 'ownership_transfer_required' })),
    );
}

/**
 * The answers kept for the idempotency keys of requests sent without an account (a registration, a
 * sign-in) can name the person, and are sealed, so no query finds them: opened here, those that quote the
 * address go. The person's own keys (scope `user:<id>`) go in eraseThePerson.
 */
async function forgetAnonymousAnswersNaming(trx: Trx, secrets: AppDeps['secrets'], addresses: string[]) {
  const kept = await trx
    .selectFrom('idempotency_keys')
    .select(['scope', 'key', 'body'])
    .where('scope', 'like', 'anonymous:%')
    .where('body', 'is not', null)
    .execute();
  const opened = (body: string) => {
    try {
      return secrets.open(body);
    } catch {
      return ''; // Sealed with another key: nobody can read it, nor replay it.
    }
  };
  for (const { scope, key, body } of kept) {
    const text = opened(body!).toLowerCase();
    if (!addresses.some((address) => text.includes(address))) continue;
    await trx.deleteFrom('idempotency_keys').where('scope', '=', scope).where('key', '=', key).execute();
  }
}

/**
 * Every workspace the user is a member of, with its owners and members counted. With `lock` (inside the
 * erasure's transaction) the workspace rows are locked first (in id order: two members deleting their
 * accounts at once lock them alike), and counted by a later statement, whose snapshot then sees what
 * another deletion committed while this one waited: counted in the locking statement, each of the last two
 * members would see the other and leave, and the workspace would stay ACTIVE with nobody in it.
 */
async function membershipsToEnd(db: Kysely<Database>, userId: string, opts: { lock?: boolean } = {}) {
  if (opts.lock)
    await db
      .selectFrom('workspaces')
      .select('id')
      .where('id', 'in', (eb) =>
        eb.selectFrom('workspace_members').select('workspace_id').where('user_id', '=', userId),
      )
      .where('deleted_at', 'is', null)
      .orderBy('id')
      .forUpdate()
      .execute();
  const rows = await db
    .selectFrom('workspace_members as m')
    .innerJoin('workspaces as w', 'w.id', 'm.workspace_id')
    .select((eb) => [
      'm.workspace_id',
      'm.role',
      'w.name',
      eb
        .selectFrom('workspace_members as o')
        .select((e) => e.fn.countAll<string>().as('n'))
        .whereRef('o.workspace_id', '=', 'm.workspace_id')
        .where('o.role', '=', 'OWNER')
        .as('owners'),
      eb
        .selectFrom('workspace_members as a')
        .select((e) => e.fn.countAll<string>().as('n'))
        .whereRef('a.workspace_id', '=', 'm.workspace_id')
        .as('members'),
    ])
    .where('m.user_id', '=', userId)
    .where('w.deleted_at', 'is', null)
    .orderBy('m.created_at')
    .execute();
  return rows.map((r) => ({ ...r, owners: Number(r.owners), members: Number(r.members) }));
}

/** The user leaves the workspaces others remain in; each hears of it (user.deleted). */
async function leaveSharedWorkspaces(
  trx: Trx,
  userId: string,
  shared: Array<{ workspace_id: string; role: Database['workspace_members']['role'] }>,
) {
  for (const { workspace_id, role } of shared) {
    await trx
      .deleteFrom('workspace_members')
      .where('workspace_id', '=', workspace_id)
      .where('user_id', '=', userId)
      .execute();
    await emitEvent(trx, workspace_id, 'user.deleted', { userId, role });
  }
}

/** The workspaces only the user belonged to go with the account: purged by the next run of the task. */
async function scheduleImmediatePurge(trx: Trx, workspaceIds: string[]) {
  if (workspaceIds.length === 0) return;
  const now = new Date();
  await trx
    .updateTable('workspaces')
    .set({ status: 'PENDING_DELETION', deletion_requested_at: now, purge_at: now, updated_at: now })
    .where('id', 'in', workspaceIds)
    .execute();
  await trx.deleteFrom('workspace_members').where('workspace_id', 'in', workspaceIds).execute();
}

/** The addresses and names the person had, as far as the database knows them. */
interface KnownPerson {
  /** The current address first, then the earlier ones and those of pending changes (lower case). */
  addresses: string[];
  /** Longest first, so that no shorter one splits a longer one. */
  names: string[];
}

/**
 * Every address the account had (the current one, the earlier ones named by its `auth.email_changed`
 * entries, those of its e-mail changes, pending or not) and every name the database knows it went by (the
 * current one, those given in contact messages from one of its addresses, those an admin set, those its
 * mails greeted it by).
 */
async function whoThePersonWas(
  trx: Trx,
  userId: string,
  person: { email: string; name: string },
): Promise<KnownPerson> {
  const previous = await trx
    .selectFrom('audit_logs')
    .select(sql<string | null>`metadata->>'previousEmail'`.as('address'))
    .where('target_type', '=', 'user')
    .where('target_id', '=', userId)
    .where('action', '=', 'auth.email_changed')
    .execute();
  const changes = await trx.selectFrom('email_changes').select('new_email').where('user_id', '=', userId).execute();
  const addresses = [
    ...new Set(
      [person.email, ...previous.map((p) => p.address), ...changes.map((c) => c.new_email)]
        .filter((a): a is string => !!a)
        .map((a) => a.toLowerCase()),
    ),
  ];
  const given = await trx.selectFrom('contact_messages').select('name').where('email', 'in', addresses).execute();
  const setByAdmin = await trx
    .selectFrom('audit_logs')
    .select(sql<string | null>`metadata->>'name'`.as('name'))
    .where('target_type', '=', 'user')
    .where('target_id', '=', userId)
    .where('action', '=', 'user.updated')
    .execute();
  // Every mail to the person greets them by the name they had then ("Hi <name>,", its first line).
  const greeted = await trx
    .selectFrom('email_logs')
    .select(sql<string | null>`substring(text from '(?n)^Hi (.*),$')`.as('name'))
    .distinct()
    .where('to', 'in', addresses)
    .execute();
  const names = [
    ...new Set([
      person.name,
      ...given.map((g) => g.name),
      ...setByAdmin.map((a) => a.name),
      ...greeted.map((g) => g.name),
    ]),
  ]
    .filter((n): n is string => !!n && n.length > 0)
    .sort((a, b) => b.length - a.length);
  return { addresses, names };
}

/**
 * Removes what names or identifies the person: the account's address and name become tombstones; its
 * password, second factor, identities, sessions, tokens and pending changes go; every known address and
 * name is replaced in the audit log, the mail log and the person's support tickets (rows kept); invitations
 * sent to one of the addresses and contact messages from one lose it; a personal workspace named after the
 * person that stays with others is renamed. The user id stays where others' rows need it.
 */
async function eraseThePerson(
  trx: Trx,
  userId: string,
  { addresses, names }: KnownPerson,
  { sole, shared }: { sole: string[]; shared: string[] },
) {
  const tombstone = tombstoneEmail(userId);
  /** `text` with every known address and name replaced by the tombstones. */
  const scrubbedText = (text: RawBuilder<string>) =>
    names.reduce(
      (t, name) => sql<string>`replace(${t}, ${name}, ${DELETED_NAME})`,
      addresses.reduce((t, address) => sql<string>`replace(${t}, ${address}, ${tombstone})`, text),
    );
  const scrubbed = (column: string) => scrubbedText(sql<string>`${sql.ref(column)}`);
  /** A condition: `column` quotes one of the addresses. */
  const quotesAnAddress = (column: string) =>
    sql<boolean>`(${sql.join(
      addresses.map((a) => sql`strpos(lower(${sql.ref(column)}), ${a}) > 0`),
      sql` or `,
    )})`;
  const soleNames = sole.length
    ? (await trx.selectFrom('workspaces').select('name').where('id', 'in', sole).execute()).map((w) => w.name)
    : [];
  await trx
    .updateTable('users')
    .set({
      email: tombstone,
      name: DELETED_NAME,
      password_hash: null,
      mfa_enabled: false,
      email_verified_at: null,
      avatar_key: null,
      avatar_updated_at: null,
      last_login_at: null,
      tokens_valid_after: new Date(),
      deleted_at: new Date(),
      updated_at: new Date(),
    })
    .where('id', '=', userId)
    .execute();
  await revokeUserGrants(trx, userId);
  for (const table of [
    'refresh_tokens',
    'sessions',
    'user_identities',
    'user_totp',
    'mfa_backup_codes',
    'mfa_challenges',
    'user_tokens',
    'email_changes',
    'oauth_states',
    'oauth_exchange_codes',
    'user_exports',
    'ai_user_usage_counters',
  ] as const) {
    await trx.deleteFrom(table).where('user_id', '=', userId).execute();
  }
  await trx.deleteFrom('idempotency_keys').where('scope', '=', `user:${userId}`).execute();
  await trx
    .updateTable('workspace_invitations')
    .set({ email: tombstone, revoked_at: sql`coalesce(revoked_at, now())` })
    .where('email', 'in', addresses)
    .execute();
  await trx
    .updateTable('contact_messages')
    .set({ email: tombstone, name: DELETED_NAME, subject: scrubbed('subject'), message: scrubbed('message') })
    .where('email', 'in', addresses)
    .execute();
  await trx
    .updateTable('support_tickets')
    .set({ subject: scrubbed('subject'), message: scrubbed('message') })
    .where('user_id', '=', userId)
    .execute();
  await trx.updateTable('files').set({ original_name: null }).where('uploaded_by', '=', userId).execute();
  if (sole.length)
    await trx.updateTable('workspaces').set({ name: DELETED_WORKSPACE_NAME }).where('id', 'in', sole).execute();

  // The audit log: the addresses as actor, and the addresses or the names inside the metadata of the entries
  // about the person (theirs, on them, or on their own workspaces).
  await trx.updateTable('audit_logs').set({ actor_email: tombstone }).where('actor_email', 'in', addresses).execute();
  const inJson = (text: string) => JSON.stringify(text).slice(1, -1);
  const metadata = sql<string>`metadata::text`;
  const scrubbedMetadata = names.reduce(
    (t, name) => sql<string>`replace(${t}, ${inJson(name)}, ${DELETED_NAME})`,
    addresses.reduce((t, address) => sql<string>`replace(${t}, ${inJson(address)}, ${tombstone})`, metadata),
  );
  const metadataQuotes = (needles: string[]) =>
    sql<boolean>`(${sql.join(
      needles.map((n) => sql`strpos(${metadata}, ${inJson(n)}) > 0`),
      sql` or `,
    )})`;
  await sql`update audit_logs set metadata = ${scrubbedMetadata}::jsonb
    where ${metadataQuotes(addresses)}
      or ((actor_user_id = ${userId} or target_id = ${userId} or workspace_id = any(${sole}::uuid[]))
        and ${metadataQuotes(names)})`.execute(trx);
  // The mail log, rows kept, the HTML of these mails (a rendering of their text) dropped rather than rewritten:
  // - the mails to the address, greeted by whatever name the person had then ("Hi <name>,");
  await sql`update email_logs set "to" = ${tombstone}, html = null, subject = ${scrubbed('subject')},
      text = regexp_replace(${scrubbed('text')}, '^Hi .*,$', ${`Hi ${DELETED_NAME},`}, 'n')
    where "to" in (${sql.join(addresses)})`.execute(trx);
  // - the mails that quote the address, to support: "From <name> <address>";
  await sql`update email_logs set html = null, subject = ${scrubbed('subject')},
      text = regexp_replace(${scrubbed('text')}, '^From [^<]*<', ${`From ${DELETED_NAME} <`}, 'n')
    where ${quotesAnAddress('text')} or ${quotesAnAddress('subject')}`.execute(trx);
  // - the invitations the person sent ("<name> invited you to the workspace ..."), known by their link's
  //   token (not by the name: others may share it); the workspaces that go with the account are named as
  //   they are now.
  const workspaceScrubbed = (text: RawBuilder<string>) =>
    soleNames.reduce((t, name) => sql<string>`replace(${t}, ${name}, ${DELETED_WORKSPACE_NAME})`, text);
  // A resend replaces the link's token: the earlier mails of an invitation are known by their address, their
  // workspace and their time (a mail of another inviter of that address to that workspace since then is
  // scrubbed too: a name lost, none leaked).
  const sentBy = sql`(encode(sha256(convert_to(substring(link from 'token=([^&]+)'), 'UTF8')), 'hex') in
      (select token_hash from workspace_invitations where invited_by = ${userId})
    or exists (select 1 from workspace_invitations i join workspaces w on w.id = i.workspace_id
      where i.invited_by = ${userId} and i.email = email_logs."to" and email_logs.created_at >= i.created_at
        and strpos(email_logs.text, w.name) > 0))`;
  await sql`update email_logs set html = null, subject = ${workspaceScrubbed(scrubbed('subject'))},
      text = regexp_replace(${workspaceScrubbed(scrubbed('text'))}, '^.*? invited you to the workspace',
        ${`${DELETED_NAME} invited you to the workspace`}, 'n')
    where template = 'workspace-invitation' and ${sentBy}`.execute(trx);
  // The personal workspace, handed over and kept by others, was named after the person (renamed
  // last: the invitation mails above are found by its name).
  if (shared.length)
    await trx
      .updateTable('workspaces')
      .set({ name: personalWorkspaceName(DELETED_NAME), updated_at: new Date() })
      .where('id', 'in', shared)
      .where('is_personal', '=', true)
      .where(
        'name',
        'in',
        names.map((n) => personalWorkspaceName(n)),
      )
      .execute();
}
