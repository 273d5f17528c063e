// Redis connections (ioredis), when REDIS_URL is set. Each role gets its own connection: a connection in
// subscriber mode can do nothing else, and commands of the request path should fail fast rather than queue
// while Redis is away. A request never waits for Redis longer than REDIS_COMMAND_TIMEOUT_MS
// (docs/decisions.md, "Redis away"), and every connection tries again at least once a second while Redis is
// away, so it is used again within about a second of its return.
import type { Redis } from 'ioredis';
import type { Config } from './config.js';
import type { Logger } from './logger.js';
import { settlesWithin } from './in-flight.js';

export interface RedisConnections {
  /** Commands on the request path: no offline queue, one retry, short timeouts, auto-pipelined. */
  commands: Redis;
  /** Pub/sub listener. */
  subscriber: Redis;
  close(): Promise<void>;
}

/** The longest wait between two attempts to reconnect (ioredis's own back-off goes up to 5 s). */
export const RECONNECT_MAX_MS = 1_000;

/**
 * Reconnection back-off of every connection of the API and the worker: 50 ms doubling up to
 * RECONNECT_MAX_MS, plus up to 100 ms of jitter so that instances do not all come back at the same moment.
 */
export const reconnectDelay = (attempt: number) =>
  Math.min(50 * 2 ** Math.max(0, attempt - 1), RECONNECT_MAX_MS) + Math.floor(Math.random() * 100);

/** The connections when REDIS_URL is set (ioredis is loaded only then), else undefined. */
export async function connectRedis(
  config: Pick<Config, 'REDIS_URL' | 'REDIS_COMMAND_TIMEOUT_MS'>,
  logger: Logger,
): Promise<RedisConnections | undefined> {
  const url = config.REDIS_URL;
  if (!url) return undefined;
  const { Redis } = await import('ioredis');
  const common = { connectTimeout: 2000, lazyConnect: false, retryStrategy: reconnectDelay } as const;
  // Auto-pipelining: the commands of requests that arrive while a pipeline is on its way to Redis go
  // together in the next one (one write and one read for dozens of rate-limit checks under load).
  // The command timeout bounds a Redis that is connected but answers nothing (a frozen process, a network
  // that drops packets): without it a command would wait as long as the connection stays open.
  const commands = new Redis(url, {
    ...common,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    commandTimeout: config.REDIS_COMMAND_TIMEOUT_MS,
    enableAutoPipelining: true,
  });
  const subscriber = new Redis(url, { ...common, maxRetriesPerRequest: null });
  for (const [role, conn] of [
    ['commands', commands],
    ['subscriber', subscriber],
  ] as const) {
    conn.on('error', (err: Error) => logger.warn({ err: { message: err.message }, role }, 'redis connection error'));
  }
  return {
    commands,
    subscriber,
    async close() {
      // QUIT lets pending replies arrive; on a connection that is not up it would wait for one forever, and
      // a Redis that answers nothing gets the command timeout before the connection is cut.
      const quitOrCut = async (c: Redis) => {
        if (c.status === 'ready') await settlesWithin(config.REDIS_COMMAND_TIMEOUT_MS, c.quit());
        if (c.status !== 'end') c.disconnect();
      };
      await Promise.all([commands, subscriber].map(quitOrCut));
    },
  };
}
