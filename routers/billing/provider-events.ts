// The provider-event state machine: the one place where subscriptions and payments change. Every provider's
// webhook, the MOCK checkout and a local cancellation become a ProviderEvent applied in one transaction,
// idempotently (applyProviderEvent), so every provider moves a workspace between plans the same way.
import type { Transaction } from 'kysely';
import {
  LIVE_SUBSCRIPTION_STATUSES,
  type BillingProvider,
  type Database,
  type Plan,
  type Subscription,
  type SubscriptionStatus,
} from '../../db/schema.js';
import { storableText } from '../../server/platform/unstorable-text.js';
import { emitEvent } from '../events/emit.js';
import type {
  BillingChange,
  PaymentChange,
  ProcessorName,
  ProviderEvent,
  RefundChange,
  SubscriptionChange,
} from './processors/types.js';
import type { MockEvent } from './schemas.js';
import { requestSeatSync } from './commands.js';
import { applyInvoice, type AfterCommit } from './invoices.js';
import { monthOf } from '../ai/service.js';
import {
  defaultPlan,
  findPurchasablePlan,
  isLive,
  mockCheckoutChanges,
  priceRef,
  type BillingDeps,
} from './service.js';

type Trx = Transaction<Database>;

export type EventOutcome = 'applied' | 'duplicate' | 'stale' | 'unmatched' | 'ignored';

/** What applying a provider event needs. */
export type EventDeps = Pick<BillingDeps, 'db' | 'config' | 'processors' | 'logger' | 'mailer'>;

/** One event being applied; `replaced` collects the live subscriptions that new ones ended. */
interface EventRun {
  trx: Trx;
  deps: EventDeps;
  provider: BillingProvider;
  event: ProviderEvent;
  replaced: Subscription[];
  afterCommit: AfterCommit;
}

/** Moves the workspace onto a plan: edition, plan and a copy of its limits. */
export async function moveWorkspaceToPlan(
  trx: Trx,
  workspaceId: string,
  plan: Pick<Plan, 'id' | 'edition' | 'limits' | 'metered_overage'> | undefined,
) {
  await trx
    .updateTable('workspaces')
    .set({
      plan_id: plan?.id ?? null,
      edition: plan?.edition ?? 'LITE',
      // A metered plan is marked in the copy, so generation knows it from the membership it has loaded.
      limits: JSON.stringify({ ...(plan?.limits ?? {}), ...(plan?.metered_overage ? { meteredOverage: 1 } : {}) }),
      updated_at: new Date(),
    })
    .where('id', '=', workspaceId)
    .execute();
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
        ...(change.trialEndsAt !== undefined && { trial_ends_at: change.trialEndsAt }),
        past_due_since: change.status === 'PAST_DUE' ? (existing.past_due_since ?? event.occurredAt) : null,
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
        trial_ends_at: change.trialEndsAt ?? null,
        past_due_since: change.status === 'PAST_DUE' ? event.occurredAt : null,
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
      .select(['id', 'edition', 'limits', 'metered_overage', 'pricing_model'])
      .where('id', '=', sub.plan_id)
      .executeTakeFirst();
    await moveWorkspaceToPlan(trx, sub.workspace_id, plan);
    // Members may have changed since checkout counted them.
    if (plan?.pricing_model === 'PER_SEAT') await requestSeatSync(trx, sub.workspace_id, monthOf().period);
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
  deps: EventDeps,
  { provider, event }: { provider: BillingProvider; event: ProviderEvent },
): Promise<EventOutcome> {
  const replaced: Subscription[] = [];
  const afterCommit: AfterCommit = [];
  const outcome = await deps.db.transaction().execute(async (trx): Promise<EventOutcome> => {
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
      outcomes.push(await applyChange({ trx, deps, provider, event, replaced, afterCommit }, change));
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
  await cancelReplacedAtProcessor(deps, replaced);
  for (const then of afterCommit) await then(deps);
  return outcome;
}

/**
 * Applies an event of the development webhook of BILLING_PROVIDER=MOCK: `checkout.completed` with
 * `data: { workspaceId, planCode | planId }` moves the workspace to the plan like a MOCK checkout;
 * `subscription.canceled` with `data: { workspaceId }` ends its live subscription;
 * `invoice.payment_failed` and `invoice.paid` with `data: { workspaceId }` bill its live subscription
 * (dunning, locally). Other types are recorded and ignored. A repeated id changes nothing.
 */
export async function applyMockEvent(deps: EventDeps, { id, type, data }: MockEvent): Promise<EventOutcome> {
  const event: ProviderEvent = { id, type, occurredAt: new Date(), changes: [] };
  if (type === 'checkout.completed' && data?.workspaceId && (data.planCode || data.planId)) {
    const plan = await findPurchasablePlan(deps.db, data);
    event.changes = mockCheckoutChanges(plan, data.workspaceId, event.occurredAt);
  } else if ((type === 'invoice.payment_failed' || type === 'invoice.paid') && data?.workspaceId) {
    // Dunning without a processor: a failed (or paid) invoice of the live MOCK subscription.
    const live = await liveMockSubscription(deps, data.workspaceId);
    if (live?.provider_subscription_id) {
      event.changes = [
        {
          kind: 'invoice',
          providerInvoiceId: `mock_inv_${id}`,
          providerSubscriptionId: live.provider_subscription_id,
          amountCents: live.price_cents,
          currency: live.currency,
          status: type === 'invoice.paid' ? 'PAID' : 'FAILED',
        },
      ];
    }
  } else if (type === 'subscription.canceled' && data?.workspaceId) {
    const live = await deps.db
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
  return applyProviderEvent(deps, { provider: 'MOCK', event });
}

const liveMockSubscription = (deps: EventDeps, workspaceId: string) =>
  deps.db
    .selectFrom('subscriptions as s')
    .innerJoin('plans as p', 'p.id', 's.plan_id')
    .select(['s.provider_subscription_id', 'p.price_cents', 'p.currency'])
    .where('s.workspace_id', '=', workspaceId)
    .where('s.provider', '=', 'MOCK')
    .where('s.status', 'in', [...LIVE_SUBSCRIPTION_STATUSES])
    .executeTakeFirst();

function applyChange(run: EventRun, change: BillingChange): Promise<EventOutcome> {
  switch (change.kind) {
    case 'subscription':
      return applySubscription(run, change);
    case 'payment':
      return applyPayment(run.trx, run.provider, change);
    case 'refund':
      return applyRefund(run.trx, run.provider, change);
    case 'invoice':
      return applyInvoice(run.trx, run.provider, change, run.event.occurredAt, run.afterCommit);
  }
}

/** MOCK subscriptions and one-time purchases exist only here; every other one also at its processor. */
export const atProcessor = (
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
async function cancelReplacedAtProcessor(deps: EventDeps, replaced: Subscription[]) {
  for (const sub of replaced.filter(atProcessor)) {
    try {
      await deps.processors[sub.provider].cancelSubscription(sub.provider_subscription_id);
      deps.logger.info(
        { provider: sub.provider, subscriptionId: sub.id },
        'billing: replaced subscription cancelled at its processor',
      );
    } catch (err) {
      deps.logger.error(
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
