// Verified domains of a workspace: claimed by an owner, proven by a TXT record
// (`_saas-verification.<domain>` holding the value shown at the claim), VERIFIED by one workspace at most.
// Single sign-on and directory sync act only on addresses of a workspace's VERIFIED domains. A periodic
// task re-checks them: a record gone for RECORD_GRACE_DAYS puts the domain back to PENDING, mailed to the
// owners. Look-ups go to DNS_SERVERS (the system's resolvers when empty).
import crypto from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import type { Selectable } from 'kysely';
import type { WorkspaceDomainsTable } from '../../db/schema.js';
import { isUniqueViolation } from '../../db/errors.js';
import { SYSTEM_ACTOR, type Actor } from '../../server/platform/actor.js';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import { recordAudit } from '../audit/service.js';
import { mailOwners } from './owners.js';

type Deps = Pick<AppDeps, 'db' | 'config' | 'mailer' | 'logger'>;

export const VERIFICATION_PREFIX = '_saas-verification';
/** How long a verified domain's record may be missing before the domain goes back to PENDING. */
export const RECORD_GRACE_DAYS = 7;

/** Mail providers anybody can have an address at: no workspace may claim them. */
export const PUBLIC_MAIL_DOMAINS = new Set([
  'gmail.com',
  'googlemail.com',
  'outlook.com',
  'hotmail.com',
  'live.com',
  'msn.com',
  'yahoo.com',
  'ymail.com',
  'icloud.com',
  'me.com',
  'mac.com',
  'aol.com',
  'proton.me',
  'protonmail.com',
  'pm.me',
  'gmx.com',
  'gmx.de',
  'gmx.net',
  'web.de',
  'mail.com',
  'yandex.com',
  'yandex.ru',
  'mail.ru',
  'zoho.com',
  'fastmail.com',
  'hey.com',
  'tutanota.com',
  'qq.com',
  '163.com',
  '126.com',
]);

const notFound = () => new AppError('NOT_FOUND', 'No such domain in this workspace.');
const recordName = (domain: string) => `${VERIFICATION_PREFIX}.${domain}`;
const recordValue = (token: string) => `saas-verification=${token}`;

export function toDomain(d: Selectable<WorkspaceDomainsTable>) {
  return {
    id: d.id,
    domain: d.domain,
    status: d.status,
    verification: { type: 'TXT' as const, name: recordName(d.domain), value: recordValue(d.verification_token) },
    createdAt: d.created_at.toISOString(),
    verifiedAt: d.verified_at?.toISOString() ?? null,
  };
}

/** The TXT records of `name`, each joined from its strings; none when the name has no such record. */
export async function txtRecords(config: AppDeps['config'], name: string): Promise<string[]> {
  const resolver = new Resolver({ timeout: 3000, tries: 2 });
  if (config.DNS_SERVERS.length) resolver.setServers(config.DNS_SERVERS);
  try {
    return (await resolver.resolveTxt(name)).map((chunks) => chunks.join(''));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENODATA' || code === 'ENOTFOUND') return [];
    throw new AppError('SERVICE_UNAVAILABLE', `The DNS look-up of ${name} failed (${code ?? 'error'}); try again.`);
  }
}

export async function listDomains({ db }: Pick<AppDeps, 'db'>, { workspaceId }: { workspaceId: string }) {
  const rows = await db
    .selectFrom('workspace_domains')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return { items: rows.map(toDomain) };
}

/** Claims a domain: PENDING, with the TXT record that will prove it. Public mail domains are refused. */
export async function addDomain(deps: Deps, actor: Actor, input: { workspaceId: string; domain: string }) {
  const { workspaceId } = input;
  const domain = input.domain.trim().toLowerCase().replace(/\.$/, '');
  if (PUBLIC_MAIL_DOMAINS.has(domain))
    throw new AppError('BAD_REQUEST', `${domain} is a public mail provider: anybody can have an address there.`, [
      { path: 'domain', message: 'A public mail domain cannot be claimed.', code: 'custom' },
    ]);
  const row = await deps.db
    .transaction()
    .execute(async (trx) => {
      const created = await trx
        .insertInto('workspace_domains')
        .values({ workspace_id: workspaceId, domain, verification_token: crypto.randomBytes(24).toString('base64url') })
        .returningAll()
        .executeTakeFirstOrThrow();
      await recordAudit(trx, actor, {
        action: 'sso.domain_added',
        targetType: 'domain',
        targetId: created.id,
        workspaceId,
        metadata: { domain },
      });
      return created;
    })
    .catch((err: unknown) => {
      if (isUniqueViolation(err, 'workspace_domains_workspace_domain_key'))
        throw new AppError('CONFLICT', `${domain} is already a domain of this workspace.`);
      throw err;
    });
  await mailOwners(deps, workspaceId, `The domain ${domain} was added, waiting for verification`);
  return toDomain(row);
}

