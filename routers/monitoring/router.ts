// Admin read APIs over the in-memory traffic record (platform admins; the demo admin may read), and the
// clear action (an admin write: the demo admin is refused). With MONITORING_ENABLED=false every route
// answers 503 SERVICE_UNAVAILABLE: there is no record to read.
import os from 'node:os';
import { sql } from 'kysely';
import { z } from 'zod';
import type { Context } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import { offsetOf, pageOf, pageOutput, paginationInput } from '../../server/platform/pagination.js';
import { adminProcedure, adminWriteProcedure, router } from '../../server/platform/trpc.js';

const tags = ['Admin: monitoring'];
const isoDate = z.iso.datetime({ offset: true });

function assertEnabled(ctx: Context) {
  if (!ctx.monitor.enabled) throw new AppError('SERVICE_UNAVAILABLE', 'Monitoring is switched off on this server (MONITORING_ENABLED=false).');
}

const requestRecord = z.object({
  requestId: z.string(),
  method: z.string(),
  path: z.string().meta({ description: 'The route template (ids as {param}); never a query string.' }),
  status: z.number().int(),
  durationMs: z.number(),
  slow: z.boolean(),
  timestamp: isoDate,
  userId: z.uuid().nullable(),
  workspaceId: z.uuid().nullable(),
});
const errorRecord = requestRecord.extend({ code: z.string(), name: z.string(), message: z.string() });

/** Query booleans arrive as text: only "true" and "false" are accepted. */
const queryFlag = z.enum(['true', 'false']).transform((v) => v === 'true');

const requestFilters = paginationInput.extend({
  statusClass: z.enum(['2xx', '3xx', '4xx', '5xx']).optional(),
  method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD']).optional(),
  pathPrefix: z.string().max(200).optional(),
  slowOnly: queryFlag.optional(),
});

function filtered<T extends z.infer<typeof requestRecord>>(items: T[], f: z.infer<typeof requestFilters>) {
  return items.filter(
    (r) =>
      (!f.statusClass || `${Math.floor(r.status / 100)}xx` === f.statusClass) &&
      (!f.method || r.method === f.method) &&
      (!f.pathPrefix || r.path.startsWith(f.pathPrefix)) &&
      (!f.slowOnly || r.slow),
  );
}

const paginate = <T>(items: T[], page: { page: number; limit: number }) => pageOf(items.slice(offsetOf(page), offsetOf(page) + page.limit), items.length, page);

export const monitoringRouter = router({
  status: adminProcedure
    .meta({ openapi: { method: 'GET', path: '/admin/monitoring/status', tags, summary: 'Health, uptime, memory, logging flags and buffer fill' } })
    .input(z.void())
    .output(
      z.object({
        status: z.enum(['ok', 'degraded']),
        version: z.string(),
        uptimeSeconds: z.number(),
        database: z.object({ reachable: z.boolean() }),
        memory: z.object({ rssMb: z.number(), heapUsedMb: z.number(), heapTotalMb: z.number(), systemFreeMb: z.number() }),
        logging: z.object({
          monitoringEnabled: z.boolean(),
          requestLoggingEnabled: z.boolean(),
          errorLoggingEnabled: z.boolean(),
          logLevel: z.string(),
          slowRequestMs: z.number(),
          errorLogRetentionDays: z.number(),
        }),
        buffers: z.object({
          requests: z.object({ size: z.number().int(), capacity: z.number().int() }),
          errors: z.object({ size: z.number().int(), capacity: z.number().int() }),
        }),
      }),
    )
    .query(async ({ ctx }) => {
      assertEnabled(ctx);
      const reachable = await sql`select 1`.execute(ctx.db).then(() => true, () => false);
      const mem = process.memoryUsage();
      const mb = (n: number) => Math.round((n / 1_048_576) * 10) / 10;
      const { config, monitor } = ctx;
      return {
        status: reachable ? ('ok' as const) : ('degraded' as const),
        version: config.SERVICE_VERSION,
        uptimeSeconds: Math.round((Date.now() - ctx.startedAt.getTime()) / 1000),
        database: { reachable },
        memory: { rssMb: mb(mem.rss), heapUsedMb: mb(mem.heapUsed), heapTotalMb: mb(mem.heapTotal), systemFreeMb: mb(os.freemem()) },
        logging: {
          monitoringEnabled: config.MONITORING_ENABLED,
          requestLoggingEnabled: config.REQUEST_LOGGING_ENABLED,
          errorLoggingEnabled: config.ERROR_LOGGING_ENABLED,
          logLevel: config.LOG_LEVEL,
          slowRequestMs: config.REQUEST_LOG_SLOW_MS,
          errorLogRetentionDays: config.ERROR_LOG_RETENTION_DAYS,
        },
        buffers: {
          requests: { size: monitor.requests.size, capacity: monitor.requests.capacity },
          errors: { size: monitor.errors.size, capacity: monitor.errors.capacity },
        },
      };
    }),

  summary: adminProcedure
    .meta({ openapi: { method: 'GET', path: '/admin/monitoring/summary', tags, summary: 'Success rate, status mix, top routes, per-minute timeline' } })
    .input(z.void())
    .output(
      z.object({
        window: z.object({ requests: z.number().int(), from: isoDate.nullable(), to: isoDate.nullable() }),
        successRate: z.number().nullable(),
        statusClasses: z.record(z.string(), z.number().int()),
        statusCodes: z.record(z.string(), z.number().int()),
        slowRequests: z.number().int(),
        errors: z.number().int(),
        topRoutesByCount: z.array(z.object({ route: z.string(), count: z.number().int(), avgMs: z.number(), p95Ms: z.number() })),
        topRoutesByP95: z.array(z.object({ route: z.string(), count: z.number().int(), avgMs: z.number(), p95Ms: z.number() })),
        timeline: z.array(z.object({ minute: isoDate, requests: z.number().int(), errors: z.number().int(), serverErrors: z.number().int() })),
      }),
    )
    .query(({ ctx }) => {
      assertEnabled(ctx);
      return ctx.monitor.summary();
    }),

  errors: adminProcedure
    .meta({ openapi: { method: 'GET', path: '/admin/monitoring/errors', tags, summary: 'Recent error answers, newest first (safe summaries)' } })
    .input(requestFilters)
    .output(pageOutput(errorRecord))
    .query(({ ctx, input }) => {
      assertEnabled(ctx);
      return paginate(filtered(ctx.monitor.errors.toArray(), input), input);
    }),

  requests: adminProcedure
    .meta({ openapi: { method: 'GET', path: '/admin/monitoring/requests', tags, summary: 'Recent requests, newest first' } })
    .input(requestFilters)
    .output(pageOutput(requestRecord))
    .query(({ ctx, input }) => {
      assertEnabled(ctx);
      return paginate(filtered(ctx.monitor.requests.toArray(), input), input);
    }),

  clear: adminWriteProcedure
    .meta({ openapi: { method: 'POST', path: '/admin/monitoring/clear', tags, summary: 'Empty both buffers' } })
    .input(z.void())
    .output(z.object({ message: z.string() }))
    .mutation(({ ctx }) => {
      assertEnabled(ctx);
      ctx.monitor.clear();
      return { message: 'Monitoring buffers cleared.' };
    }),
});
