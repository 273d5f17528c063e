// The admin's view of the payment settings: what is configured, as booleans and URLs. Never a key or a
// secret. They come from the environment, so they are read-only here.
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import type { BillingSettings } from './schemas.js';

export function billingSettings({ config, processors }: Pick<AppDeps, 'config' | 'processors'>): BillingSettings {
  const describe = (
    name: 'PROCESSOR_A' | 'PROCESSOR_B',
    prices: [string | undefined, string | undefined, string | undefined],
  ) => ({
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
    processorA: describe('PROCESSOR_A', [
      config.PROCESSOR_A_PRICE_LITE,
      config.PROCESSOR_A_PRICE_PRO,
      config.PROCESSOR_A_PRICE_ENTERPRISE,
    ]),
    processorB: describe('PROCESSOR_B', [
      config.PROCESSOR_B_VARIANT_LITE,
      config.PROCESSOR_B_VARIANT_PRO,
      config.PROCESSOR_B_VARIANT_ENTERPRISE,
    ]),
  };
}

/** PATCH /admin/billing/settings: always refused, the settings come from the environment. */
export function refuseSettingsChange(): never {
  throw new AppError(
    'SETTINGS_READ_ONLY',
    'Billing settings come from the environment (BILLING_PROVIDER, PROCESSOR_A_*, PROCESSOR_B_*, BILLING_*). Change them there and restart the service.',
  );
}
