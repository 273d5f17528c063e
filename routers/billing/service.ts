// Workspace billing as the catalogue and the records show it: the current plan, the payment history, the
// provider's status, and what checkout and provider events share (a purchasable plan, its processor price,
// what a MOCK checkout reports, the default plan). Checkout, cancellation and the portal are in checkout.ts;
// the one place where subscriptions and payments change, applyProviderEvent, is in provider-events.ts.
import crypto from 'node:crypto';
import type { Kysely } from 'kysely';
import { LIVE_SUBSCRIPTION_STATUSES, type Database, type Plan } from '../../db/schema.js';
import type { Config } from '../../server/platform/config.js';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import { listRequestOf, mapItems, paginate, type ListRequest } from '../../server/platform/pagination.js';
import type { BillingChange, ProcessorName } from './processors/types.js';
import { toPlanOutput } from './schemas.js';
import { billedSeats, overageOf, seatsUsed } from './usage.js';
import { monthOf, workspaceLimit } from '../ai/service.js';

type Db = Kysely<Database>;

/** What billing's use cases need: the database, the settings, the payment processors and the log. */
export type BillingDeps = Pick<AppDeps, 'db' | 'config' | 'processors' | 'logger' | 'mailer'>;

export const isLive = (status: string) => (LIVE_SUBSCRIPTION_STATUSES as readonly string[]).includes(status);

/** What the caller may see of the workspace's billing: plan, subscription, seats, trial and usage. */
export async function currentPlan(
  { db, config }: Pick<AppDeps, 'db' | 'config'>,
  { workspaceId }: { workspaceId: string },
) {
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
  const { period } = monthOf();
  const [used, counter, overage] = await Promise.all([
    plan?.pricing_model === 'PER_SEAT' ? seatsUsed(db, workspaceId) : undefined,
    db
      .selectFrom('ai_usage_counters')
      .select('generations')
      .where('workspace_id', '=', workspaceId)
      .where('period', '=', period)
      .executeTakeFirst(),
    overageOf(db, workspaceId, period),
  ]);
  const limits = workspace.limits as Record<string, number>;
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
    seats:
      plan && used !== undefined
        ? { used, included: plan.included_seats, billed: billedSeats(used, plan.included_seats) }
        : null,
    trialEndsAt: sub?.status === 'TRIALING' ? (sub.trial_ends_at?.toISOString() ?? null) : null,
    pastDueSince: sub?.status === 'PAST_DUE' ? (sub.past_due_since?.toISOString() ?? null) : null,
    usage: {
      generations: counter?.generations ?? 0,
      included: workspaceLimit(config, { edition: workspace.edition, limits }).limit,
      ...overage,
    },
  };
}

/** A workspace's payments, newest first, by page or cursor. */
export async function paymentHistory(
  deps: Pick<AppDeps, 'db' | 'config'>,
  input: ListRequest & { workspaceId: string },
) {
  const { workspaceId, ...request } = input;
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
export function priceRef(config: Config, processor: ProcessorName, plan: Plan): string | undefined {
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

/**
 * What a completed MOCK checkout reports: an ACTIVE subscription and, for a paid plan, its payment; for a
 * plan with trial days, a TRIALING subscription until the trial's end, and nothing paid yet.
 */
export function mockCheckoutChanges(plan: Plan, workspaceId: string, now: Date): BillingChange[] {
  const providerSubscriptionId = `mock_sub_${crypto.randomUUID()}`;
  const trialEndsAt =
    plan.trial_days > 0 && plan.interval !== 'ONE_TIME' ? new Date(now.getTime() + plan.trial_days * 86_400_000) : null;
  const changes: BillingChange[] = [
    {
      kind: 'subscription',
      providerSubscriptionId,
      workspaceId,
      planId: plan.id,
      status: trialEndsAt ? 'TRIALING' : 'ACTIVE',
      currentPeriodStart: now,
      currentPeriodEnd: trialEndsAt ?? periodEnd(now, plan.interval),
      trialEndsAt,
    },
  ];
  if (plan.price_cents > 0 && !trialEndsAt) {
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

/**
 * The plan new workspaces start on (`isDefault`), if one is marked. Not filtered by status: the admin routes
 * keep an ARCHIVED plan from being the default, and skipping a DRAFT default would leave workspaces planless.
 */
export async function defaultPlan(db: Db) {
  return db
    .selectFrom('plans')
    .select(['id', 'edition', 'limits', 'metered_overage'])
    .where('is_default', '=', true)
    .executeTakeFirst();
}

/** The active payment provider and whether it is configured (never a secret). */
export function providerStatus(deps: Pick<BillingDeps, 'config' | 'processors'>) {
  const { config } = deps;
  if (config.BILLING_PROVIDER === 'MOCK') {
    return {
      provider: 'MOCK' as const,
      configured: true,
      mode: 'mock' as const,
      message: 'Mock payments: checkout completes at once and nothing is charged.',
      customerPortalEnabled: false,
    };
  }
  const processor = deps.processors[config.BILLING_PROVIDER];
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
