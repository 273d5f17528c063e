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
