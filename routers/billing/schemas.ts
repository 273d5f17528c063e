// Inputs and outputs of the billing routes, and the mapping from plan rows to what clients see.
import { z } from 'zod';
import { displayName, exact } from '../../server/platform/validation.js';
import {
  BILLING_PROVIDERS,
  EDITIONS,
  INVOICE_STATUSES,
  PAYMENT_STATUSES,
  PLAN_INTERVALS,
  PLAN_STATUSES,
  PRICING_MODELS,
  SUBSCRIPTION_STATUSES,
  type Plan,
} from '../../db/schema.js';
import { listInput, listOutput } from '../../server/platform/pagination.js';

const isoDate = z.iso.datetime({ offset: true });

const limitsSchema = z
  .record(
    z
      .string()
      .max(40)
      .regex(/^[A-Za-z][A-Za-z0-9]{0,39}$/),
    z.number().int().min(0).max(1_000_000_000),
  )
  .refine((l) => Object.keys(l).length <= 30, { error: 'At most 30 limits.' })
  .meta({
    description: 'Numeric limits, e.g. { "apiKeys": 5, "aiMonthlyGenerations": 500, "members": 10 }.',
    maxProperties: 30,
  });

const planFields = {
  name: displayName(100),
  slug: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, {
      error: 'Lower-case letters, digits and dashes, starting with a letter or digit (at most 63).',
    })
    .max(63),
  description: z.string().max(2000),
  edition: z.enum(EDITIONS),
  priceCents: exact(
    z
      .number({ error: 'A price in cents: a whole number of 0 or more.' })
      .int({ error: 'A price in cents: a whole number of 0 or more.' })
      .min(0, { error: 'A price in cents: a whole number of 0 or more.' })
      .max(100_000_000),
  ),
  currency: z
    .string()
    .regex(/^[A-Za-z]{3}$/, { error: 'A three-letter ISO currency code.' })
    .max(3)
    .transform((c) => c.toUpperCase()),
  interval: z.enum(PLAN_INTERVALS),
  status: z.enum(['DRAFT', 'PUBLISHED']).meta({ description: 'Archive a plan with POST .../archive.' }),
  badgeText: z.string().max(40),
  isPopular: exact(z.boolean()),
  isDefault: exact(z.boolean()),
  sortOrder: exact(z.number().int().min(-1_000_000).max(1_000_000)),
  features: z.array(z.string().trim().min(1).max(200)).max(50),
  limits: limitsSchema,
  providerAPriceId: z.string().trim().min(1).max(200).nullable(),
  providerBVariantId: z.string().trim().min(1).max(200).nullable(),
  pricingModel: z
    .enum(PRICING_MODELS)
    .meta({ description: 'FLAT: one price; PER_SEAT: the subscription quantity follows the active members.' }),
  includedSeats: exact(
    z
      .number()
      .int()
      .min(0)
      .max(100_000)
      .meta({ description: 'PER_SEAT: seats billed at least (the quantity never goes below it).' }),
  ),
  trialDays: exact(z.number().int().min(0).max(365).meta({ description: 'Days of trial at checkout; 0: none.' })),
  meteredOverage: exact(
    z.boolean().meta({
      description:
        'Generations past limits.aiMonthlyGenerations are billed as usage (up to the service ceiling) instead of refused.',
    }),
  ),
  providerASeatPriceId: z.string().trim().min(1).max(200).nullable(),
  providerAMeterEventName: z
    .string()
    .trim()
    .max(100)
    .regex(/^[A-Za-z0-9_.:-]{1,100}$/, { error: 'A Stripe meter event name: letters, digits, _ . : - (at most 100).' })
    .nullable(),
  providerBSeatVariantId: z.string().trim().min(1).max(200).nullable(),
};

export const createPlanInput = z.object({
  ...planFields,
  description: planFields.description.default(''),
  currency: planFields.currency.default('USD'),
  interval: planFields.interval.default('MONTHLY'),
  edition: planFields.edition.default('CUSTOM'),
  status: planFields.status.default('DRAFT'),
  badgeText: planFields.badgeText.default(''),
  isPopular: planFields.isPopular.default(false),
  isDefault: planFields.isDefault.default(false),
  sortOrder: planFields.sortOrder.default(0),
  features: planFields.features.default([]),
  limits: limitsSchema.default({}),
  providerAPriceId: planFields.providerAPriceId.optional(),
  providerBVariantId: planFields.providerBVariantId.optional(),
  pricingModel: planFields.pricingModel.default('FLAT'),
  includedSeats: planFields.includedSeats.default(1),
  trialDays: planFields.trialDays.default(0),
  meteredOverage: planFields.meteredOverage.default(false),
  providerASeatPriceId: planFields.providerASeatPriceId.optional(),
  providerAMeterEventName: planFields.providerAMeterEventName.optional(),
  providerBSeatVariantId: planFields.providerBSeatVariantId.optional(),
});
export type CreatePlanInput = z.infer<typeof createPlanInput>;

