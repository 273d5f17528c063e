// The outbox of calls to the payment processor: seat quantities of PER_SEAT plans and meter events of
// overage generations. Commands are rows written with the change that causes them (a membership trigger,
// the generation's reservation); drainBillingOutbox sends them, from the worker's periodic task (or the
// API's, with the queues off). A row is claimed with a lease and stays until the processor acknowledged
// it: a worker that dies leaves it to be claimed again when the lease ends, and a failure is retried with
// a growing delay, without end. A meter event is sent with the generation id as Stripe's `identifier`, so
// a second send of it is not counted twice. Stripe's meter events go in batches (its v2 meter event stream,
// up to USAGE_BATCH_MAX a request): a batch is acknowledged as a whole once Stripe answered 2xx, or retried
// as a whole; the rest (seat syncs, Lemon Squeezy usage records) is sent command by command.
import { sql, type Kysely, type Selectable } from 'kysely';
import type { BillingCommandsTable, Database, Plan, Subscription } from '../../db/schema.js';
import { LIVE_SUBSCRIPTION_STATUSES } from '../../db/schema.js';
import { AppError } from '../../server/platform/errors.js';
import type { AppDeps } from '../../server/platform/context.js';
import { USAGE_BATCH_MAX, type ProcessorName, type UsageEvent } from './processors/types.js';
import { atProcessor } from './provider-events.js';
import { priceRef } from './service.js';
import { billedSeats, seatsUsed } from './usage.js';

type Db = Kysely<Database>;
/** What sending a command needs of its row (the claim reads no more). */
const COMMAND_COLUMNS = ['id', 'workspace_id', 'kind', 'identifier', 'attempts', 'created_at'] as const;
type Command = Pick<Selectable<BillingCommandsTable>, (typeof COMMAND_COLUMNS)[number]>;

export type OutboxDeps = Pick<AppDeps, 'db' | 'config' | 'processors' | 'logger'>;

/** Commands claimed at a time, and sent at once. */
const BATCH = 200;
const CONCURRENCY = 16;
/** A run ends after this many commands; the next run goes on. */
const MAX_PER_RUN = 20_000;
/** The longest wait before a failed command is tried again. */
const MAX_BACKOFF_MS = 10 * 60_000;

interface Target {
  sub: Subscription;
  plan: Plan;
}

/** The live subscription and its plan of each of the workspaces that have one: two queries a batch. */
async function liveTargets(db: Db, workspaceIds: string[]): Promise<Map<string, Target>> {
  const subs = await db
    .selectFrom('subscriptions')
    .selectAll()
    .where('workspace_id', 'in', workspaceIds)
    .where('status', 'in', [...LIVE_SUBSCRIPTION_STATUSES])
    .execute();
  if (subs.length === 0) return new Map();
  const plans = new Map(
    (
      await db
        .selectFrom('plans')
        .selectAll()
        .where('id', 'in', [...new Set(subs.map((s) => s.plan_id))])
        .execute()
    ).map((p) => [p.id, p]),
  );
  return new Map(subs.map((sub) => [sub.workspace_id, { sub, plan: plans.get(sub.plan_id)! }]));
}

/** The processor price (PROCESSOR_A) or variant (PROCESSOR_B) seats are billed at. */
export function seatRef(config: OutboxDeps['config'], provider: 'PROCESSOR_A' | 'PROCESSOR_B', plan: Plan) {
  const own = provider === 'PROCESSOR_A' ? plan.processor_a_seat_price_id : plan.processor_b_seat_variant_id;
  return own ?? priceRef(config, provider, plan) ?? null;
}

async function sendSeats(
  deps: OutboxDeps,
  cmd: Command,
  target: Target | undefined,
  now: Date,
): Promise<'SENT' | 'SKIPPED'> {
  if (!target || target.plan.pricing_model !== 'PER_SEAT') return 'SKIPPED';
  const { sub, plan } = target;
  const quantity = billedSeats(await seatsUsed(deps.db, cmd.workspace_id), plan.included_seats);
  if (sub.seats_reported === quantity) return 'SKIPPED';
  if (atProcessor(sub)) {
    await deps.processors[sub.provider].updateSeats({
      providerSubscriptionId: sub.provider_subscription_id,
      seatRef: seatRef(deps.config, sub.provider, plan),
      quantity,
    });
  }
  await deps.db
    .updateTable('subscriptions')
    .set({ seats_reported: quantity, seats_reported_at: now })
    .where('id', '=', sub.id)
    .execute();
  return 'SENT';
}

