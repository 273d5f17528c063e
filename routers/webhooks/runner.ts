// Runs webhook deliveries. Domain events (the domain_events outbox) become one delivery per subscribed,
// active webhook; a delivery's first attempt starts at once: directly in this process, or as a
// `deliver_webhook` job when the queue is on. The sweep picks up what is due: retries (direct mode), and
// deliveries whose enqueue failed (queue mode). Several instances may run this side by side: rows are
// claimed with FOR UPDATE SKIP LOCKED.
// Both processes run it: the API (server/server.ts: first attempts, and in direct mode the timers) and the
// worker (its sweep job, jobs/processors/maintenance.ts). In queue mode it sends first attempts to a
// DeliveryQueue, which the composition root hands in (the deliver_webhook queue of jobs/queue.ts), so the
// domain imports no job.
import { sql } from 'kysely';
import { SYSTEM_ACTOR } from '../../server/platform/actor.js';
import type { Logger } from '../../server/platform/logger.js';
import { attemptDelivery, type DeliveryDeps } from './delivery.js';
import { envelope, leaseEnd, type DeliveryStarter } from './service.js';

/** Queue mode's way to a delivery's first attempt: a deliver_webhook job per delivery (jobs/queue.ts). */
export interface DeliveryQueue {
  /** Queues the deliveries; answers those that could not be queued (the sweep takes them later). */
  enqueueAll(
    entries: Array<{ deliveryId: string; retry?: number; webhookId: string }>,
    opts?: { swept?: boolean },
  ): Promise<Array<{ deliveryId: string; error: Error }>>;
  close(): Promise<void>;
}

/** Domain events one dispatch statement takes, and the batches one run takes at most (a run a second). */
const DISPATCH_BATCH = 500;
const DISPATCH_BATCHES_PER_RUN = 20;
/** Pending deliveries this old were not queued (Redis away): queue mode enqueues them again. */
const STUCK_PENDING_MS = 30_000;

export class WebhookRunner implements DeliveryStarter {
  private readonly inFlight = new Set<Promise<unknown>>();
  private timers: NodeJS.Timeout[] = [];
  private dispatching: Promise<number> | undefined;

  constructor(
    private readonly deps: DeliveryDeps & { logger: Logger },
    private readonly queue?: DeliveryQueue,
  ) {}

  /**
   * First attempt of new deliveries; with `wait` (test and retry routes) the direct attempt is awaited.
   * `swept`: the deliveries were found waiting too long (the sweep), and their job may have ended.
   */
  async start(deliveryIds: string[], opts: { wait?: boolean; swept?: boolean } = {}): Promise<void> {
    if (this.queue) {
      if (deliveryIds.length === 0) return;
      // A delivery attempted before (a manual retry, a swept one) is queued as a retry of its attempts.
      const rows = await this.deps.db
        .selectFrom('webhook_deliveries')
        .select(['id', 'attempts', 'webhook_id'])
        .where('id', 'in', deliveryIds)
        .execute();
      const failures = await this.queue.enqueueAll(
        rows.map((r) => ({ deliveryId: r.id, retry: r.attempts || undefined, webhookId: r.webhook_id })),
        { swept: opts.swept },
      );
      for (const { deliveryId, error } of failures) {
        this.deps.logger.warn({ err: { message: error.message }, deliveryId }, 'enqueue failed: the sweep will retry');
      }
      return;
    }
    const runs = deliveryIds.map((id) => this.track(attemptDelivery(this.deps, SYSTEM_ACTOR, { deliveryId: id })));
    if (opts.wait) await Promise.all(runs);
  }

  /**
   * Turns pending domain events into deliveries and starts them, a batch at a time until none is left (at
   * most DISPATCH_BATCHES_PER_RUN batches, yielding to other work between them). Answers how many events
   * it took.
   */
  dispatchPending(): Promise<number> {
    this.dispatching ??= this.drain().finally(() => (this.dispatching = undefined));
    return this.dispatching;
  }

