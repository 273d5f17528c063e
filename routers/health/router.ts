// GET /health: whether this instance should get traffic (a load balancer's check). 503 unless `ok`.
import { z } from 'zod';
import { publicProcedure, router } from '../../server/platform/trpc.js';
import { healthOutput } from './schemas.js';
import { health } from './service.js';

export const healthRouter = router({
  health: publicProcedure
    .meta({
      rateLimit: false,
      openapi: {
        method: 'GET',
        path: '/health',
        description:
          'Whether the service answers and its database is reachable: 200 with status ok, or 503 with the same body (status degraded) while the database is away. For load balancers; never rate-limited.',
        tags: ['Status'],
        protect: false,
        summary: 'Service and database health',
      },
      sameBodyWith: { 503: 'Degraded (the database does not answer) or draining (the instance is shutting down)' },
    })
    .input(z.void())
    .output(healthOutput)
    .query(async ({ ctx }) => {
      const answer = await health(ctx);
      if (answer.status !== 'ok') ctx.response.status = 503;
      return answer;
    }),
});
