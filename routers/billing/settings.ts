// GET /admin/billing/settings: what is configured, as booleans and URLs. Never a key or a secret.
import { z } from 'zod';
import { BILLING_PROVIDERS } from '../../db/schema.js';
import type { Config } from '../../server/platform/config.js';
import type { Processors } from './processors/index.js';

const processorOutput = z.object({
  active: z.boolean(),
  configured: z.boolean(),
  webhookConfigured: z.boolean(),
  webhookPath: z.string(),
  mode: z.enum(['test', 'live']),
  pricesConfigured: z.object({ lite: z.boolean(), pro: z.boolean(), enterprise: z.boolean() }),
});

export const billingSettingsOutput = z.object({
  provider: z.enum(BILLING_PROVIDERS),
  source: z.literal('environment'),
  readOnly: z.literal(true),
  successUrl: z.string(),
  cancelUrl: z.string(),
  supportEmail: z.string(),
  customerPortalEnabled: z.boolean(),
  mockWebhookEnabled: z.boolean(),
  processorA: processorOutput,
  processorB: processorOutput,
});

export function billingSettings({ config, processors }: { config: Config; processors: Processors }): z.infer<typeof billingSettingsOutput> {
  const describe = (name: 'PROCESSOR_A' | 'PROCESSOR_B', prices: [string | undefined, string | undefined, string | undefined]) => ({
    active: config.BILLING_PROVIDER === name,
    configured: processors[name].configured,
    webhookConfigured: processors[name].webhookConfigured,
    webhookPath: `/billing/webhooks/${name === 'PROCESSOR_A' ? 'processor-a' : 'processor-b'}`,
    mode: processors[name].mode,
    pricesConfigured: { lite: Boolean(prices[0]), pro: Boolean(prices[1]), enterprise: Boolean(prices[2]) },
  });
  return {
    provider: config.BILLING_PROVIDER,
    source: 'environment',
    readOnly: true,
    successUrl: config.BILLING_SUCCESS_URL,
    cancelUrl: config.BILLING_CANCEL_URL,
    supportEmail: config.BILLING_SUPPORT_EMAIL,
    customerPortalEnabled: config.PROCESSOR_A_CUSTOMER_PORTAL_ENABLED,
    mockWebhookEnabled: config.BILLING_PROVIDER === 'MOCK',
    processorA: describe('PROCESSOR_A', [config.PROCESSOR_A_PRICE_LITE, config.PROCESSOR_A_PRICE_PRO, config.PROCESSOR_A_PRICE_ENTERPRISE]),
    processorB: describe('PROCESSOR_B', [config.PROCESSOR_B_VARIANT_LITE, config.PROCESSOR_B_VARIANT_PRO, config.PROCESSOR_B_VARIANT_ENTERPRISE]),
  };
}
