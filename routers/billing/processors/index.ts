// Both processors are built whatever BILLING_PROVIDER says: the active one serves checkout, and either
// one verifies its inbound webhooks whenever its secret is set (late events after a switch still land).
import type { Config } from '../../../server/platform/config.js';
import { createLemonSqueezyProcessor } from './lemon-squeezy.js';
import { unconfiguredStripeProcessor } from './stripe-unconfigured.js';
import type { PaymentProcessor, ProcessorName } from './types.js';

export type Processors = Record<ProcessorName, PaymentProcessor>;

/** The Stripe SDK is loaded only when one of PROCESSOR_A's keys is set: without them it is never called. */
export async function createProcessors(config: Config): Promise<Processors> {
  const stripe =
    config.PROCESSOR_A_SECRET_KEY || config.PROCESSOR_A_WEBHOOK_SECRET
      ? (await import('./stripe.js')).createStripeProcessor(config)
      : unconfiguredStripeProcessor();
  return { PROCESSOR_A: stripe, PROCESSOR_B: createLemonSqueezyProcessor(config) };
}
