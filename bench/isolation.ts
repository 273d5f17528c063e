// Deliveries that isolate endpoints (bench/run.ts, scenario "deliveries beside a hanging endpoint"): the
// real worker (server/worker.ts, WEBHOOK_TIMEOUT_MS 10 s) and the API's producer (jobs/queue.ts, which reads
// the endpoints' slow marks), against loopback receivers in this process: BENCH_ISOLATION_HEALTHY healthy
// endpoints (each a webhook of a workspace of its own, on a port of its own, answering 200 at once) and one
// that accepts connections and never answers. Deliveries are queued at a steady rate (open loop, as events
// arrive), in batches every 50 ms, each row inserted just before its job:
// - alone: half of BENCH_ISOLATION_DELIVERIES, all healthy, at half of BENCH_ISOLATION_RATE a second;
// - beside the hanging endpoint: BENCH_ISOLATION_DELIVERIES at BENCH_ISOLATION_RATE, every other one to it.
// For the healthy deliveries of each run: their rate (delivered over the time from the first enqueue to the
// last receipt) and the p99 of the time from enqueue to receipt. Targets: beside the hanging endpoint, at
// least 0.8x the rate alone and a p99 under 1 s.
import net from 'node:net';
import { eachRequest } from './http-frames.js';
import { Redis } from 'ioredis';
import pg from 'pg';
import type { Config } from '../server/platform/config.js';
import { SecretBox } from '../server/platform/security/secret-box.js';
import { createWebhookQueue } from '../jobs/queue.js';
import type { StartedWorker } from './queue.js';

export interface IsolationRun {
  healthy: number;
  delivered: number;
  ratePerSec: number;
  p50Ms: number;
  p99Ms: number;
}

export interface IsolationFigures {
  alone: IsolationRun;
  beside: IsolationRun;
  /** Requests the hanging endpoint received (each held until the timeout). */
  hangingRequests: number;
}

