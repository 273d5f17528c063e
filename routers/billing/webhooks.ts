// Inbound payment-provider webhooks: plain Express routes (signatures are checked over the exact raw
// bytes, which trpc-to-openapi cannot hand over), documented in /openapi.json through openApiPaths.
import express, { Router, type RequestHandler } from 'express';
import { z } from 'zod';
import type { AppDeps } from '../../server/platform/context.js';
import type { Config } from '../../server/platform/config.js';
import { AppError, fromZodError } from '../../server/platform/errors.js';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import { applyMockEvent, applyProviderEvent } from './provider-events.js';
import { mockEventInput } from './schemas.js';
import type { ProcessorName } from './processors/types.js';
import { errorResponse } from '../../server/platform/error-response.js';
import { UnstorableText, refuseUnstorableText } from '../../server/platform/unstorable-text.js';
import {
  JSON_BODY_LIMIT_BYTES,
  REQUEST_HEAD_MAX_BYTES,
  refuseJsonBodyHeaders,
  refuseTrailingBytes,
} from '../../server/platform/request-body.js';

/**
 * The body as bytes, whatever its Content-Type. A gzip, deflate or br delivery is decoded first: the
 * provider signs the payload, not its transfer encoding, so the signature is checked over the decoded
 * bytes. 1 MiB decoded, like JSON routes; refused earlier by its headers alone when they say more.
 */
const rawJson = [
  refuseJsonBodyHeaders,
  refuseTrailingBytes(express.raw({ type: () => true, limit: JSON_BODY_LIMIT_BYTES })),
];

type Deps = Pick<AppDeps, 'db' | 'config' | 'processors' | 'logger' | 'mailer'>;

function processorWebhook(deps: Deps, name: ProcessorName): RequestHandler {
  return async (req, res, next) => {
    try {
      const processor = deps.processors[name];
      if (!processor.webhookConfigured) {
        throw new AppError(
          'BILLING_NOT_CONFIGURED',
          `${name} webhooks are not configured on this server (its webhook secret is not set).`,
        );
      }
      const event = processor.parseWebhook(Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0), req.headers);
      const outcome = await applyProviderEvent(deps, { provider: name, event });
      deps.logger.info({ provider: name, eventType: event.type, outcome }, 'billing webhook');
      res.json({ received: true, outcome });
    } catch (err) {
      next(err);
    }
  };
}

/** The development webhook of BILLING_PROVIDER=MOCK (unsigned): the event, checked, for applyMockEvent. */
function mockWebhook(deps: Deps): RequestHandler {
  return async (req, res, next) => {
    try {
      let json: unknown;
      try {
        json = JSON.parse(Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '', refuseUnstorableText);
      } catch (err) {
        if (err instanceof UnstorableText) throw err;
        throw new AppError('BAD_REQUEST', 'Malformed JSON in request body.');
      }
      const parsed = mockEventInput.safeParse(json);
      if (!parsed.success) {
        const api = fromZodError(parsed.error);
        throw new AppError('BAD_REQUEST', api.message, api.issues);
      }
      res.json({ received: true, outcome: await applyMockEvent(deps, parsed.data) });
    } catch (err) {
      next(err);
    }
  };
}

/**
 * Whether POST /billing/webhooks/mock exists: only while MOCK is the provider, and in production only when
 * BILLING_MOCK_WEBHOOK_ENABLED says so. It is unsigned: whoever can reach it can move any workspace's plan
 * by naming its id. Otherwise it is an unknown route (404).
 */
export const MOCK_WEBHOOK_PATH = '/billing/webhooks/mock';

type MockWebhookSettings = Pick<Config, 'BILLING_PROVIDER' | 'NODE_ENV' | 'BILLING_MOCK_WEBHOOK_ENABLED'>;
export const mockWebhookEnabled = (config: MockWebhookSettings) =>
  config.BILLING_PROVIDER === 'MOCK' && (config.NODE_ENV !== 'production' || config.BILLING_MOCK_WEBHOOK_ENABLED);

