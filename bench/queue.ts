// Queue throughput, measured in the same run: raw BullMQ jobs that do nothing (bench/raw-worker.ts)
// against `deliver_webhook` jobs of the webhook worker (server/worker.ts) delivering signed webhooks to a
// loopback receiver (bench/receiver.ts). Both workers run in child processes at the same concurrency;
// with a worker ready, a warm-up batch of jobs runs untimed (as the HTTP scenarios' warm-up: a long-lived
// worker's code is compiled, its connections open). A timed run fills the paused queue with its jobs
// (untimed), then times the worker from the queue's resume until none is left waiting or running: the
// worker's throughput, not the producer's; bench/run.ts alternates the two benchmarks' runs over its
// rounds, as it does the HTTP scenarios, so a slow minute of the machine weighs on both alike.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { cpuSecondsBetween, cpuSecondsByPid, cpuSecondsOf } from './cpu.js';

export interface QueueMeasurement {
  jobs: number;
  seconds: number;
  jobsPerSec: number;
  /**
   * CPU time per job of the worker process and of the Redis server over the timed run (µs; undefined where
   * /proc cannot be read). Unlike the rate, CPU time leaves out what a shared machine's other guests take.
   */
  workerCpuUs?: number;
  redisCpuUs?: number;
  /** The same for every Postgres server process of the machine, and for the webhook receiver. */
  postgresCpuUs?: number;
  receiverCpuUs?: number;
}

export interface StartedWorker {
  pid: number;
  stop: () => Promise<void>;
}

type RedisInfo = { info(section: 'cpu'): Promise<string> };

/** CPU seconds the Redis server has used so far (its INFO cpu section). */
async function redisCpuSeconds(redis: RedisInfo): Promise<number | undefined> {
  const info = await redis.info('cpu');
  const read = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1]);
  const total = read('used_cpu_sys') + read('used_cpu_user');
  return Number.isFinite(total) ? total : undefined;
}

/** What a queue benchmark measures: a worker on its queue, and how jobs are added to that queue. */
interface QueueUnderTest {
  queue: Queue;
  /** Adds `n` jobs to the queue. */
  fill: (n: number) => Promise<void>;
  worker: StartedWorker;
  /** A connection to the queue's Redis, for its CPU figures. */
  redis: RedisInfo;
  /** The receiver's process, for its CPU figure. */
  receiverPid?: number;
  /** The jobs, as a timeout's message names them. */
  what: string;
}

/** Waits for the queue's worker to run all it holds, at most 3 minutes. */
const drained = (q: QueueUnderTest) => untilDrained(q.queue, q.what, 180_000);

/**
 * Fills the queue with `n` jobs while it is paused (untimed), then times its worker from the queue's resume
 * until it has no job left waiting or running, with the CPU the worker, Redis, Postgres and the receiver
 * spent meanwhile. The jobs are all there when the timer starts: what is timed is the worker's throughput
 * alone. (Timing an enqueue too would add the same second or so of one bulk add to both benchmarks, which
 * flatters the slower one: BullMQ makes a bulk add visible at once, at its end.)
 */
async function timed(n: number, q: QueueUnderTest): Promise<QueueMeasurement> {
  await q.queue.pause();
  await q.fill(n);
  const cpu = () =>
    Promise.all([
      cpuSecondsOf(q.worker.pid),
      redisCpuSeconds(q.redis),
      q.receiverPid ? cpuSecondsOf(q.receiverPid) : Promise.resolve(undefined),
      cpuSecondsByPid('postgres'),
    ] as const);
  const before = await cpu();
  const started = performance.now();
  await q.queue.resume();
  await drained(q);
  const seconds = (performance.now() - started) / 1000;
  const after = await cpu();
  const perJob = (s?: number) => (s === undefined ? undefined : (s * 1e6) / n);
  const between = (i: 0 | 1 | 2) =>
    before[i] === undefined || after[i] === undefined ? undefined : after[i] - before[i];
  return {
    jobs: n,
    seconds,
    jobsPerSec: n / seconds,
    workerCpuUs: perJob(between(0)),
    redisCpuUs: perJob(between(1)),
    receiverCpuUs: perJob(between(2)),
    postgresCpuUs: perJob(cpuSecondsBetween(before[3], after[3])),
  };
}

/** Runs `warmUp` jobs untimed (the worker's code compiled, its connections open), then answers the bench. */
async function warmedUp(q: QueueUnderTest, warmUp: number, stop: () => Promise<void>): Promise<QueueBench> {
  await q.fill(warmUp);
  await drained(q);
  return { run: (n) => timed(n, q), stop };
}

