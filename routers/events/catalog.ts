// The catalogue of domain events. A service emits only what is named here, with the payload its schema
// describes (emit.ts checks both at compile time); webhooks subscribe to these names, and /openapi.json
// documents each one (routers/webhooks/events.ts). A test parses every payload the suite emits against
// its schema (tests/events/catalog.test.ts).
import { z } from 'zod';
import {
  API_KEY_SCOPES,
  BILLING_PROVIDERS,
  EDITIONS,
  SSO_CONNECTION_STATUSES,
  SSO_CONNECTION_TYPES,
  SUBSCRIPTION_STATUSES,
  WORKSPACE_ROLES,
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
const ssoConnection = z.object({
  connectionId: z.uuid(),
  type: z.enum(SSO_CONNECTION_TYPES),
  name: z
    .string()
    .max(100)
    .meta({ examples: ['Okta'] }),
  status: z.enum(SSO_CONNECTION_STATUSES),
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

/**
 * Every domain event: when it happens and what its `data` holds. The one list of what a service may emit
 * (emit.ts), what a webhook may subscribe to, and the `webhooks` section of /openapi.json.
 */
export const EVENTS = {
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
  'member.removed': { when: 'A member was removed by another member; `role` is the one they had.', data: member },
  'member.left': { when: 'A member left the workspace on their own; `role` is the one they had.', data: member },
  'user.deleted': {
    when: 'A member deleted their account: they are no longer a member, and their name and address are erased.',
    data: z.object({ userId: z.uuid(), role: z.enum(WORKSPACE_ROLES) }),
  },
  'workspace.deleted': {
    when: 'An owner deleted the workspace: it is purged at `purgeAt` unless restored before. The last event delivered until then.',
    data: z.object({ purgeAt: z.iso.datetime({ offset: true }) }),
  },
  'workspace.restored': {
    when: 'An owner restored the workspace before its purge; it is ACTIVE again, on the default plan.',
    data: z.object({ planId: z.uuid().nullable() }),
  },
  'api_key.created': { when: 'An API key was created or rotated (the key itself is never sent).', data: apiKey },
  'api_key.revoked': { when: 'An API key was revoked.', data: apiKey },
  'sso_connection.created': {
    when: 'An owner added a single sign-on connection (SAML or OIDC) to the workspace.',
    data: ssoConnection,
  },
  'sso_connection.updated': {
    when: "An owner changed a single sign-on connection's settings (name, role, status, certificates, secret).",
    data: ssoConnection,
  },
  'sso_connection.deleted': { when: 'An owner removed a single sign-on connection.', data: ssoConnection },
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
} satisfies Record<string, { when: string; data: z.ZodObject }>;

export type EventName = keyof typeof EVENTS;
/** The names, in the catalogue's order: the webhook subscription enum. */
export const EVENT_NAMES = Object.keys(EVENTS) as [EventName, ...EventName[]];
/** What a service passes as the `data` of `event`. */
export type EventData<E extends EventName> = z.input<(typeof EVENTS)[E]['data']>;
export const isEventName = (name: string): name is EventName => Object.hasOwn(EVENTS, name);
