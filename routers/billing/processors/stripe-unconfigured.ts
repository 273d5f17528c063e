// PROCESSOR_A with neither of its keys set: what stripe.ts's adapter answers then, without loading the
// Stripe SDK (which that adapter would never call). The composition root picks it (index.ts).
import { AppError } from '../../../server/platform/errors.js';
import type { PaymentProcessor } from './types.js';

export const NOT_CONFIGURED = 'PROCESSOR_A is not configured (its secret key is not set).';
export const WEBHOOKS_NOT_CONFIGURED = 'PROCESSOR_A webhooks are not configured (the webhook secret is not set).';

export function unconfiguredStripeProcessor(): PaymentProcessor {
  const refuse = async (): Promise<never> => {
    throw new AppError('BILLING_NOT_CONFIGURED', NOT_CONFIGURED);
  };
  return {
    name: 'PROCESSOR_A',
    configured: false,
    webhookConfigured: false,
    mode: 'test',
    createCheckout: refuse,
    cancelSubscription: refuse,
    updateSeats: refuse,
    reportUsage: refuse,
    reportUsageBatch: refuse,
    createPortalSession: refuse,
    parseWebhook() {
      throw new AppError('BILLING_NOT_CONFIGURED', WEBHOOKS_NOT_CONFIGURED);
    },
  };
}
