// GET /demo/status: whether demo mode is on and what it restricts. Never names an account.
import { z } from 'zod';
import { publicProcedure, router } from '../../server/platform/trpc.js';
import { demoStatusOutput } from './schemas.js';
import { demoStatus } from './service.js';

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
    .output(demoStatusOutput)
    .query(({ ctx }) => demoStatus(ctx)),
});
