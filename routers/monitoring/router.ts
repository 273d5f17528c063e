// Admin read APIs over the in-memory traffic record (platform admins; the demo admin may read), and the
// clear action (an admin write: the demo admin is refused). With MONITORING_ENABLED=false every route
// answers 503 SERVICE_UNAVAILABLE: there is no record to read.
import { z } from 'zod';
import { pageOutput } from '../../server/platform/pagination.js';
import { adminProcedure, adminWriteProcedure, router } from '../../server/platform/trpc.js';
import { errorRecord, requestFilters, requestRecord, statusOutput, summaryOutput } from './schemas.js';
import * as monitoring from './service.js';

const tags = ['Admin: monitoring'];

export const monitoringRouter = router({
  status: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/monitoring/status',
        description: "This instance's health, uptime, memory, logging flags and how full its request buffers are.",
        tags,
        summary: 'Health, uptime, memory, logging flags and buffer fill',
      },
    })
    .input(z.void())
    .output(statusOutput)
    .query(({ ctx }) => monitoring.monitoringStatus(ctx)),

  summary: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/monitoring/summary',
        description:
          "This instance's recent traffic: success rate, status mix, busiest routes and a per-minute timeline.",
        tags,
        summary: 'Success rate, status mix, top routes, per-minute timeline',
      },
    })
    .input(z.void())
    .output(summaryOutput)
    .query(({ ctx }) => monitoring.trafficSummary(ctx)),

  errors: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/monitoring/errors',
        description: "This instance's recent error answers, newest first, as safe summaries (no bodies, no secrets).",
        tags,
        summary: 'Recent error answers, newest first (safe summaries)',
      },
    })
    .input(requestFilters)
    .output(pageOutput(errorRecord))
    .query(({ ctx, input }) => monitoring.recentErrors(ctx, input)),

  requests: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/monitoring/requests',
        description: "This instance's recent requests, newest first.",
        tags,
        summary: 'Recent requests, newest first',
      },
    })
    .input(requestFilters)
    .output(pageOutput(requestRecord))
    .query(({ ctx, input }) => monitoring.recentRequests(ctx, input)),

  clear: adminWriteProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/admin/monitoring/clear',
        description: "Empties this instance's request and error buffers.",
        tags,
        summary: 'Empty both buffers',
      },
    })
    .input(z.void())
    .output(z.object({ message: z.string() }))
    .mutation(({ ctx }) => monitoring.clearRecord(ctx)),
});
