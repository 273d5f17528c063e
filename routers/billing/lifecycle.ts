// The periodic side of billing (server/tasks.ts runs it): the trial reminder 3 days before a trial ends,
// the end of a MOCK trial (MOCK has no processor to decide it: the trial converts to a paid subscription),
// and the end of the grace period of a PAST_DUE subscription (the workspace goes to the default plan).
// Times are compared with this process's clock, so a test moves it (tests/helpers/clock.ts).
import crypto from 'node:crypto';
import type { AppDeps } from '../../server/platform/context.js';
import { sendAfterCommit } from '../../server/platform/email/mailer.js';
import { trialEndingMail } from '../../server/platform/email/templates.js';
import { emitEvent } from '../events/emit.js';
import { ownersOf } from './invoices.js';
import { applyProviderEvent, atProcessor, moveWorkspaceToPlan } from './provider-events.js';
import { defaultPlan } from './service.js';

type Deps = Pick<AppDeps, 'db' | 'config' | 'processors' | 'logger' | 'mailer'>;
/** Every workspace, or only these (a test, which shares the database with others). */
type Scope = { workspaceIds?: string[] };

const DAY_MS = 86_400_000;
/** How long before a trial's end its owners are reminded. */
export const TRIAL_REMINDER_DAYS = 3;

/** Reminds the owners of trials ending within 3 days, once per subscription. */
export async function remindTrialsEnding(deps: Deps, { workspaceIds }: Scope = {}) {
  const now = new Date();
  const due = await deps.db
    .selectFrom('subscriptions')
    .select('id')
    .where('status', '=', 'TRIALING')
    .where('trial_reminder_sent_at', 'is', null)
    .where('trial_ends_at', '>', now)
    .where('trial_ends_at', '<=', new Date(now.getTime() + TRIAL_REMINDER_DAYS * DAY_MS))
    .$if(workspaceIds !== undefined, (q) => q.where('workspace_id', 'in', workspaceIds!))
    .limit(500)
    .execute();
  for (const { id } of due) {
    // The conditional update makes one instance the reminder's sender.
    const sub = await deps.db.transaction().execute(async (trx) => {
      const claimed = await trx
        .updateTable('subscriptions')
        .set({ trial_reminder_sent_at: now })
        .where('id', '=', id)
        .where('trial_reminder_sent_at', 'is', null)
        .where('status', '=', 'TRIALING')
        .returning(['id', 'workspace_id', 'plan_id', 'trial_ends_at'])
        .executeTakeFirst();
      if (claimed?.trial_ends_at) {
        await emitEvent(trx, claimed.workspace_id, 'subscription.trial_will_end', {
          subscriptionId: claimed.id,
          planId: claimed.plan_id,
          trialEndsAt: claimed.trial_ends_at.toISOString(),
        });
      }
      return claimed;
    });
    if (!sub?.trial_ends_at) continue;
    for (const owner of await ownersOf(deps.db, sub.workspace_id)) {
      await sendAfterCommit(
        deps,
        trialEndingMail({
          to: owner.email,
          name: owner.name,
          workspaceName: owner.workspaceName,
          trialEndsAt: sub.trial_ends_at,
          appUrl: deps.config.APP_URL,
        }),
      );
    }
  }
  return { reminded: due.length };
}

/** MOCK trials past their end become ACTIVE, with the (mock) payment of the plan. */
export async function endMockTrials(deps: Deps, { workspaceIds }: Scope = {}) {
  const now = new Date();
  const ended = await deps.db
    .selectFrom('subscriptions as s')
    .innerJoin('plans as p', 'p.id', 's.plan_id')
    .select(['s.provider_subscription_id', 's.workspace_id', 's.plan_id', 'p.price_cents', 'p.currency', 'p.name'])
    .where('s.provider', '=', 'MOCK')
    .where('s.status', '=', 'TRIALING')
    .where('s.trial_ends_at', '<=', now)
    .$if(workspaceIds !== undefined, (q) => q.where('s.workspace_id', 'in', workspaceIds!))
    .limit(500)
    .execute();
  for (const sub of ended) {
    await applyProviderEvent(deps, {
      provider: 'MOCK',
      event: {
        id: `mock_trial_end_${sub.provider_subscription_id}`,
        type: 'trial.ended',
        occurredAt: now,
        changes: [
          {
            kind: 'subscription',
            providerSubscriptionId: sub.provider_subscription_id!,
            status: 'ACTIVE',
            currentPeriodStart: now,
            currentPeriodEnd: new Date(now.getTime() + 30 * DAY_MS),
          },
          ...(sub.price_cents > 0
            ? [
                {
                  kind: 'payment' as const,
                  providerPaymentId: `mock_pay_${crypto.randomUUID()}`,
                  providerSubscriptionId: sub.provider_subscription_id!,
                  amountCents: sub.price_cents,
                  currency: sub.currency,
                  status: 'SUCCEEDED' as const,
                  description: `${sub.name} (after the trial)`,
                },
              ]
            : []),
        ],
      },
    });
  }
  return { ended: ended.length };
}

/**
 * PAST_DUE subscriptions whose grace period (BILLING_GRACE_DAYS since the first failed invoice) is over:
 * ended here, the workspace moved to the default plan (plan.downgraded), and cancelled at the processor.
 */
export async function endGracePeriods(deps: Deps, { workspaceIds }: Scope = {}) {
  const cutoff = new Date(Date.now() - deps.config.BILLING_GRACE_DAYS * DAY_MS);
  const due = await deps.db
    .selectFrom('subscriptions')
    .select('id')
    .where('status', '=', 'PAST_DUE')
    .where('past_due_since', '<=', cutoff)
    .$if(workspaceIds !== undefined, (q) => q.where('workspace_id', 'in', workspaceIds!))
    .limit(500)
    .execute();
  for (const { id } of due) {
    const ended = await deps.db.transaction().execute(async (trx) => {
      const sub = await trx
        .updateTable('subscriptions')
        .set({ status: 'CANCELED', canceled_at: new Date(), cancel_at_period_end: false, updated_at: new Date() })
        .where('id', '=', id)
        .where('status', '=', 'PAST_DUE')
        .where('past_due_since', '<=', cutoff)
        .returningAll()
        .executeTakeFirst();
      if (!sub) return undefined;
      await trx.selectFrom('workspaces').select('id').where('id', '=', sub.workspace_id).forUpdate().execute();
      const target = await defaultPlan(trx);
      await moveWorkspaceToPlan(trx, sub.workspace_id, target);
      await emitEvent(trx, sub.workspace_id, 'plan.downgraded', {
        subscriptionId: sub.id,
        fromPlanId: sub.plan_id,
        toPlanId: target?.id ?? null,
        reason: 'PAYMENT_FAILED',
      });
      await emitEvent(trx, sub.workspace_id, 'subscription.canceled', {
        subscriptionId: sub.id,
        planId: sub.plan_id,
        provider: sub.provider,
      });
      return sub;
    });
    if (ended && atProcessor(ended)) {
      // The processor would go on retrying the charge; a failure is logged (the downgrade stands).
      await deps.processors[ended.provider]
        .cancelSubscription(ended.provider_subscription_id)
        .catch((err: unknown) =>
          deps.logger.error(
            { err, subscriptionId: ended.id, provider: ended.provider },
            'billing: could not cancel a downgraded subscription at its processor; cancel it there by hand',
          ),
        );
    }
  }
  return { downgraded: due.length };
}
