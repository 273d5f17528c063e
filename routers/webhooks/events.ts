// The outbound webhook events as /openapi.json's `webhooks` section (OpenAPI 3.1): for each event of the
// catalogue (routers/events/catalog.ts), the envelope every delivery carries (service.ts, `envelope`), its
// `data` as the catalogue describes it, and the headers of a delivery (delivery.ts).
import { z } from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import { EVENTS, EVENT_NAMES, type EventName } from '../events/catalog.js';

/** 'member.added' -> 'MemberAdded'. */
const pascal = (event: string) =>
  event
    .split(/[._]/)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');

/** The body of a delivery of `event`. */
export const eventEnvelope = (event: EventName) =>
  z
    .object({
      event: z.literal(event),
      createdAt: z.iso.datetime({ offset: true }).meta({ description: 'When the event happened.' }),
      workspaceId: z.uuid(),
      data: EVENTS[event].data,
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
  EVENT_NAMES.map((event) => [
    event,
    {
      post: {
        operationId: `webhook-${event.replace(/[._]/g, '-')}`,
        summary: `${event}: ${EVENTS[event].when}`,
        description:
          `${EVENTS[event].when} Sent to every active webhook of the workspace subscribed to ` +
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
