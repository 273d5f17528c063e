// The baseline of the queue benchmark (bench/queue.ts starts it as a child process): a BullMQ worker
// whose jobs do nothing, at the same concurrency as the webhook worker (server/worker.ts).
// Settings from the environment: REDIS_URL, BENCH_QUEUE, BENCH_CONCURRENCY.
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';

const worker = new Worker(process.env.BENCH_QUEUE!, async () => undefined, {
  connection: new Redis(process.env.REDIS_URL!, { maxRetriesPerRequest: null }),
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? 10),
});
await worker.waitUntilReady();
console.log('raw worker ready');
const stop = () => void worker.close().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
