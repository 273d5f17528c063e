// GET /health: whether this instance should get traffic (a load balancer's check). 503 while the database
// does not answer (`degraded`), and from the start of a shutdown (`draining`, server/server.ts).
import { sql } from 'kysely';
import { z } from 'zod';
import type { Db } from '../../db/index.js';
import { publicProcedure, router } from '../../server/platform/trpc.js';

const DB_PING_TIMEOUT_MS = 2000;

async function pingDatabase(db: Db): Promise<{ reachable: boolean; latencyMs: number | null }> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      sql`select 1`.execute(db),
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), DB_PING_TIMEOUT_MS))),
    ]);
    return { reachable: true, latencyMs: Math.round((performance.now() - started) * 10) / 10 };
  } catch {
    return { reachable: false, latencyMs: null };
  } finally {
    clearTimeout(timer);
  }
}

export const healthOutput = z.object({
  status: z.enum(['ok', 'degraded', 'draining']),
  version: z.string(),
  uptimeSeconds: z.number(),
  database: z.object({ reachable: z.boolean(), latencyMs: z.number().nullable() }),
});

export const healthRouter = router({
  health: publicProcedure
    .meta({
      rateLimit: false,
      openapi: { method: 'GET', path: '/health', tags: ['Status'], protect: false, summary: 'Service and database health' },
      sameBodyWith: { 503: 'Degraded (the database does not answer) or draining (the instance is shutting down)' },
    })
    .input(z.void())
    .output(healthOutput)
    .query(async ({ ctx }) => {
      const database = await pingDatabase(ctx.db);
      const status = ctx.lifecycle.draining ? 'draining' : database.reachable ? 'ok' : 'degraded';
      if (status !== 'ok') ctx.response.status = 503;
      return {
        status,
        version: ctx.config.SERVICE_VERSION,
        uptimeSeconds: Math.round((Date.now() - ctx.startedAt.getTime()) / 1000),
        database,
      };
    }),
});
