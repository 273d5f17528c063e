// The periodic maintenance tasks of the domains, in one list (server/platform/periodic.ts runs them): the
// API process on timers when the queues are off, the worker (server/worker.ts) as repeatable jobs otherwise.
import type { AppDeps } from './platform/context.js';
import type { PeriodicTask } from './platform/periodic.js';
import { purgeDeletedWorkspaces } from '../routers/workspaces/lifecycle.js';
import { runDataExports } from '../routers/account/exports.js';
import { recheckDomains } from '../routers/sso/domains.js';
import { closeAbandonedStreams } from '../routers/ai/stream.js';
import { drainBillingOutbox } from '../routers/billing/outbox.js';
import { endGracePeriods, endMockTrials, remindTrialsEnding } from '../routers/billing/lifecycle.js';

export function periodicTasks(
  deps: Pick<AppDeps, 'db' | 'config' | 'storage' | 'logger' | 'mailer' | 'processors'>,
): PeriodicTask[] {
  return [
    { name: 'purge-deleted-workspaces', everyMs: 60_000, run: () => purgeDeletedWorkspaces(deps) },
    // Builds the exports waiting (in queue mode nothing else does: a few seconds is the wait) and deletes
    // the expired archives.
    { name: 'data-exports', everyMs: 5_000, run: () => runDataExports(deps) },
    // Each verified domain's record is looked up about once an hour (the task takes the longest unchecked).
    { name: 'recheck-domains', everyMs: 600_000, run: () => recheckDomains(deps) },
    // Streamed generations left RUNNING by an API process that stopped mid-stream: FAILED, uncounted.
    { name: 'close-abandoned-generations', everyMs: 60_000, run: () => closeAbandonedStreams(deps) },
    // Seat quantities and meter events waiting in the billing outbox (a seat change is due at most once a
    // minute per workspace; a meter event at once).
    { name: 'billing-outbox', everyMs: 2_000, run: () => drainBillingOutbox(deps) },
    // Trial reminders (3 days before the end), MOCK trials that ended, grace periods that ended unpaid.
    {
      name: 'billing-lifecycle',
      everyMs: 60_000,
      run: async () => {
        await remindTrialsEnding(deps);
        await endMockTrials(deps);
        await endGracePeriods(deps);
      },
    },
  ];
}
