// A local stand-in for the Stripe API, as a real HTTP server the official SDK talks to (through
// PROCESSOR_A_BASE_URL): enough of Checkout Sessions, subscriptions and their items (quantities with
// prorations), billing meter events (counted once per identifier, as Stripe does) and billing-portal
// sessions to test the PROCESSOR_A adapter, with a request log and a switch to make the next request fail
// or hang.
// Also builds signed webhook events, signed with the SDK's own test helper.
import crypto from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { IncomingHttpHeaders, Server } from 'node:http';
import express, { type Request, type Response } from 'express';
import Stripe from 'stripe';

export interface RecordedRequest {
  method: string;
  path: string;
  /** The form body, bracket notation parsed into nested objects (`metadata[planId]` → metadata.planId). */
  body: Record<string, any>;
  headers: IncomingHttpHeaders;
}

/** A status code to answer with (Stripe-style error JSON), or 'hang' to never answer. */
export type Failure = number | 'hang';

export interface FakeStripe {
  /** Base URL for PROCESSOR_A_BASE_URL, e.g. http://127.0.0.1:40123 */
  url: string;
  requests: RecordedRequest[];
  /** The subscriptions the fake knows, by id (updated by POST /v1/subscriptions/:id). */
  subscriptions: Map<string, Record<string, any>>;
  /** Meter events Stripe counted, by identifier (a repeated identifier is not counted again). */
  meterEvents: Map<string, { event_name: string; payload: Record<string, string>; timestamp: number }>;
  /** How many meter event requests arrived, duplicates included. */
  meterEventRequests(): number;
  /**
   * Counts the next meter event, then answers it with `status` or never ('hang'): an acknowledgement lost
   * on its way back.
   */
  loseNextMeterAnswer(answer: Failure): void;
  failNext(failure: Failure): void;
  close(): Promise<void>;
}

/** What a 500 answer says; tests check it never reaches an error message. */
export const FAKE_STRIPE_ERROR_DETAIL = 'fake-stripe internal detail: req_secret_trace_4f1c';

const now = () => Math.floor(Date.now() / 1000);
const randomId = (prefix: string) => `${prefix}_${crypto.randomBytes(12).toString('hex')}`;

function stripeError(res: Response, status: number, type: string, message: string) {
  res.status(status).json({ error: { type, message } });
}

