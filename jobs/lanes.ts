// The two lanes of webhook deliveries in queue mode, so that an endpoint that does not answer cannot take
// the worker from everybody else's (docs/decisions.md, "Deliveries that isolate endpoints").
// - The main lane (`webhooks` queue, WEBHOOK_WORKER_CONCURRENCY at once) lets an endpoint have at most
//   WEBHOOK_ENDPOINT_CONCURRENCY attempts in flight, unless its last request was answered promptly and none
//   of its requests in flight has been waiting long: a fast endpoint takes as many slots as its deliveries
//   need, one that hangs holds at most that many slots. An attempt over the cap is turned away before
//   anything is sent, and its job moves to the slow lane.
// - The slow lane (`webhooks-slow` queue, WEBHOOK_SLOW_LANE_CONCURRENCY at once) runs every attempt it gets.
// An endpoint whose request timed out is marked slow in Redis for WEBHOOK_SLOW_LANE_SECONDS (a prompt answer
// clears the mark): the producers queue its new deliveries straight into the slow lane (jobs/queue.ts).
// What the lanes know of endpoints' in-flight requests is this process's; the mark is shared.
import type { Config } from '../server/platform/config.js';
import { remember } from '../server/platform/bounded-cache.js';
import type { DeliveryGate, RequestEnd } from '../routers/webhooks/delivery.js';

/** The key marking an endpoint (a webhook) slow, under the queues' prefix. */
export const slowMarkKey = (prefix: string, webhookId: string) => `${prefix}:webhooks:slow-endpoint:${webhookId}`;

/**
 * An answer within this long is prompt: half the delivery timeout. Generous on purpose: on a busy worker
 * a healthy endpoint's answer can take a second to be read, and the cap is for endpoints that do not
 * answer at all, not for slow ones.
 */
export const promptWithinMs = (config: Pick<Config, 'WEBHOOK_TIMEOUT_MS'>) => Math.round(config.WEBHOOK_TIMEOUT_MS / 2);

/** What marks and unmarks endpoints (Redis in the worker). */
export interface SlowMarks {
  mark(webhookId: string): void;
  clear(webhookId: string): void;
}

interface Endpoint {
  /** Start times of the requests in flight, oldest first (a Set keeps insertion order). */
  inFlight: Set<{ startedAt: number }>;
  /** The last request that ended was answered promptly (or failed at once without waiting). */
  prompt: boolean;
}

/** Endpoints tracked at most: the oldest is forgotten first (it starts capped again). */
const TRACKED_ENDPOINTS = 10_000;

export class EndpointLanes {
  private readonly endpoints = new Map<string, Endpoint>();
  private readonly promptMs: number;
  private readonly cap: number;
  /** When this process last marked each endpoint, so that a burst of timeouts writes the mark once. */
  private readonly markedAt = new Map<string, number>();

  constructor(
    config: Pick<Config, 'WEBHOOK_TIMEOUT_MS' | 'WEBHOOK_ENDPOINT_CONCURRENCY'>,
    private readonly marks: SlowMarks,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.promptMs = promptWithinMs(config);
    this.cap = config.WEBHOOK_ENDPOINT_CONCURRENCY;
  }

  /** The main lane's gate: capped per endpoint unless the endpoint is answering promptly. */
  readonly main: DeliveryGate = { enter: (webhookId) => this.enter(webhookId, true) };
  /** The slow lane's gate: lets every attempt start (its worker's concurrency is the cap). */
  readonly slow: DeliveryGate = { enter: (webhookId) => this.enter(webhookId, false) };

  private endpoint(webhookId: string): Endpoint {
    return (
      this.endpoints.get(webhookId) ??
      remember(this.endpoints, webhookId, { inFlight: new Set(), prompt: false }, TRACKED_ENDPOINTS)
    );
  }

  private enter(webhookId: string, capped: boolean): ((end: RequestEnd) => void) | undefined {
    const endpoint = this.endpoint(webhookId);
    const now = this.now();
    if (capped && endpoint.inFlight.size >= this.cap) {
      const oldest = endpoint.inFlight.values().next().value;
      const waitingLong = oldest !== undefined && now - oldest.startedAt > this.promptMs;
      if (!endpoint.prompt || waitingLong) return undefined;
    }
    const request = { startedAt: now };
    endpoint.inFlight.add(request);
    return (end) => {
      endpoint.inFlight.delete(request);
      const prompt = end !== 'timed-out' && this.now() - request.startedAt <= this.promptMs;
      endpoint.prompt = prompt;
      if (end === 'timed-out') this.markSlow(webhookId);
      else if (prompt && end === 'answered' && !capped) this.marks.clear(webhookId);
      if (prompt) this.markedAt.delete(webhookId);
    };
  }

  private markSlow(webhookId: string) {
    const last = this.markedAt.get(webhookId);
    const now = this.now();
    if (last !== undefined && now - last < 1_000) return;
    remember(this.markedAt, webhookId, now, TRACKED_ENDPOINTS);
    this.marks.mark(webhookId);
  }
}