export const ISOLATION_TARGETS = { ratio: 0.8, p99Ms: 1_000 };

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : NaN;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A receiver on its own port: `answer` true answers 200 at once and notes when each delivery arrived. */
async function receiver(answer: boolean, arrivals: Map<string, number>) {
  const sockets = new Set<net.Socket>();
  let requests = 0;
  const OK = Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nKeep-Alive: timeout=60\r\n\r\nok', 'latin1');
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    socket.setNoDelay(true);
    eachRequest(socket, (head) => {
      requests++;
      if (!answer) return;
      const id = /\r\nx-service-delivery:[ \t]*([0-9a-f-]+)/i.exec(head)?.[1];
      if (id) arrivals.set(id, performance.now());
      socket.write(OK);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/hook`,
    requests: () => requests,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

export async function measureIsolation(opts: {
  databaseUrl: string;
  redisUrl: string;
  env: Record<string, string>;
  deliveries: number;
  ratePerSec: number;
  healthyEndpoints: number;
  startWorker: (env: Record<string, string>) => Promise<StartedWorker>;
}): Promise<IsolationFigures> {
  const prefix = `bench-lanes-${Date.now().toString(36)}`;
  const settings = {
    ...opts.env,
    REDIS_URL: opts.redisUrl,
    QUEUES_ENABLED: 'true',
    WEBHOOK_QUEUE_ENABLED: 'true',
    QUEUE_PREFIX: prefix,
    WEBHOOK_TIMEOUT_MS: '10000',
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    MAINTENANCE_SCHEDULER_ENABLED: 'false',
    LOG_LEVEL: 'info',
  };
  const arrivals = new Map<string, number>();
  const healthy = await Promise.all(Array.from({ length: opts.healthyEndpoints }, () => receiver(true, arrivals)));
  const hanging = await receiver(false, arrivals);
  const worker = await opts.startWorker(settings); // migrates the database
  const client = new pg.Client({ connectionString: opts.databaseUrl });
  await client.connect();
  const box = new SecretBox(opts.env.WEBHOOK_SECRET_ENCRYPTION_KEY);
  const hookOn = async (url: string, i: number) => {
    const ws = await client.query<{ id: string }>(`insert into workspaces (name) values ($1) returning id`, [
      `isolation ${i}`,
    ]);
    const hook = await client.query<{ id: string }>(
      `insert into webhooks (workspace_id, name, url, events, secret_encrypted) values ($1, $2, $3, '["webhook.test"]', $4) returning id`,
      [ws.rows[0].id, `isolation ${i}`, url, box.seal(`whsec-bench-${i}`)],
    );
    return { webhookId: hook.rows[0].id, workspaceId: ws.rows[0].id };
  };
  const goodHooks: Array<Awaited<ReturnType<typeof hookOn>>> = [];
  for (const [i, r] of healthy.entries()) goodHooks.push(await hookOn(r.url, i));
  const badHook = await hookOn(hanging.url, -1);
  const config = {
    REDIS_URL: opts.redisUrl,
    REDIS_COMMAND_TIMEOUT_MS: 5_000,
    QUEUE_PREFIX: prefix,
    WEBHOOK_MAX_RETRIES: 3,
    WEBHOOK_RETRY_BACKOFF_SECONDS: 30,
  } as Config;
  const producer = await createWebhookQueue(config);

  /** Queues `n` deliveries at `rate` a second; `bad(i)` picks the hanging endpoint. Answers the healthy ones' figures. */
  const run = async (n: number, rate: number, bad: (i: number) => boolean): Promise<IsolationRun> => {
    const queuedAt = new Map<string, number>();
    const batch = Math.max(1, Math.round(rate / 20));
    const started = performance.now();
    for (let sent = 0; sent < n; sent += batch) {
      const due = started + (sent / rate) * 1000;
      if (due > performance.now()) await sleep(due - performance.now());
      const hooks = Array.from({ length: Math.min(batch, n - sent) }, (_, k) =>
        bad(sent + k) ? badHook : goodHooks[(sent + k) % goodHooks.length],
      );
      const values = hooks.map(
        (_, k) => `($${k * 2 + 1}, $${k * 2 + 2}, 'webhook.test', '{"event":"webhook.test"}', 'pending')`,
      );
      const rows = await client.query<{ id: string; webhook_id: string }>(
        `insert into webhook_deliveries (webhook_id, workspace_id, event, payload, status) values ${values.join(', ')} returning id, webhook_id`,
        hooks.flatMap((h) => [h.webhookId, h.workspaceId]),
      );
      const at = performance.now();
      const failures = await producer.enqueueAll(rows.rows.map((r) => ({ deliveryId: r.id, webhookId: r.webhook_id })));
      if (failures.length) throw new Error(`enqueue failed: ${failures[0].error.message}`);
      for (const r of rows.rows) if (r.webhook_id !== badHook.webhookId) queuedAt.set(r.id, at);
    }
    const deadline = performance.now() + 120_000;
    while ([...queuedAt.keys()].some((id) => !arrivals.has(id)) && performance.now() < deadline) await sleep(50);
    const latencies = [...queuedAt].flatMap(([id, at]) => (arrivals.has(id) ? [arrivals.get(id)! - at] : []));
    const last = Math.max(...[...queuedAt.keys()].flatMap((id) => (arrivals.has(id) ? [arrivals.get(id)!] : [])));
    return {
      healthy: queuedAt.size,
      delivered: latencies.length,
      ratePerSec: latencies.length / ((last - started) / 1000),
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
    };
  };

  try {
    const half = Math.floor(opts.deliveries / 2);
    const alone = await run(half, opts.ratePerSec / 2, () => false);
    const beside = await run(opts.deliveries, opts.ratePerSec, (i) => i % 2 === 0);
    return { alone, beside, hangingRequests: hanging.requests() };
  } finally {
    await worker.stop();
    await producer.close();
    await client.end();
    await Promise.all([...healthy, hanging].map((r) => r.close()));
    const redis = new Redis(opts.redisUrl, { maxRetriesPerRequest: null });
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      if (keys.length) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
    redis.disconnect();
  }
}
