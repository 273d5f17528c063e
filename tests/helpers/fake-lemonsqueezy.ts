// A local stand-in for the Lemon Squeezy API, as a real HTTP server the PROCESSOR_B adapter talks to
// (through PROCESSOR_B_BASE_URL): checkout creation, subscriptions (read, cancel), subscription-item
// quantities and usage records in JSON:API, with a request log and a switch to make the next request fail
// or hang. Also builds signed webhook events.
import crypto from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { IncomingHttpHeaders, Server } from 'node:http';
import express, { type Request, type Response } from 'express';
import { closeServer, type Failure } from './fake-stripe.js';

const JSON_API = 'application/vnd.api+json';

export interface RecordedLemonRequest {
  method: string;
  path: string;
  /** The parsed JSON:API document, or undefined without a body. */
  body: any;
  headers: IncomingHttpHeaders;
}

export interface FakeLemonSqueezy {
  /** Base URL for PROCESSOR_B_BASE_URL, e.g. http://127.0.0.1:40123 */
  url: string;
  requests: RecordedLemonRequest[];
  /** The `ends_at` the fake answers for a cancelled subscription. */
  endsAt: string;
  /** Quantities of subscription items, by item id (the item of subscription S is `S` + '1'). */
  itemQuantities: Map<string, number>;
  /** Usage records, in arrival order. */
  usageRecords: Array<{ subscriptionItemId: string; quantity: number; action: string }>;
  failNext(failure: Failure): void;
  close(): Promise<void>;
}

/** What a 500 answer says; tests check it never reaches an error message. */
export const FAKE_LEMON_ERROR_DETAIL = 'fake-lemonsqueezy internal detail: trace_9a7e_secret';

function jsonApiError(res: Response, status: number, detail: string) {
  res
    .status(status)
    .type(JSON_API)
    .send(
      JSON.stringify({ jsonapi: { version: '1.0' }, errors: [{ status: String(status), title: 'Error', detail }] }),
    );
}

function jsonApi(res: Response, status: number, document: unknown) {
  res
    .status(status)
    .type(JSON_API)
    .send(JSON.stringify({ jsonapi: { version: '1.0' }, ...(document as object) }));
}