  private async drain(): Promise<number> {
    let taken = 0;
    for (let batch = 0; batch < DISPATCH_BATCHES_PER_RUN; batch++) {
      const n = await this.dispatch();
      taken += n;
      if (n < DISPATCH_BATCH) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    return taken;
  }

  private async dispatch(): Promise<number> {
    const { db } = this.deps;
    const { events, deliveryIds } = await db.transaction().execute(async (trx) => {
      // Claimed and marked dispatched by one statement (another instance skips the locked rows); the
      // deliveries are written in the same transaction, so both happen or neither.
      const events = await trx
        .updateTable('domain_events')
        .set({ dispatched_at: new Date() })
        .where('id', 'in', (eb) =>
          eb
            .selectFrom('domain_events')
            .select('id')
            .where('dispatched_at', 'is', null)
            .orderBy('created_at')
            .limit(DISPATCH_BATCH)
            .forUpdate()
            .skipLocked(),
        )
        .returning(['id', 'workspace_id', 'type', 'created_at'])
        .execute();
      if (events.length === 0) return { events, deliveryIds: [] as string[] };
      events.sort((a, b) => a.created_at.getTime() - b.created_at.getTime());
      const hooks = await trx
        .selectFrom('webhooks')
        .select(['id', 'workspace_id', 'events'])
        .where('workspace_id', 'in', [...new Set(events.map((e) => e.workspace_id))])
        .where('is_active', '=', true)
        .execute();
      // Payloads are read only for the events some webhook wants (most have none).
      const wanted = events
        .map((e) => ({
          e,
          subscribers: hooks.filter((h) => h.workspace_id === e.workspace_id && h.events.includes(e.type)),
        }))
        .filter((w) => w.subscribers.length > 0);
      const payloads = new Map<string, Record<string, unknown>>();
      if (wanted.length) {
        const read = await trx
          .selectFrom('domain_events')
          .select(['id', 'payload'])
          .where(
            'id',
            'in',
            wanted.map((w) => w.e.id),
          )
          .execute();
        for (const e of read) payloads.set(e.id, e.payload);
      }
      // Leased to their first attempt (service.ts): in direct mode, a first attempt still waiting on a slow
      // endpoint after STUCK_PENDING_MS is not taken by the sweep and sent a second time.
      const leasedUntil = leaseEnd();
      const rows = wanted.flatMap(({ e, subscribers }) =>
        subscribers.map((h) => ({
          webhook_id: h.id,
          workspace_id: e.workspace_id,
          event: e.type,
          domain_event_id: e.id,
          payload: JSON.stringify(envelope(e.type, e.workspace_id, payloads.get(e.id)!, e.created_at)),
          status: 'pending' as const,
          next_retry_at: leasedUntil,
        })),
      );
      const inserted = rows.length
        ? await trx
            .insertInto('webhook_deliveries')
            .values(rows)
            .onConflict((oc) =>
              oc.columns(['webhook_id', 'domain_event_id']).where('domain_event_id', 'is not', null).doNothing(),
            )
            .returning('id')
            .execute()
        : [];
      return { events, deliveryIds: inserted.map((d) => d.id) };
    });
    if (deliveryIds.length) await this.start(deliveryIds);
    return events.length;
  }

  /** Due work: retries in direct mode; deliveries that never reached the queue in queue mode. */
  async sweep(): Promise<number> {
    const { db } = this.deps;
    const now = new Date();
    const claimed = await db
      .updateTable('webhook_deliveries')
      .set({ next_retry_at: leaseEnd(now.getTime()) })
      .where(
        'id',
        'in',
        db
          .selectFrom('webhook_deliveries')
          .select('id')
          .where((eb) =>
            this.queue
              ? // Deliveries whose job should have run by now: not queued (Redis was away), or their job
                // ended without recording an attempt (Postgres was away through all of its attempts).
                eb.or([
                  eb.and([
                    eb('status', '=', 'pending'),
                    eb('created_at', '<', new Date(now.getTime() - STUCK_PENDING_MS)),
                  ]),
                  eb.and([
                    eb('status', '=', 'retrying'),
                    eb('next_retry_at', '<', new Date(now.getTime() - STUCK_PENDING_MS)),
                  ]),
                ])
              : eb.or([
                  eb.and([eb('status', '=', 'retrying'), eb('next_retry_at', '<=', now)]),
                  eb.and([
                    eb('status', '=', 'pending'),
                    eb('created_at', '<', new Date(now.getTime() - STUCK_PENDING_MS)),
                    eb.or([eb('next_retry_at', 'is', null), eb('next_retry_at', '<=', now)]),
                  ]),
                ]),
          )
          .orderBy(sql`coalesce(next_retry_at, created_at)`)
          .limit(50)
          .forUpdate()
          .skipLocked(),
      )
      .returning('id')
      .execute();
    if (claimed.length)
      await this.start(
        claimed.map((c) => c.id),
        { swept: true },
      );
    return claimed.length;
  }

  /** Runs dispatch every second and the sweep every five, until stop(). */
  startTimers(): void {
    const every = (ms: number, fn: () => Promise<unknown>) => {
      const timer = setInterval(
        () => void fn().catch((err: Error) => this.deps.logger.error({ err }, 'webhook runner failed')),
        ms,
      );
      timer.unref();
      this.timers.push(timer);
    };
    every(1000, () => this.dispatchPending());
    every(5000, () => this.sweep());
  }

  /** Stops the timers and waits for attempts in flight. */
  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.dispatching;
    await Promise.allSettled([...this.inFlight]);
    await this.queue?.close();
  }

  private track<T>(p: Promise<T>): Promise<T> {
    const run = p.catch((err: Error) => {
      this.deps.logger.error({ err }, 'webhook delivery attempt failed');
      return undefined as T;
    });
    this.inFlight.add(run);
    void run.finally(() => this.inFlight.delete(run));
    return run;
  }
}
