// Both processors are built whatever BILLING_PROVIDER says: the active one serves checkout, and either
// one verifies its inbound webhooks whenever its secret is set (late events after a switch still land).
import type { Config } from '../../../server/platform/config.js';
import { createLemonSqueezyProcessor } from './lemon-squeezy.js';
import { createStripeProcessor } from './stripe.js';
import type { PaymentProcessor, ProcessorName } from './types.js';

export type Processors = Record<ProcessorName, PaymentProcessor>;

export function createProcessors(config: Config): Processors {
  return { PROCESSOR_A: createStripeProcessor(config), PROCESSOR_B: createLemonSqueezyProcessor(config) };
}
