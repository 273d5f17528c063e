// Output of GET /demo/status: whether demo mode is on and what it restricts (counts and flags, never an
// account).
import { z } from 'zod';

export const demoStatusOutput = z.object({
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
});
