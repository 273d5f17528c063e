// Point lookups of the hottest paths (the authentication of every request), batched: lookups asked for
// while earlier ones are on their way to the database wait, and then go together as ONE query over all
// their keys (`where key = any($1)`). Under load, one round trip answers dozens of requests; alone, a
// lookup waits for nothing but the end of the current event-loop turn.
//
// Freshness is that of an unbatched lookup: every answer comes from a query sent AFTER the lookup was
// asked for (a lookup never joins a query already on its way), so a suspension or a revoked key committed
// before a request arrives is seen by that request. Nothing is cached between batches.
//
// Built on DataLoader (cache off): it gathers the keys of one batch; `batchScheduleFn` below holds a new
// batch back while MAX_IN_FLIGHT batches of the same lookup are running, which is what makes batches grow
// with the load instead of one query per request.
import DataLoader from 'dataloader';
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

/** Batches of one lookup running at once, per database. More would mean smaller batches, fewer would
 * make one slow query hold up every request behind it. */
const MAX_IN_FLIGHT = 2;
/** Keys per query at most; a larger batch is split. */
const MAX_BATCH_SIZE = 200;

/**
 * A lookup of one row by key, batched per database. `query` answers the rows of any subset of `keys` (in
 * any order; keys without a row are simply absent); `keyOf` tells a row's key.
 */
export function batchedLookup<K extends string, R>(
  query: (db: Kysely<Database>, keys: K[]) => Promise<R[]>,
  keyOf: (row: R) => K,
): (db: Kysely<Database>, key: K) => Promise<R | undefined> {
  const loaders = new WeakMap<Kysely<Database>, DataLoader<K, R | undefined>>();

  function loaderOf(db: Kysely<Database>): DataLoader<K, R | undefined> {
    let loader = loaders.get(db);
    if (loader) return loader;
    let inFlight = 0;
    const held: Array<() => void> = [];
    loader = new DataLoader<K, R | undefined>(
      async (keys) => {
        inFlight += 1;
        try {
          const rows = await query(db, [...new Set(keys)]);
          const byKey = new Map(rows.map((row) => [keyOf(row), row]));
          return keys.map((key) => byKey.get(key));
        } finally {
          inFlight -= 1;
          held.shift()?.();
        }
      },
      {
        cache: false,
        maxBatchSize: MAX_BATCH_SIZE,
        batchScheduleFn: (dispatch) => {
          if (inFlight < MAX_IN_FLIGHT) setImmediate(dispatch);
          else held.push(dispatch);
        },
      },
    );
    loaders.set(db, loader);
    return loader;
  }

  return (db, key) => loaderOf(db).load(key);
}
