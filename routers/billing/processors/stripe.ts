// PROCESSOR_A: the Stripe adapter. Outbound calls (Checkout Sessions, cancel at period end, billing portal,
// seat quantities, meter events on the v2 meter event stream: stripe-meter-stream.ts) go through the
// official `stripe` SDK; inbound webhooks are verified with the SDK's `constructEvent` (Stripe-Signature,
// 300 s tolerance) and translated into BillingChanges for the billing service.
//
// Webhook payloads are read through the small `*Wire` shapes below rather than the SDK's types: an
// endpoint's events use the API version the endpoint was created with, which need not be the one the SDK
// is typed for (e.g. subscription periods moved from the subscription onto its items in 2025).
import Stripe from 'stripe';
import type { PaymentStatus, SubscriptionStatus } from '../../../db/schema.js';
import type { Config } from '../../../server/platform/config.js';
import { AppError } from '../../../server/platform/errors.js';
import { NOT_CONFIGURED, WEBHOOKS_NOT_CONFIGURED } from './stripe-unconfigured.js';
import { createMeterStream } from './stripe-meter-stream.js';
import {
  ourId,
  type BillingChange,
  type CheckoutRequest,
  type InvoiceChange,
  type PaymentChange,
  type PaymentProcessor,
  type ProcessorOptions,
  type SubscriptionChange,
} from './types.js';

export type StripeConfig = Pick<
  Config,
  'PROCESSOR_A_SECRET_KEY' | 'PROCESSOR_A_WEBHOOK_SECRET' | 'PROCESSOR_A_BASE_URL'
>;

/** Stripe's documented default: a signature older than 5 minutes is refused (replay protection). */
const SIGNATURE_TOLERANCE_SECONDS = 300;
const DEFAULT_TIMEOUT_MS = 10_000;

const UNAVAILABLE = 'The payment provider could not complete the request. Please try again in a moment.';

export function createStripeProcessor(config: StripeConfig, options: ProcessorOptions = {}): PaymentProcessor {
  const secretKey = config.PROCESSOR_A_SECRET_KEY;
  const webhookSecret = config.PROCESSOR_A_WEBHOOK_SECRET;
  const stripe = secretKey
    ? createClient(secretKey, config.PROCESSOR_A_BASE_URL, options.timeoutMs ?? DEFAULT_TIMEOUT_MS)
    : null;

  const client = (): Stripe => {
    if (!stripe) throw new AppError('BILLING_NOT_CONFIGURED', NOT_CONFIGURED);
    return stripe;
  };

  const meterStream = createMeterStream(client, () => new AppError('BAD_GATEWAY', UNAVAILABLE));

  return {
    name: 'PROCESSOR_A',
    configured: Boolean(secretKey),
    webhookConfigured: Boolean(webhookSecret),
    mode: secretKey && /^(sk|rk)_live_/.test(secretKey) ? 'live' : 'test',

    async createCheckout(request) {
      const session = await callStripe(() => client().checkout.sessions.create(checkoutParams(request)));
      if (!session.url) throw new AppError('BAD_GATEWAY', UNAVAILABLE);
      return { checkoutUrl: session.url };
    },

    async cancelSubscription(providerSubscriptionId) {
      const subscription = await callStripe(() =>
        client().subscriptions.update(providerSubscriptionId, { cancel_at_period_end: true }),
      );
      const wire = subscription as unknown as SubscriptionWire;
      return {
        status: subscriptionStatus(wire.status) ?? 'ACTIVE',
        cancelAtPeriodEnd: cancelsAtPeriodEnd(wire),
        currentPeriodEnd: periodOf(wire).end ?? null,
      };
    },

    async updateSeats({ providerSubscriptionId, seatRef, quantity }) {
      const subscription = (await callStripe(() =>
        client().subscriptions.retrieve(providerSubscriptionId),
      )) as unknown as SubscriptionWire;
      const items = subscription.items?.data ?? [];
      const item = items.find((i) => seatRef && refId(i.price) === seatRef) ?? (seatRef ? undefined : items[0]);
      // Prorations: the change is charged (or credited) for the rest of the period on the next invoice.
      if (item?.id) {
        await callStripe(() =>
          client().subscriptionItems.update(item.id!, { quantity, proration_behavior: 'create_prorations' }),
        );
      } else if (seatRef) {
        await callStripe(() =>
          client().subscriptionItems.create({
            subscription: providerSubscriptionId,
            price: seatRef,
            quantity,
            proration_behavior: 'create_prorations',
          }),
        );
      } else throw new AppError('BAD_GATEWAY', UNAVAILABLE);
    },

    async reportUsage({ customerId, meterEventName, identifier, occurredAt }) {
      if (!customerId || !meterEventName) throw new AppError('BAD_GATEWAY', 'No customer or meter to report to.');
      await meterStream.send([{ customerId, meterEventName, identifier, occurredAt }]);
    },

    async reportUsageBatch(events) {
      await meterStream.send(events);
    },

    async createPortalSession(customerId, returnUrl) {
      const session = await callStripe(() =>
        client().billingPortal.sessions.create({ customer: customerId, return_url: returnUrl }),
      );
      if (!session.url) throw new AppError('BAD_GATEWAY', UNAVAILABLE);
      return session.url;
    },

    parseWebhook(rawBody, headers) {
      if (!webhookSecret) {
        throw new AppError('BILLING_NOT_CONFIGURED', WEBHOOKS_NOT_CONFIGURED);
      }
      const event = verifiedEvent(rawBody, headers['stripe-signature'], webhookSecret);
      return {
        id: event.id,
        type: event.type,
        occurredAt: typeof event.created === 'number' ? new Date(event.created * 1000) : new Date(),
        changes: translate(event),
      };
    },
  };
}