export async function startFakeStripe({ apiKey }: { apiKey: string }): Promise<FakeStripe> {
  const requests: RecordedRequest[] = [];
  const subscriptions = new Map<string, Record<string, any>>();
  const meterEvents: FakeStripe['meterEvents'] = new Map();
  let meterRequests = 0;
  let loseMeterAnswer: Failure | null = null;
  let pending: Failure | null = null;

  const app = express();
  app.use(express.urlencoded({ extended: true }));

  // Log, then fail on demand, then check the key, as Stripe would.
  app.use((req, res, next) => {
    requests.push({
      method: req.method,
      path: req.path,
      body: (req.body ?? {}) as Record<string, any>,
      headers: req.headers,
    });
    const failure = pending;
    pending = null;
    if (failure === 'hang') return; // never answered; close() drops the connection
    if (typeof failure === 'number') return stripeError(res, failure, 'api_error', FAKE_STRIPE_ERROR_DETAIL);
    if (req.headers.authorization !== `Bearer ${apiKey}`) {
      return stripeError(res, 401, 'invalid_request_error', 'Invalid API Key provided.');
    }
    next();
  });

  // Not Stripe's: what the fake has counted, for a process that runs it as a child (bench/billing-usage.ts).
  app.get('/__fake/meter-events', (_req: Request, res: Response) => {
    res.json({ counted: meterEvents.size, requests: meterRequests });
  });

  app.post('/v1/checkout/sessions', (req: Request, res: Response) => {
    const body = req.body as Record<string, any>;
    const id = randomId('cs_test');
    res.json({
      id,
      object: 'checkout.session',
      url: `https://checkout.stripe.test/c/pay/${id}`,
      mode: body.mode,
      status: 'open',
      payment_status: 'unpaid',
      client_reference_id: body.client_reference_id ?? null,
      customer: body.customer ?? null,
      customer_email: body.customer_email ?? null,
      metadata: body.metadata ?? {},
      success_url: body.success_url,
      cancel_url: body.cancel_url ?? null,
      subscription: null,
      payment_intent: null,
      created: now(),
      livemode: false,
    });
  });

  app.get('/v1/subscriptions/:id', (req: Request, res: Response) => {
    const id = String(req.params.id);
    const subscription = subscriptions.get(id) ?? fakeSubscription(id);
    subscriptions.set(id, subscription);
    res.json(subscription);
  });

  const findItem = (itemId: string) => {
    for (const subscription of subscriptions.values()) {
      const item = (subscription.items.data as Array<Record<string, any>>).find((i) => i.id === itemId);
      if (item) return item;
    }
    return undefined;
  };
  const prorations = ['create_prorations', 'none', 'always_invoice'];

  app.post('/v1/subscription_items/:id', (req: Request, res: Response) => {
    const body = req.body as Record<string, any>;
    const item = findItem(String(req.params.id));
    if (!item)
      return stripeError(res, 404, 'invalid_request_error', `No such subscription item: '${String(req.params.id)}'`);
    if (body.proration_behavior !== undefined && !prorations.includes(body.proration_behavior))
      return stripeError(res, 400, 'invalid_request_error', 'Invalid proration_behavior.');
    if (body.quantity !== undefined) item.quantity = Number(body.quantity);
    res.json(item);
  });

  app.post('/v1/subscription_items', (req: Request, res: Response) => {
    const body = req.body as Record<string, any>;
    const subscription = subscriptions.get(String(body.subscription));
    if (!subscription)
      return stripeError(res, 404, 'invalid_request_error', `No such subscription: '${body.subscription}'`);
    const item = {
      id: randomId('si'),
      object: 'subscription_item',
      price: { id: body.price, object: 'price' },
      quantity: Number(body.quantity ?? 1),
      subscription: subscription.id,
    };
    subscription.items.data.push(item);
    res.json(item);
  });

  app.post('/v1/billing/meter_events', (req: Request, res: Response) => {
    const body = req.body as Record<string, any>;
    meterRequests += 1;
    if (!body.event_name || !body.payload?.stripe_customer_id || body.payload?.value === undefined)
      return stripeError(res, 400, 'invalid_request_error', 'event_name and payload are required.');
    const identifier = String(body.identifier ?? randomId('mev'));
    const event = { event_name: body.event_name, payload: body.payload, timestamp: Number(body.timestamp ?? now()) };
    // Stripe enforces uniqueness of identifiers: a repeated one is not counted again.
    if (!meterEvents.has(identifier)) meterEvents.set(identifier, event);
    if (loseMeterAnswer !== null) {
      const answer = loseMeterAnswer;
      loseMeterAnswer = null;
      if (answer === 'hang') return;
      return stripeError(res, answer, 'api_error', FAKE_STRIPE_ERROR_DETAIL);
    }
    res.json({ object: 'billing.meter_event', created: now(), identifier, livemode: false, ...event });
  });

  app.post('/v1/subscriptions/:id', (req: Request, res: Response) => {
    const id = String(req.params.id);
    const body = req.body as Record<string, any>;
    const subscription = subscriptions.get(id) ?? fakeSubscription(id);
    if (body.cancel_at_period_end !== undefined)
      subscription.cancel_at_period_end = body.cancel_at_period_end === 'true';
    subscriptions.set(id, subscription);
    res.json(subscription);
  });

  app.post('/v1/billing_portal/sessions', (req: Request, res: Response) => {
    const body = req.body as Record<string, any>;
    const id = randomId('bps');
    res.json({
      id,
      object: 'billing_portal.session',
      customer: body.customer,
      return_url: body.return_url ?? null,
      url: `https://billing.stripe.test/p/session/${id}`,
      created: now(),
      livemode: false,
    });
  });

  app.use((req: Request, res: Response) => {
    stripeError(res, 404, 'invalid_request_error', `Unrecognized request URL (${req.method}: ${req.path}).`);
  });

  const server = await listen(app);
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    subscriptions,
    meterEvents,
    meterEventRequests: () => meterRequests,
    loseNextMeterAnswer(answer) {
      loseMeterAnswer = answer;
    },
    failNext(failure) {
      pending = failure;
    },
    close: () => closeServer(server),
  };
}

/** A subscription in the shape of newer API versions: its periods live on its items. */
export function fakeSubscription(id: string, overrides: Record<string, any> = {}): Record<string, any> {
  const start = now();
  const end = start + 30 * 86_400;
  return {
    id,
    object: 'subscription',
    status: 'active',
    customer: 'cus_fake',
    cancel_at_period_end: false,
    cancel_at: null,
    metadata: {},
    items: {
      object: 'list',
      data: [
        {
          id: `si_${id}`,
          object: 'subscription_item',
          quantity: 1,
          current_period_start: start,
          current_period_end: end,
        },
      ],
    },
    ...overrides,
  };
}

/** A Stripe event (JSON text) carrying `object` as its data.object. */
export function stripeEvent(
  type: string,
  object: Record<string, unknown>,
  opts: { id?: string; created?: number } = {},
): string {
  return JSON.stringify({
    id: opts.id ?? randomId('evt'),
    object: 'event',
    api_version: Stripe.API_VERSION,
    created: opts.created ?? now(),
    type,
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    data: { object },
  });
}

/** A Stripe-Signature header for the payload, made by the official SDK's test helper. */
export function signStripe(payload: string, secret: string, timestamp?: number): string {
  return Stripe.webhooks.generateTestHeaderString({
    payload,
    secret,
    ...(timestamp === undefined ? {} : { timestamp }),
  });
}

function listen(app: express.Express): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(0, '127.0.0.1', (err?: Error) => (err ? reject(err) : resolve(server)));
  });
}

/** Closes the server, dropping connections still open (keep-alive, or a request left hanging). */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
