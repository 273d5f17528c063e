// Input and output of GET /dashboard/insights.
import { z } from 'zod';

export const insightsInput = z.object({ workspaceId: z.uuid().optional() });

export const insightsOutput = z
  .object({
    workspace: z.object({ id: z.uuid(), name: z.string(), edition: z.string(), plan: z.string().nullable() }),
    members: z.number().int(),
    ai: z
      .object({
        used: z.number().int(),
        limit: z.number().int(),
        remaining: z.number().int(),
        perDay: z.array(z.object({ day: z.string(), generations: z.number().int() })),
      })
      .nullable()
      .meta({ description: 'Null unless the role may view AI usage (ai.view_usage).' }),
    apiKeys: z.number().int().nullable().meta({ description: 'Null unless the role manages API keys.' }),
    webhooks: z
      .object({ active: z.number().int(), deliveries30d: z.number().int(), successRate: z.number().nullable() })
      .nullable()
      .meta({ description: 'Null unless the role manages webhooks.' }),
    recentActivity: z
      .array(z.object({ action: z.string(), createdAt: z.iso.datetime({ offset: true }) }))
      .nullable()
      .meta({ description: 'Null unless the role may read the audit log (audit.view).' }),
  })
  .meta({ id: 'Insights' });
