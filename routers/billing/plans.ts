// The plan catalog: admin CRUD with its state moves (archive remembers the status, restore returns to it),
// and the public catalog served from memory. An admin change clears the copy of this instance at once and,
// with Redis, of every instance (pub/sub); without Redis other instances refresh within a short TTL.
import { sql, type Kysely } from 'kysely';
import type { Redis } from 'ioredis';
import type { Database, Plan } from '../../db/schema.js';
import { isUniqueViolation } from '../../db/errors.js';
import { AppError } from '../../server/platform/errors.js';
import { settlesWithin } from '../../server/platform/in-flight.js';
import type { Logger } from '../../server/platform/logger.js';
import type { Actor } from '../../server/platform/actor.js';
import type { AppDeps } from '../../server/platform/context.js';
import { recordAudit } from '../audit/service.js';
import { toPlanOutput, type CreatePlanInput, type PlanOutput, type UpdatePlanInput } from './schemas.js';

type Db = Kysely<Database>;
/** A change of the catalog: the database, and this instance's copy of the catalog (cleared after it). */
type Deps = Pick<AppDeps, 'db' | 'plans'>;

const PLANS_CHANNEL = 'billing:plans-changed';

export class PlanCatalog {
  private cached: { plans: PlanOutput[]; at: number } | undefined;
  private loading: Promise<PlanOutput[]> | undefined;
  private changes = 0;

  constructor(
    private readonly db: Db,
    private readonly opts: {
      ttlMs: number;
      publisher?: Redis;
      /** The longest a change waits for its announcement (REDIS_COMMAND_TIMEOUT_MS). */
      publishTimeoutMs: number;
      subscriber?: Redis;
      logger: Logger;
    },
  ) {}

  /** Starts listening for changes made on other instances. */
  async listen(): Promise<void> {
    const { subscriber, logger } = this.opts;
    if (!subscriber) return;
    subscriber.on('message', (channel) => {
      if (channel === PLANS_CHANNEL) this.drop();
    });
    // Not awaited: with Redis away at start-up the call would wait for it (the server must start anyway).
    const subscribe = () => subscriber.subscribe(PLANS_CHANNEL);
    void subscribe().catch((err: Error) => logger.warn({ err }, 'plan cache: Redis subscribe failed, TTL only'));
    // A change announced while this connection was down was never heard: each time it is up (again), this
    // copy is dropped once the subscription is in place (ioredis subscribes again by itself; asking too
    // tells us when that is done). A change announced after that is heard; one before it is in the reload.
    subscriber.on('ready', () => {
      void subscribe().then(
        () => this.drop(),
        (err: Error) => logger.warn({ err }, 'plan cache: Redis subscribe failed, TTL only'),
      );
    });
  }

  /** Changes whenever the catalog may have changed: caches of what it answered compare it. */
  get version(): number {
    return this.changes;
  }

  /** How long a copy may be served without hearing of a change. */
  get ttlMs(): number {
    return this.opts.ttlMs;
  }

  /** PUBLISHED plans by sort order, from memory when fresh. */
  async published(): Promise<PlanOutput[]> {
    if (this.cached && Date.now() - this.cached.at < this.opts.ttlMs) return this.cached.plans;
    this.loading ??= this.load().finally(() => (this.loading = undefined));
    return this.loading;
  }

  /**
   * After a committed change: drop this copy and tell the other instances, waiting for Redis at most
   * `publishTimeoutMs` (a command behind others on an auto-pipelined connection can wait for theirs to time
   * out first). An announcement that fails or comes late leaves the other copies to their TTL.
   */
  async changed(): Promise<void> {
    this.drop();
    const { publisher, publishTimeoutMs, logger } = this.opts;
    if (!publisher) return;
    const announced = publisher.publish(PLANS_CHANNEL, '1').catch((err: Error) => {
      logger.warn({ err }, 'plan cache: Redis publish failed');
    });
    await settlesWithin(publishTimeoutMs, announced);
  }

  private drop() {
    this.cached = undefined;
    this.changes += 1;
  }

  private async load(): Promise<PlanOutput[]> {
    const rows = await this.db
      .selectFrom('plans')
      .selectAll()
      .where('status', '=', 'PUBLISHED')
      .orderBy('sort_order')
      .orderBy('name')
      .execute();
    const plans = rows.map(toPlanOutput);
    this.cached = { plans, at: Date.now() };
    return plans;
  }
}

const notFound = () => new AppError('PLAN_NOT_FOUND', 'Plan not found.');

