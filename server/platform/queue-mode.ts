// Whether the queues run (the worker takes deliveries and periodic tasks) or everything runs in the API
// process: read by the API's composition root, the worker, and the use cases that start work in the
// background.
import type { Config } from './config.js';

/** Queue mode: QUEUES_ENABLED and WEBHOOK_QUEUE_ENABLED, with a Redis to queue in. */
export const webhookQueueEnabled = (config: Pick<Config, 'QUEUES_ENABLED' | 'WEBHOOK_QUEUE_ENABLED' | 'REDIS_URL'>) =>
  config.QUEUES_ENABLED && config.WEBHOOK_QUEUE_ENABLED && Boolean(config.REDIS_URL);
