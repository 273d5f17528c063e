// demo:seed: creates the demo data that is missing (data.ts), never overwriting a row.
import { sql } from 'kysely';
import {
  DEMO_IDS,
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

/** Creates the demo data that is missing; never overwrites a row. Running it again changes nothing. */
export async function seedDemo(deps: DemoDeps): Promise<DemoSummary> {
  const { db } = deps;
  const { accounts: planned, ignored } = plannedAccounts(deps.config);
  const accounts = await resolveAccounts(db, planned);
  const hashes = new Map<string, string>();
  for (const a of accounts) if (a.state === 'missing') hashes.set(a.id, await deps.passwords.hash(a.password));
  const members = accounts.filter((a) => a.role && a.state !== 'skipped');
  const owner = members.find((a) => a.role === 'OWNER');
  const written = noRows();
  const created = new Set<string>();
  const now = new Date();
  /** The members of the demo workspace and one invitation; an older copy of its limits may hold fewer. */
  const memberLimit = members.length + 1;
  let limitRaised = false;

  await db.transaction().execute(async (trx) => {
    await lockDemoData(trx);
    for (const a of accounts.filter((x) => x.state === 'missing')) {
      const row = await trx
        .insertInto('users')
        .values({
          id: a.id,
          email: a.email,
          name: a.name,
          password_hash: hashes.get(a.id)!,
          platform_role: a.platformRole,
          email_verified_at: now,
        })
        .onConflict((oc) => oc.doNothing())
        .returning('id')
        .executeTakeFirst();
      if (row) created.add(a.id);
    }
    written.accounts = created.size;
    // A concurrent run may have taken an address between the look-up and the lock.
    const present = new Set(
      (
        await trx
          .selectFrom('users')
          .select('id')
          .where(
            'id',
            'in',
            members.map((m) => m.id),
          )
          .execute()
      ).map((r) => r.id),
    );
    const seatedMembers = members.filter((m) => present.has(m.id));

    const workspace = await trx
      .insertInto('workspaces')
      .values({ id: DEMO_IDS.workspace, ...(await workspaceValues(trx, members.length)), created_at: now })
      .onConflict((oc) => oc.column('id').doNothing())
      .returning('id')
      .executeTakeFirst();
    // Seeded before with fewer addresses: the member limit of its copy is raised to fit those seated now
    // (else invitations are refused until the next reset), and only then: a seed of nothing new writes nothing.
    const raised = workspace
      ? undefined
      : await sql`update workspaces set limits = jsonb_set(limits, '{members}', to_jsonb(${memberLimit}::int))
          where id = ${DEMO_IDS.workspace} and coalesce((limits->>'members')::int, 3) < ${memberLimit}`.execute(trx);
    limitRaised = Number(raised?.numAffectedRows ?? 0) > 0;
    written.workspaces = workspace ? 1 : 0;

    if (seatedMembers.length) {
      const rows = await trx
        .insertInto('workspace_members')
        .values(
          seatedMembers.map((m) => ({
            workspace_id: DEMO_IDS.workspace,
            user_id: m.id,
            role: m.role!,
            created_at: now,
          })),
        )
        .onConflict((oc) => oc.columns(['workspace_id', 'user_id']).doNothing())
        .returning('user_id')
        .execute();
      written.members = rows.length;
    }

    const samples = await trx
      .insertInto('ai_generations')
      .values(sampleRows(seatedMembers, now))
      .onConflict((oc) => oc.column('id').doNothing())
      .returning('id')
      .execute();
    written.samples = samples.length;

    const webhook = await trx
      .insertInto('webhooks')
      .values({
        id: DEMO_IDS.webhook,
        ...webhookValues(
          deps.secrets,
          seatedMembers.find((m) => m.id === owner?.id),
        ),
        created_at: now,
        updated_at: now,
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .returning('id')
      .executeTakeFirst();
    written.webhooks = webhook ? 1 : 0;

    // Only under the demo webhook: a delivery row never moves to another one.
    const hook = await trx
      .selectFrom('webhooks')
      .select('id')
      .where('id', '=', DEMO_IDS.webhook)
      .where('workspace_id', '=', DEMO_IDS.workspace)
      .executeTakeFirst();
    if (hook) {
      const deliveries = await trx
        .insertInto('webhook_deliveries')
        .values(deliveryRows(deps.config, seatedMembers, now))
        .onConflict((oc) => oc.column('id').doNothing())
        .returning('id')
        .execute();
      written.deliveries = deliveries.length;
    }
  });

  const workspace = await db
    .selectFrom('workspaces')
    .select(['id', 'name'])
    .where('id', '=', DEMO_IDS.workspace)
    .executeTakeFirstOrThrow();
  return {
    action: 'seed',
    workspace,
    accounts: accounts.map((a) =>
      accountSummary(a, a.state === 'skipped' ? 'skipped' : created.has(a.id) ? 'created' : 'present'),
    ),
    written,
    removed: {},
    changed: Object.values(written).some((n) => n > 0) || limitRaised,
    notes: [
      ...ignoredNotes(ignored),
      ...(limitRaised
        ? [`raised the demo workspace's member limit to ${memberLimit}, to fit its members and one invitation`]
        : []),
    ],
  };
}