/** The public catalog: published plans, by sort order, from this instance's copy. */
export async function publishedPlans({ plans }: Pick<AppDeps, 'plans'>) {
  return { items: await plans.published() };
}

export async function listAllPlans({ db }: Pick<AppDeps, 'db'>) {
  const rows = await db.selectFrom('plans').selectAll().orderBy('sort_order').orderBy('name').execute();
  return { items: rows.map(toPlanOutput) };
}

export async function getPlan({ db }: Pick<AppDeps, 'db'>, { planId }: { planId: string }) {
  const plan = await db.selectFrom('plans').selectAll().where('id', '=', planId).executeTakeFirst();
  if (!plan) throw notFound();
  return toPlanOutput(plan);
}

/** Column values of the plan fields present in `input`. */
function planColumns(input: UpdatePlanInput) {
  const set = <T>(v: T | undefined) => v !== undefined;
  return {
    ...(set(input.name) && { name: input.name }),
    ...(set(input.slug) && { slug: input.slug }),
    ...(set(input.description) && { description: input.description }),
    ...(set(input.edition) && { edition: input.edition }),
    ...(set(input.priceCents) && { price_cents: input.priceCents }),
    ...(set(input.currency) && { currency: input.currency }),
    ...(set(input.interval) && { interval: input.interval }),
    ...(set(input.status) && { status: input.status }),
    ...(set(input.badgeText) && { badge_text: input.badgeText }),
    ...(set(input.isPopular) && { is_popular: input.isPopular }),
    ...(set(input.isDefault) && { is_default: input.isDefault }),
    ...(set(input.sortOrder) && { sort_order: input.sortOrder }),
    ...(set(input.features) && { features: JSON.stringify(input.features) }),
    ...(set(input.limits) && { limits: JSON.stringify(input.limits) }),
    ...(set(input.providerAPriceId) && { processor_a_price_id: input.providerAPriceId }),
    ...(set(input.providerBVariantId) && { processor_b_variant_id: input.providerBVariantId }),
    ...(set(input.pricingModel) && { pricing_model: input.pricingModel }),
    ...(set(input.includedSeats) && { included_seats: input.includedSeats }),
    ...(set(input.trialDays) && { trial_days: input.trialDays }),
    ...(set(input.meteredOverage) && { metered_overage: input.meteredOverage }),
    ...(set(input.providerASeatPriceId) && { processor_a_seat_price_id: input.providerASeatPriceId }),
    ...(set(input.providerAMeterEventName) && { processor_a_meter_event_name: input.providerAMeterEventName }),
    ...(set(input.providerBSeatVariantId) && { processor_b_seat_variant_id: input.providerBSeatVariantId }),
  };
}

const slugTaken = (slug: string) => new AppError('CONFLICT', `A plan with the slug "${slug}" already exists.`);

const defaultPlanGuarded = () =>
  new AppError(
    'INVALID_STATE',
    'This is the default plan (new workspaces start on it): make another plan the default first.',
  );

/**
 * Runs a plan write, turning the slug's unique violation into a 409. A new default plan unsets the old one,
 * under a lock: without it, two writes at once each unset the default they can see (under READ COMMITTED
 * the second one cannot see the row the first just made default) and the second breaks plans_one_default.
 */
async function writePlan(db: Db, slug: string | undefined, makeDefault: boolean, write: (trx: Db) => Promise<string>) {
  try {
    return await db.transaction().execute(async (trx) => {
      if (makeDefault) {
        await sql`select pg_advisory_xact_lock(hashtext('plans:default'))`.execute(trx);
        await trx.updateTable('plans').set({ is_default: false }).where('is_default', '=', true).execute();
      }
      return write(trx);
    });
  } catch (err) {
    if (slug && isUniqueViolation(err, 'plans_slug')) throw slugTaken(slug);
    throw err;
  }
}