async function sendMeterEvent(deps: OutboxDeps, cmd: Command, target: Target | undefined): Promise<'SENT' | 'SKIPPED'> {
  if (!target) return 'SKIPPED';
  const { sub, plan } = target;
  // MOCK bills nothing: the event is reported here only.
  if (sub.provider === 'MOCK') return 'SENT';
  if (!atProcessor(sub)) return 'SKIPPED';
  await deps.processors[sub.provider].reportUsage({
    providerSubscriptionId: sub.provider_subscription_id,
    customerId: sub.provider_customer_id,
    meterEventName: plan.processor_a_meter_event_name,
    identifier: cmd.identifier,
    occurredAt: cmd.created_at,
  });
  return 'SENT';
}

/** Claims due commands: none acknowledged, none another worker holds a live lease on. */
async function claim(deps: OutboxDeps, now: Date, workspaceIds?: string[]): Promise<Command[]> {
  const lease = new Date(now.getTime() + deps.config.BILLING_OUTBOX_LEASE_SECONDS * 1000);
  return deps.db
    .updateTable('billing_commands')
    .set((eb) => ({ locked_until: lease, attempts: eb('attempts', '+', 1) }))
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('billing_commands')
        .select('id')
        .where('acked_at', 'is', null)
        .where('not_before', '<=', now)
        .where((w) => w.or([w('locked_until', 'is', null), w('locked_until', '<', now)]))
        .$if(workspaceIds !== undefined, (q) => q.where('workspace_id', 'in', workspaceIds!))
        .orderBy('not_before')
        .limit(BATCH)
        .forUpdate()
        .skipLocked(),
    )
    .returning(COMMAND_COLUMNS)
    .execute();
}

/** Why a send failed, fit for the log and the row: never the provider's own text (it can echo the request). */
const reasonOf = (err: unknown) => (err instanceof AppError ? err.message : 'unexpected error');

/**
 * Leaves commands the processor did not acknowledge to be retried: released, and due again after a delay
 * that grows with their attempts (one statement per distinct delay).
 */
async function retryLater(deps: OutboxDeps, cmds: Command[], message: string) {
  const byDelay = new Map<number, string[]>();
  for (const cmd of cmds) {
    const delay = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** Math.min(cmd.attempts, 20));
    byDelay.set(delay, [...(byDelay.get(delay) ?? []), cmd.id]);
  }
  for (const [delay, ids] of byDelay) {
    await deps.db
      .updateTable('billing_commands')
      .set({ locked_until: null, not_before: new Date(Date.now() + delay), last_error: message })
      .where(sql<boolean>`id = any(${ids}::uuid[])`)
      .where('acked_at', 'is', null)
      .execute();
  }
}

/** Sends one command: its result, or false when the processor did not acknowledge it (retried later). */
async function runOne(
  deps: OutboxDeps,
  cmd: Command,
  target: Target | undefined,
  now: Date,
): Promise<'SENT' | 'SKIPPED' | false> {
  try {
    return cmd.kind === 'SEAT_QUANTITY'
      ? await sendSeats(deps, cmd, target, now)
      : await sendMeterEvent(deps, cmd, target);
  } catch (err) {
    const message = reasonOf(err);
    deps.logger.warn(
      { commandId: cmd.id, kind: cmd.kind, workspaceId: cmd.workspace_id, attempts: cmd.attempts, reason: message },
      'billing outbox: the processor did not acknowledge a command; it is retried',
    );
    await retryLater(deps, [cmd], message);
    return false;
  }
}

/** A meter command the processor of its subscription takes in batches, with its event. */
interface Streamed {
  cmd: Command;
  event: UsageEvent;
}

/**
 * The meter commands of the batch that go to their processor in batches (Stripe's meter event stream),
 * by processor; every other command is sent on its own (seat syncs, Lemon Squeezy usage records, MOCK,
 * and a meter command without a customer or meter, which fails on its own rather than with a batch).
 */
