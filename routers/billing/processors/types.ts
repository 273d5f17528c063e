// What a payment processor adapter does. Adapters speak their provider's protocol (PROCESSOR_A: Stripe,
// PROCESSOR_B: Lemon Squeezy) and translate inbound events into BillingChanges; the billing service owns
// every state change (routers/billing/provider-events.ts: applyProviderEvent), so all processors behave alike.
import type { IncomingHttpHeaders } from 'node:http';
import { z } from 'zod';
import type { PaymentStatus, PlanInterval, SubscriptionStatus } from '../../../db/schema.js';

export type ProcessorName = 'PROCESSOR_A' | 'PROCESSOR_B';

export interface CheckoutRequest {
  workspaceId: string;
  planId: string;
  planSlug: string;
  planName: string;
  interval: PlanInterval;
  /** The provider's price (PROCESSOR_A) or variant (PROCESSOR_B) id of the plan. */
  priceRef: string;
  customerEmail: string;
  /** The workspace's customer at the provider, when it has one. */
  customerId: string | null;
  successUrl: string;
  cancelUrl: string;
  /** Seats to bill (PER_SEAT plans); 1 when absent. */
  quantity?: number;
  /** Days of trial before the first charge; none when absent. */
  trialDays?: number;
}

/** A subscription as the provider reports it. workspaceId/planId come from checkout metadata. */
export interface SubscriptionChange {
  kind: 'subscription';
  providerSubscriptionId: string;
  workspaceId?: string;
  planId?: string;
  /** The price (PROCESSOR_A) or variant (PROCESSOR_B) it is billed at: it names the plan before planId does. */
  priceRef?: string;
  customerId?: string;
  status: SubscriptionStatus;
  currentPeriodStart?: Date | null;
  currentPeriodEnd?: Date | null;
  cancelAtPeriodEnd?: boolean;
  /** When the trial ends (null: no trial); undefined keeps what is stored. */
  trialEndsAt?: Date | null;
}

/** A charge as the provider reports it. Without workspaceId it is matched through its subscription. */
export interface PaymentChange {
  kind: 'payment';
  providerPaymentId: string;
  providerSubscriptionId?: string;
  workspaceId?: string;
  planId?: string;
  amountCents: number;
  currency: string;
  status: PaymentStatus;
  description?: string;
  receiptUrl?: string;
  invoiceUrl?: string;
}

/**
 * A refund of a recorded payment, named by any of the provider ids it may be stored under. Only a full
 * refund moves the payment to REFUNDED; a partial one leaves it SUCCEEDED (the provider's dashboard holds
 * the detail).
 */
export interface RefundChange {
  kind: 'refund';
  providerPaymentIds: string[];
  fully: boolean;
}

/** An invoice of a subscription as the provider reports it (kept for GET /billing/invoices; drives dunning). */
export interface InvoiceChange {
  kind: 'invoice';
  providerInvoiceId: string;
  providerSubscriptionId?: string;
  workspaceId?: string;
  number?: string | null;
  amountCents: number;
  currency: string;
  status: 'OPEN' | 'PAID' | 'FAILED' | 'VOID';
  periodStart?: Date | null;
  periodEnd?: Date | null;
  hostedUrl?: string | null;
}

export type BillingChange = SubscriptionChange | PaymentChange | RefundChange | InvoiceChange;

const uuid = z.uuid();

/** An id of ours read from metadata, or undefined when it cannot be one (it would fail the database's uuid type). */
export function ourId(value: string | null | undefined): string | undefined {
  return uuid.safeParse(value).success ? (value as string) : undefined;
}

export interface ProviderEvent {
  /** The provider's id of the event: a second delivery of the same id changes nothing. */
  id: string;
  /** The provider's own event type, for the record. */
  type: string;
  /** When the provider says it happened: older events never move a subscription backwards. */
  occurredAt: Date;
  /** Empty for event types that change nothing here. */
  changes: BillingChange[];
}

/** One unit of usage to report: `identifier` is ours (the generation id) and stable across resends. */
export interface UsageEvent {
  customerId: string;
  meterEventName: string;
  identifier: string;
  occurredAt: Date;
}

/** The most events reportUsageBatch takes at once (Stripe's meter event stream: 100 a request). */
export const USAGE_BATCH_MAX = 100;

/** Options of a processor adapter. */
export interface ProcessorOptions {
  /** How long one API call may take (default 10 s). Tests shorten it. */
  timeoutMs?: number;
}

export interface PaymentProcessor {
  readonly name: ProcessorName;
  /** The keys checkout needs are set. */
  readonly configured: boolean;
  /** The webhook secret is set, so inbound events can be verified. */
  readonly webhookConfigured: boolean;
  readonly mode: 'test' | 'live';
  createCheckout(request: CheckoutRequest): Promise<{ checkoutUrl: string }>;
  /** Cancels at the end of the paid period, as the provider does it. */
  cancelSubscription(
    providerSubscriptionId: string,
  ): Promise<{ status: SubscriptionStatus; cancelAtPeriodEnd: boolean; currentPeriodEnd: Date | null }>;
  /**
   * Sets the seat quantity of the subscription (the item billed at `seatRef`, else its first item), with
   * prorations. Throws AppError('BAD_GATEWAY') when the provider does not acknowledge it.
   */
  updateSeats(request: { providerSubscriptionId: string; seatRef: string | null; quantity: number }): Promise<void>;
  /**
   * Reports one unit of usage (one overage generation). `identifier` is ours and stable across retries: the
   * provider counts one event per identifier (Stripe). Throws AppError('BAD_GATEWAY') when not acknowledged.
   */
  reportUsage(request: {
    providerSubscriptionId: string;
    customerId: string | null;
    meterEventName: string | null;
    identifier: string;
    occurredAt: Date;
  }): Promise<void>;
  /**
   * Reports up to USAGE_BATCH_MAX units of usage in one request (Stripe's meter event stream), for
   * processors that take them so. All or nothing: it resolves only once the provider acknowledged the
   * whole batch, and throws AppError('BAD_GATEWAY') otherwise; the batch is then sent again as a whole,
   * each event with the same identifier (counted once).
   */
  reportUsageBatch?(events: UsageEvent[]): Promise<void>;
  /** A URL of the provider's billing portal for the customer, where the provider has one. */
  createPortalSession?(customerId: string, returnUrl: string): Promise<string>;
  /**
   * Verifies the signature over the exact raw body and translates the event. Throws
   * AppError('INVALID_SIGNATURE') for a missing, malformed, stale or wrong signature.
   */
  parseWebhook(rawBody: Buffer, headers: IncomingHttpHeaders): ProviderEvent;
}