export async function createPlan(deps: Deps, actor: Actor, input: CreatePlanInput) {
  const id = await writePlan(deps.db, input.slug, input.isDefault, async (trx) => {
    const plan = await trx
      .insertInto('plans')
      .values({
        slug: input.slug,
        name: input.name,
        edition: input.edition,
        price_cents: input.priceCents,
        ...planColumns(input),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    await recordAudit(trx, actor, {
      action: 'plan.created',
      targetType: 'plan',
      targetId: plan.id,
      metadata: { slug: input.slug, status: input.status },
    });
    return plan.id;
  });
  await deps.plans.changed();
  return getPlan(deps, { planId: id });
}

export async function updatePlan(deps: Deps, actor: Actor, input: UpdatePlanInput & { planId: string }) {
  const { planId, ...changes } = input;
  await writePlan(deps.db, changes.slug, changes.isDefault === true, async (trx) => {
    const plan = await trx
      .selectFrom('plans')
      .select(['status'])
      .where('id', '=', planId)
      .forUpdate()
      .executeTakeFirst();
    if (!plan) throw notFound();
    if (changes.status && plan.status === 'ARCHIVED') {
      throw new AppError('INVALID_STATE', 'The plan is ARCHIVED; restore it before changing its status.');
    }
    // New workspaces start on the default plan: never on one hidden from billing.
    if (changes.isDefault && plan.status === 'ARCHIVED') {
      throw new AppError('INVALID_STATE', 'The plan is ARCHIVED; restore it before making it the default.');
    }
    const columns = planColumns(changes);
    await trx
      .updateTable('plans')
      .set({ ...columns, updated_at: new Date() })
      .where('id', '=', planId)
      .execute();
    await recordAudit(trx, actor, {
      action: 'plan.updated',
      targetType: 'plan',
      targetId: planId,
      metadata: { fields: Object.keys(changes) },
    });
    return planId;
  });
  await deps.plans.changed();
  return getPlan(deps, { planId });
}

/**
 * archive: any state but ARCHIVED, remembering it, and never the default plan (new workspaces would start
 * on a plan hidden from billing); restore: back to the remembered state.
 */
export async function movePlan(
  deps: Deps,
  actor: Actor,
  { planId, move }: { planId: string; move: 'archive' | 'restore' },
) {
  await deps.db.transaction().execute(async (trx) => {
    const plan = await trx
      .selectFrom('plans')
      .select(['status', 'status_before_archive', 'is_default'])
      .where('id', '=', planId)
      .forUpdate()
      .executeTakeFirst();
    if (!plan) throw notFound();
    if (move === 'archive' && plan.status === 'ARCHIVED')
      throw new AppError('INVALID_STATE', 'The plan is already ARCHIVED.');
    if (move === 'archive' && plan.is_default) throw defaultPlanGuarded();
    if (move === 'restore' && plan.status !== 'ARCHIVED') {
      throw new AppError('INVALID_STATE', `The plan is ${plan.status}; only an ARCHIVED plan can be restored.`);
    }
    const changes: Partial<Pick<Plan, 'status' | 'status_before_archive'>> =
      move === 'archive'
        ? { status: 'ARCHIVED', status_before_archive: plan.status as 'DRAFT' | 'PUBLISHED' }
        : { status: plan.status_before_archive ?? 'DRAFT', status_before_archive: null };
    await trx
      .updateTable('plans')
      .set({ ...changes, updated_at: new Date() })
      .where('id', '=', planId)
      .execute();
    await recordAudit(trx, actor, {
      action: move === 'archive' ? 'plan.archived' : 'plan.restored',
      targetType: 'plan',
      targetId: planId,
      metadata: { from: plan.status, to: changes.status ?? plan.status },
    });
  });
  await deps.plans.changed();
  return getPlan(deps, { planId });
}

/**
 * Only a plan no subscription has ever referenced: otherwise archive it (history keeps pointing at it). Never
 * the default plan, which new workspaces start on.
 */
export async function deletePlan(deps: Deps, actor: Actor, { planId }: { planId: string }) {
  await deps.db.transaction().execute(async (trx) => {
    const plan = await trx
      .selectFrom('plans')
      .select(['slug', 'is_default'])
      .where('id', '=', planId)
      .forUpdate()
      .executeTakeFirst();
    if (!plan) throw notFound();
    if (plan.is_default) throw defaultPlanGuarded();
    const used = await trx
      .selectFrom('subscriptions')
      .select('id')
      .where('plan_id', '=', planId)
      .limit(1)
      .executeTakeFirst();
    if (used) {
      throw new AppError(
        'PLAN_HAS_SUBSCRIPTIONS',
        'This plan has subscriptions and cannot be deleted: archive it instead (it stays in history).',
      );
    }
    await trx.deleteFrom('plans').where('id', '=', planId).execute();
    await recordAudit(trx, actor, {
      action: 'plan.deleted',
      targetType: 'plan',
      targetId: planId,
      metadata: { slug: plan.slug },
    });
  });
  await deps.plans.changed();
  return { message: 'Plan deleted.' };
}