// ---------------------------------------------------------------- outbound

/** One SDK client per adapter; PROCESSOR_A_BASE_URL (tests: a local fake) becomes host/port/protocol. */
function createClient(secretKey: string, baseUrl: string | undefined, timeoutMs: number): Stripe {
  // Failures become BAD_GATEWAY at once: the caller is a person waiting on a checkout button.
  const options: ConstructorParameters<typeof Stripe>[1] = { maxNetworkRetries: 0, timeout: timeoutMs };
  if (baseUrl) {
    const url = new URL(baseUrl);
    const protocol = url.protocol.replace(/:$/, '');
    // The SDK takes no path prefix, so only scheme, host and port of the setting are used.
    if (protocol !== 'http' && protocol !== 'https')
      throw new Error('PROCESSOR_A_BASE_URL must be an http or https URL');
    options.protocol = protocol;
    options.host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    options.port = url.port || (protocol === 'https' ? 443 : 80);
  }
  return new Stripe(secretKey, options);
}

/**
 * Runs one SDK call. Any failure (an error answer, a timeout, no connection) becomes a friendly
 * BAD_GATEWAY: Stripe's own message can name the key or request details, so it never reaches the client.
 */
async function callStripe<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw new AppError('BAD_GATEWAY', UNAVAILABLE);
  }
}

function checkoutParams(request: CheckoutRequest): Stripe.Checkout.SessionCreateParams {
  const oneTime = request.interval === 'ONE_TIME';
  const metadata = { workspaceId: request.workspaceId, planId: request.planId, planSlug: request.planSlug };
  return {
    mode: oneTime ? 'payment' : 'subscription',
    line_items: [{ price: request.priceRef, quantity: oneTime ? 1 : (request.quantity ?? 1) }],
    success_url: request.successUrl,
    cancel_url: request.cancelUrl,
    client_reference_id: request.workspaceId,
    metadata,
    // The metadata is copied onto what outlives the session, so later subscription and invoice events
    // still name the workspace and plan.
    ...(oneTime
      ? { payment_intent_data: { metadata } }
      : { subscription_data: { metadata, ...(request.trialDays ? { trial_period_days: request.trialDays } : {}) } }),
    ...(request.customerId
      ? { customer: request.customerId }
      : {
          customer_email: request.customerEmail,
          // Subscription mode always creates a customer; payment mode only when asked, and the workspace
          // needs one for the billing portal.
          ...(oneTime ? { customer_creation: 'always' as const } : {}),
        }),
  };
}

// ---------------------------------------------------------------- inbound: verification

interface EventWire {
  id: string;
  type: string;
  created?: number;
  data: { object: Record<string, unknown> };
}

