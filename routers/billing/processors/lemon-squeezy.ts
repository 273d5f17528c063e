// PROCESSOR_B: the Lemon Squeezy adapter. A small JSON:API client over global fetch creates checkouts and
// cancels subscriptions (the official SDK keeps its key in module state and has a fixed host, so two
// configurations or a local fake could not coexist); inbound webhooks are verified by their X-Signature
// (hex HMAC-SHA256 of the raw body) and translated into BillingChanges for the billing service.
import crypto from 'node:crypto';
import type { SubscriptionStatus } from '../../../db/schema.js';
import type { Config } from '../../../server/platform/config.js';
import { AppError } from '../../../server/platform/errors.js';
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

export type LemonSqueezyConfig = Pick<
  Config,
  'PROCESSOR_B_API_KEY' | 'PROCESSOR_B_STORE_ID' | 'PROCESSOR_B_WEBHOOK_SECRET' | 'PROCESSOR_B_BASE_URL'
>;

const DEFAULT_BASE_URL = 'https://api.lemonsqueezy.com';
const DEFAULT_TIMEOUT_MS = 10_000;
const JSON_API = 'application/vnd.api+json';
const UNAVAILABLE = 'The payment provider could not complete the request. Please try again in a moment.';

export function createLemonSqueezyProcessor(
  config: LemonSqueezyConfig,
  options: ProcessorOptions = {},
): PaymentProcessor {
  const apiKey = config.PROCESSOR_B_API_KEY;
  const storeId = config.PROCESSOR_B_STORE_ID;
  const webhookSecret = config.PROCESSOR_B_WEBHOOK_SECRET;
  const api = createClient(
    config.PROCESSOR_B_BASE_URL ?? DEFAULT_BASE_URL,
    apiKey,
    options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
  );

  const requireStore = (): string => {
    if (!apiKey || !storeId)
      throw new AppError(
        'BILLING_NOT_CONFIGURED',
        'PROCESSOR_B is not configured (its API key or store id is not set).',
      );
    return storeId;
  };

  return {
    name: 'PROCESSOR_B',
    configured: Boolean(apiKey && storeId),
    webhookConfigured: Boolean(webhookSecret),
    // Lemon Squeezy has no live/test key prefix: test mode is a property of the store (and is reported
    // per object as `test_mode`). No setting says which one the key belongs to, so this adapter never
    // claims 'live'.
    mode: 'test',

    async createCheckout(request) {
      const answer = await api.request<JsonApiDocument<{ url?: string }>>(
        'POST',
        '/v1/checkouts',
        checkoutDocument(request, requireStore()),
      );
      const url = answer.data?.attributes?.url;
      if (typeof url !== 'string' || !url) throw new AppError('BAD_GATEWAY', UNAVAILABLE);
      return { checkoutUrl: url };
    },

    async cancelSubscription(providerSubscriptionId) {
      requireStore();
      // DELETE cancels at the end of the paid period: the subscription stays usable until `ends_at`.
      const answer = await api.request<JsonApiDocument<SubscriptionAttributes>>(
        'DELETE',
        `/v1/subscriptions/${encodeURIComponent(providerSubscriptionId)}`,
      );
      const attributes = answer.data?.attributes ?? {};
      const status = attributes.status ? subscriptionState(attributes) : undefined;
      return {
        status: status?.status ?? 'ACTIVE',
        cancelAtPeriodEnd: status?.cancelAtPeriodEnd ?? true,
        currentPeriodEnd: parseDate(attributes.ends_at) ?? null,
      };
    },

    async updateSeats({ providerSubscriptionId, quantity }) {
      requireStore();
      const item = await subscriptionItemOf(api, providerSubscriptionId);
      // Lemon Squeezy prorates a quantity change unless told not to (disable_prorations).
      await api.request('PATCH', `/v1/subscription-items/${encodeURIComponent(item)}`, {
        data: { type: 'subscription-items', id: item, attributes: { quantity } },
      });
    },

    async reportUsage({ providerSubscriptionId }) {
      requireStore();
      const item = await subscriptionItemOf(api, providerSubscriptionId);
      // Usage records carry no identifier at Lemon Squeezy: the outbox sends each once it is claimed, and
      // only a worker dying between the call and its acknowledgement can send one twice (docs/decisions.md).
      await api.request('POST', '/v1/usage-records', {
        data: {
          type: 'usage-records',
          attributes: { quantity: 1, action: 'increment' },
          relationships: { 'subscription-item': { data: { type: 'subscription-items', id: item } } },
        },
      });
    },

    // No createPortalSession: Lemon Squeezy has no portal-session API (each subscription carries its own
    // `urls.customer_portal` link instead).

    parseWebhook(rawBody, headers) {
      if (!webhookSecret) {
        throw new AppError(
          'BILLING_NOT_CONFIGURED',
          'PROCESSOR_B webhooks are not configured (the webhook secret is not set).',
        );
      }
      verifySignature(rawBody, headers['x-signature'], webhookSecret);
      const event = parseEvent(rawBody);
      const attributes = event.data.attributes ?? {};
      return {
        // Lemon Squeezy sends no event id. A re-delivery is byte-identical, so the body's hash is stable.
        id: crypto.createHash('sha256').update(rawBody).digest('hex'),
        type: event.meta.event_name,
        occurredAt: parseDate(attributes.updated_at) ?? parseDate(attributes.created_at) ?? new Date(),
        changes: translate(event),
      };
    },
  };
}

