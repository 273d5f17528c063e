// demo:reset (and the worker's DEMO_RESET_CRON job): puts the demo data (data.ts) back as seeded.
import { recordAudit } from '../routers/audit/service.js';
import {
  DEMO_IDS,
  DEMO_WORKSPACE_NAME,
  deliveryRows,
  lockDemoData,
  plannedAccounts,
  resolveAccounts,
  sampleRows,
  webhookValues,
  workspaceValues,
  type DemoDeps,
} from './data.js';
import { accountSummary, ignoredNotes, noRows, type DemoSummary } from './summary.js';
import { SYSTEM_ACTOR } from '../server/platform/actor.js';

const count = (r: { numDeletedRows: bigint } | undefined) => Number(r?.numDeletedRows ?? 0);

/**
 * Puts the demo data back as seeded under the current settings: rows of the demo workspace that the seed
 * did not write are removed (memberships, invitations, generations, API keys, webhooks and deliveries,
 * uploads, subscriptions and payments, usage counters, domain events), the demo rows are written
 * back with their seeded values, and the demo accounts get their passwords back. Audit logs, billing
 * events, analytics and support tickets are records and stay. Running it twice gives the same data (dates
 * of the samples and deliveries are set relative to now, and the webhook gets a fresh unseen secret).
 */
