// Inputs and outputs of the outbound webhook routes.
import { z } from 'zod';
import { DELIVERY_STATUSES } from '../../db/schema.js';
import { EVENT_NAMES } from '../events/catalog.js';
import { listInput } from '../../server/platform/pagination.js';
import { displayName, exact } from '../../server/platform/validation.js';
import { MAX_WEBHOOK_URL_LENGTH } from './url-policy.js';

const isoDate = z.iso.datetime({ offset: true });

// Length and safety of the URL are checked by the URL policy (400 WEBHOOK_URL_NOT_ALLOWED).
const url = z.string().meta({
  description: `Public http(s) URL, at most ${MAX_WEBHOOK_URL_LENGTH} characters.`,
  maxLength: MAX_WEBHOOK_URL_LENGTH,
  examples: ['https://example.com/hooks/workspace'],
});
const events = z
  .array(z.enum(EVENT_NAMES, { error: `Unknown event. Known events: ${EVENT_NAMES.join(', ')}.` }))
  .min(1, { error: 'Subscribe to at least one event.' })
  .max(EVENT_NAMES.length)
  .transform((e) => [...new Set(e)]);
const name = displayName(100);

export const webhookOutput = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    name: z.string(),
    url: z.string(),
    events: z.array(z.enum(EVENT_NAMES)),
    isActive: z.boolean(),
    disabledReason: z.string().nullable(),
    consecutiveFailures: z.number().int(),
    secretRotationEndsAt: isoDate.nullable(),
    createdAt: isoDate,
    updatedAt: isoDate,
  })
  .meta({ id: 'Webhook' });
export const withSecretOutput = webhookOutput
  .extend({
    secret: z.string().meta({ description: 'The whsec_ signing secret: shown this once, never again.' }),
  })
  .meta({ id: 'WebhookWithSecret' });

export const deliveryOutput = z
  .object({
    id: z.uuid(),
    webhookId: z.uuid(),
    event: z.string(),
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.number().int(),
    requestHeaders: z.record(z.string(), z.string()).nullable(),
    payload: z.record(z.string(), z.unknown()),
    responseStatus: z.number().int().nullable(),
    responsePreview: z.string().nullable(),
    durationMs: z.number().int().nullable(),
    nextRetryAt: isoDate.nullable(),
    error: z.string().nullable(),
    createdAt: isoDate,
    updatedAt: isoDate,
  })
  .meta({ id: 'WebhookDelivery' });

export const workspaceInput = z.object({ workspaceId: z.uuid() });
export const webhookInput = workspaceInput.extend({ webhookId: z.uuid() });

export const createWebhookInput = workspaceInput.extend({ name, url, events });

export const updateWebhookInput = webhookInput
  .extend({
    name: name.optional(),
    url: url.optional(),
    events: events.optional(),
    isActive: exact(z.boolean()).optional(),
  })
  .refine((i) => i.name !== undefined || i.url !== undefined || i.events !== undefined || i.isActive !== undefined, {
    error: 'Send at least one of name, url, events, isActive.',
  });

export const rotateSecretInput = webhookInput.extend({
  gracePeriodSeconds: exact(
    z
      .number()
      .int()
      .min(0)
      .max(7 * 86_400),
  ).default(86_400),
});

export const deliveriesInput = workspaceInput
  .extend(listInput.shape)
  .extend({ webhookId: z.uuid().optional(), status: z.enum(DELIVERY_STATUSES).optional() });

export const deliveryInput = workspaceInput.extend({ deliveryId: z.uuid() });