export function billingWebhookRoutes(deps: Deps): Router {
  const routes = Router();
  routes.post('/billing/webhooks/processor-a', rawJson, processorWebhook(deps, 'PROCESSOR_A'));
  routes.post('/billing/webhooks/processor-b', rawJson, processorWebhook(deps, 'PROCESSOR_B'));
  if (mockWebhookEnabled(deps.config)) {
    if (deps.config.NODE_ENV === 'production') {
      const warning = "the unsigned POST /billing/webhooks/mock lets anyone change any workspace's plan";
      deps.logger.warn(`BILLING_MOCK_WEBHOOK_ENABLED in production: ${warning}`);
    }
    routes.post(MOCK_WEBHOOK_PATH, rawJson, mockWebhook(deps));
  }
  return routes;
}

const received = {
  description: 'Received (also for a duplicate delivery, which changes nothing)',
  content: {
    'application/json': {
      schema: z.object({
        received: z.literal(true),
        outcome: z.enum(['applied', 'duplicate', 'stale', 'unmatched', 'ignored']),
      }),
    },
  },
};

export const billingWebhookOpenApiPaths: ZodOpenApiPathsObject = {
  '/billing/webhooks/processor-a': {
    post: {
      'x-rate-limit-tier': 'webhook',
      operationId: 'billing-webhooks-processor-a',
      description:
        "For PROCESSOR_A only: its events (checkout completed, subscription changes, payments) update the workspace's subscription and payments. The Stripe-Signature header must verify over the raw body with the configured secret, within 300 s. Each event is applied once, however often it is sent.\n\n**Who may call it:** the payment provider only: no token, but its signature must verify.",
      summary: 'PROCESSOR_A events, verified by the Stripe-Signature header (300 s tolerance)',
      tags: ['Billing webhooks'],
      security: [],
      parameters: [
        {
          in: 'header',
          name: 'Stripe-Signature',
          required: true,
          schema: { type: 'string', maxLength: REQUEST_HEAD_MAX_BYTES },
        },
      ],
      requestBody: { required: true, content: { 'application/json': { schema: { type: 'object' } } } },
      responses: {
        200: received,
        400: errorResponse('Missing, stale or wrong signature', ['INVALID_SIGNATURE']),
        503: errorResponse('No webhook secret', ['BILLING_NOT_CONFIGURED']),
      },
    },
  },
  '/billing/webhooks/processor-b': {
    post: {
      'x-rate-limit-tier': 'webhook',
      operationId: 'billing-webhooks-processor-b',
      description:
        "For PROCESSOR_B only: its events update the workspace's subscription and payments. X-Signature must be the hex HMAC-SHA256 of the raw body with the configured secret. Each event is applied once, however often it is sent.\n\n**Who may call it:** the payment provider only: no token, but its signature must verify.",
      summary: 'PROCESSOR_B events, verified by the X-Signature header (hex HMAC-SHA256 of the raw body)',
      tags: ['Billing webhooks'],
      security: [],
      parameters: [
        {
          in: 'header',
          name: 'X-Signature',
          required: true,
          schema: { type: 'string', maxLength: REQUEST_HEAD_MAX_BYTES },
        },
      ],
      requestBody: { required: true, content: { 'application/json': { schema: { type: 'object' } } } },
      responses: {
        200: received,
        400: errorResponse('Missing or wrong signature', ['INVALID_SIGNATURE']),
        503: errorResponse('No webhook secret', ['BILLING_NOT_CONFIGURED']),
      },
    },
  },
  [MOCK_WEBHOOK_PATH]: {
    post: {
      'x-rate-limit-tier': 'webhook',
      operationId: 'billing-webhooks-mock',
      summary: 'Development events while BILLING_PROVIDER is MOCK (404 otherwise, and in production)',
      description:
        'Unsigned. The route exists only while BILLING_PROVIDER is MOCK and NODE_ENV is not production, or in ' +
        'production with BILLING_MOCK_WEBHOOK_ENABLED=true; otherwise it answers 404 like an unknown route.',
      tags: ['Billing webhooks'],
      security: [],
      requestBody: { required: true, content: { 'application/json': { schema: mockEventInput } } },
      responses: {
        200: received,
        400: errorResponse('Malformed event', ['BAD_REQUEST']),
        404: errorResponse('The route is off (see the description), or no such plan', ['NOT_FOUND', 'PLAN_NOT_FOUND']),
      },
    },
  },
};