export async function resetDemo(deps: DemoDeps, opts: { via?: 'command' | 'schedule' } = {}): Promise<DemoSummary> {
  const { db } = deps;
  const { accounts: planned, ignored } = plannedAccounts(deps.config);
  const accounts = await resolveAccounts(db, planned);
  const managed = accounts.filter((a) => a.state !== 'skipped');
  // The stored hash stays when the password still matches it (no new salt: the same data twice).
  const hashes = new Map<string, string>();
  for (const a of managed) {
    const keep = a.storedHash && (await deps.passwords.verify(a.password, a.storedHash));
    hashes.set(a.id, keep ? a.storedHash! : await deps.passwords.hash(a.password));
  }
  const members = managed.filter((a) => a.role);
  const owner = members.find((a) => a.role === 'OWNER');
  const managedIds = managed.map((a) => a.id);
  const memberIds = members.map((a) => a.id);
  const fixedUserIds = [DEMO_IDS.admin, ...DEMO_IDS.users];
  const removed: Record<string, number> = {};
  const written = noRows();
  const objectKeys: string[] = [];
  const now = new Date();

  await db.transaction().execute(async (trx) => {
    await lockDemoData(trx);
    const ws = DEMO_IDS.workspace;

    // Stored objects go once the rows are gone for good (after the commit).
    const files = await trx.selectFrom('files').select('storage_key').where('workspace_id', '=', ws).execute();
    const avatars = await trx
      .selectFrom('users')
      .select('avatar_key')
      .where('id', 'in', managedIds)
      .where('avatar_key', 'is not', null)
      .execute();
    objectKeys.push(...files.map((f) => f.storage_key), ...avatars.map((a) => a.avatar_key!));

    const values = await workspaceValues(trx, members.length);
    await trx
      .insertInto('workspaces')
      .values({ id: ws, ...values, created_at: now })
      .onConflict((oc) => oc.column('id').doUpdateSet({ ...values, updated_at: now }))
      .execute();
    written.workspaces = 1;

    // Accounts: fixed-id accounts the settings no longer name go; the others get their seeded values.
    const unnamed = fixedUserIds.filter((id) => !managedIds.includes(id));
    removed.accounts = unnamed.length
      ? count(await trx.deleteFrom('users').where('id', 'in', unnamed).executeTakeFirst())
      : 0;
    for (const a of managed) {
      const values = {
        email: a.email,
        name: a.name,
        password_hash: hashes.get(a.id)!,
        status: 'ACTIVE' as const,
        platform_role: a.platformRole,
        avatar_key: null,
        avatar_updated_at: null,
      };
      await trx
        .insertInto('users')
        .values({ id: a.id, ...values, email_verified_at: now })
        .onConflict((oc) =>
          oc.column('id').doUpdateSet({
            ...values,
            email_verified_at: (eb) => eb.fn.coalesce('users.email_verified_at', eb.val(now)),
            updated_at: now,
          }),
        )
        .execute();
    }
    written.accounts = managed.length;
    // Open reset and verification links of demo accounts (MOCK mail is readable by the demo admin).
    removed.openLinks = count(
      await trx
        .deleteFrom('user_tokens')
        .where('user_id', 'in', managedIds)
        .where('used_at', 'is', null)
        .executeTakeFirst(),
    );

    removed.members = count(
      await trx
        .deleteFrom('workspace_members')
        .where('workspace_id', '=', ws)
        .where('user_id', 'not in', memberIds)
        .executeTakeFirst(),
    );
    await trx
      .insertInto('workspace_members')
      .values(members.map((m) => ({ workspace_id: ws, user_id: m.id, role: m.role!, created_at: now })))
      .onConflict((oc) =>
        oc.columns(['workspace_id', 'user_id']).doUpdateSet({ role: (eb) => eb.ref('excluded.role') }),
      )
      .execute();
    written.members = members.length;

    removed.invitations = count(
      await trx.deleteFrom('workspace_invitations').where('workspace_id', '=', ws).executeTakeFirst(),
    );
    removed.apiKeys = count(await trx.deleteFrom('api_keys').where('workspace_id', '=', ws).executeTakeFirst());
    removed.files = count(await trx.deleteFrom('files').where('workspace_id', '=', ws).executeTakeFirst());
    removed.payments = count(await trx.deleteFrom('payments').where('workspace_id', '=', ws).executeTakeFirst());
    removed.subscriptions = count(
      await trx.deleteFrom('subscriptions').where('workspace_id', '=', ws).executeTakeFirst(),
    );
    removed.usageCounters = count(
      await trx.deleteFrom('ai_usage_counters').where('workspace_id', '=', ws).executeTakeFirst(),
    );
    removed.domainEvents = count(
      await trx.deleteFrom('domain_events').where('workspace_id', '=', ws).executeTakeFirst(),
    );

    // Samples and deliveries are written anew (their dates follow "now"); other rows there were not demo data.
    const samples = sampleRows(members, now);
    const sampleIds = samples.map((r) => r.id);
    removed.generations = count(
      await trx
        .deleteFrom('ai_generations')
        .where('workspace_id', '=', ws)
        .where('id', 'not in', sampleIds)
        .executeTakeFirst(),
    );
    await trx.deleteFrom('ai_generations').where('id', 'in', sampleIds).execute();
    await trx.insertInto('ai_generations').values(samples).execute();
    written.samples = samples.length;

    removed.webhooks = count(
      await trx
        .deleteFrom('webhooks')
        .where('workspace_id', '=', ws)
        .where('id', '!=', DEMO_IDS.webhook)
        .executeTakeFirst(),
    );
    const hook = webhookValues(deps.secrets, owner);
    await trx
      .insertInto('webhooks')
      .values({ id: DEMO_IDS.webhook, ...hook, created_at: now, updated_at: now })
      .onConflict((oc) => oc.column('id').doUpdateSet({ ...hook, updated_at: now }))
      .execute();
    written.webhooks = 1;

    const deliveries = deliveryRows(deps.config, members, now);
    const deliveryIds = deliveries.map((r) => r.id);
    removed.deliveries = count(
      await trx
        .deleteFrom('webhook_deliveries')
        .where('workspace_id', '=', ws)
        .where('id', 'not in', deliveryIds)
        .executeTakeFirst(),
    );
    await trx.deleteFrom('webhook_deliveries').where('id', 'in', deliveryIds).execute();
    await trx.insertInto('webhook_deliveries').values(deliveries).execute();
    written.deliveries = deliveries.length;

    const removedTotal = Object.values(removed).reduce((a, b) => a + b, 0);
    await recordAudit(trx, SYSTEM_ACTOR, {
      action: 'demo.reset',
      targetType: 'workspace',
      targetId: ws,
      workspaceId: ws,
      metadata: { via: opts.via ?? 'command', removedRows: removedTotal, accounts: managed.map((a) => a.email) },
    });
  });

  const failedObjects: string[] = [];
  if (deps.storage) {
    for (const key of objectKeys) await deps.storage.delete(key).catch(() => failedObjects.push(key));
  }
  const notes = ignoredNotes(ignored);
  if (objectKeys.length && !deps.storage)
    notes.push(`${objectKeys.length} stored upload(s) of removed rows were left in storage`);
  if (failedObjects.length) notes.push(`${failedObjects.length} stored upload(s) could not be removed from storage`);

  return {
    action: 'reset',
    workspace: { id: DEMO_IDS.workspace, name: DEMO_WORKSPACE_NAME },
    accounts: accounts.map((a) => accountSummary(a, a.state === 'skipped' ? 'skipped' : 'restored')),
    written,
    removed,
    changed: Object.values(removed).some((n) => n > 0),
    notes,
  };
}
