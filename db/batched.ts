// Work of the hottest paths, batched: the lookups of authentication (the user behind a token, the key
// behind an API key), the writes of a generation, the reads and records of webhook deliveries, and the
// rate limiter's charges in Redis. Requests asking while earlier batches are on their way wait, and then
// go together as ONE statement (`where key = any($1)`, one JSON parameter of rows, one consume of a total).
// Under load, one round trip serves dozens of requests; alone, a request waits for nothing but the end of
// the current event-loop turn.
//
// Freshness is that of unbatched work: every answer comes from a statement sent AFTER the request asked
// (a request never joins a statement already on its way), so a suspension or a revoked key committed
// before a request arrives is seen by that request. Nothing is cached between batches.
//
// Built on DataLoader (cache off): it gathers the inputs of one batch; `batchScheduleFn` holds a new batch
// back while MAX_IN_FLIGHT batches of the same work are running, which is what makes batches grow with
// the load instead of one statement per request.
import DataLoader from 'dataloader';
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

/** Batches of one kind of work running at once, per owner, unless the work says otherwise. More would
 * mean smaller batches; fewer would make one slow statement hold up every request behind it. */
const MAX_IN_FLIGHT = 2;
/** Requests per batch at most; a larger batch is split. */
const MAX_BATCH_SIZE = 200;

export interface BatchOptions {
  /**
   * Batches running at once (default 2). One suits background work, where a wait of a statement costs
   * nothing anyone sees: the batches grow twice as large, and a statement's fixed cost is shared twice as
   * widely.
   */
  inFlight?: number;
}

/**
 * A piece of work done for many requests at once: `run` gets the inputs of every request of the batch, in
 * arrival order, and answers one result per input in the same order (an Error fails that request alone).
 * Batches are made per owner: the database (a Kysely instance) by default, or whatever object the work
 * runs against (the rate limiter passes its limiters).
 */
export function batched<I, O, D extends object = Kysely<Database>>(
  run: (owner: D, inputs: readonly I[]) => Promise<Array<O | Error>>,
  opts: BatchOptions = {},
): (owner: D, input: I) => Promise<O> {
  const maxInFlight = opts.inFlight ?? MAX_IN_FLIGHT;
  const loaders = new WeakMap<D, DataLoader<I, O>>();

  function loaderOf(owner: D): DataLoader<I, O> {
    let loader = loaders.get(owner);
    if (loader) return loader;
    let inFlight = 0;
    const held: Array<() => void> = [];
    loader = new DataLoader<I, O>(
      async (inputs) => {
        inFlight += 1;
        try {
          return await run(owner, inputs);
        } finally {
          inFlight -= 1;
          held.shift()?.();
        }
      },
      {
        cache: false,
        maxBatchSize: MAX_BATCH_SIZE,
        batchScheduleFn: (dispatch) => {
          if (inFlight < maxInFlight) setImmediate(dispatch);
          else held.push(dispatch);
        },
      },
    );
    loaders.set(owner, loader);
    return loader;
  }

  return (owner, input) => loaderOf(owner).load(input);
}

/** The positions of a batch's inputs, grouped by `keyOf` (in arrival order within each group). */
export function groupPositions<I>(inputs: readonly I[], keyOf: (input: I) => string): number[][] {
  const groups = new Map<string, number[]>();
  inputs.forEach((input, i) => {
    const key = keyOf(input);
    const group = groups.get(key);
    if (group) group.push(i);
    else groups.set(key, [i]);
  });
  return [...groups.values()];
}

/**
 * A lookup of one row by key, batched. `query` answers the rows of any subset of `keys` (in any order;
 * keys without a row are simply absent); `keyOf` tells a row's key. Each key is asked for once per query.
 */
export function batchedLookup<K extends string, R>(
  query: (db: Kysely<Database>, keys: K[]) => Promise<R[]>,
  keyOf: (row: R) => K,
  opts: BatchOptions = {},
): (db: Kysely<Database>, key: K) => Promise<R | undefined> {
  return batched<K, R | undefined>(async (db, keys) => {
    const rows = await query(db, [...new Set(keys)]);
    const byKey = new Map(rows.map((row) => [keyOf(row), row]));
    return keys.map((key) => byKey.get(key));
  }, opts);
}
