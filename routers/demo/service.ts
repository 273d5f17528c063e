// Demo mode as the settings describe it: on when demo accounts or a demo admin are configured, and what
// those accounts may not do. Counts and flags only; never an account's address.
import type { AppDeps } from '../../server/platform/context.js';

export function demoStatus({ config }: Pick<AppDeps, 'config'>) {
  const demoAccounts = config.AI_DEMO_RESTRICTED_EMAILS.length;
  const demoAdminConfigured = Boolean(config.SEED_DEMO_ADMIN_EMAIL);
  return {
    demoMode: demoAccounts > 0 || demoAdminConfigured,
    demoAdmin: { configured: demoAdminConfigured, readOnly: true as const },
    demoAccounts: {
      count: demoAccounts,
      realGenerationBlocked: config.AI_DEMO_BLOCK_REAL_GENERATION,
      sampleHistoryShown: config.AI_DEMO_SHOW_SAMPLE_HISTORY,
      apiKeyAndWebhookChangesBlocked: true as const,
      realCheckoutBlocked: true as const,
      webhookDeliveryDisabled: config.WEBHOOK_DEMO_DELIVERY_DISABLED,
    },
  };
}
