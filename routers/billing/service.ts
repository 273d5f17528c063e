// Workspace billing: checkout, the current plan, payment history, cancellation, and the one place where
// subscriptions and payments change: applyProviderEvent. MOCK checkout goes through it too (as a local
// event), so every provider moves a workspace between plans the same way, in one transaction, idempotently.
import crypto from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import {
  LIVE_SUBSCRIPTION_STATUSES,
  type BillingProvider,
  type Database,
  type Plan,
  type Subscription,
  type SubscriptionStatus,
} from '../../db/schema.js';
import { isDemoAccount } from '../../server/platform/accounts.js';
import type { Config } from '../../server/platform/config.js';
import { AppError } from '../../server/platform/errors.js';
import type { Logger } from '../../server/platform/logger.js';
import { listRequestOf, mapItems, paginate, type ListRequest } from '../../server/platform/pagination.js';
import type { Actor } from '../../server/platform/actor.js';
import { recordAudit } from '../audit/service.js';
import { emitEvent } from '../events/emit.js';
import type {
  BillingChange,
  PaymentChange,
  PaymentProcessor,
  ProcessorName,
  ProviderEvent,
  RefundChange,
  SubscriptionChange,
} from './processors/types.js';
import { toPlanOutput, type MockEvent } from './schemas.js';
import { storableText } from '../../server/platform/unstorable-text.js';

type Db = Kysely<Database>;
type Trx = Transaction<Database>;

const isLive = (status: string) => (LIVE_SUBSCRIPTION_STATUSES as readonly string[]).includes(status);

/** What the caller may see of the workspace's billing. */
export async function currentPlan(db: Db, workspaceId: string) {
  const [workspace, subscription] = await Promise.all([
    db
      .selectFrom('workspaces')
      .select(['id', 'edition', 'plan_id', 'limits'])
      .where('id', '=', workspaceId)
      .executeTakeFirstOrThrow(),
    db
      .selectFrom('subscriptions')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      // The live one, when there is one: a newer abandoned checkout (INCOMPLETE) must not hide it.
      .orderBy((eb) => eb('status', 'in', [...LIVE_SUBSCRIPTION_STATUSES]), 'desc')
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst(),
  ]);
  const plan = workspace.plan_id
    ? await db.selectFrom('plans').selectAll().where('id', '=', workspace.plan_id).executeTakeFirst()
    : undefined;
  const sub = subscription ?? null;
  return {
    workspaceId,
    edition: workspace.edition,
    plan: plan ? toPlanOutput(plan) : null,
    limits: workspace.limits as Record<string, number>,
    subscription: sub && {
      id: sub.id,
      provider: sub.provider,
      status: sub.status,
      currentPeriodStart: sub.current_period_start?.toISOString() ?? null,
      currentPeriodEnd: sub.current_period_end?.toISOString() ?? null,
      cancelAtPeriodEnd: sub.cancel_at_period_end,
      canceledAt: sub.canceled_at?.toISOString() ?? null,
    },
    status: sub && isLive(sub.status) ? sub.status : ('FREE' as const),
    currentPeriodEnd: sub && isLive(sub.status) ? (sub.current_period_end?.toISOString() ?? null) : null,
  };
}

/** A workspace's payments, newest first, by page or cursor. */
export async function paymentHistory(deps: { db: Db; config: Config }, workspaceId: string, request: ListRequest) {
  const query = deps.db.selectFrom('payments').where('workspace_id', '=', workspaceId).selectAll();
  const page = await paginate(deps, query, {
    list: 'billing.history',
    request: listRequestOf(request),
    counters: { scope: 'payments', id: workspaceId },
  });
  return mapItems(page, (p) => ({
    id: p.id,
    provider: p.provider,
    status: p.status,
    amountCents: p.amount_cents,
    currency: p.currency,
    description: p.description,
    planId: p.plan_id,
    // Present only when the provider gave them.
    ...(p.receipt_url ? { receiptUrl: p.receipt_url } : {}),
    ...(p.invoice_url ? { invoiceUrl: p.invoice_url } : {}),
    createdAt: p.created_at.toISOString(),
  }));
}

// ---------------------------------------------------------------- choosing a plan