/**
 * The SDK checks the HMAC and the age of the timestamp. It parses `t=` leniently (`t=12abc` is 12, `t=abc`
 * gives NaN, which skips the age check) and accepts any timestamp in the future, so the header's
 * timestamp is checked here first: digits only, and within the tolerance either way.
 */
function verifiedEvent(rawBody: Buffer, header: string | string[] | undefined, secret: string): EventWire {
  const invalid = (why: string) => new AppError('INVALID_SIGNATURE', `Invalid Stripe-Signature header: ${why}.`);
  // Node joins a repeated custom header into one string; an array only comes from a hand-built request.
  if (typeof header !== 'string' || header.trim() === '') throw invalid('missing');
  const timestamp = headerTimestamp(header);
  if (timestamp === null) throw invalid('malformed');
  const age = Math.floor(Date.now() / 1000) - timestamp;
  if (age > SIGNATURE_TOLERANCE_SECONDS) throw invalid(`timestamp is more than ${SIGNATURE_TOLERANCE_SECONDS} s old`);
  if (-age > SIGNATURE_TOLERANCE_SECONDS)
    throw invalid(`timestamp is more than ${SIGNATURE_TOLERANCE_SECONDS} s in the future`);

  let event: unknown;
  try {
    event = Stripe.webhooks.constructEvent(rawBody, header, secret, SIGNATURE_TOLERANCE_SECONDS);
  } catch (err) {
    // Signed with the secret but not JSON: not a forgery, but not an event either.
    if (err instanceof SyntaxError) throw new AppError('BAD_REQUEST', 'The webhook body is not valid JSON.');
    throw invalid('no signature matches this body');
  }
  if (!isEventWire(event)) throw new AppError('BAD_REQUEST', 'The webhook body is not a Stripe event.');
  return event;
}

/** The single `t=` value of the header when it is all digits, else null. */
function headerTimestamp(header: string): number | null {
  const values = header
    .split(',')
    .map((part) => part.trim().split('='))
    .filter(([key]) => key === 't')
    .map(([, value]) => value ?? '');
  return values.length === 1 && /^\d{1,12}$/.test(values[0]) ? Number(values[0]) : null;
}

function isEventWire(value: unknown): value is EventWire {
  const v = value as Partial<EventWire> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.id === 'string' &&
    typeof v.type === 'string' &&
    typeof v.data === 'object' &&
    v.data !== null &&
    typeof v.data.object === 'object' &&
    v.data.object !== null
  );
}

// ---------------------------------------------------------------- inbound: translation

/** An id field that may arrive as a string or, when expanded, as the object. */
type Ref = string | { id: string } | null | undefined;
type Metadata = Record<string, string> | null | undefined;

interface CheckoutSessionWire {
  id: string;
  mode?: 'payment' | 'setup' | 'subscription';
  payment_status?: 'paid' | 'unpaid' | 'no_payment_required';
  subscription?: Ref;
  customer?: Ref;
  payment_intent?: Ref;
  client_reference_id?: string | null;
  metadata?: Metadata;
  amount_total?: number | null;
  currency?: string | null;
}

interface PeriodWire {
  current_period_start?: number | null;
  current_period_end?: number | null;
}

interface SubscriptionWire extends PeriodWire {
  id: string;
  status: string;
  customer?: Ref;
  cancel_at_period_end?: boolean | null;
  cancel_at?: number | null;
  trial_end?: number | null;
  metadata?: Metadata;
  items?: { data?: Array<PeriodWire & { id?: string; price?: Ref }> };
}

interface InvoiceWire {
  id: string;
  number?: string | null;
  period_start?: number | null;
  period_end?: number | null;
  amount_paid?: number;
  amount_due?: number;
  attempt_count?: number;
  currency?: string;
  customer?: Ref;
  hosted_invoice_url?: string | null;
  invoice_pdf?: string | null;
  /** API versions before 2025-03-31. */
  subscription?: Ref;
  subscription_details?: { metadata?: Metadata } | null;
  /** API versions from 2025-03-31. */
  parent?: { subscription_details?: { subscription?: Ref; metadata?: Metadata } | null } | null;
}

