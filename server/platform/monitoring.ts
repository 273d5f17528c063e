// The in-memory record of recent traffic (spec: Monitoring record): two ring buffers, one entry per
// request and one per error answer, O(1) per request. Entries hold the route template (not raw ids), the
// method, status, duration, request id and the user and workspace when known; errors add the code and the
// message the client saw (friendly for 5xx). Bodies, headers, query strings, tokens and keys are never
// stored: nothing here reads them. The same finish hook feeds the Prometheus metrics when they are on.
// Scrapes of /metrics are neither recorded nor counted.
import type { Request, RequestHandler } from 'express';
import type { Config } from './config.js';
import type { ApiError } from './errors.js';
import { UNMATCHED_ROUTE, type RouteTemplates } from './route-templates.js';
import { METRICS_PATH, type Metrics } from './metrics.js';
import { safePath } from './logger.js';

export class RingBuffer<T> {
  private items: Array<T | undefined>;
  private next = 0;
  private count = 0;

  constructor(readonly capacity: number) {
    this.items = new Array<T | undefined>(capacity);
  }

  push(item: T): void {
    this.items[this.next] = item;
    this.next = (this.next + 1) % this.capacity;
    if (this.count < this.capacity) this.count += 1;
  }

  get size(): number {
    return this.count;
  }

  /** Newest first. */
  toArray(): T[] {
    const out: T[] = [];
    for (let i = 1; i <= this.count; i++) out.push(this.items[(this.next - i + this.capacity) % this.capacity] as T);
    return out;
  }

  /** Replaces, in place, the entries `change` answers a new value for (erasing a person). */
  rewrite(change: (item: T) => T | undefined): void {
    for (let i = 0; i < this.items.length; i++) {
      const item = this.items[i];
      const changed = item === undefined ? undefined : change(item);
      if (changed !== undefined) this.items[i] = changed;
    }
  }

  clear(): void {
    this.items = new Array<T | undefined>(this.capacity);
    this.next = 0;
    this.count = 0;
  }
}

export interface RequestRecord {
  requestId: string;
  method: string;
  path: string;
  status: number;
  durationMs: number;
  slow: boolean;
  timestamp: string;
  userId: string | null;
  workspaceId: string | null;
}

export interface ErrorRecord extends RequestRecord {
  code: string;
  name: string;
  message: string;
}

/** An entry as the buffers keep it: the time as a number, made an ISO string only when it is read. */
type Stored<T extends RequestRecord> = Omit<T, 'timestamp'> & { at: number };

function withTimestamp<T extends RequestRecord>({ at, ...rest }: Stored<T>): T {
  return { ...rest, timestamp: new Date(at).toISOString() } as unknown as T;
}

/** What request handling learnt about a request, for its record. */
interface Notes {
  userId?: string;
  workspaceId?: string;
  error?: ApiError;
  errorName?: string;
}

/** Kept on the request itself: a WeakMap entry per request cost more than the rest of the record. */
const NOTES = Symbol('monitoring notes');
type Noted = Request & { [NOTES]?: Notes };
const notesOf = (req: Request): Notes | undefined => (req as Noted)[NOTES];

/** Called where a request is authenticated, scoped to a workspace, or answered with an error. */
export function noteRequest(req: Request, facts: Notes): void {
  const known = notesOf(req);
  if (known) Object.assign(known, facts);
  else (req as Noted)[NOTES] = { ...facts };
}

/** The code of the error a request was answered with (ERROR_STATUS), once it has been answered. */
export const notedErrorCode = (req: Request): string | undefined => notesOf(req)?.error?.code;

const FRIENDLY_5XX = 'The request failed on the server.';

/**
 * Path segments that could be a token or a key are not kept, even on unknown routes: those of 16
 * characters or more, and shorter ones shaped like a secret (server/platform/logger.ts). Cut to 200 characters
 * only after that, so a cut never leaves the start of a secret behind.
 */
const sanitizePath = (path: string) =>
  safePath(
    path
      .split('/')
      .map((s) => (s.length >= 16 ? ':redacted' : s))
      .join('/'),
    ':redacted',
  ).slice(0, 200);

/** Values shaped like this service's secrets (and JWTs), should a message ever echo one. */
const SECRET_SHAPES = /\b(?:whsec_|wsk_|rt_|scim_|sk_(?:live|test)_|eyJ)[A-Za-z0-9._+/=-]{8,}/g;
const redactSecrets = (message: string) => message.replace(SECRET_SHAPES, '[redacted]');

export class Monitor {
  readonly requests: RingBuffer<Stored<RequestRecord>>;
  readonly errors: RingBuffer<Stored<ErrorRecord>>;
  readonly startedAt = Date.now();

  constructor(private readonly config: Config) {
    this.requests = new RingBuffer(config.REQUEST_LOG_RING_BUFFER_SIZE);
    this.errors = new RingBuffer(config.ERROR_LOG_RING_BUFFER_SIZE);
  }

  get enabled(): boolean {
    return this.config.MONITORING_ENABLED;
  }

