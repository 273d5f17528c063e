// Prometheus metrics for operators (`GET /metrics`, on only when METRICS_TOKEN is set): request counts and
// durations by route template, method and status; rate-limit rejections by tier; the webhook queue's depth
// in queue mode; Node's process metrics. One Registry per app, so apps sharing a process keep their own
// numbers. Label values are bounded and never secret: templates (never raw paths or query strings),
// methods, statuses, tiers, queue states.
import crypto from 'node:crypto';
import type { RequestHandler } from 'express';
import type { JobType } from 'bullmq';
import type { Redis } from 'ioredis';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import { errorBody, httpError } from './errors.js';
import type { Tier } from './route-meta.js';
import { bearerToken } from './security/jwt.js';
import { errorResponse } from './error-response.js';

export const METRICS_PATH = '/metrics';

/** Queue states reported as `webhook_queue_jobs{state}`. */
export const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;
/** A scrape never waits longer than this for Redis: the queue gauges are left out instead. */
export const QUEUE_READ_TIMEOUT_MS = 200;

/** What the queue gauges read; in production a BullMQ Queue on the app's command connection. */
export interface QueueCounts {
  getJobCounts(...states: string[]): Promise<Record<string, number>>;
  close?(): Promise<void>;
}

type LabelName = 'method' | 'route' | 'status';

interface RouteSeries {
  count: ReturnType<Counter<LabelName>['labels']>;
  duration: ReturnType<Histogram<LabelName>['labels']>;
}

const TIMED_OUT = Symbol('timed out');

const timeout = (ms: number) => {
  let timer: NodeJS.Timeout | undefined;
  const promise = new Promise<never>((_, reject) => {
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- a sentinel, never thrown out
    timer = setTimeout(() => reject(TIMED_OUT), ms);
  });
  return { promise, cancel: () => clearTimeout(timer) };
};

export class Metrics {
  readonly registry = new Registry();
  private readonly requests: Counter<LabelName>;
  private readonly durations: Histogram<LabelName>;
  private readonly rejections: Counter<'tier'>;
  /** route -> method -> status -> bound series, so a request builds no label object of its own. */
  private readonly series = new Map<string, Map<string, Map<number, RouteSeries>>>();