function translate(event: EventWire): BillingChange[] {
  const object = event.data.object;
  switch (event.type) {
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded':
      return fromCheckoutSession(object as unknown as CheckoutSessionWire, event.type);
    case 'customer.subscription.created':
    case 'customer.subscription.updated':
    case 'customer.subscription.deleted':
      return fromSubscription(object as unknown as SubscriptionWire);
    case 'invoice.paid':
    case 'invoice.payment_succeeded':
      return [
        fromInvoice(object as unknown as InvoiceWire, 'SUCCEEDED'),
        invoiceOf(object as unknown as InvoiceWire, 'PAID'),
      ];
    case 'invoice.payment_failed':
      return [
        fromInvoice(object as unknown as InvoiceWire, 'FAILED'),
        invoiceOf(object as unknown as InvoiceWire, 'FAILED'),
      ];
    case 'invoice.finalized':
      return [invoiceOf(object as unknown as InvoiceWire, 'OPEN')];
    case 'invoice.voided':
      return [invoiceOf(object as unknown as InvoiceWire, 'VOID')];
    case 'charge.refunded':
      return fromRefundedCharge(object as unknown as ChargeWire);
    default:
      return [];
  }
}

function fromCheckoutSession(session: CheckoutSessionWire, type: string): BillingChange[] {
  const workspaceId = ourId(session.metadata?.workspaceId ?? session.client_reference_id);
  const planId = ourId(session.metadata?.planId);
  const customerId = refId(session.customer);

  if (session.mode === 'subscription') {
    // The subscription's own events carry its periods; this one only links it to the workspace and plan.
    const providerSubscriptionId = refId(session.subscription);
    if (!providerSubscriptionId) return [];
    return [{ kind: 'subscription', providerSubscriptionId, workspaceId, planId, customerId, status: 'ACTIVE' }];
  }
  if (session.mode !== 'payment') return [];
  // A delayed payment method (e.g. a bank debit) completes the session unpaid; the money is only there
  // with checkout.session.async_payment_succeeded, which comes back through here.
  if (type === 'checkout.session.completed' && session.payment_status === 'unpaid') return [];

  // A one-time plan has no subscription at Stripe: a local one, named after the session, moves the
  // workspace onto the plan. It comes first so the payment is linked to it.
  const providerSubscriptionId = `onetime_${session.id}`;
  const changes: BillingChange[] = [
    {
      kind: 'subscription',
      providerSubscriptionId,
      workspaceId,
      planId,
      customerId,
      status: 'ACTIVE',
      currentPeriodEnd: null,
    },
  ];
  const providerPaymentId = refId(session.payment_intent);
  if (providerPaymentId) {
    changes.push({
      kind: 'payment',
      providerPaymentId,
      providerSubscriptionId,
      workspaceId,
      planId,
      amountCents: session.amount_total ?? 0,
      currency: (session.currency ?? '').toUpperCase(),
      status: 'SUCCEEDED',
    });
  }
  return changes;
}

const SUBSCRIPTION_STATUS: Record<string, SubscriptionStatus> = {
  active: 'ACTIVE',
  trialing: 'TRIALING',
  past_due: 'PAST_DUE',
  // Stripe has stopped collecting (retries used up, or a trial ended without a payment method): the plan
  // ends here too rather than staying paid for nothing. A later payment makes it active again.
  unpaid: 'CANCELED',
  paused: 'CANCELED',
  canceled: 'CANCELED',
  incomplete_expired: 'CANCELED',
  incomplete: 'INCOMPLETE',
};

function subscriptionStatus(status: string): SubscriptionStatus | undefined {
  return SUBSCRIPTION_STATUS[status];
}

function fromSubscription(subscription: SubscriptionWire): BillingChange[] {
  const status = subscriptionStatus(subscription.status);
  // A status this code does not know is left alone rather than guessed (a wrong guess could end a plan).
  if (!status) return [];
  const period = periodOf(subscription);
  const change: SubscriptionChange = {
    kind: 'subscription',
    providerSubscriptionId: subscription.id,
    workspaceId: ourId(subscription.metadata?.workspaceId),
    planId: ourId(subscription.metadata?.planId),
    priceRef: refId(subscription.items?.data?.[0]?.price),
    customerId: refId(subscription.customer),
    status,
    currentPeriodStart: period.start,
    currentPeriodEnd: period.end,
    cancelAtPeriodEnd: cancelsAtPeriodEnd(subscription),
    ...(subscription.trial_end !== undefined && { trialEndsAt: fromUnix(subscription.trial_end) ?? null }),
  };
  return [change];
}