/** A purchasable (PUBLISHED) plan by slug, id or legacy edition key. */
export async function findPurchasablePlan(
  db: Db,
  by: { planCode?: string; planId?: string; edition?: string },
): Promise<Plan> {
  let query = db.selectFrom('plans').selectAll().where('status', '=', 'PUBLISHED');
  if (by.planId) query = query.where('id', '=', by.planId);
  else if (by.planCode) query = query.where('slug', '=', by.planCode.toLowerCase());
  else
    query = query
      .where('edition', '=', String(by.edition).toUpperCase() as Plan['edition'])
      .orderBy('sort_order')
      .limit(1);
  const plan = await query.executeTakeFirst();
  if (!plan)
    throw new AppError('PLAN_NOT_FOUND', 'No published plan matches; see GET /billing/plans for the plans on offer.');
  return plan;
}

type PriceSetting =
  | 'PROCESSOR_A_PRICE_LITE'
  | 'PROCESSOR_A_PRICE_PRO'
  | 'PROCESSOR_A_PRICE_ENTERPRISE'
  | 'PROCESSOR_B_VARIANT_LITE'
  | 'PROCESSOR_B_VARIANT_PRO'
  | 'PROCESSOR_B_VARIANT_ENTERPRISE';

/** Settings that name the processor's price of each default edition. */
const PRICE_SETTING: Record<ProcessorName, Partial<Record<Plan['edition'], PriceSetting>>> = {
  PROCESSOR_A: {
    LITE: 'PROCESSOR_A_PRICE_LITE',
    PRO: 'PROCESSOR_A_PRICE_PRO',
    ENTERPRISE: 'PROCESSOR_A_PRICE_ENTERPRISE',
  },
  PROCESSOR_B: {
    LITE: 'PROCESSOR_B_VARIANT_LITE',
    PRO: 'PROCESSOR_B_VARIANT_PRO',
    ENTERPRISE: 'PROCESSOR_B_VARIANT_ENTERPRISE',
  },
};

/** The plan's own price/variant id, else the setting of its edition. */
function priceRef(config: Config, processor: ProcessorName, plan: Plan): string | undefined {
  const own = processor === 'PROCESSOR_A' ? plan.processor_a_price_id : plan.processor_b_variant_id;
  const setting = PRICE_SETTING[processor][plan.edition];
  return own ?? (setting ? config[setting] : undefined);
}

function periodEnd(start: Date, interval: Plan['interval']): Date | null {
  if (interval === 'ONE_TIME') return null;
  const end = new Date(start);
  if (interval === 'MONTHLY') end.setUTCMonth(end.getUTCMonth() + 1);
  else end.setUTCFullYear(end.getUTCFullYear() + 1);
  return end;
}

/** What a completed MOCK checkout reports: an ACTIVE subscription and, for a paid plan, its payment. */
export function mockCheckoutChanges(plan: Plan, workspaceId: string, now: Date): BillingChange[] {
  const providerSubscriptionId = `mock_sub_${crypto.randomUUID()}`;
  const changes: BillingChange[] = [
    {
      kind: 'subscription',
      providerSubscriptionId,
      workspaceId,
      planId: plan.id,
      status: 'ACTIVE',
      currentPeriodStart: now,
      currentPeriodEnd: periodEnd(now, plan.interval),
    },
  ];
  if (plan.price_cents > 0) {
    changes.push({
      kind: 'payment',
      providerPaymentId: `mock_pay_${crypto.randomUUID()}`,
      providerSubscriptionId,
      workspaceId,
      planId: plan.id,
      amountCents: plan.price_cents,
      currency: plan.currency,
      status: 'SUCCEEDED',
      description: `${plan.name} (${plan.interval.toLowerCase().replace('_', '-')})`,
    });
  }
  return changes;
}

// ---------------------------------------------------------------- applying events

export type EventOutcome = 'applied' | 'duplicate' | 'stale' | 'unmatched' | 'ignored';

/** What applying a provider event needs. */
export type EventDeps = Pick<BillingDeps, 'db' | 'config' | 'processors' | 'logger'>;

/** One event being applied; `replaced` collects the live subscriptions that new ones ended. */
interface EventRun {
  trx: Trx;
  deps: EventDeps;
  provider: BillingProvider;
  event: ProviderEvent;
  replaced: Subscription[];
}