  middleware(routes: RouteTemplates, metrics?: Metrics): RequestHandler {
    const { config } = this;
    return (req, res, next) => {
      const recording = this.enabled && (config.REQUEST_LOGGING_ENABLED || config.ERROR_LOGGING_ENABLED);
      if (!recording && !metrics) return next();
      // Read now: mounted routers (/trpc) strip their prefix from req.url while they run.
      const path = req.path;
      if (path === METRICS_PATH) return next();
      const started = performance.now();
      // `on`, not `once`: 'finish' comes once, and once() would wrap the listener for every request.
      res.on('finish', () => {
        const elapsedMs = performance.now() - started;
        // The route template, or `/trpc/{procedure}`: the same name for metrics and for the record.
        const label = routes.labelRequest(req, path);
        metrics?.observeRequest(req.method, label, res.statusCode, elapsedMs / 1000);
        if (!recording) return;
        const durationMs = Math.round(elapsedMs * 10) / 10;
        const facts = notesOf(req) ?? {};
        const record: Stored<RequestRecord> = {
          requestId: req.id,
          method: req.method,
          path: label === UNMATCHED_ROUTE ? sanitizePath(path) : label,
          status: res.statusCode,
          durationMs,
          slow: durationMs >= config.REQUEST_LOG_SLOW_MS,
          at: Date.now(),
          userId: facts.userId ?? null,
          workspaceId: facts.workspaceId ?? null,
        };
        if (config.REQUEST_LOGGING_ENABLED) this.requests.push(record);
        if (config.ERROR_LOGGING_ENABLED && res.statusCode >= 400) {
          this.errors.push({
            ...record,
            code: facts.error?.code ?? String(res.statusCode),
            name: facts.errorName ?? (res.statusCode >= 500 ? 'ServerError' : 'ClientError'),
            message:
              res.statusCode >= 500 ? FRIENDLY_5XX : redactSecrets(facts.error?.message ?? 'The request was refused.'),
          });
        }
      });
      next();
    };
  }

  /**
   * Erases a person from this instance's record: error messages that quote one of `texts` (an address, a
   * name) get `replacement` instead. Entries hold user ids, not names; other instances erase their own as
   * their buffers turn over.
   */
  erase(texts: string[], replacement: string): void {
    const wanted = texts.filter((t) => t.length > 0);
    this.errors.rewrite((entry) =>
      wanted.some((t) => entry.message.includes(t))
        ? { ...entry, message: wanted.reduce((m, t) => m.split(t).join(replacement), entry.message) }
        : undefined,
    );
  }

  clear(): void {
    this.requests.clear();
    this.errors.clear();
  }

  /** The recorded requests, newest first. */
  recentRequests(): RequestRecord[] {
    return this.requests.toArray().map(withTimestamp);
  }

  /** The recorded error answers, newest first. */
  recentErrors(): ErrorRecord[] {
    return this.errors.toArray().map((entry) => withTimestamp<ErrorRecord>(entry));
  }

  /** Success rate, status mix, top routes by count and by p95, and a per-minute timeline. */
  summary() {
    const requests = this.recentRequests();
    const byStatus: Record<string, number> = {};
    const byClass: Record<string, number> = { '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 };
    const byRoute = new Map<string, number[]>();
    const byMinute = new Map<string, { requests: number; errors: number; serverErrors: number }>();
    for (const r of requests) {
      byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
      const cls = `${Math.floor(r.status / 100)}xx`;
      if (cls in byClass) byClass[cls] += 1;
      const route = `${r.method} ${r.path}`;
      const durations = byRoute.get(route);
      if (durations) durations.push(r.durationMs);
      else byRoute.set(route, [r.durationMs]);
      const minute = `${r.timestamp.slice(0, 16)}:00.000Z`;
      const m = byMinute.get(minute) ?? { requests: 0, errors: 0, serverErrors: 0 };
      m.requests += 1;
      if (r.status >= 400) m.errors += 1;
      if (r.status >= 500) m.serverErrors += 1;
      byMinute.set(minute, m);
    }
    const routes = [...byRoute].map(([route, durations]) => {
      const sorted = durations.sort((a, b) => a - b);
      const p95 = sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.95) - 1)] ?? 0;
      const avg = sorted.reduce((a, b) => a + b, 0) / (sorted.length || 1);
      return { route, count: sorted.length, avgMs: Math.round(avg * 10) / 10, p95Ms: p95 };
    });
    const ok = requests.filter((r) => r.status < 400).length;
    return {
      window: {
        requests: requests.length,
        from: requests.at(-1)?.timestamp ?? null,
        to: requests[0]?.timestamp ?? null,
      },
      successRate: requests.length ? Math.round((ok / requests.length) * 10_000) / 10_000 : null,
      statusClasses: byClass,
      statusCodes: byStatus,
      slowRequests: requests.filter((r) => r.slow).length,
      errors: this.errors.size,
      topRoutesByCount: [...routes].sort((a, b) => b.count - a.count).slice(0, 10),
      topRoutesByP95: [...routes].sort((a, b) => b.p95Ms - a.p95Ms).slice(0, 10),
      timeline: [...byMinute].sort(([a], [b]) => a.localeCompare(b)).map(([minute, m]) => ({ minute, ...m })),
    };
  }
}