/**
 * Top-level periods (older API versions), else those of the first item (newer versions). Undefined when
 * neither is there, so a stored period is kept rather than erased.
 */
function periodOf(subscription: SubscriptionWire): { start: Date | undefined; end: Date | undefined } {
  const item = subscription.items?.data?.[0];
  return {
    start: fromUnix(subscription.current_period_start ?? item?.current_period_start),
    end: fromUnix(subscription.current_period_end ?? item?.current_period_end),
  };
}

/** Stripe's newer portal schedules the end with `cancel_at` instead of the flag; both mean "ends later". */
function cancelsAtPeriodEnd(subscription: SubscriptionWire): boolean {
  if (subscription.status === 'canceled') return false;
  return subscription.cancel_at_period_end === true || typeof subscription.cancel_at === 'number';
}

function fromInvoice(invoice: InvoiceWire, status: PaymentStatus): PaymentChange {
  const details = invoice.parent?.subscription_details;
  const metadata = details?.metadata ?? invoice.subscription_details?.metadata;
  const failed = status === 'FAILED';
  return {
    kind: 'payment',
    // A failed attempt gets its own id: the invoice's id stays free for the payment that later succeeds
    // (payments are stored once per provider id).
    providerPaymentId: failed ? `${invoice.id}_failed_${invoice.attempt_count ?? 1}` : invoice.id,
    providerSubscriptionId: refId(invoice.subscription) ?? refId(details?.subscription),
    workspaceId: ourId(metadata?.workspaceId),
    planId: ourId(metadata?.planId),
    amountCents: (failed ? invoice.amount_due : invoice.amount_paid) ?? 0,
    currency: (invoice.currency ?? '').toUpperCase(),
    status,
    ...(invoice.hosted_invoice_url ? { invoiceUrl: invoice.hosted_invoice_url } : {}),
    ...(invoice.invoice_pdf ? { receiptUrl: invoice.invoice_pdf } : {}),
  };
}

function invoiceOf(invoice: InvoiceWire, status: InvoiceChange['status']): InvoiceChange {
  const details = invoice.parent?.subscription_details;
  const metadata = details?.metadata ?? invoice.subscription_details?.metadata;
  return {
    kind: 'invoice',
    providerInvoiceId: invoice.id,
    providerSubscriptionId: refId(invoice.subscription) ?? refId(details?.subscription),
    workspaceId: ourId(metadata?.workspaceId),
    number: invoice.number ?? null,
    amountCents: (status === 'PAID' ? invoice.amount_paid : invoice.amount_due) ?? 0,
    currency: (invoice.currency ?? '').toUpperCase(),
    status,
    periodStart: fromUnix(invoice.period_start) ?? null,
    periodEnd: fromUnix(invoice.period_end) ?? null,
    hostedUrl: invoice.hosted_invoice_url ?? null,
  };
}

interface ChargeWire {
  id: string;
  refunded?: boolean;
  payment_intent?: Ref;
  /** API versions before 2025-03-31. */
  invoice?: Ref;
}

/**
 * A one-time payment is stored under its PaymentIntent, a subscription payment under its invoice; the
 * charge names the first and, before API version 2025-03-31, the second.
 */
function fromRefundedCharge(charge: ChargeWire): BillingChange[] {
  const ids = [refId(charge.payment_intent), refId(charge.invoice)].filter((id): id is string => Boolean(id));
  return ids.length === 0 ? [] : [{ kind: 'refund', providerPaymentIds: ids, fully: charge.refunded === true }];
}

function refId(ref: Ref): string | undefined {
  if (typeof ref === 'string') return ref;
  return ref && typeof ref.id === 'string' ? ref.id : undefined;
}

function fromUnix(seconds: number | null | undefined): Date | undefined {
  return typeof seconds === 'number' ? new Date(seconds * 1000) : undefined;
}
