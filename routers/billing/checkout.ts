// Buying and leaving a plan: checkout (MOCK at once, a processor through its checkout page), cancellation
// (MOCK at once, a processor at the end of the paid period) and PROCESSOR_A's billing portal.
import crypto from 'node:crypto';
import { LIVE_SUBSCRIPTION_STATUSES } from '../../db/schema.js';
import { isDemoAccount } from '../../server/platform/accounts.js';
import { signedInUser, type Actor } from '../../server/platform/actor.js';
import type { Config } from '../../server/platform/config.js';
import { AppError } from '../../server/platform/errors.js';
import { recordAudit } from '../audit/service.js';
import type { PaymentProcessor, ProcessorName } from './processors/types.js';
import { applyProviderEvent, atProcessor } from './provider-events.js';
import { currentPlan, findPurchasablePlan, mockCheckoutChanges, priceRef, type BillingDeps } from './service.js';
import { seatRef } from './outbox.js';
import { billedSeats, seatsUsed } from './usage.js';

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

/**
 * Buys a plan for the workspace, for the actor: with MOCK the change is made at once (and audited), with a
 * processor the answer is its checkout page for the actor's address (refused to demo accounts).
 */
export async function checkout(
  deps: BillingDeps,
  actor: Actor,
  input: { workspaceId: string; planCode?: string; planId?: string; edition?: string },
) {
  const { workspaceId } = input;
  const plan = await findPurchasablePlan(deps.db, input);
  if (deps.config.BILLING_PROVIDER === 'MOCK') {
    const now = new Date();
    const changes = mockCheckoutChanges(plan, workspaceId, now);
    await applyProviderEvent(deps, {
      provider: 'MOCK',
      event: { id: `mock_checkout_${crypto.randomUUID()}`, type: 'checkout.completed', occurredAt: now, changes },
    });
    await deps.db.transaction().execute((trx) =>
      recordAudit(trx, actor, {
        action: 'billing.plan_changed',
        targetType: 'workspace',
        targetId: workspaceId,
        workspaceId,
        metadata: { plan: plan.slug, provider: 'MOCK' },
      }),
    );
    return { provider: 'MOCK' as const, current: await currentPlan(deps, { workspaceId }) };
  }

  const user = signedInUser(actor);
  if (isDemoAccount(deps.config, user.email)) {
    throw new AppError(
      'DEMO_READ_ONLY',
      'Real payments are disabled for demo accounts; the mock checkout is available in the demo.',
    );
  }
  const processor = activeProcessor(deps);
  const perSeat = plan.pricing_model === 'PER_SEAT';
  const ref = perSeat ? seatRef(deps.config, processor.name, plan) : priceRef(deps.config, processor.name, plan);
  if (!ref) throw notConfigured(deps.config, `the plan "${plan.slug}" has no ${processor.name} price`);
  const workspace = await deps.db
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
    successUrl: deps.config.BILLING_SUCCESS_URL,
    cancelUrl: deps.config.BILLING_CANCEL_URL,
    quantity: perSeat ? billedSeats(await seatsUsed(deps.db, workspaceId), plan.included_seats) : 1,
    trialDays: plan.trial_days,
  });
  return { provider: processor.name, checkoutUrl };
}

/** Cancels the live subscription: at once for MOCK, at the end of the paid period with a processor. */
export async function cancel(deps: BillingDeps, actor: Actor, { workspaceId }: { workspaceId: string }) {
  const sub = await deps.db
    .selectFrom('subscriptions')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('status', 'in', [...LIVE_SUBSCRIPTION_STATUSES])
    .executeTakeFirst();
  if (!sub) throw new AppError('CONFLICT', 'This workspace has no active subscription to cancel.');

  // MOCK subscriptions and one-time purchases (which have no subscription at the processor) end at once.
  if (!atProcessor(sub)) {
    await applyProviderEvent(deps, {
      provider: sub.provider,
      event: {
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
      },
    });
  } else {
    const processor = deps.processors[sub.provider];
    if (!processor.configured) throw notConfigured(deps.config, `${sub.provider} is not configured`);
    const result = await processor.cancelSubscription(sub.provider_subscription_id);
    await deps.db
      .updateTable('subscriptions')
      .set({
        cancel_at_period_end: result.cancelAtPeriodEnd,
        current_period_end: result.currentPeriodEnd ?? sub.current_period_end,
        updated_at: new Date(),
      })
      .where('id', '=', sub.id)
      .execute();
  }
  await deps.db.transaction().execute((trx) =>
    recordAudit(trx, actor, {
      action: 'billing.subscription_canceled',
      targetType: 'subscription',
      targetId: sub.id,
      workspaceId,
      metadata: { provider: sub.provider },
    }),
  );
  return currentPlan(deps, { workspaceId });
}

/** PROCESSOR_A's billing portal for the workspace's customer. */
export async function portal(deps: BillingDeps, { workspaceId }: { workspaceId: string }) {
  const processor = deps.processors.PROCESSOR_A;
  if (
    deps.config.BILLING_PROVIDER !== 'PROCESSOR_A' ||
    !deps.config.PROCESSOR_A_CUSTOMER_PORTAL_ENABLED ||
    !processor.createPortalSession
  ) {
    throw new AppError('NOT_FOUND', 'The billing portal is not enabled.');
  }
  if (!processor.configured) throw notConfigured(deps.config, 'PROCESSOR_A is not configured');
  const workspace = await deps.db
    .selectFrom('workspaces')
    .select('processor_a_customer_id')
    .where('id', '=', workspaceId)
    .executeTakeFirstOrThrow();
  if (!workspace.processor_a_customer_id) {
    throw new AppError('CONFLICT', 'This workspace has no billing account yet: complete a checkout first.');
  }
  return {
    portalUrl: await processor.createPortalSession(workspace.processor_a_customer_id, deps.config.BILLING_SUCCESS_URL),
  };
}
