// Queue throughput, measured in the same run: raw BullMQ jobs that do nothing (bench/raw-worker.ts)
// against `deliver_webhook` jobs of the webhook worker (jobs/worker.ts) delivering signed webhooks to a
// loopback receiver (bench/receiver.ts). Both workers run in child processes at the same concurrency;
// with the worker ready, jobs are enqueued and timed until the queue has none left waiting or running.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';

export interface QueueMeasurement {
  jobs: number;
  seconds: number;
  jobsPerSec: number;
}

/** Jobs of `queue` still waiting, delayed or running. */
const jobsLeft = async (queue: Queue) => Object.values(await queue.getJobCounts('wait', 'prioritized', 'delayed', 'active')).reduce((a, b) => a + b, 0);

const waitFor = async (check: () => Promise<boolean>, timeoutMs: number, what: string) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

/**
 * No-op jobs: with the worker ready, enqueue `n` and time until none is left waiting or running. (Counting
 * QueueEvents 'completed' events loses some once the events stream is trimmed to its 10,000 entries.)
 */
export async function measureRawJobs(opts: { redisUrl: string; n: number; concurrency: number; startWorker: (env: Record<string, string>) => Promise<() => Promise<void>> }): Promise<QueueMeasurement> {
  const name = `bench-raw-${Date.now()}`;
  const connection = new Redis(opts.redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue(name, { connection });
  const stop = await opts.startWorker({ REDIS_URL: opts.redisUrl, BENCH_QUEUE: name, BENCH_CONCURRENCY: String(opts.concurrency) });
  const started = performance.now();
  await queue.addBulk(Array.from({ length: opts.n }, (_, i) => ({ name: 'noop', data: { i }, opts: { removeOnComplete: true } })));
  await waitFor(async () => (await jobsLeft(queue)) === 0, 120_000, 'raw jobs');
  const seconds = (performance.now() - started) / 1000;
  await stop();
  await queue.obliterate({ force: true });
  await queue.close();
  connection.disconnect();
  return { jobs: opts.n, seconds, jobsPerSec: opts.n / seconds };
}

/**
 * Webhook deliveries: `n` pending delivery rows of one webhook; with the webhook worker ready, they are
 * queued as deliver_webhook jobs on `queue` and timed as the raw jobs are, until none is left waiting or
 * running; then every row must be `success` (each job recorded its delivery before it completed).
 */
export async function measureWebhookDeliveries(opts: {
  databaseUrl: string;
  webhookId: string;
  workspaceId: string;
  n: number;
  queue: Queue;
  enqueue: (deliveryIds: string[]) => Promise<void>;
  startWorker: () => Promise<() => Promise<void>>;
}): Promise<QueueMeasurement> {
  const client = new pg.Client({ connectionString: opts.databaseUrl });
  await client.connect();
  const payload = JSON.stringify({ event: 'billing.updated', createdAt: new Date().toISOString(), workspaceId: opts.workspaceId, data: { bench: true } });
  const { rows } = await client.query<{ id: string }>(
    `insert into webhook_deliveries (webhook_id, workspace_id, event, payload, status)
     select $1, $2, 'billing.updated', $3::jsonb, 'pending' from generate_series(1, $4) returning id`,
    [opts.webhookId, opts.workspaceId, payload, opts.n],
  );
  const stop = await opts.startWorker();
  const started = performance.now();
  await opts.enqueue(rows.map((r) => r.id));
  await waitFor(async () => (await jobsLeft(opts.queue)) === 0, 180_000, 'webhook deliveries');
  const seconds = (performance.now() - started) / 1000;
  await stop();
  const { rows: outcomes } = await client.query<{ status: string; n: number }>(
    `select status, count(*)::int as n from webhook_deliveries where id = any($1::uuid[]) group by status`,
    [rows.map((r) => r.id)],
  );
  const succeeded = outcomes.find((o) => o.status === 'success')?.n ?? 0;
  if (succeeded !== opts.n) throw new Error(`webhook deliveries: ${succeeded} of ${opts.n} succeeded (${JSON.stringify(outcomes)})`);
  await client.end();
  return { jobs: opts.n, seconds, jobsPerSec: opts.n / seconds };
}