/** Moves the workspace onto a plan: edition, plan and a copy of its limits. */
async function moveWorkspaceToPlan(
  trx: Trx,
  workspaceId: string,
  plan: Pick<Plan, 'id' | 'edition' | 'limits'> | undefined,
) {
  await trx
    .updateTable('workspaces')
    .set({
      plan_id: plan?.id ?? null,
      edition: plan?.edition ?? 'LITE',
      limits: JSON.stringify(plan?.limits ?? {}),
      updated_at: new Date(),
    })
    .where('id', '=', workspaceId)
    .execute();
}

/**
 * The plan new workspaces start on (`isDefault`), if one is marked. Not filtered by status: the admin routes
 * keep an ARCHIVED plan from being the default, and skipping a DRAFT default would leave workspaces planless.
 */
export async function defaultPlan(db: Db) {
  return db.selectFrom('plans').select(['id', 'edition', 'limits']).where('is_default', '=', true).executeTakeFirst();
}

/**
 * How far along its life a status is. Processors stamp events in whole seconds, so two events of one
 * subscription often share a time (Stripe's created-as-incomplete and updated-to-active): at equal times the
 * one further along wins.
 */
const STATUS_RANK: Record<SubscriptionStatus, number> = {
  INCOMPLETE: 0,
  TRIALING: 1,
  ACTIVE: 1,
  PAST_DUE: 1,
  CANCELED: 2,
};

function isStale(existing: Subscription, occurredAt: Date, status: SubscriptionStatus) {
  if (!existing.last_event_at) return false;
  const [at, last] = [occurredAt.getTime(), existing.last_event_at.getTime()];
  return at < last || (at === last && STATUS_RANK[status] < STATUS_RANK[existing.status]);
}

/**
 * The plan a subscription is billed for: the one whose price (PROCESSOR_A) or variant (PROCESSOR_B) it is
 * billed at, as checkout chooses them, since a plan changed at the processor (e.g. in Stripe's portal) keeps
 * the checkout's metadata; else the plan the metadata names. Undefined when neither names a plan here.
 */
async function planOf(run: EventRun, change: SubscriptionChange): Promise<string | undefined> {
  const { trx, provider } = run;
  if (change.priceRef && provider !== 'MOCK') {
    const own = provider === 'PROCESSOR_A' ? 'processor_a_price_id' : 'processor_b_variant_id';
    const candidates = await trx
      .selectFrom('plans')
      .selectAll()
      .where((eb) => eb.or([eb(own, '=', change.priceRef!), eb(own, 'is', null)]))
      .orderBy('sort_order')
      .orderBy('created_at')
      .execute();
    const billed = candidates.filter((plan) => priceRef(run.deps.config, provider, plan) === change.priceRef);
    const plan =
      billed.find((p) => p.id === change.planId) ?? billed.find((p) => p.status === 'PUBLISHED') ?? billed[0];
    if (plan) return plan.id;
  }
  return change.planId ? knownPlan(trx, change.planId) : undefined;
}

async function knownPlan(trx: Trx, id: string) {
  return (await trx.selectFrom('plans').select('id').where('id', '=', id).executeTakeFirst())?.id;
}

/** Ends the workspace's live subscription, which a new one replaces (an upgrade or a switch of provider). */
async function endLiveSubscription(run: EventRun, workspaceId: string) {
  const ended = await run.trx
    .updateTable('subscriptions')
    .set({ status: 'CANCELED', canceled_at: run.event.occurredAt, updated_at: new Date() })
    .where('workspace_id', '=', workspaceId)
    .where('status', 'in', [...LIVE_SUBSCRIPTION_STATUSES])
    .returningAll()
    .execute();
  run.replaced.push(...ended);
}

const liveSubscriptionOf = (trx: Trx, workspaceId: string) =>
  trx
    .selectFrom('subscriptions')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('status', 'in', [...LIVE_SUBSCRIPTION_STATUSES])
    .executeTakeFirst();

const lockWorkspace = (trx: Trx, id: string) =>
  trx.selectFrom('workspaces').select('id').where('id', '=', id).forUpdate().executeTakeFirst();