/**
 * Looks the TXT record up: VERIFIED when it holds the value (409 DOMAIN_NOT_VERIFIED otherwise); a domain
 * another workspace has verified is 409 DOMAIN_TAKEN.
 */
export async function verifyDomain(deps: Deps, actor: Actor, input: { workspaceId: string; domainId: string }) {
  const claimed = await deps.db
    .selectFrom('workspace_domains')
    .selectAll()
    .where('id', '=', input.domainId)
    .where('workspace_id', '=', input.workspaceId)
    .executeTakeFirst();
  if (!claimed) throw notFound();
  if (claimed.status === 'VERIFIED') return toDomain(claimed);
  const records = await txtRecords(deps.config, recordName(claimed.domain));
  if (!records.includes(recordValue(claimed.verification_token)))
    throw new AppError(
      'DOMAIN_NOT_VERIFIED',
      `No TXT record ${recordName(claimed.domain)} holds the value yet (DNS changes can take a while to show).`,
    );
  const verified = await deps.db
    .transaction()
    .execute(async (trx) => {
      const row = await trx
        .updateTable('workspace_domains')
        .set({ status: 'VERIFIED', verified_at: new Date(), checked_at: new Date(), missing_since: null })
        .where('id', '=', claimed.id)
        .returningAll()
        .executeTakeFirstOrThrow();
      await recordAudit(trx, actor, {
        action: 'sso.domain_verified',
        targetType: 'domain',
        targetId: row.id,
        workspaceId: input.workspaceId,
        metadata: { domain: row.domain },
      });
      return row;
    })
    .catch((err: unknown) => {
      if (isUniqueViolation(err, 'workspace_domains_verified_key'))
        throw new AppError('DOMAIN_TAKEN', `${claimed.domain} is verified by another workspace.`);
      throw err;
    });
  await mailOwners(deps, input.workspaceId, `The domain ${verified.domain} is verified`);
  return toDomain(verified);
}

export async function removeDomain(deps: Deps, actor: Actor, input: { workspaceId: string; domainId: string }) {
  const removed = await deps.db.transaction().execute(async (trx) => {
    const row = await trx
      .deleteFrom('workspace_domains')
      .where('id', '=', input.domainId)
      .where('workspace_id', '=', input.workspaceId)
      .returning(['id', 'domain'])
      .executeTakeFirst();
    if (!row) throw notFound();
    await recordAudit(trx, actor, {
      action: 'sso.domain_removed',
      targetType: 'domain',
      targetId: row.id,
      workspaceId: input.workspaceId,
      metadata: { domain: row.domain },
    });
    return row;
  });
  await mailOwners(deps, input.workspaceId, `The domain ${removed.domain} was removed`);
  return { message: `${removed.domain} is no longer a domain of this workspace.` };
}

/**
 * The periodic re-check of verified domains, the longest unchecked first: a record found clears
 * `missing_since`; a record missing since RECORD_GRACE_DAYS puts the domain back to PENDING and mails the
 * owners. A DNS failure (not an answer) changes nothing.
 */
export async function recheckDomains(deps: Deps, opts: { now?: Date; limit?: number } = {}) {
  const now = opts.now ?? new Date();
  const due = await deps.db
    .selectFrom('workspace_domains')
    .selectAll()
    .where('status', '=', 'VERIFIED')
    .where((eb) => eb.or([eb('checked_at', 'is', null), eb('checked_at', '<', new Date(now.getTime() - 3_600_000))]))
    .orderBy('checked_at', (ob) => ob.nullsFirst())
    .limit(opts.limit ?? 100)
    .execute();
  let demoted = 0;
  for (const d of due) {
    const found = await txtRecords(deps.config, recordName(d.domain)).then(
      (records) => records.includes(recordValue(d.verification_token)),
      () => undefined,
    );
    if (found === undefined) continue;
    const missingSince = found ? null : (d.missing_since ?? now);
    const expired = missingSince !== null && now.getTime() - missingSince.getTime() >= RECORD_GRACE_DAYS * 86_400_000;
    await deps.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('workspace_domains')
        .set({
          checked_at: now,
          missing_since: missingSince,
          ...(expired ? { status: 'PENDING' as const, verified_at: null, missing_since: null } : {}),
        })
        .where('id', '=', d.id)
        .execute();
      if (expired)
        await recordAudit(trx, SYSTEM_ACTOR, {
          action: 'sso.domain_unverified',
          targetType: 'domain',
          targetId: d.id,
          workspaceId: d.workspace_id,
          metadata: { domain: d.domain, missingSince: (d.missing_since ?? now).toISOString() },
        });
    });
    if (!expired) continue;
    demoted += 1;
    await mailOwners(
      deps,
      d.workspace_id,
      `The verification record of ${d.domain} has been missing for ${RECORD_GRACE_DAYS} days: the domain is no longer verified (add the record again and verify it)`,
    );
  }
  return { checked: due.length, demoted };
}
