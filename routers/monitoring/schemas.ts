// Inputs and outputs of the admin monitoring routes.
import { z } from 'zod';
import { paginationInput } from '../../server/platform/pagination.js';

const isoDate = z.iso.datetime({ offset: true });

export const requestRecord = z.object({
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
export const errorRecord = requestRecord.extend({ code: z.string(), name: z.string(), message: z.string() });

/** Query booleans arrive as text: only "true" and "false" are accepted. */
const queryFlag = z.enum(['true', 'false']).transform((v) => v === 'true');

export const requestFilters = paginationInput.extend({
  statusClass: z.enum(['2xx', '3xx', '4xx', '5xx']).optional(),
  method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD']).optional(),
  pathPrefix: z.string().max(200).optional(),
  slowOnly: queryFlag.optional(),
});
export type RequestFilters = z.infer<typeof requestFilters>;

export const statusOutput = z
  .object({
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
  })
  .meta({ id: 'MonitoringStatus' });

export const summaryOutput = z
  .object({
    window: z.object({ requests: z.number().int(), from: isoDate.nullable(), to: isoDate.nullable() }),
    successRate: z.number().nullable(),
    statusClasses: z.record(z.string(), z.number().int()),
    statusCodes: z.record(z.string(), z.number().int()),
    slowRequests: z.number().int(),
    errors: z.number().int(),
    topRoutesByCount: z.array(
      z.object({ route: z.string(), count: z.number().int(), avgMs: z.number(), p95Ms: z.number() }),
    ),
    topRoutesByP95: z.array(
      z.object({ route: z.string(), count: z.number().int(), avgMs: z.number(), p95Ms: z.number() }),
    ),
    timeline: z.array(
      z.object({
        minute: isoDate,
        requests: z.number().int(),
        errors: z.number().int(),
        serverErrors: z.number().int(),
      }),
    ),
  })
  .meta({ id: 'MonitoringSummary' });
