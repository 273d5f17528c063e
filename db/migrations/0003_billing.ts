// Billing: the plan catalog (Lite, Pro and Enterprise seeded here, once), subscriptions, payments, the
// ids of inbound provider events (idempotency), and the domain-event outbox. Frozen once landed.
import { sql, type Kysely } from 'kysely';

const DEFAULT_PLANS = [
  {
    slug: 'lite',
    name: 'Lite',
    description: 'For trying things out and personal projects.',
    edition: 'LITE',
    price_cents: 0,
    sort_order: 10,
    is_default: true,
    is_popular: false,
    badge_text: '',
    features: ['20 AI generations a month', 'Up to 3 members', 'Community support'],
    limits: { apiKeys: 0, aiMonthlyGenerations: 20, members: 3 },
  },
  {
    slug: 'pro',
    name: 'Pro',
    description: 'For growing teams that build on the API.',
    edition: 'PRO',
    price_cents: 2900,
    sort_order: 20,
    is_default: false,
    is_popular: true,
    badge_text: 'Most popular',
    features: ['500 AI generations a month', 'Up to 10 members', '5 API keys', 'Signed webhooks', 'E-mail support'],
    limits: { apiKeys: 5, aiMonthlyGenerations: 500, members: 10 },
  },
  {
    slug: 'enterprise',
    name: 'Enterprise',
    description: 'For organisations with volume and compliance needs.',
    edition: 'ENTERPRISE',
    price_cents: 9900,
    sort_order: 30,
    is_default: false,
    is_popular: false,
    badge_text: '',
    features: [
      '5,000 AI generations a month',
      'Up to 100 members',
      '50 API keys',
      'Signed webhooks',
      'Priority support',
    ],
    limits: { apiKeys: 50, aiMonthlyGenerations: 5000, members: 100 },
  },
];

