// GET /demo/status: whether demo mode is on and what it restricts. Never names an account.
import { z } from 'zod';
import { publicProcedure, router } from '../../server/platform/trpc.js';

export const demoRouter = router({
  status: publicProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/demo/status',
        description:
          'Whether this instance runs as a demo, and what demo accounts may not do there (key, webhook and admin changes).',
        tags: ['Status'],
        protect: false,
        summary: 'Demo mode and its restrictions',
      },
    })
    .input(z.void())
    .output(
      z.object({
        demoMode: z.boolean(),
        demoAdmin: z.object({ configured: z.boolean(), readOnly: z.literal(true) }),
        demoAccounts: z.object({
          count: z.number().int(),
          realGenerationBlocked: z.boolean(),
          sampleHistoryShown: z.boolean(),
          apiKeyAndWebhookChangesBlocked: z.literal(true),
          realCheckoutBlocked: z.literal(true),
          webhookDeliveryDisabled: z.boolean(),
        }),
      }),
    )
    .query(({ ctx: { config } }) => {
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
    }),
});