  constructor(opts: { tiers?: readonly Tier[]; queue?: () => QueueCounts; processMetrics?: boolean } = {}) {
    const registers = [this.registry];
    this.requests = new Counter({
      name: 'http_requests_total',
      help: 'Answered HTTP requests by route template, method and status.',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.durations = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time from the request reaching the app to the last byte of the answer, by route template, method and status.',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.rejections = new Counter({
      name: 'rate_limit_rejections_total',
      help: 'Requests answered 429 by the rate limiter, by tier.',
      labelNames: ['tier'],
      registers,
    });
    // Every tier starts at 0, so rate() sees the first rejection.
    for (const tier of opts.tiers ?? []) this.rejections.inc({ tier }, 0);
    if (opts.queue) this.queueGauges(opts.queue);
    if (opts.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  /** One answered request; `route` must be a template or another bounded name, never a raw path. */
  observeRequest(method: string, route: string, status: number, seconds: number): void {
    let byMethod = this.series.get(route);
    if (!byMethod) this.series.set(route, (byMethod = new Map<string, Map<number, RouteSeries>>()));
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, (byStatus = new Map<number, RouteSeries>()));
    let s = byStatus.get(status);
    if (!s) {
      const labels = { method, route, status: String(status) };
      byStatus.set(status, (s = { count: this.requests.labels(labels), duration: this.durations.labels(labels) }));
    }
    s.count.inc();
    s.duration.observe(seconds);
  }

  rateLimited(tier: Tier): void {
    this.rejections.inc({ tier });
  }

  /** The exposition text (Prometheus text format 0.0.4). */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /**
   * `webhook_queue_jobs{state}` and `webhook_queue_up` (1 when the read worked), from one read per scrape.
   * A Redis that fails or is slower than QUEUE_READ_TIMEOUT_MS costs the scrape that much, never an error.
   */
  private queueGauges(open: () => QueueCounts) {
    let queue: QueueCounts | undefined;
    let reading: Promise<Record<string, number> | undefined> | undefined;
    const read = async () => {
      const limit = timeout(QUEUE_READ_TIMEOUT_MS);
      try {
        queue ??= open();
        return await Promise.race([queue.getJobCounts(...QUEUE_STATES), limit.promise]);
      } catch (err) {
        // A failed read (not a slow one) may have left the handle unusable: open a new one next time.
        if (err !== TIMED_OUT) {
          void queue?.close?.().catch(() => undefined);
          queue = undefined;
        }
        return undefined;
      } finally {
        limit.cancel();
      }
    };
    // Both gauges are collected at once by the registry: they share the read in flight.
    const counts = () => (reading ??= read().finally(() => (reading = undefined)));
    const registers = [this.registry];
    new Gauge({
      name: 'webhook_queue_jobs',
      help: 'deliver_webhook jobs in the queue by state (absent when the queue could not be read).',
      labelNames: ['state'],
      registers,
      async collect() {
        const c = await counts();
        this.reset();
        if (c) for (const state of QUEUE_STATES) this.set({ state }, c[state] ?? 0);
      },
    });
    new Gauge({
      name: 'webhook_queue_up',
      help: '1 when this scrape could read the webhook queue in Redis, else 0.',
      registers,
      async collect() {
        this.set((await counts()) ? 1 : 0);
      },
    });
  }
}

/** A queue's counts, read through the app's request-path Redis connection (fail fast, no offline queue). */
export function queueCounts(connection: Redis, prefix: string, name: string): () => QueueCounts {
  return () => {
    // BullMQ is loaded by the first scrape: only a process in queue mode with metrics on ever needs it.
    const queue = import('bullmq').then(({ Queue }) => {
      const opened = new Queue(name, { connection, prefix });
      opened.on('error', () => {
        /* the gauge reports the queue as down */
      });
      return opened;
    });
    return {
      getJobCounts: (...states) => queue.then((q) => q.getJobCounts(...(states as JobType[]))),
      close: () => queue.then((q) => q.close()),
    };
  };
}

const digest = (value: string) => crypto.createHash('sha256').update(value).digest();

/**
 * GET /metrics for a scraper presenting `Authorization: Bearer <METRICS_TOKEN>`. The token is compared as
 * SHA-256 digests in constant time (equal lengths whatever was sent); anything else is 401.
 */
export function metricsRoute(token: string, metrics: Metrics): RequestHandler {
  const expected = digest(token);
  return async (req, res, next) => {
    // Exactly /metrics: Express would also match /METRICS and /metrics/, which the monitor records as traffic.
    if (req.path !== METRICS_PATH) return next();
    const presented = bearerToken(req.headers.authorization);
    if (!presented || !crypto.timingSafeEqual(digest(presented), expected)) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="metrics"');
      res
        .status(401)
        .json(errorBody(httpError(401, 'Send the metrics token as Authorization: Bearer <token>.'), req.id));
      return;
    }
    try {
      const body = await metrics.render();
      res.setHeader('Content-Type', metrics.contentType);
      res.setHeader('Cache-Control', 'no-store');
      res.send(body);
    } catch (err) {
      next(err);
    }
  };
}

/** The /openapi.json entry of GET /metrics (a plain Express route). */
export const metricsOpenApiPaths: ZodOpenApiPathsObject = {
  [METRICS_PATH]: {
    get: {
      'x-rate-limit-tier': false,
      operationId: 'metrics',
      summary: 'Prometheus metrics for operators (on when METRICS_TOKEN is set)',
      description:
        'Request counts and durations by route template, method and status; rate-limit rejections by tier; the ' +
        'webhook queue depth in queue mode; Node process metrics. The bearer is the METRICS_TOKEN setting, not an ' +
        'access token. Never rate limited, never in the monitoring record.\n\n' +
        '**Who may call it:** a scraper presenting `Authorization: Bearer <METRICS_TOKEN>`.',
      tags: ['Monitoring'],
      security: [{ bearerAuth: [] }],
      responses: {
        200: {
          description: 'Prometheus text exposition format 0.0.4',
          content: { 'text/plain': { schema: { type: 'string' } } },
        },
        401: errorResponse('Missing or wrong metrics token', ['UNAUTHORIZED']),
        404: errorResponse('Metrics are off (METRICS_TOKEN unset)', ['NOT_FOUND']),
      },
    },
  },
};
