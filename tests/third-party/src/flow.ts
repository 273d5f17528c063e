// What a third party writes against /openapi.json alone: openapi-fetch on the types openapi-typescript
// generates from it (./api.d.ts). Sign up, sign in, create a workspace, buy a plan (MOCK checkout), create
// an API key and call the public API with it, create a webhook and have a test delivery sent, and verify
// that delivery's signature. Each answer used must be typed by the document (`documented`): an answer the
// document gives no schema is `unknown` or `undefined`, and this file does not compile.
import crypto from 'node:crypto';
import createClient from 'openapi-fetch';
import { Webhook } from 'standardwebhooks';
import type { paths } from './api.js';

/** T, unless the document left it untyped: then `never`, and using it fails to compile. */
export type Documented<T> = unknown extends T
  ? never
  : [T] extends [never]
    ? never
    : [T] extends [undefined]
      ? never
      : T;

/** The success body of an openapi-fetch result, typed as the document says; throws on an error answer. */
export function documented<T>(result: { data?: T; error?: unknown; response: Response }, what: string): Documented<T> {
  if (result.data === undefined) {
    throw new Error(`${what}: HTTP ${result.response.status} ${JSON.stringify(result.error)}`);
  }
  return result.data as Documented<T>;
}

/** A delivery as the receiver got it: its headers (lower-case names) and raw body. */
export interface Delivery {
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** The X-Service-Signature check, as the document describes it: hex HMAC-SHA256 of `timestamp.body`. */
export function verifyServiceSignature(secret: string, delivery: Delivery, toleranceSeconds = 300): boolean {
  const timestamp = String(delivery.headers['x-service-timestamp'] ?? '');
  if (!/^\d+$/.test(timestamp) || Math.abs(Date.now() / 1000 - Number(timestamp)) > toleranceSeconds) return false;
  const expected = crypto.createHmac('sha256', secret).update(`${timestamp}.${delivery.body}`).digest();
  return String(delivery.headers['x-service-signature'] ?? '')
    .split(',')
    .some((signature) => {
      const given = Buffer.from(signature.trim(), 'hex');
      return given.length === expected.length && crypto.timingSafeEqual(given, expected);
    });
}

/**
 * STANDARD WEBHOOKS CHECK: `webhook-id`, `webhook-timestamp` and `webhook-signature` verified with the
 * `standardwebhooks` package, given the secret as the service showed it (`whsec_...`).
 */
export function verifyStandardWebhooksSignature(secret: string, delivery: Delivery): boolean {
  const headers = Object.fromEntries(
    ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => [
      name,
      String(delivery.headers[name] ?? ''),
    ]),
  );
  try {
    new Webhook(secret).verify(delivery.body, headers);
    return true;
  } catch {
    return false;
  }
}

export interface FlowResult {
  userId: string;
  workspaceId: string;
  edition: string;
  publicApiWorkspaceId: string;
  deliveryStatus: string;
  deliveryId: string;
  signatureValid: boolean;
  standardWebhooksValid: boolean;
}

export async function thirdPartyFlow(opts: {
  baseUrl: string;
  email: string;
  /** Where the webhook delivers (the third party's endpoint). */
  receiverUrl: string;
  /** The deliveries the endpoint received so far. */
  received: () => Delivery[];
}): Promise<FlowResult> {
  const api = createClient<paths>({ baseUrl: opts.baseUrl });
  const password = 'Correct-horse-42';

  const registered = documented(
    await api.POST('/auth/register', { body: { email: opts.email, password, name: 'Jane Doe' } }),
    'register',
  );
  const signedIn = documented(await api.POST('/auth/login', { body: { email: opts.email, password } }), 'login');
  // An account with two-factor sign-in gets a challenge instead of tokens; this one has none.
  if ('mfaRequired' in signedIn) throw new Error('two-factor sign-in is on: verify with POST /auth/mfa/verify');
  const auth = { Authorization: `Bearer ${signedIn.accessToken}` };

  const workspace = documented(
    await api.POST('/workspaces', { headers: auth, body: { name: 'Integration' } }),
    'create a workspace',
  );
  const checkout = documented(
    await api.POST('/billing/checkout', { headers: auth, body: { workspaceId: workspace.id, planCode: 'pro' } }),
    'checkout',
  );
  const current = documented(
    await api.GET('/billing/current', { headers: auth, params: { query: { workspaceId: workspace.id } } }),
    'current plan',
  );

  const key = documented(
    await api.POST('/workspaces/{workspaceId}/api-keys', {
      headers: auth,
      params: { path: { workspaceId: workspace.id } },
      body: { name: 'Integration key', scopes: ['read'] },
    }),
    'create an API key',
  );
  const me = documented(await api.GET('/public-api/me', { headers: { 'X-API-Key': key.rawKey } }), 'public API');

  const hook = documented(
    await api.POST('/workspaces/{workspaceId}/webhooks', {
      headers: auth,
      params: { path: { workspaceId: workspace.id } },
      body: { name: 'Integration hook', url: opts.receiverUrl, events: ['webhook.test'] },
    }),
    'create a webhook',
  );
  const delivery = documented(
    await api.POST('/workspaces/{workspaceId}/webhooks/{webhookId}/test', {
      headers: auth,
      params: { path: { workspaceId: workspace.id, webhookId: hook.id } },
    }),
    'test delivery',
  );
  const got = opts.received().find((d) => d.headers['x-service-delivery'] === delivery.id);
  if (!got) throw new Error(`the endpoint did not receive delivery ${delivery.id}`);
  const envelope = JSON.parse(got.body) as { event: string; workspaceId: string };
  if (envelope.event !== 'webhook.test' || envelope.workspaceId !== workspace.id) throw new Error('wrong envelope');

  return {
    userId: registered.user.id,
    workspaceId: workspace.id,
    edition: checkout.current?.edition ?? current.edition,
    publicApiWorkspaceId: me.workspace.id,
    deliveryStatus: delivery.status,
    deliveryId: delivery.id,
    signatureValid: verifyServiceSignature(hook.secret, got),
    standardWebhooksValid: verifyStandardWebhooksSignature(hook.secret, got),
  };
}