async function applySubscription(run: EventRun, change: SubscriptionChange): Promise<EventOutcome> {
  const { trx, provider, event } = run;
  const find = () =>
    trx
      .selectFrom('subscriptions')
      .selectAll()
      .where('provider', '=', provider)
      .where('provider_subscription_id', '=', change.providerSubscriptionId);
  // The workspace row is locked before the subscription's, as by every event of the workspace (a new
  // subscription, a payment): in another order, an activation ending the live subscription and a renewal
  // of that one, which Stripe sends together, deadlock.
  const known = await find().executeTakeFirst();
  if (known) await lockWorkspace(trx, known.workspace_id);
  const existing = known && (await find().forUpdate().executeTakeFirst());

  let sub: Subscription;
  if (existing) {
    if (isStale(existing, event.occurredAt, change.status)) return 'stale';
    if (isLive(change.status) && !isLive(existing.status)) {
      // Under the workspace lock, as for a new subscription, so that two never go live side by side.
      const live = await liveSubscriptionOf(trx, existing.workspace_id);
      if (live && existing.status === 'CANCELED') {
        // An ended subscription's late event (e.g. a renewal of one a newer subscription replaced): the
        // newer one stays the workspace's plan.
        run.deps.logger.warn(
          { provider, subscriptionId: existing.id, liveSubscriptionId: live.id, eventType: event.type },
          'billing: a canceled subscription was not revived while another is live',
        );
        return 'ignored';
      }
      // A checkout that completes late (INCOMPLETE, then paid) replaces the live subscription.
      await endLiveSubscription(run, existing.workspace_id);
    }
    const planId = await planOf(run, change);
    sub = await trx
      .updateTable('subscriptions')
      .set({
        plan_id: planId ?? existing.plan_id,
        status: change.status,
        provider_customer_id: change.customerId ?? existing.provider_customer_id,
        ...(change.currentPeriodStart !== undefined && { current_period_start: change.currentPeriodStart }),
        ...(change.currentPeriodEnd !== undefined && { current_period_end: change.currentPeriodEnd }),
        ...(change.cancelAtPeriodEnd !== undefined && { cancel_at_period_end: change.cancelAtPeriodEnd }),
        canceled_at: change.status === 'CANCELED' ? (existing.canceled_at ?? event.occurredAt) : null,
        last_event_at: event.occurredAt,
        updated_at: new Date(),
      })
      .where('id', '=', existing.id)
      .returningAll()
      .executeTakeFirstOrThrow();
  } else {
    const planId = await planOf(run, change);
    if (!change.workspaceId || !planId) return 'unmatched';
    if (!(await lockWorkspace(trx, change.workspaceId))) return 'unmatched';
    if (isLive(change.status)) await endLiveSubscription(run, change.workspaceId);
    sub = await trx
      .insertInto('subscriptions')
      .values({
        workspace_id: change.workspaceId,
        plan_id: planId,
        provider,
        provider_subscription_id: change.providerSubscriptionId,
        provider_customer_id: change.customerId ?? null,
        status: change.status,
        current_period_start: change.currentPeriodStart ?? null,
        current_period_end: change.currentPeriodEnd ?? null,
        cancel_at_period_end: change.cancelAtPeriodEnd ?? false,
        canceled_at: change.status === 'CANCELED' ? event.occurredAt : null,
        last_event_at: event.occurredAt,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await emitEvent(trx, sub.workspace_id, 'subscription.created', {
      subscriptionId: sub.id,
      planId: sub.plan_id,
      provider,
      status: sub.status,
    });
  }

  if (provider === 'PROCESSOR_A' && sub.provider_customer_id) {
    await trx
      .updateTable('workspaces')
      .set({ processor_a_customer_id: sub.provider_customer_id })
      .where('id', '=', sub.workspace_id)
      .execute();
  }
  await syncWorkspacePlan(trx, sub);
  if (sub.status === 'CANCELED' && existing && existing.status !== 'CANCELED') {
    await emitEvent(trx, sub.workspace_id, 'subscription.canceled', {
      subscriptionId: sub.id,
      planId: sub.plan_id,
      provider,
    });
  }
  return 'applied';
}

/**
 * The workspace follows its live subscription's plan; when the subscription that set its plan ends and no
 * other is live, it falls back to the default plan.
 */
async function syncWorkspacePlan(trx: Trx, sub: Subscription) {
  if (isLive(sub.status)) {
    const plan = await trx
      .selectFrom('plans')
      .select(['id', 'edition', 'limits'])
      .where('id', '=', sub.plan_id)
      .executeTakeFirst();
    await moveWorkspaceToPlan(trx, sub.workspace_id, plan);
    return;
  }
  if (!(await liveSubscriptionOf(trx, sub.workspace_id)))
    await moveWorkspaceToPlan(trx, sub.workspace_id, await defaultPlan(trx));
}

async function applyPayment(trx: Trx, provider: BillingProvider, change: PaymentChange): Promise<EventOutcome> {
  let workspaceId = change.workspaceId;
  let subscriptionId: string | null = null;
  let planId = change.planId ? await knownPlan(trx, change.planId) : undefined;
  if (change.providerSubscriptionId) {
    const sub = await trx
      .selectFrom('subscriptions')
      .select(['id', 'workspace_id', 'plan_id'])
      .where('provider', '=', provider)
      .where('provider_subscription_id', '=', change.providerSubscriptionId)
      .executeTakeFirst();
    if (sub) {
      workspaceId ??= sub.workspace_id;
      subscriptionId = sub.id;
      planId ??= sub.plan_id;
    }
  }
  // Metadata can name a workspace deleted since, or one of another deployment sharing the processor account.
  // Locked first, as by every event of the workspace (applySubscription).
  if (!workspaceId || !(await lockWorkspace(trx, workspaceId))) return 'unmatched';
  const inserted = await trx
    .insertInto('payments')
    .values({
      workspace_id: workspaceId,
      subscription_id: subscriptionId,
      plan_id: planId ?? null,
      provider,
      provider_payment_id: change.providerPaymentId,
      amount_cents: change.amountCents,
      currency: change.currency.toUpperCase(),
      status: change.status,
      description: change.description ?? '',
      receipt_url: change.receiptUrl ?? null,
      invoice_url: change.invoiceUrl ?? null,
    })
    .onConflict((oc) =>
      oc.columns(['provider', 'provider_payment_id']).where('provider_payment_id', 'is not', null).doNothing(),
    )
    .returning('id')
    .executeTakeFirst();
  if (!inserted) return 'duplicate';
  const type = change.status === 'FAILED' ? 'payment.failed' : 'payment.succeeded';
  await emitEvent(trx, workspaceId, type, {
    paymentId: inserted.id,
    amountCents: change.amountCents,
    currency: change.currency.toUpperCase(),
    provider,
  });
  return 'applied';
}

/**
 * Applies a provider event in one transaction. The event id is stored under a unique constraint first,
 * so a duplicate delivery (even concurrent) changes nothing; an event older than the subscription's last
 * applied one never moves it backwards. Processor subscriptions the event replaced are then cancelled at
 * their processor.
 */
export async function applyProviderEvent(
  d: EventDeps,
  provider: BillingProvider,
  event: ProviderEvent,
): Promise<EventOutcome> {
  const replaced: Subscription[] = [];
  const outcome = await d.db.transaction().execute(async (trx): Promise<EventOutcome> => {
    const recorded = await trx
      .insertInto('billing_events')
      // A processor's own text, signed by it: made storable, not refused (a NUL would fail the insert).
      .values({ provider, event_id: storableText(event.id), event_type: storableText(event.type), outcome: 'pending' })
      .onConflict((oc) => oc.columns(['provider', 'event_id']).doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!recorded) return 'duplicate';
    const outcomes: EventOutcome[] = [];
    for (const change of event.changes)
      outcomes.push(await applyChange({ trx, deps: d, provider, event, replaced }, change));
    const outcome = outcomes.length === 0 ? 'ignored' : outcomes.includes('applied') ? 'applied' : outcomes[0];
    const named = event.changes.map((c) => (c.kind === 'refund' ? undefined : c.workspaceId)).find(Boolean);
    const workspaceId =
      (named && (await workspaceExists(trx, named)) ? named : null) ??
      (await workspaceOfChanges(trx, provider, event.changes));
    // One billing.updated per event that changed something, whatever it changed.
    if (outcome === 'applied' && workspaceId) {
      const current = await trx
        .selectFrom('workspaces')
        .select(['edition', 'plan_id'])
        .where('id', '=', workspaceId)
        .executeTakeFirst();
      await emitEvent(trx, workspaceId, 'billing.updated', {
        provider,
        eventType: event.type,
        edition: current?.edition,
        planId: current?.plan_id,
      });
    }
    await trx
      .updateTable('billing_events')
      .set({ outcome, workspace_id: workspaceId })
      .where('id', '=', recorded.id)
      .execute();
    return outcome;
  });
  await cancelReplacedAtProcessor(d, replaced);
  return outcome;
}

/**
 * Applies an event of the development webhook of BILLING_PROVIDER=MOCK: `checkout.completed` with
 * `data: { workspaceId, planCode | planId }` moves the workspace to the plan like a MOCK checkout;
 * `subscription.canceled` with `data: { workspaceId }` ends its live subscription. Other types are
 * recorded and ignored. A repeated id changes nothing.
 */
export async function applyMockEvent(d: EventDeps, { id, type, data }: MockEvent): Promise<EventOutcome> {
  const event: ProviderEvent = { id, type, occurredAt: new Date(), changes: [] };
  if (type === 'checkout.completed' && data?.workspaceId && (data.planCode || data.planId)) {
    const plan = await findPurchasablePlan(d.db, data);
    event.changes = mockCheckoutChanges(plan, data.workspaceId, event.occurredAt);
  } else if (type === 'subscription.canceled' && data?.workspaceId) {
    const live = await d.db
      .selectFrom('subscriptions')
      .select('provider_subscription_id')
      .where('workspace_id', '=', data.workspaceId)
      .where('provider', '=', 'MOCK')
      .where('status', 'in', ['ACTIVE', 'TRIALING', 'PAST_DUE'])
      .executeTakeFirst();
    if (live?.provider_subscription_id) {
      event.changes = [
        {
          kind: 'subscription',
          providerSubscriptionId: live.provider_subscription_id,
          status: 'CANCELED',
          cancelAtPeriodEnd: false,
        },
      ];
    }
  }
  return applyProviderEvent(d, 'MOCK', event);
}

function applyChange(run: EventRun, change: BillingChange): Promise<EventOutcome> {
  switch (change.kind) {
    case 'subscription':
      return applySubscription(run, change);
    case 'payment':
      return applyPayment(run.trx, run.provider, change);
    case 'refund':
      return applyRefund(run.trx, run.provider, change);
  }
}

/** MOCK subscriptions and one-time purchases exist only here; every other one also at its processor. */
const atProcessor = (
  sub: Subscription,
): sub is Subscription & { provider: ProcessorName; provider_subscription_id: string } =>
  sub.provider !== 'MOCK' &&
  sub.provider_subscription_id !== null &&
  !sub.provider_subscription_id.startsWith('onetime_');

/**
 * A replaced subscription has ended here, but its processor would go on charging for it: it is cancelled
 * there too, at the end of its paid period as POST /billing/cancel does (its later events are ignored). A
 * failure is logged, not thrown: the event is applied, and a retry of it would change nothing.
 */
async function cancelReplacedAtProcessor(d: EventDeps, replaced: Subscription[]) {
  for (const sub of replaced.filter(atProcessor)) {
    try {
      await d.processors[sub.provider].cancelSubscription(sub.provider_subscription_id);
      d.logger.info(
        { provider: sub.provider, subscriptionId: sub.id },
        'billing: replaced subscription cancelled at its processor',
      );
    } catch (err) {
      d.logger.error(
        { err, provider: sub.provider, subscriptionId: sub.id },
        'billing: could not cancel a replaced subscription at its processor; cancel it there by hand',
      );
    }
  }
}

/** A full refund moves the recorded payment to REFUNDED (once: a refunded payment stays refunded). */
async function applyRefund(trx: Trx, provider: BillingProvider, change: RefundChange): Promise<EventOutcome> {
  if (!change.fully) return 'ignored';
  const payment = await paymentOf(trx, provider, change.providerPaymentIds);
  if (!payment) return 'unmatched';
  if (payment.status === 'REFUNDED') return 'ignored';
  await trx.updateTable('payments').set({ status: 'REFUNDED' }).where('id', '=', payment.id).execute();
  return 'applied';
}

const paymentOf = (trx: Trx, provider: BillingProvider, providerPaymentIds: string[]) =>
  trx
    .selectFrom('payments')
    .select(['id', 'workspace_id', 'status'])
    .where('provider', '=', provider)
    .where('provider_payment_id', 'in', providerPaymentIds)
    .executeTakeFirst();

/** The workspace an event concerns when its changes name only a provider subscription or a refunded payment. */
async function workspaceOfChanges(trx: Trx, provider: BillingProvider, changes: BillingChange[]) {
  const refund = changes.find((c) => c.kind === 'refund');
  if (refund) return (await paymentOf(trx, provider, refund.providerPaymentIds))?.workspace_id ?? null;
  const ref = changes.map((c) => (c.kind === 'refund' ? undefined : c.providerSubscriptionId)).find(Boolean);
  if (!ref) return null;
  const sub = await trx
    .selectFrom('subscriptions')
    .select('workspace_id')
    .where('provider', '=', provider)
    .where('provider_subscription_id', '=', ref)
    .executeTakeFirst();
  return sub?.workspace_id ?? null;
}

async function workspaceExists(trx: Trx, id: string) {
  return Boolean(await trx.selectFrom('workspaces').select('id').where('id', '=', id).executeTakeFirst());
}

// ---------------------------------------------------------------- checkout, cancel, portal

export interface BillingDeps {
  db: Db;
  config: Config;
  processors: Record<ProcessorName, PaymentProcessor>;
  logger: Logger;
}

function notConfigured(config: Config, detail: string) {
  return new AppError(
    'BILLING_NOT_CONFIGURED',
    `Payments are not available right now (${detail}). Please contact ${config.BILLING_SUPPORT_EMAIL}.`,
  );
}

/** The active processor, or a friendly 503 when its keys are missing. */
function activeProcessor(deps: BillingDeps): PaymentProcessor {
  const name = deps.config.BILLING_PROVIDER as ProcessorName;
  const processor = deps.processors[name];
  if (!processor.configured) throw notConfigured(deps.config, `${name} is not configured`);
  return processor;
}

export async function checkout(
  d: BillingDeps,
  actor: Actor,
  user: { email: string },
  workspaceId: string,
  by: { planCode?: string; planId?: string; edition?: string },
) {
  const plan = await findPurchasablePlan(d.db, by);
  if (d.config.BILLING_PROVIDER === 'MOCK') {
    const now = new Date();
    const changes = mockCheckoutChanges(plan, workspaceId, now);
    await applyProviderEvent(d, 'MOCK', {
      id: `mock_checkout_${crypto.randomUUID()}`,
      type: 'checkout.completed',
      occurredAt: now,
      changes,
    });
    await d.db.transaction().execute((trx) =>
      recordAudit(trx, actor, {
        action: 'billing.plan_changed',
        targetType: 'workspace',
        targetId: workspaceId,
        workspaceId,
        metadata: { plan: plan.slug, provider: 'MOCK' },
      }),
    );
    return { provider: 'MOCK' as const, current: await currentPlan(d.db, workspaceId) };
  }

  if (isDemoAccount(d.config, user.email)) {
    throw new AppError(
      'DEMO_READ_ONLY',
      'Real payments are disabled for demo accounts; the mock checkout is available in the demo.',
    );
  }
  const processor = activeProcessor(d);
  const ref = priceRef(d.config, processor.name, plan);
  if (!ref) throw notConfigured(d.config, `the plan "${plan.slug}" has no ${processor.name} price`);
  const workspace = await d.db
    .selectFrom('workspaces')
    .select('processor_a_customer_id')
    .where('id', '=', workspaceId)
    .executeTakeFirstOrThrow();
  const { checkoutUrl } = await processor.createCheckout({
    workspaceId,
    planId: plan.id,
    planSlug: plan.slug,
    planName: plan.name,
    interval: plan.interval,
    priceRef: ref,
    customerEmail: user.email,
    customerId: processor.name === 'PROCESSOR_A' ? workspace.processor_a_customer_id : null,
    successUrl: d.config.BILLING_SUCCESS_URL,
    cancelUrl: d.config.BILLING_CANCEL_URL,
  });
  return { provider: processor.name, checkoutUrl };
}

/** Cancels the live subscription: at once for MOCK, at the end of the paid period with a processor. */
export async function cancel(d: BillingDeps, actor: Actor, workspaceId: string) {
  const sub = await d.db
    .selectFrom('subscriptions')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('status', 'in', [...LIVE_SUBSCRIPTION_STATUSES])
    .executeTakeFirst();
  if (!sub) throw new AppError('CONFLICT', 'This workspace has no active subscription to cancel.');

  // MOCK subscriptions and one-time purchases (which have no subscription at the processor) end at once.
  if (!atProcessor(sub)) {
    await applyProviderEvent(d, sub.provider, {
      id: `local_cancel_${crypto.randomUUID()}`,
      type: 'subscription.canceled',
      occurredAt: new Date(),
      changes: [
        {
          kind: 'subscription',
          providerSubscriptionId: sub.provider_subscription_id!,
          status: 'CANCELED',
          cancelAtPeriodEnd: false,
        },
      ],
    });
  } else {
    const processor = d.processors[sub.provider];
    if (!processor.configured) throw notConfigured(d.config, `${sub.provider} is not configured`);
    const result = await processor.cancelSubscription(sub.provider_subscription_id);
    await d.db
      .updateTable('subscriptions')
      .set({
        cancel_at_period_end: result.cancelAtPeriodEnd,
        current_period_end: result.currentPeriodEnd ?? sub.current_period_end,
        updated_at: new Date(),
      })
      .where('id', '=', sub.id)
      .execute();
  }
  await d.db.transaction().execute((trx) =>
    recordAudit(trx, actor, {
      action: 'billing.subscription_canceled',
      targetType: 'subscription',
      targetId: sub.id,
      workspaceId,
      metadata: { provider: sub.provider },
    }),
  );
  return currentPlan(d.db, workspaceId);
}

/** PROCESSOR_A's billing portal for the workspace's customer. */
export async function portal(d: BillingDeps, workspaceId: string) {
  const processor = d.processors.PROCESSOR_A;
  if (
    d.config.BILLING_PROVIDER !== 'PROCESSOR_A' ||
    !d.config.PROCESSOR_A_CUSTOMER_PORTAL_ENABLED ||
    !processor.createPortalSession
  ) {
    throw new AppError('NOT_FOUND', 'The billing portal is not enabled.');
  }
  if (!processor.configured) throw notConfigured(d.config, 'PROCESSOR_A is not configured');
  const workspace = await d.db
    .selectFrom('workspaces')
    .select('processor_a_customer_id')
    .where('id', '=', workspaceId)
    .executeTakeFirstOrThrow();
  if (!workspace.processor_a_customer_id) {
    throw new AppError('CONFLICT', 'This workspace has no billing account yet: complete a checkout first.');
  }
  return {
    portalUrl: await processor.createPortalSession(workspace.processor_a_customer_id, d.config.BILLING_SUCCESS_URL),
  };
}

export function providerStatus(d: Pick<BillingDeps, 'config' | 'processors'>) {
  const { config } = d;
  if (config.BILLING_PROVIDER === 'MOCK') {
    return {
      provider: 'MOCK' as const,
      configured: true,
      mode: 'mock' as const,
      message: 'Mock payments: checkout completes at once and nothing is charged.',
      customerPortalEnabled: false,
    };
  }
  const processor = d.processors[config.BILLING_PROVIDER];
  return {
    provider: processor.name,
    configured: processor.configured,
    mode: processor.mode,
    message: processor.configured
      ? `Checkout through ${processor.name} is available.`
      : `${processor.name} is selected but its keys are not set, so checkout is unavailable. Contact ${config.BILLING_SUPPORT_EMAIL}.`,
    customerPortalEnabled: processor.name === 'PROCESSOR_A' && config.PROCESSOR_A_CUSTOMER_PORTAL_ENABLED,
  };
}