// ---------------------------------------------------------------- outbound

interface JsonApiDocument<A> {
  data?: { type?: string; id?: string; attributes?: A };
}

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

interface LemonClient {
  request<T>(method: Method, path: string, body?: unknown): Promise<T>;
}

/** The subscription's (first and only) item, which carries its quantity and its usage. */
async function subscriptionItemOf(api: LemonClient, providerSubscriptionId: string): Promise<string> {
  const answer = await api.request<JsonApiDocument<{ first_subscription_item?: { id?: number | string } | null }>>(
    'GET',
    `/v1/subscriptions/${encodeURIComponent(providerSubscriptionId)}`,
  );
  const id = answer.data?.attributes?.first_subscription_item?.id;
  if (id === undefined || id === null) throw new AppError('BAD_GATEWAY', UNAVAILABLE);
  return String(id);
}

function createClient(baseUrl: string, apiKey: string | undefined, timeoutMs: number): LemonClient {
  const base = baseUrl.replace(/\/+$/, '');
  return {
    async request<T>(method: Method, path: string, body?: unknown): Promise<T> {
      let response: Response;
      try {
        response = await fetch(`${base}${path}`, {
          method,
          headers: { Accept: JSON_API, 'Content-Type': JSON_API, Authorization: `Bearer ${apiKey ?? ''}` },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch {
        // Unreachable or too slow. The cause names the URL only, but the client needs no detail.
        throw new AppError('BAD_GATEWAY', UNAVAILABLE);
      }
      if (!response.ok) {
        // Lemon Squeezy's error document is never passed on: it can echo the request.
        await response.body?.cancel().catch(() => {});
        throw new AppError('BAD_GATEWAY', UNAVAILABLE);
      }
      try {
        return (await response.json()) as T;
      } catch {
        throw new AppError('BAD_GATEWAY', UNAVAILABLE);
      }
    },
  };
}

function checkoutDocument(request: CheckoutRequest, storeId: string) {
  return {
    data: {
      type: 'checkouts',
      attributes: {
        checkout_data: {
          email: request.customerEmail,
          // Seats of a PER_SEAT plan. A trial is a setting of the variant at Lemon Squeezy, not of a checkout.
          ...((request.quantity ?? 1) > 1
            ? { variant_quantities: [{ variant_id: Number(request.priceRef), quantity: request.quantity }] }
            : {}),
          // Comes back as `meta.custom_data` on every order and subscription event of this checkout.
          // The interval tells a one-time order from the first order of a subscription.
          custom: {
            workspace_id: request.workspaceId,
            plan_id: request.planId,
            plan_slug: request.planSlug,
            plan_interval: request.interval,
          },
        },
        // Lemon Squeezy's checkout has no cancel URL; the buyer simply leaves the page.
        product_options: { redirect_url: request.successUrl },
      },
      relationships: {
        store: { data: { type: 'stores', id: storeId } },
        variant: { data: { type: 'variants', id: request.priceRef } },
      },
    },
  };
}

// ---------------------------------------------------------------- inbound: verification

const invalidSignature = (why: string) => new AppError('INVALID_SIGNATURE', `Invalid X-Signature header: ${why}.`);

/** X-Signature is the hex HMAC-SHA256 of the raw body; compared in constant time. */
function verifySignature(rawBody: Buffer, header: string | string[] | undefined, secret: string) {
  if (typeof header !== 'string' || header.trim() === '') throw invalidSignature('missing');
  const given = header.trim().toLowerCase();
  // Length and alphabet are checked first: timingSafeEqual needs equal lengths, and Buffer.from(…, 'hex')
  // silently drops what is not hex.
  if (!/^[0-9a-f]{64}$/.test(given)) throw invalidSignature('malformed');
  const expected = crypto.createHmac('sha256', secret).update(rawBody).digest();
  if (!crypto.timingSafeEqual(Buffer.from(given, 'hex'), expected)) throw invalidSignature('does not match the body');
}

interface EventWire {
  meta: { event_name: string; custom_data?: CustomData | null; test_mode?: boolean };
  data: { type?: string; id: string; attributes?: Attributes };
}

interface CustomData {
  workspace_id?: string;
  plan_id?: string;
  plan_slug?: string;
  plan_interval?: string;
}

function parseEvent(rawBody: Buffer): EventWire {
  let parsed: unknown;
  try {
    parsed = JSON.parse(rawBody.toString('utf8'));
  } catch {
    throw new AppError('BAD_REQUEST', 'The webhook body is not valid JSON.');
  }
  if (!isEventWire(parsed)) throw new AppError('BAD_REQUEST', 'The webhook body is not a Lemon Squeezy event.');
  // JSON:API ids are strings, but be lenient with numbers.
  return { ...parsed, data: { ...parsed.data, id: String(parsed.data.id) } };
}

function isEventWire(value: unknown): value is EventWire {
  const v = value as Partial<EventWire> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.meta?.event_name === 'string' &&
    typeof v.data === 'object' &&
    v.data !== null &&
    (typeof v.data.id === 'string' || typeof v.data.id === 'number')
  );
}

// ---------------------------------------------------------------- inbound: translation

/** The attributes read from subscriptions, subscription-invoices and orders. */
interface SubscriptionAttributes {
  status?: string;
  customer_id?: number | string;
  variant_id?: number | string;
  renews_at?: string | null;
  ends_at?: string | null;
  trial_ends_at?: string | null;
  created_at?: string;
  updated_at?: string;
}

interface Attributes extends SubscriptionAttributes {
  refunded?: boolean;
  subscription_id?: number | string;
  total?: number;
  currency?: string;
  urls?: { invoice_url?: string | null; receipt?: string | null } | null;
}

const SUBSCRIPTION_EVENTS = new Set([
  'subscription_created',
  'subscription_updated',
  'subscription_resumed',
  'subscription_cancelled',
  'subscription_expired',
  'subscription_paused',
  'subscription_unpaused',
]);

function translate(event: EventWire): BillingChange[] {
  const name = event.meta.event_name;
  if (SUBSCRIPTION_EVENTS.has(name)) return fromSubscription(event);
  switch (name) {
    case 'subscription_payment_success':
    case 'subscription_payment_recovered':
      return [fromInvoice(event, 'SUCCEEDED'), invoiceOf(event, 'PAID')];
    case 'subscription_payment_failed':
      return [fromInvoice(event, 'FAILED'), invoiceOf(event, 'FAILED')];
    case 'order_created':
      return fromOrder(event);
    // A one-time payment is stored under its order id, a subscription payment under its invoice id.
    case 'order_refunded':
    case 'subscription_payment_refunded':
      return [
        {
          kind: 'refund',
          providerPaymentIds: [event.data.id],
          fully: event.data.attributes?.refunded === true || event.data.attributes?.status === 'refunded',
        },
      ];
    default:
      return [];
  }
}

/**
 * Lemon Squeezy's `cancelled` means "cancelled, but paid until ends_at" (a grace period in which it can
 * be resumed): the subscription stays ACTIVE and ends with `expired`.
 */
function subscriptionState(
  attributes: SubscriptionAttributes,
): { status: SubscriptionStatus; cancelAtPeriodEnd: boolean } | undefined {
  switch (attributes.status) {
    case 'on_trial':
      return { status: 'TRIALING', cancelAtPeriodEnd: false };
    case 'active':
      return { status: 'ACTIVE', cancelAtPeriodEnd: false };
    case 'past_due':
      return { status: 'PAST_DUE', cancelAtPeriodEnd: false };
    // Nothing is collected any more (payment retries used up, or paused by the merchant): the plan ends
    // here too rather than staying paid for nothing. Resumed or paid later, it is active again.
    case 'paused':
    case 'unpaid':
      return { status: 'CANCELED', cancelAtPeriodEnd: false };
    case 'cancelled':
      return { status: 'ACTIVE', cancelAtPeriodEnd: true };
    case 'expired':
      return { status: 'CANCELED', cancelAtPeriodEnd: false };
    default:
      // A status this code does not know is left alone rather than guessed.
      return undefined;
  }
}

function fromSubscription(event: EventWire): BillingChange[] {
  const attributes = event.data.attributes ?? {};
  const state = subscriptionState(attributes);
  if (!state) return [];
  const custom = event.meta.custom_data ?? {};
  const change: SubscriptionChange = {
    kind: 'subscription',
    providerSubscriptionId: event.data.id,
    workspaceId: ourId(custom.workspace_id),
    planId: ourId(custom.plan_id),
    priceRef: idString(attributes.variant_id),
    customerId: idString(attributes.customer_id),
    status: state.status,
    currentPeriodEnd: periodEnd(attributes),
    cancelAtPeriodEnd: state.cancelAtPeriodEnd,
    ...(attributes.trial_ends_at !== undefined && { trialEndsAt: parseDate(attributes.trial_ends_at) ?? null }),
  };
  return [change];
}

/** `ends_at` once it is cancelled or expired (the paid period ends there), else the next renewal. */
function periodEnd(attributes: SubscriptionAttributes): Date | undefined {
  const ending = attributes.status === 'cancelled' || attributes.status === 'expired';
  const renews = parseDate(attributes.renews_at);
  const ends = parseDate(attributes.ends_at);
  return ending ? (ends ?? renews) : (renews ?? ends);
}

function fromInvoice(event: EventWire, status: 'SUCCEEDED' | 'FAILED'): PaymentChange {
  const attributes = event.data.attributes ?? {};
  const custom = event.meta.custom_data ?? {};
  return {
    kind: 'payment',
    // A failed attempt gets its own id, so the invoice's id stays free for the payment that recovers it
    // (payments are stored once per provider id).
    providerPaymentId: status === 'FAILED' ? `${event.data.id}_failed` : event.data.id,
    providerSubscriptionId: idString(attributes.subscription_id),
    workspaceId: ourId(custom.workspace_id),
    planId: ourId(custom.plan_id),
    amountCents: attributes.total ?? 0,
    currency: (attributes.currency ?? '').toUpperCase(),
    status,
    ...(attributes.urls?.invoice_url ? { invoiceUrl: attributes.urls.invoice_url } : {}),
  };
}

function invoiceOf(event: EventWire, status: 'PAID' | 'FAILED'): InvoiceChange {
  const attributes = event.data.attributes ?? {};
  return {
    kind: 'invoice',
    providerInvoiceId: event.data.id,
    providerSubscriptionId: idString(attributes.subscription_id),
    workspaceId: ourId(event.meta.custom_data?.workspace_id),
    number: null,
    amountCents: attributes.total ?? 0,
    currency: (attributes.currency ?? '').toUpperCase(),
    status,
    hostedUrl: attributes.urls?.invoice_url ?? null,
  };
}

/**
 * A one-time purchase: a local subscription named after the order moves the workspace onto the plan, and
 * the order is its payment. The first order of a subscription also raises order_created; that one is left
 * to the subscription events, and is told apart by the plan interval the checkout put in the custom data.
 */
function fromOrder(event: EventWire): BillingChange[] {
  const custom = event.meta.custom_data ?? {};
  if (custom.plan_interval !== 'ONE_TIME') return [];
  const attributes = event.data.attributes ?? {};
  // A pending or failed order has not paid for anything yet.
  if (attributes.status && attributes.status !== 'paid') return [];
  const providerSubscriptionId = `onetime_${event.data.id}`;
  const [workspaceId, planId] = [ourId(custom.workspace_id), ourId(custom.plan_id)];
  return [
    {
      kind: 'subscription',
      providerSubscriptionId,
      workspaceId,
      planId,
      customerId: idString(attributes.customer_id),
      status: 'ACTIVE',
      currentPeriodEnd: null,
    },
    {
      kind: 'payment',
      providerPaymentId: event.data.id,
      providerSubscriptionId,
      workspaceId,
      planId,
      amountCents: attributes.total ?? 0,
      currency: (attributes.currency ?? '').toUpperCase(),
      status: 'SUCCEEDED',
      ...(attributes.urls?.receipt ? { receiptUrl: attributes.urls.receipt } : {}),
    },
  ];
}

/** Lemon Squeezy ids are numbers in attributes and strings in `data.id`; ours are strings. */
function idString(id: number | string | null | undefined): string | undefined {
  return id === null || id === undefined || id === '' ? undefined : String(id);
}

/** ISO 8601 (Lemon Squeezy writes microseconds: `2024-01-31T10:00:00.000000Z`); undefined when absent or invalid. */
function parseDate(value: string | null | undefined): Date | undefined {
  if (typeof value !== 'string' || !value) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date;
}
