// Output of GET /health.
import { z } from 'zod';

export const healthOutput = z
  .object({
    status: z.enum(['ok', 'degraded', 'draining']),
    version: z.string(),
    uptimeSeconds: z.number(),
    database: z.object({ reachable: z.boolean(), latencyMs: z.number().nullable() }),
  })
  .meta({ id: 'Health' });
