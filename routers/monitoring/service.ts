// Reads of the in-memory traffic record of this instance (server/platform/monitoring.ts), and its clearing.
// With MONITORING_ENABLED=false each answers 503 SERVICE_UNAVAILABLE: there is no record to read.
import os from 'node:os';
import { sql } from 'kysely';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import type { Monitor, RequestRecord } from '../../server/platform/monitoring.js';
import { offsetOf, pageOf, type Pagination } from '../../server/platform/pagination.js';
import type { RequestFilters } from './schemas.js';

type Deps = Pick<AppDeps, 'monitor'>;

function assertEnabled(monitor: Monitor) {
  if (!monitor.enabled)
    throw new AppError('SERVICE_UNAVAILABLE', 'Monitoring is switched off on this server (MONITORING_ENABLED=false).');
}

function filtered<T extends RequestRecord>(items: T[], f: RequestFilters) {
  return items.filter(
    (r) =>
      (!f.statusClass || `${Math.floor(r.status / 100)}xx` === f.statusClass) &&
      (!f.method || r.method === f.method) &&
      (!f.pathPrefix || r.path.startsWith(f.pathPrefix)) &&
      (!f.slowOnly || r.slow),
  );
}

const paginate = <T>(items: T[], page: Pagination) =>
  pageOf(items.slice(offsetOf(page), offsetOf(page) + page.limit), items.length, page);

/** Health, uptime, memory, logging flags and how full the buffers are. */
export async function monitoringStatus(deps: Pick<AppDeps, 'db' | 'config' | 'monitor' | 'startedAt'>) {
  const { config, monitor } = deps;
  assertEnabled(monitor);
  const reachable = await sql`select 1`.execute(deps.db).then(
    () => true,
    () => false,
  );
  const mem = process.memoryUsage();
  const mb = (n: number) => Math.round((n / 1_048_576) * 10) / 10;
  return {
    status: reachable ? ('ok' as const) : ('degraded' as const),
    version: config.SERVICE_VERSION,
    uptimeSeconds: Math.round((Date.now() - deps.startedAt.getTime()) / 1000),
    database: { reachable },
    memory: {
      rssMb: mb(mem.rss),
      heapUsedMb: mb(mem.heapUsed),
      heapTotalMb: mb(mem.heapTotal),
      systemFreeMb: mb(os.freemem()),
    },
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
}

export function trafficSummary({ monitor }: Deps) {
  assertEnabled(monitor);
  return monitor.summary();
}

export function recentErrors({ monitor }: Deps, filters: RequestFilters) {
  assertEnabled(monitor);
  return paginate(filtered(monitor.recentErrors(), filters), filters);
}

export function recentRequests({ monitor }: Deps, filters: RequestFilters) {
  assertEnabled(monitor);
  return paginate(filtered(monitor.recentRequests(), filters), filters);
}

export function clearRecord({ monitor }: Deps) {
  assertEnabled(monitor);
  monitor.clear();
  return { message: 'Monitoring buffers cleared.' };
}
