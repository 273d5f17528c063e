// The outbound webhook events as /openapi.json's `webhooks` section (OpenAPI 3.1): for each event, the
// envelope every delivery carries (service.ts, `envelope`), its `data` as the emitting domain writes it,
// and the headers of a delivery (delivery.ts). WEBHOOK_EVENT_DATA has an entry per event of WEBHOOK_EVENTS
// (the type says so), so a new event cannot go undocumented.
import { z } from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import {
  API_KEY_SCOPES,
  BILLING_PROVIDERS,
  EDITIONS,
  SUBSCRIPTION_STATUSES,
  WEBHOOK_EVENTS,
  WORKSPACE_ROLES,
  type WebhookEvent,
} from '../../db/schema.js';

const provider = z.enum(BILLING_PROVIDERS);
const member = z.object({
  userId: z.uuid(),
  role: z.enum(WORKSPACE_ROLES),
});
const apiKey = z.object({
  apiKeyId: z.uuid(),
  name: z
    .string()
    .max(100)
    .meta({ examples: ['CI deploys'] }),
  prefix: z.string().max(32).meta({ description: 'The first characters of the key, to recognise it.' }),
  scopes: z.array(z.enum(API_KEY_SCOPES)).max(API_KEY_SCOPES.length),
});
const payment = z.object({
  paymentId: z.uuid(),
  amountCents: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  currency: z
    .string()
    .max(3)
    .meta({ description: 'ISO 4217, upper case.', examples: ['USD'] }),
  provider,
});

/** What each event's `data` holds, and when it is sent. */
export const WEBHOOK_EVENT_DATA = {
  'webhook.test': {
    when: 'A test delivery, sent by POST /workspaces/{workspaceId}/webhooks/{webhookId}/test.',
    data: z.object({
      message: z
        .string()
        .max(300)
        .meta({ examples: ['This is a test delivery of the webhook "CI".'] }),
      webhookId: z.uuid(),
    }),
  },
  'billing.updated': {
    when: "A payment provider's event changed the workspace's billing (plan, edition or status).",
    data: z.object({
      provider,
      eventType: z
        .string()
        .max(200)
        .meta({ description: "The provider's event type.", examples: ['invoice.paid'] }),
      edition: z.enum(EDITIONS).optional(),
      planId: z.uuid().nullable().optional(),
    }),
  },
  'subscription.created': {
    when: 'The workspace has a new subscription (a checkout completed).',
    data: z.object({
      subscriptionId: z.uuid(),
      planId: z.uuid().nullable(),
      provider,
      status: z.enum(SUBSCRIPTION_STATUSES),
    }),
  },
  'subscription.canceled': {
    when: "The workspace's subscription was canceled.",
    data: z.object({ subscriptionId: z.uuid(), planId: z.uuid().nullable(), provider }),
  },
  'payment.succeeded': { when: 'A payment of the workspace went through.', data: payment },
  'payment.failed': { when: 'A payment of the workspace failed.', data: payment },
  'member.added': { when: 'Someone joined the workspace (an invitation accepted).', data: member },
  'member.removed': { when: 'A member left or was removed; `role` is the one they had.', data: member },
  'api_key.created': { when: 'An API key was created or rotated (the key itself is never sent).', data: apiKey },
  'api_key.revoked': { when: 'An API key was revoked.', data: apiKey },
  'ai.generation.completed': {
    when: 'A text generation of the workspace completed.',
    data: z.object({
      generationId: z.uuid(),
      model: z
        .string()
        .max(100)
        .meta({ examples: ['gpt-4o-mini'] }),
      provider: z
        .string()
        .max(32)
        .meta({ examples: ['OPENAI'] }),
      totalTokens: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    }),
  },
} satisfies Record<WebhookEvent, { when: string; data: z.ZodType }>;

/** 'member.added' -> 'MemberAdded'. */
const pascal = (event: string) =>
  event
    .split(/[._]/)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');

/** The body of a delivery of `event`. */
export const eventEnvelope = (event: WebhookEvent) =>
  z
    .object({
      event: z.literal(event),
      createdAt: z.iso.datetime({ offset: true }).meta({ description: 'When the event happened.' }),
      workspaceId: z.uuid(),
      data: WEBHOOK_EVENT_DATA[event].data,
    })
    .meta({ id: `${pascal(event)}Event` });

const header = (name: string, description: string, example: string, required = true) => ({
  in: 'header' as const,
  name,
  required,
  description,
  schema: { type: 'string' as const, maxLength: 1000, examples: [example] },
});

/** The headers of every delivery. */
const DELIVERY_HEADERS = [
  header('X-Service-Event', 'The event, as in the body.', 'member.added'),
  header(
    'X-Service-Delivery',
    'The delivery id: the same on every attempt of one delivery, so a receiver can drop a repeat.',
    '3f1c2a9e-6b7d-4c1e-9a2b-5d4e3f2a1b0c',
  ),
  header('X-Service-Timestamp', 'Unix time of this attempt, in seconds.', '1767225600'),
  header(
    'X-Service-Signature',
    'Hex HMAC-SHA256 of `<X-Service-Timestamp>.<raw body>`, keyed by the webhook secret (the whole `whsec_...` ' +
      'string). During a secret rotation there is one signature per secret, comma-separated: accept the delivery ' +
      'if one matches. Refuse a timestamp more than 5 minutes away from your clock.',
    '5d41402abc4b2a76b9719d911017c592...',
  ),
  header(
    'webhook-id',
    'Standard Webhooks (standardwebhooks.com): the delivery id, the same on every attempt.',
    '3f1c2a9e-6b7d-4c1e-9a2b-5d4e3f2a1b0c',
    false,
  ),
  header('webhook-timestamp', 'Standard Webhooks: Unix time of this attempt, in seconds.', '1767225600', false),
  header(
    'webhook-signature',
    'Standard Webhooks: `v1,` then the base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<raw body>`, ' +
      'keyed by the base64-decoded part of the secret after `whsec_`; space-separated, one per secret during a ' +
      'rotation. Any Standard Webhooks library verifies it with the secret as shown.',
    'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
    false,
  ),
];

/** The `webhooks` section: one POST per event, as the receiver sees it. */
export const webhookEventsOpenApi: ZodOpenApiPathsObject = Object.fromEntries(
  WEBHOOK_EVENTS.map((event) => [
    event,
    {
      post: {
        operationId: `webhook-${event.replace(/[._]/g, '-')}`,
        summary: `${event}: ${WEBHOOK_EVENT_DATA[event].when}`,
        description:
          `${WEBHOOK_EVENT_DATA[event].when} Sent to every active webhook of the workspace subscribed to ` +
          `\`${event}\`, as a POST with a JSON body. Verify the signature over the raw body before parsing it. ` +
          'Answer any 2xx within the timeout to acknowledge; any other answer, a redirect or no answer is ' +
          'retried later with the same delivery id and body, and 410 Gone stops the retries.',
        tags: ['Webhooks'],
        security: [],
        parameters: DELIVERY_HEADERS,
        requestBody: { required: true, content: { 'application/json': { schema: eventEnvelope(event) } } },
        responses: {
          200: { description: 'Received (any 2xx does).' },
          410: { description: 'Gone: no more attempts of this delivery.' },
        },
      },
    },
  ]),
);
