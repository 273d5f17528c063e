// Seats, trials, usage-based overage, dunning and invoices.
// - plans: how a plan is priced (FLAT or PER_SEAT), its included seats, trial days, whether generations past
//   its amount are billed as usage, and the processor ids of the seat price and the meter.
// - subscriptions: the trial's end and its reminder, since when it is past due, the seats last acknowledged.
// - billing_commands: the outbox of calls to the processor (seat quantities, meter events). A row stays
//   until the processor acknowledged it; a worker claims it with a lease, so a worker that dies leaves it
//   to be claimed again. One pending seat row per workspace (coalescing); one meter row per identifier.
// - invoices: the processor's invoices, kept from its events.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('plans')
    .addColumn('pricing_model', 'text', (c) =>
      c
        .notNull()
        .defaultTo('FLAT')
        .check(sql`pricing_model in ('FLAT', 'PER_SEAT')`),
    )
    .addColumn('included_seats', 'integer', (c) =>
      c
        .notNull()
        .defaultTo(1)
        .check(sql`included_seats >= 0`),
    )
    .addColumn('trial_days', 'integer', (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`trial_days between 0 and 365`),
    )
    .addColumn('metered_overage', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('processor_a_seat_price_id', 'text')
    .addColumn('processor_a_meter_event_name', 'text')
    .addColumn('processor_b_seat_variant_id', 'text')
    .execute();

  await db.schema
    .alterTable('subscriptions')
    .addColumn('trial_ends_at', 'timestamptz')
    .addColumn('trial_reminder_sent_at', 'timestamptz')
    .addColumn('past_due_since', 'timestamptz')
    .addColumn('seats_reported', 'integer')
    .addColumn('seats_reported_at', 'timestamptz')
    .execute();
  await sql`create index subscriptions_trial_end_idx on subscriptions (trial_ends_at)
    where status = 'TRIALING' and trial_reminder_sent_at is null`.execute(db);
  await sql`create index subscriptions_past_due_idx on subscriptions (past_due_since)
    where status = 'PAST_DUE'`.execute(db);

  await db.schema
    .createTable('billing_commands')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    // No foreign key: the membership trigger below may fire while a workspace is being deleted (its members
    // go with it); a command of a workspace that has gone is acknowledged as SKIPPED when drained.
    .addColumn('workspace_id', 'uuid', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('SEAT_QUANTITY', 'METER_EVENT')`))
    .addColumn('identifier', 'text', (c) => c.notNull())
    .addColumn('period', 'text', (c) => c.notNull())
    .addColumn('not_before', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('locked_until', 'timestamptz')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .addColumn('acked_at', 'timestamptz')
    .addColumn('result', 'text', (c) => c.check(sql`result in ('SENT', 'SKIPPED')`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await sql`create unique index billing_commands_meter_key on billing_commands (identifier) where kind = 'METER_EVENT'`.execute(
    db,
  );
  await sql`create unique index billing_commands_seat_pending_key on billing_commands (workspace_id)
    where kind = 'SEAT_QUANTITY' and acked_at is null`.execute(db);
  await sql`create index billing_commands_due_idx on billing_commands (not_before) where acked_at is null`.execute(db);
  await sql`create index billing_commands_workspace_idx on billing_commands (workspace_id, kind, period)`.execute(db);

  // Seats follow memberships however they change (invitation accepted, member removed or leaving, SCIM,
  // an admin): a row of workspace_members added or removed asks for a seat sync of a PER_SEAT workspace.
  // One pending request per workspace, due a minute after the last acknowledged one (coalescing).
  await sql`create function billing_seats_changed() returns trigger language plpgsql as $$
    declare ws uuid := coalesce(new.workspace_id, old.workspace_id);
    begin
      if exists (select 1 from workspaces w join plans p on p.id = w.plan_id
                 where w.id = ws and p.pricing_model = 'PER_SEAT') then
        insert into billing_commands (workspace_id, kind, identifier, period, not_before)
        values (ws, 'SEAT_QUANTITY', ws::text, to_char(now() at time zone 'utc', 'YYYY-MM-01'),
          greatest(now(), coalesce((select max(acked_at) + interval '1 minute' from billing_commands
            where workspace_id = ws and kind = 'SEAT_QUANTITY' and result = 'SENT'), now())))
        on conflict (workspace_id) where kind = 'SEAT_QUANTITY' and acked_at is null do nothing;
      end if;
      return null;
    end $$`.execute(db);
  await sql`create trigger workspace_members_seats after insert or delete on workspace_members
    for each row execute function billing_seats_changed()`.execute(db);

  await db.schema
    .createTable('invoices')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('workspace_id', 'uuid', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('provider', 'text', (c) => c.notNull().check(sql`provider in ('MOCK', 'PROCESSOR_A', 'PROCESSOR_B')`))
    .addColumn('provider_invoice_id', 'text', (c) => c.notNull())
    .addColumn('number', 'text')
    .addColumn('amount_cents', 'integer', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('OPEN', 'PAID', 'FAILED', 'VOID')`))
    .addColumn('period_start', 'timestamptz')
    .addColumn('period_end', 'timestamptz')
    .addColumn('hosted_url', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('invoices_provider_invoice_key', ['provider', 'provider_invoice_id'])
    .execute();
  await db.schema
    .createIndex('invoices_workspace_created_idx')
    .on('invoices')
    .columns(['workspace_id', 'created_at', 'id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger workspace_members_seats on workspace_members`.execute(db);
  await sql`drop function billing_seats_changed()`.execute(db);
  await db.schema.dropTable('invoices').execute();
  await db.schema.dropTable('billing_commands').execute();
  await db.schema
    .alterTable('subscriptions')
    .dropColumn('trial_ends_at')
    .dropColumn('trial_reminder_sent_at')
    .dropColumn('past_due_since')
    .dropColumn('seats_reported')
    .dropColumn('seats_reported_at')
    .execute();
  await db.schema
    .alterTable('plans')
    .dropColumn('pricing_model')
    .dropColumn('included_seats')
    .dropColumn('trial_days')
    .dropColumn('metered_overage')
    .dropColumn('processor_a_seat_price_id')
    .dropColumn('processor_a_meter_event_name')
    .dropColumn('processor_b_seat_variant_id')
    .execute();
}