/** Waits until `queue` holds no job waiting, delayed or running (polled every 20 ms). */
async function untilDrained(queue: Queue, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const left = async () =>
    Object.values(await queue.getJobCounts('wait', 'prioritized', 'delayed', 'active')).reduce((a, b) => a + b, 0);
  while ((await left()) > 0) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A queue benchmark whose worker stays up between its timed runs. */
export interface QueueBench {
  /** Adds `n` jobs to the paused queue, then times the worker from the resume until none is left (timed). */
  run(n: number): Promise<QueueMeasurement>;
  /** Stops the worker, checks what the runs left behind, and cleans up. */
  stop(): Promise<void>;
}

/** The measurements of several runs as one: their jobs over their time, their CPU over their jobs. */
export function combined(runs: QueueMeasurement[]): QueueMeasurement {
  const jobs = runs.reduce((sum, r) => sum + r.jobs, 0);
  const seconds = runs.reduce((sum, r) => sum + r.seconds, 0);
  const cpu = (of: (r: QueueMeasurement) => number | undefined) =>
    runs.some((r) => of(r) === undefined) ? undefined : runs.reduce((sum, r) => sum + of(r)! * r.jobs, 0) / jobs;
  return {
    jobs,
    seconds,
    jobsPerSec: jobs / seconds,
    workerCpuUs: cpu((r) => r.workerCpuUs),
    redisCpuUs: cpu((r) => r.redisCpuUs),
    postgresCpuUs: cpu((r) => r.postgresCpuUs),
    receiverCpuUs: cpu((r) => r.receiverCpuUs),
  };
}

/**
 * No-op jobs: starts the worker and runs `warmUp` jobs untimed; each run then times `n` more (timed). (Not
 * by counting QueueEvents 'completed' events: some are lost once the events stream is trimmed to its
 * 10,000 entries.)
 */
export async function startRawJobs(opts: {
  redisUrl: string;
  warmUp: number;
  concurrency: number;
  startWorker: (env: Record<string, string>) => Promise<StartedWorker>;
}): Promise<QueueBench> {
  const name = `bench-raw-${Date.now()}`;
  const connection = new Redis(opts.redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue(name, { connection });
  const worker = await opts.startWorker({
    REDIS_URL: opts.redisUrl,
    BENCH_QUEUE: name,
    BENCH_CONCURRENCY: String(opts.concurrency),
  });
  const fill = async (n: number) => {
    await queue.addBulk(
      Array.from({ length: n }, (_, i) => ({ name: 'noop', data: { i }, opts: { removeOnComplete: true } })),
    );
  };
  return warmedUp({ queue, fill, worker, redis: connection, what: 'raw jobs' }, opts.warmUp, async () => {
    await worker.stop();
    await queue.obliterate({ force: true });
    await queue.close();
    connection.disconnect();
  });
}

/**
 * Webhook deliveries of one webhook: with the webhook worker ready, `warmUp` of them run untimed; each run
 * then inserts its pending delivery rows and queues them as deliver_webhook jobs on `queue` (both
 * untimed), and times them as the raw jobs are. At the end every row must be `success` (each job recorded its delivery
 * before it completed). Rows are inserted run by run: a row left pending for 30 s would be taken by an API
 * instance's sweep.
 */
export async function startWebhookDeliveries(opts: {
  databaseUrl: string;
  webhookId: string;
  workspaceId: string;
  /** Deliveries run untimed first. */
  warmUp: number;
  queue: Queue;
  /** A connection to the queue's Redis, for its CPU figures. */
  redis: RedisInfo;
  /** The receiver's process, for its CPU figure. */
  receiverPid?: number;
  enqueue: (deliveryIds: string[]) => Promise<void>;
  startWorker: () => Promise<StartedWorker>;
}): Promise<QueueBench> {
  const client = new pg.Client({ connectionString: opts.databaseUrl });
  await client.connect();
  const payload = JSON.stringify({
    event: 'billing.updated',
    createdAt: new Date().toISOString(),
    workspaceId: opts.workspaceId,
    data: { bench: true },
  });
  const ids: string[] = [];
  const insert = async (n: number) => {
    const { rows } = await client.query<{ id: string }>(
      `insert into webhook_deliveries (webhook_id, workspace_id, event, payload, status)
       select $1, $2, 'billing.updated', $3::jsonb, 'pending' from generate_series(1, $4) returning id`,
      [opts.webhookId, opts.workspaceId, payload, n],
    );
    const batch = rows.map((r) => r.id);
    ids.push(...batch);
    return batch;
  };
  // A run stopped midway may have left jobs in the queue, or the queue paused.
  await opts.queue.obliterate({ force: true });
  const worker = await opts.startWorker();
  const fill = async (n: number) => opts.enqueue(await insert(n));
  return warmedUp(
    { queue: opts.queue, fill, worker, redis: opts.redis, receiverPid: opts.receiverPid, what: 'webhook deliveries' },
    opts.warmUp,
    async () => {
      await worker.stop();
      const { rows: outcomes } = await client.query<{ status: string; n: number }>(
        `select status, count(*)::int as n from webhook_deliveries where id = any($1::uuid[]) group by status`,
        [ids],
      );
      await client.end();
      const succeeded = outcomes.find((o) => o.status === 'success')?.n ?? 0;
      if (succeeded !== ids.length)
        throw new Error(`webhook deliveries: ${succeeded} of ${ids.length} succeeded (${JSON.stringify(outcomes)})`);
    },
  );
}