function splitStreamed(deps: OutboxDeps, batch: Command[], targets: Map<string, Target>) {
  const streamed = new Map<ProcessorName, Streamed[]>();
  const single: Command[] = [];
  for (const cmd of batch) {
    const target = targets.get(cmd.workspace_id);
    const sub = target?.sub;
    const customerId = sub?.provider_customer_id;
    const meterEventName = target?.plan.processor_a_meter_event_name;
    if (
      cmd.kind === 'METER_EVENT' &&
      sub &&
      sub.provider !== 'MOCK' &&
      atProcessor(sub) &&
      deps.processors[sub.provider].reportUsageBatch &&
      customerId &&
      meterEventName
    ) {
      const event = { customerId, meterEventName, identifier: cmd.identifier, occurredAt: cmd.created_at };
      streamed.set(sub.provider, [...(streamed.get(sub.provider) ?? []), { cmd, event }]);
    } else single.push(cmd);
  }
  return { streamed, single };
}

/**
 * Sends meter events as one request: all acknowledged (SENT) once the processor answered 2xx, or none,
 * each left to be retried with the whole batch. Answers how many failed.
 */
async function runStreamed(
  deps: OutboxDeps,
  provider: ProcessorName,
  chunk: Streamed[],
  results: Map<string, 'SENT' | 'SKIPPED'>,
): Promise<number> {
  try {
    await deps.processors[provider].reportUsageBatch!(chunk.map((s) => s.event));
  } catch (err) {
    const message = reasonOf(err);
    deps.logger.warn(
      { provider, commands: chunk.length, reason: message },
      'billing outbox: the processor did not acknowledge a batch of meter events; it is retried',
    );
    await retryLater(
      deps,
      chunk.map((s) => s.cmd),
      message,
    );
    return chunk.length;
  }
  for (const { cmd } of chunk) results.set(cmd.id, 'SENT');
  return 0;
}

/** Records the acknowledged commands of a batch, in one statement per result. */
async function ack(deps: OutboxDeps, results: Map<string, 'SENT' | 'SKIPPED'>) {
  for (const result of ['SENT', 'SKIPPED'] as const) {
    const ids = [...results].filter(([, r]) => r === result).map(([id]) => id);
    if (ids.length === 0) continue;
    await deps.db
      .updateTable('billing_commands')
      .set({ acked_at: new Date(), result, locked_until: null, last_error: null })
      .where(sql<boolean>`id = any(${ids}::uuid[])`)
      .execute();
  }
}

/**
 * Sends the due commands of the outbox, a batch at a time, until none is due (or MAX_PER_RUN): all of them,
 * or those of the given workspaces (a test, which shares the database with others). Answers how many were
 * acknowledged and how many failed (to be retried).
 */
export async function drainBillingOutbox(
  deps: OutboxDeps,
  { workspaceIds }: { workspaceIds?: string[] } = {},
): Promise<{ acked: number; failed: number }> {
  let acked = 0;
  let failed = 0;
  while (acked + failed < MAX_PER_RUN) {
    const now = new Date();
    const batch = await claim(deps, now, workspaceIds);
    if (batch.length === 0) break;
    const targets = await liveTargets(deps.db, [...new Set(batch.map((c) => c.workspace_id))]);
    const results = new Map<string, 'SENT' | 'SKIPPED'>();
    const { streamed, single } = splitStreamed(deps, batch, targets);
    const tasks: Array<() => Promise<void>> = single.map((cmd) => async () => {
      const result = await runOne(deps, cmd, targets.get(cmd.workspace_id), now);
      if (result) results.set(cmd.id, result);
      else failed += 1;
    });
    for (const [provider, items] of streamed) {
      for (let i = 0; i < items.length; i += USAGE_BATCH_MAX) {
        const chunk = items.slice(i, i + USAGE_BATCH_MAX);
        tasks.push(async () => {
          failed += await runStreamed(deps, provider, chunk, results);
        });
      }
    }
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(CONCURRENCY, tasks.length) }, async () => {
        while (next < tasks.length) await tasks[next++]();
      }),
    );
    // A worker that dies before this line leaves the batch claimed: it is sent again after the lease.
    await ack(deps, results);
    acked += results.size;
    if (batch.length < BATCH) break;
  }
  return { acked, failed };
}