export const planIdInput = z.object({ planId: z.uuid() });
export const updatePlanInput = planIdInput.extend(
  Object.fromEntries(Object.entries(planFields).map(([k, v]) => [k, v.optional()])) as {
    [K in keyof typeof planFields]: z.ZodOptional<(typeof planFields)[K]>;
  },
);
export type UpdatePlanInput = Omit<z.infer<typeof updatePlanInput>, 'planId'>;

export const planOutput = z
  .object({
    id: z.uuid(),
    name: z.string(),
    slug: z.string(),
    code: z.string().meta({ description: 'The same as slug; checkout takes it as planCode.' }),
    description: z.string(),
    edition: z.enum(EDITIONS),
    priceCents: z.number().int(),
    currency: z.string(),
    interval: z.enum(PLAN_INTERVALS),
    status: z.enum(PLAN_STATUSES),
    badgeText: z.string(),
    isPopular: z.boolean(),
    isDefault: z.boolean(),
    sortOrder: z.number().int(),
    features: z.array(z.string()),
    limits: z.record(z.string(), z.number()),
    providerAPriceId: z.string().nullable(),
    providerBVariantId: z.string().nullable(),
    pricingModel: z.enum(PRICING_MODELS),
    includedSeats: z.number().int(),
    trialDays: z.number().int(),
    meteredOverage: z.boolean(),
    providerASeatPriceId: z.string().nullable(),
    providerAMeterEventName: z.string().nullable(),
    providerBSeatVariantId: z.string().nullable(),
    createdAt: isoDate,
    updatedAt: isoDate,
  })
  .meta({ id: 'Plan' });
export type PlanOutput = z.infer<typeof planOutput>;

export function toPlanOutput(p: Plan): PlanOutput {
  return {
    id: p.id,
    name: p.name,
    slug: p.slug,
    code: p.slug,
    description: p.description,
    edition: p.edition,
    priceCents: p.price_cents,
    currency: p.currency,
    interval: p.interval,
    status: p.status,
    badgeText: p.badge_text,
    isPopular: p.is_popular,
    isDefault: p.is_default,
    sortOrder: p.sort_order,
    features: p.features,
    limits: p.limits as Record<string, number>,
    providerAPriceId: p.processor_a_price_id,
    providerBVariantId: p.processor_b_variant_id,
    pricingModel: p.pricing_model,
    includedSeats: p.included_seats,
    trialDays: p.trial_days,
    meteredOverage: p.metered_overage,
    providerASeatPriceId: p.processor_a_seat_price_id,
    providerAMeterEventName: p.processor_a_meter_event_name,
    providerBSeatVariantId: p.processor_b_seat_variant_id,
    createdAt: p.created_at.toISOString(),
    updatedAt: p.updated_at.toISOString(),
  };
}

export const planListOutput = z.object({ items: z.array(planOutput) }).meta({ id: 'PlanList' });

// ---- workspace billing

/** The workspace to bill: named, or the caller's active workspace. */
export const workspaceBillingInput = z.object({
  workspaceId: z.uuid().optional().meta({ description: "Defaults to the caller's active workspace." }),
});

const planChoice = {
  planCode: z.string().trim().min(1).max(63).optional().meta({ description: 'The plan slug (preferred), e.g. "pro".' }),
  planId: z.uuid().optional(),
  edition: z
    .string()
    .trim()
    .min(1)
    .max(20)
    .optional()
    .meta({ description: 'Legacy: an edition key such as "pro" or "PRO".' }),
};
const namesAPlan = (i: { planCode?: string; planId?: string; edition?: string }) =>
  i.planCode !== undefined || i.planId !== undefined || i.edition !== undefined;
const planRequired = { error: 'Name the plan: planCode (preferred), planId or edition.', path: ['planCode'] };

export const checkoutInput = workspaceBillingInput.extend(planChoice).refine(namesAPlan, planRequired);
export const legacyCheckoutInput = z.object({ workspaceId: z.uuid(), ...planChoice }).refine(namesAPlan, planRequired);

