// Redis connections (ioredis), when REDIS_URL is set. Each role gets its own connection: a connection in
// subscriber mode can do nothing else, and commands of the request path should fail fast rather than queue
// while Redis is away.
import { Redis } from 'ioredis';
import type { Logger } from './logger.js';

export interface RedisConnections {
  /** Commands on the request path: no offline queue, one retry, short timeouts, auto-pipelined. */
  commands: Redis;
  /** Pub/sub listener. */
  subscriber: Redis;
  close(): Promise<void>;
}

export function connectRedis(url: string | undefined, logger: Logger): RedisConnections | undefined {
  if (!url) return undefined;
  const common = { connectTimeout: 2000, lazyConnect: false } as const;
  // Auto-pipelining: the commands of requests that arrive while a pipeline is on its way to Redis go
  // together in the next one (one write and one read for dozens of rate-limit checks under load).
  const commands = new Redis(url, { ...common, maxRetriesPerRequest: 1, enableOfflineQueue: false, commandTimeout: 500, enableAutoPipelining: true });
  const subscriber = new Redis(url, { ...common, maxRetriesPerRequest: null });
  for (const [role, conn] of [['commands', commands], ['subscriber', subscriber]] as const) {
    conn.on('error', (err: Error) => logger.warn({ err: { message: err.message }, role }, 'redis connection error'));
  }
  return {
    commands,
    subscriber,
    async close() {
      // QUIT lets pending replies arrive; on a connection that is not up it would wait for one forever.
      await Promise.allSettled([commands, subscriber].map((c) => (c.status === 'ready' ? c.quit() : c.disconnect())));
    },
  };
}