export async function startFakeLemonSqueezy({ apiKey }: { apiKey: string }): Promise<FakeLemonSqueezy> {
  const requests: RecordedLemonRequest[] = [];
  // Lemon Squeezy writes timestamps with microseconds.
  const endsAt = '2031-02-28T12:00:00.000000Z';
  let pending: Failure | null = null;
  let nextId = 1000;
  const itemQuantities = new Map<string, number>();
  const usageRecords: FakeLemonSqueezy['usageRecords'] = [];
  const itemOf = (subscriptionId: string) => `${subscriptionId}1`;

  const app = express();
  app.use(express.json({ type: JSON_API }));

  app.use((req, res, next) => {
    requests.push({ method: req.method, path: req.path, body: req.body, headers: req.headers });
    const failure = pending;
    pending = null;
    if (failure === 'hang') return; // never answered; close() drops the connection
    if (typeof failure === 'number') return jsonApiError(res, failure, FAKE_LEMON_ERROR_DETAIL);
    if (req.headers.authorization !== `Bearer ${apiKey}`) return jsonApiError(res, 401, 'Unauthenticated.');
    if (req.method === 'POST' && req.headers['content-type'] !== JSON_API) {
      return jsonApiError(res, 415, `Content-Type must be ${JSON_API}.`);
    }
    next();
  });

  app.post('/v1/checkouts', (req: Request, res: Response) => {
    const data = (req.body as { data?: any } | undefined)?.data;
    if (data?.type !== 'checkouts' || !data.relationships?.store?.data?.id || !data.relationships?.variant?.data?.id) {
      return jsonApiError(res, 422, 'A checkout needs a store and a variant.');
    }
    const id = crypto.randomUUID();
    jsonApi(res, 201, {
      links: { self: `https://api.lemonsqueezy.com/v1/checkouts/${id}` },
      data: {
        type: 'checkouts',
        id,
        attributes: {
          store_id: Number(data.relationships.store.data.id),
          variant_id: Number(data.relationships.variant.data.id),
          checkout_data: data.attributes?.checkout_data ?? {},
          product_options: data.attributes?.product_options ?? {},
          url: `https://store.lemonsqueezy.test/checkout/custom/${id}`,
          test_mode: true,
          created_at: new Date().toISOString(),
          updated_at: new Date().toISOString(),
        },
      },
    });
  });

  app.get('/v1/subscriptions/:id', (req: Request, res: Response) => {
    const id = String(req.params.id);
    const item = itemOf(id);
    jsonApi(res, 200, {
      data: {
        type: 'subscriptions',
        id,
        attributes: {
          status: 'active',
          first_subscription_item: {
            id: Number(item),
            subscription_id: Number(id),
            price_id: 1,
            quantity: itemQuantities.get(item) ?? 1,
            is_usage_based: false,
          },
        },
      },
    });
  });

  app.patch('/v1/subscription-items/:id', (req: Request, res: Response) => {
    const id = String(req.params.id);
    const data = (req.body as { data?: any } | undefined)?.data;
    if (data?.type !== 'subscription-items' || String(data.id) !== id || !Number.isInteger(data.attributes?.quantity))
      return jsonApiError(res, 422, 'A subscription item update needs its id and a whole quantity.');
    itemQuantities.set(id, data.attributes.quantity);
    jsonApi(res, 200, {
      data: { type: 'subscription-items', id, attributes: { quantity: data.attributes.quantity } },
    });
  });

  app.post('/v1/usage-records', (req: Request, res: Response) => {
    const data = (req.body as { data?: any } | undefined)?.data;
    const item = data?.relationships?.['subscription-item']?.data?.id;
    if (data?.type !== 'usage-records' || !item || !Number.isInteger(data.attributes?.quantity))
      return jsonApiError(res, 422, 'A usage record needs a subscription item and a quantity.');
    const action = data.attributes.action ?? 'increment';
    usageRecords.push({ subscriptionItemId: String(item), quantity: data.attributes.quantity, action });
    jsonApi(res, 201, {
      data: {
        type: 'usage-records',
        id: String(nextId++),
        attributes: { subscription_item_id: Number(item), quantity: data.attributes.quantity, action },
      },
    });
  });

  app.delete('/v1/subscriptions/:id', (req: Request, res: Response) => {
    const id = String(req.params.id);
    jsonApi(res, 200, {
      data: {
        type: 'subscriptions',
        id,
        attributes: {
          store_id: 1,
          customer_id: nextId++,
          status: 'cancelled',
          status_formatted: 'Cancelled',
          cancelled: true,
          renews_at: endsAt,
          ends_at: endsAt,
          test_mode: true,
          updated_at: new Date().toISOString(),
        },
      },
    });
  });

  app.use((req: Request, res: Response) => jsonApiError(res, 404, `No route ${req.method} ${req.path}.`));

  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(0, '127.0.0.1', (err?: Error) => (err ? reject(err) : resolve(s)));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    endsAt,
    itemQuantities,
    usageRecords,
    failNext(failure) {
      pending = failure;
    },
    close: () => closeServer(server),
  };
}

/**
 * A Lemon Squeezy webhook body (JSON text): `meta.event_name`, `meta.custom_data` and the resource as
 * `data`. Pass `data` as { type, id, attributes }.
 */
export function lemonEvent(
  eventName: string,
  data: { type: string; id: string; attributes: Record<string, unknown> },
  customData?: Record<string, string>,
): string {
  return JSON.stringify({
    meta: {
      test_mode: true,
      event_name: eventName,
      webhook_id: crypto.randomUUID(),
      ...(customData ? { custom_data: customData } : {}),
    },
    data: { ...data, relationships: {}, links: { self: `https://api.lemonsqueezy.com/v1/${data.type}/${data.id}` } },
  });
}

/** The X-Signature header for a body: hex HMAC-SHA256 with the webhook secret. */
export function signLemon(rawBody: string | Buffer, secret: string): string {
  return crypto.createHmac('sha256', secret).update(rawBody).digest('hex');
}
