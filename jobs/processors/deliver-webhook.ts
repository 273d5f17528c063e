// Processor of the `deliver_webhook` jobs of the webhooks queue: one attempt of the delivery the job names
// (routers/webhooks/delivery.ts). A job carries the delivery id only; the delivery row makes a second run
// of the same attempt (a stalled job run again) harmless.
import { UnrecoverableError, type Job } from 'bullmq';
import { SYSTEM_ACTOR } from '../../server/platform/actor.js';
import { attemptDelivery, type DeliveryDeps, type DeliveryGate } from '../../routers/webhooks/delivery.js';
import { attemptsBeforeJob, type DeliverWebhookJob } from '../queue.js';

/**
 * The number of the attempt a job is starting, as BullMQ counts them: every start of the job so far
 * (`attemptsStarted`, which also counts starts whose worker died before it could record anything), after
 * the attempts made before the job was queued (a manual retry's job, `<deliveryId>-retry-<attempts>`).
 */
const attemptOf = (job: Job<DeliverWebhookJob>) => attemptsBeforeJob(job.id) + job.attemptsStarted;

/** The lane a processor runs in: its gate, and where an attempt it turns away goes (jobs/lanes.ts). */
export interface Lane {
  gate: DeliveryGate;
  turnAway?(job: Job<DeliverWebhookJob>): Promise<void>;
}

export function deliverWebhook(deps: DeliveryDeps, lane?: Lane) {
  return async (job: Job<DeliverWebhookJob>) => {
    const outcome = await attemptDelivery(deps, SYSTEM_ACTOR, {
      deliveryId: job.data.deliveryId,
      attemptAtLeast: attemptOf(job),
      gate: lane?.gate,
    });
    // Nothing was sent: the job moves to the slow lane under the same id, and this one ends.
    if (outcome.status === 'turned-away') return lane?.turnAway?.(job);
    // A retryable failure goes back to BullMQ, which waits out the exponential backoff. A failed delivery
    // is over (a blocked URL or a 410 will never succeed; the last attempt failed): its job fails without
    // another try and is kept, with the reason, among the failed jobs.
    if (outcome.status === 'retrying') throw new Error('the endpoint did not accept the delivery');
    if (outcome.status === 'failed') {
      const reason = outcome.permanent ? 'the delivery cannot succeed' : 'the last attempt of the delivery failed';
      throw new UnrecoverableError(reason);
    }
  };
}