export async function up(db: Kysely<any>): Promise<void> {
  const now = sql`now()`;

  await db.schema
    .createTable('plans')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('slug', 'text', (c) =>
      c
        .notNull()
        .unique()
        .check(sql`slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'`),
    )
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('edition', 'text', (c) => c.notNull().check(sql`edition in ('LITE', 'PRO', 'ENTERPRISE', 'CUSTOM')`))
    .addColumn('price_cents', 'integer', (c) => c.notNull().check(sql`price_cents >= 0`))
    .addColumn('currency', 'text', (c) =>
      c
        .notNull()
        .defaultTo('USD')
        .check(sql`currency ~ '^[A-Z]{3}$'`),
    )
    .addColumn('interval', 'text', (c) =>
      c
        .notNull()
        .defaultTo('MONTHLY')
        .check(sql`interval in ('ONE_TIME', 'MONTHLY', 'YEARLY')`),
    )
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('DRAFT')
        .check(sql`status in ('DRAFT', 'PUBLISHED', 'ARCHIVED')`),
    )
    // What archive remembers, so that restore returns the plan to it.
    .addColumn('status_before_archive', 'text', (c) => c.check(sql`status_before_archive in ('DRAFT', 'PUBLISHED')`))
    .addColumn('badge_text', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('is_popular', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('is_default', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('sort_order', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('features', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('limits', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('processor_a_price_id', 'text')
    .addColumn('processor_b_variant_id', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  // At most one default plan (the plan new workspaces start on).
  await db.schema
    .createIndex('plans_one_default')
    .on('plans')
    .column('is_default')
    .unique()
    .where('is_default', '=', true)
    .execute();
  await db.schema.createIndex('plans_status_sort_idx').on('plans').columns(['status', 'sort_order']).execute();

  for (const p of DEFAULT_PLANS) {
    await db
      .insertInto('plans')
      .values({ ...p, status: 'PUBLISHED', features: JSON.stringify(p.features), limits: JSON.stringify(p.limits) })
      .execute();
  }

  await db.schema
    .alterTable('workspaces')
    .addColumn('plan_id', 'uuid', (c) => c.references('plans.id').onDelete('set null'))
    // The plan's limits when the workspace moved to it: later edits of the plan do not change paying customers.
    .addColumn('limits', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('processor_a_customer_id', 'text')
    .execute();
  await sql`update workspaces set plan_id = p.id, limits = p.limits from plans p where p.is_default`.execute(db);

  await db.schema
    .createTable('subscriptions')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('workspace_id', 'uuid', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('plan_id', 'uuid', (c) => c.notNull().references('plans.id').onDelete('restrict'))
    .addColumn('provider', 'text', (c) => c.notNull().check(sql`provider in ('MOCK', 'PROCESSOR_A', 'PROCESSOR_B')`))
    .addColumn('provider_subscription_id', 'text')
    .addColumn('provider_customer_id', 'text')
    .addColumn('status', 'text', (c) =>
      c.notNull().check(sql`status in ('ACTIVE', 'TRIALING', 'PAST_DUE', 'CANCELED', 'INCOMPLETE')`),
    )
    .addColumn('current_period_start', 'timestamptz')
    .addColumn('current_period_end', 'timestamptz')
    .addColumn('cancel_at_period_end', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('canceled_at', 'timestamptz')
    // Provider time of the newest event applied: an older event never moves the subscription back.
    .addColumn('last_event_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  await db.schema
    .createIndex('subscriptions_provider_ref')
    .on('subscriptions')
    .columns(['provider', 'provider_subscription_id'])
    .unique()
    .where('provider_subscription_id', 'is not', null)
    .execute();
  // One live subscription per workspace.
  await db.schema
    .createIndex('subscriptions_one_live')
    .on('subscriptions')
    .column('workspace_id')
    .unique()
    .where(sql.ref('status'), 'in', sql`('ACTIVE', 'TRIALING', 'PAST_DUE')`)
    .execute();
  await db.schema
    .createIndex('subscriptions_workspace_idx')
    .on('subscriptions')
    .columns(['workspace_id', 'created_at'])
    .execute();
  await db.schema.createIndex('subscriptions_plan_idx').on('subscriptions').column('plan_id').execute();

  await db.schema
    .createTable('payments')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('workspace_id', 'uuid', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('subscription_id', 'uuid', (c) => c.references('subscriptions.id').onDelete('set null'))
    .addColumn('plan_id', 'uuid', (c) => c.references('plans.id').onDelete('set null'))
    .addColumn('provider', 'text', (c) => c.notNull().check(sql`provider in ('MOCK', 'PROCESSOR_A', 'PROCESSOR_B')`))
    .addColumn('provider_payment_id', 'text')
    .addColumn('amount_cents', 'integer', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) =>
      c.notNull().check(sql`status in ('SUCCEEDED', 'FAILED', 'REFUNDED', 'PENDING')`),
    )
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('receipt_url', 'text')
    .addColumn('invoice_url', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  await db.schema
    .createIndex('payments_provider_ref')
    .on('payments')
    .columns(['provider', 'provider_payment_id'])
    .unique()
    .where('provider_payment_id', 'is not', null)
    .execute();
  await db.schema
    .createIndex('payments_workspace_idx')
    .on('payments')
    .columns(['workspace_id', 'created_at', 'id'])
    .execute();

  // Inbound provider events, by provider event id: a duplicate delivery is recognised and changes nothing.
  await db.schema
    .createTable('billing_events')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'uuid', (c) => c.references('workspaces.id').onDelete('set null'))
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('received_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addUniqueConstraint('billing_events_provider_event_key', ['provider', 'event_id'])
    .execute();

  // Outbox of domain events (billing.updated, member.added, ...), written in the transaction of the change;
  // the webhooks module turns them into deliveries.
  await db.schema
    .createTable('domain_events')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('workspace_id', 'uuid', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('payload', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('dispatched_at', 'timestamptz')
    .execute();
  await db.schema
    .createIndex('domain_events_pending_idx')
    .on('domain_events')
    .column('created_at')
    .where(sql.ref('dispatched_at'), 'is', null)
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('domain_events').ifExists().execute();
  await db.schema.dropTable('billing_events').ifExists().execute();
  await db.schema.dropTable('payments').ifExists().execute();
  await db.schema.dropTable('subscriptions').ifExists().execute();
  await db.schema
    .alterTable('workspaces')
    .dropColumn('processor_a_customer_id')
    .dropColumn('limits')
    .dropColumn('plan_id')
    .execute();
  await db.schema.dropTable('plans').ifExists().execute();
}
