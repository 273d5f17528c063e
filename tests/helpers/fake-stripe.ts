// A local stand-in for the Stripe API, as a real HTTP server the official SDK talks to (through
// PROCESSOR_A_BASE_URL): enough of Checkout Sessions, subscriptions and their items (quantities with
// prorations), billing meter events (counted once per identifier, as Stripe does; v1's one event a
// request and v2's meter event stream: a meter event session's short-lived token as the bearer, up to 100
// events a request, 401 for a missing, unknown or expired token) and billing-portal sessions to test the
// PROCESSOR_A adapter, with a request log and a switch to make the next request fail or hang. The SDK sends
// the stream to meter-events.stripe.com; with a host set (PROCESSOR_A_BASE_URL) it comes here too.
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
  /** How many requests carrying meter events arrived (v1: one event each; v2 stream: a batch each). */
  meterEventRequests(): number;
  /** How many meter events arrived, those sent again included. */
  meterEventsReceived(): number;
  /** How many of the meter events that arrived had an identifier already counted (not counted again). */
  meterEventDuplicates(): number;
  /** How many meter event sessions were created (POST /v2/billing/meter_event_session). */
  meterSessionsCreated(): number;
  /** Ends every meter event session created so far: their tokens get 401 temporary_session_expired. */
  expireMeterSessions(): void;
  /**
   * Counts the next meter event request's events, then answers it with `status` or never ('hang'): an
   * acknowledgement lost on its way back.
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

/** Stripe's meter event sessions last 15 minutes. */
const METER_SESSION_MS = 15 * 60_000;
const METER_STREAM_PATH = '/v2/billing/meter_event_stream';

export async function startFakeStripe({
  apiKey,
  meterSessionMs = METER_SESSION_MS,
}: {
  apiKey: string;
  /** How long a meter event session's token is valid. */
  meterSessionMs?: number;
}): Promise<FakeStripe> {
  const requests: RecordedRequest[] = [];
  const subscriptions = new Map<string, Record<string, any>>();
  const meterEvents: FakeStripe['meterEvents'] = new Map();
  let meterRequests = 0;
  let meterReceived = 0;
  let meterDuplicates = 0;
  /** Meter event session tokens and when each expires (ms). */
  const meterSessions = new Map<string, number>();
  let sessionsCreated = 0;
  let loseMeterAnswer: Failure | null = null;
  let pending: Failure | null = null;

  const app = express();
  app.use(express.urlencoded({ extended: true }));
  // API v2 (meter event sessions and streams) takes JSON.
  app.use(express.json());

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
    // The stream is authenticated with a meter event session's token, checked by its route.
    if (req.path !== METER_STREAM_PATH && req.headers.authorization !== `Bearer ${apiKey}`) {
      return stripeError(res, 401, 'invalid_request_error', 'Invalid API Key provided.');
    }
    next();
  });

  // Not Stripe's: what the fake has counted, for a process that runs it as a child (bench/billing-usage.ts).
  app.get('/__fake/meter-events', (_req: Request, res: Response) => {
    res.json({
      counted: meterEvents.size,
      received: meterReceived,
      duplicates: meterDuplicates,
      requests: meterRequests,
      sessions: sessionsCreated,
    });
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

  const validMeterEvent = (e: Record<string, any> | undefined) =>
    Boolean(e?.event_name && e.payload?.stripe_customer_id && e.payload?.value !== undefined);
  /** Counts an event, once per identifier (Stripe enforces their uniqueness): answers its identifier. */
  const countMeterEvent = (e: Record<string, any>, timestamp: number) => {
    meterReceived += 1;
    const identifier = String(e.identifier ?? randomId('mev'));
    const event = { event_name: String(e.event_name), payload: e.payload as Record<string, string>, timestamp };
    if (meterEvents.has(identifier)) meterDuplicates += 1;
    else meterEvents.set(identifier, event);
    return { identifier, event };
  };
  /** After the events were counted: true when the answer is lost (sent as asked, or never). */
  const lostMeterAnswer = (res: Response) => {
    if (loseMeterAnswer === null) return false;
    const answer = loseMeterAnswer;
    loseMeterAnswer = null;
    if (answer !== 'hang') stripeError(res, answer, 'api_error', FAKE_STRIPE_ERROR_DETAIL);
    return true;
  };

  app.post('/v1/billing/meter_events', (req: Request, res: Response) => {
    const body = req.body as Record<string, any>;
    meterRequests += 1;
    if (!validMeterEvent(body))
      return stripeError(res, 400, 'invalid_request_error', 'event_name and payload are required.');
    const { identifier, event } = countMeterEvent(body, Number(body.timestamp ?? now()));
    if (lostMeterAnswer(res)) return;
    res.json({ object: 'billing.meter_event', created: now(), identifier, livemode: false, ...event });
  });

  // API v2: a meter event session, its token valid for meterSessionMs (created with the secret key).
  app.post('/v2/billing/meter_event_session', (_req: Request, res: Response) => {
    const created = Date.now();
    const token = randomId('mes_token');
    meterSessions.set(token, created + meterSessionMs);
    sessionsCreated += 1;
    res.json({
      id: randomId('mes'),
      object: 'v2.billing.meter_event_session',
      authentication_token: token,
      created: new Date(created).toISOString(),
      expires_at: new Date(created + meterSessionMs).toISOString(),
      livemode: false,
    });
  });

  // API v2: the meter event stream (meter-events.stripe.com), up to 100 events a request, the session's
  // token as the bearer. Events are validated asynchronously at Stripe; here an invalid one refuses the
  // request.
  app.post(METER_STREAM_PATH, (req: Request, res: Response) => {
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const expiresAt = token === undefined ? undefined : meterSessions.get(token);
    if (expiresAt === undefined)
      return stripeError(res, 401, 'invalid_request_error', 'A meter event session token is required.');
    if (Date.now() >= expiresAt)
      return stripeError(res, 401, 'temporary_session_expired', 'The meter event session has expired.');
    const events = (req.body as { events?: Array<Record<string, any>> }).events;
    if (!Array.isArray(events) || events.length === 0 || events.length > 100 || !events.every(validMeterEvent))
      return stripeError(res, 400, 'invalid_request_error', 'events: 1 to 100 meter events are required.');
    meterRequests += 1;
    for (const e of events) {
      const at = e.timestamp === undefined ? Date.now() : Date.parse(String(e.timestamp));
      countMeterEvent(e, Math.floor(at / 1000));
    }
    if (lostMeterAnswer(res)) return;
    res.json({});
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
    meterEventsReceived: () => meterReceived,
    meterEventDuplicates: () => meterDuplicates,
    meterSessionsCreated: () => sessionsCreated,
    expireMeterSessions() {
      for (const token of meterSessions.keys()) meterSessions.set(token, 0);
    },
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