export const currentPlanOutput = z
  .object({
    workspaceId: z.uuid(),
    edition: z.enum(EDITIONS),
    plan: planOutput.nullable(),
    limits: z.record(z.string(), z.number()),
    subscription: z
      .object({
        id: z.uuid(),
        provider: z.enum(BILLING_PROVIDERS),
        status: z.enum(SUBSCRIPTION_STATUSES),
        currentPeriodStart: isoDate.nullable(),
        currentPeriodEnd: isoDate.nullable(),
        cancelAtPeriodEnd: z.boolean(),
        canceledAt: isoDate.nullable(),
      })
      .meta({ id: 'Subscription' })
      .nullable(),
    status: z
      .enum([...SUBSCRIPTION_STATUSES, 'FREE'])
      .meta({ description: 'The subscription status, or FREE without one.' }),
    currentPeriodEnd: isoDate.nullable(),
    seats: z
      .object({
        used: z.number().int().meta({ description: 'Active members (pending invitations are not counted).' }),
        included: z.number().int().meta({ description: 'Seats the plan bills at least.' }),
        billed: z.number().int().meta({ description: 'Seats billed: the larger of used and included.' }),
      })
      .nullable()
      .meta({ description: 'Null unless the plan is PER_SEAT.' }),
    trialEndsAt: isoDate.nullable().meta({ description: 'When the trial ends, while the subscription is TRIALING.' }),
    pastDueSince: isoDate
      .nullable()
      .meta({ description: 'While PAST_DUE: since when; the plan is kept for BILLING_GRACE_DAYS after it.' }),
    usage: z.object({
      generations: z.number().int().meta({ description: "This month's generations (UTC calendar month)." }),
      included: z.number().int().meta({ description: 'The effective monthly limit of the plan.' }),
      overage: z.number().int().meta({ description: 'Generations past `included`, billed as usage (metered plans).' }),
      reported: z.number().int().meta({ description: 'Overage generations the processor has acknowledged.' }),
    }),
  })
  .meta({ id: 'CurrentPlan' });

export const portalOutput = z.object({ portalUrl: z.url() }).meta({ id: 'BillingPortal' });

export const checkoutOutput = z
  .object({
    provider: z.enum(BILLING_PROVIDERS),
    /** PROCESSOR_A / PROCESSOR_B: where to send the customer. */
    checkoutUrl: z.url().optional(),
    /** MOCK: the plan the workspace is on now. */
    current: currentPlanOutput.optional(),
  })
  .meta({ id: 'Checkout' });

export const paymentOutput = z
  .object({
    id: z.uuid(),
    provider: z.enum(BILLING_PROVIDERS),
    status: z.enum(PAYMENT_STATUSES),
    amountCents: z.number().int(),
    currency: z.string(),
    description: z.string(),
    planId: z.uuid().nullable(),
    receiptUrl: z.string().optional(),
    invoiceUrl: z.string().optional(),
    createdAt: isoDate,
  })
  .meta({ id: 'Payment' });

export const historyInput = workspaceBillingInput.extend(listInput.shape);

/** The legacy routes name the workspace in the path. */
export const legacyWorkspaceInput = z.object({ workspaceId: z.uuid() });
export const legacyHistoryInput = legacyWorkspaceInput.extend(historyInput.shape).extend({ workspaceId: z.uuid() });
export const historyOutput = listOutput(paymentOutput);

export const invoiceOutput = z
  .object({
    id: z.uuid(),
    number: z.string().nullable(),
    amountCents: z.number().int(),
    currency: z.string(),
    status: z.enum(INVOICE_STATUSES),
    periodStart: isoDate.nullable(),
    periodEnd: isoDate.nullable(),
    hostedUrl: z.string().nullable(),
    createdAt: isoDate,
  })
  .meta({ id: 'Invoice' });
export const invoicesOutput = listOutput(invoiceOutput);

export const providerStatusOutput = z
  .object({
    provider: z.enum(BILLING_PROVIDERS),
    configured: z.boolean(),
    mode: z.enum(['mock', 'test', 'live']),
    message: z.string(),
    customerPortalEnabled: z.boolean(),
  })
  .meta({ id: 'BillingProviderStatus' });

// ---- admin settings

const processorSettingsOutput = z.object({
  active: z.boolean(),
  configured: z.boolean(),
  webhookConfigured: z.boolean(),
  webhookPath: z.string(),
  mode: z.enum(['test', 'live']),
  pricesConfigured: z.object({ lite: z.boolean(), pro: z.boolean(), enterprise: z.boolean() }),
});

export const billingSettingsOutput = z
  .object({
    provider: z.enum(BILLING_PROVIDERS),
    source: z.literal('environment'),
    readOnly: z.literal(true),
    successUrl: z.string(),
    cancelUrl: z.string(),
    supportEmail: z.string(),
    customerPortalEnabled: z.boolean(),
    mockWebhookEnabled: z.boolean(),
    processorA: processorSettingsOutput,
    processorB: processorSettingsOutput,
  })
  .meta({ id: 'BillingSettings' });
export type BillingSettings = z.infer<typeof billingSettingsOutput>;

// ---- the MOCK provider's development webhook (a plain route: webhooks.ts)

export const mockEventInput = z.object({
  id: z.string().min(1).max(200),
  type: z.string().min(1).max(100),
  data: z
    .object({
      workspaceId: z.uuid().optional(),
      planCode: z.string().max(63).optional(),
      planId: z.uuid().optional(),
    })
    .optional(),
});
export type MockEvent = z.infer<typeof mockEventInput>;
