// Work of the hottest paths, batched: the lookups of authentication (the user behind a token, the key
// behind an API key), the pages of lists, the writes of a generation, the reads and records of webhook
// deliveries, and the rate limiter's charges in Redis. Requests asking while earlier batches are on their way wait, and then
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
import { CompiledQuery, type Kysely } from 'kysely';
import { mapPerOwner } from '../server/platform/bounded-cache.js';
import { preparedStatements } from './compiled.js';
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

// ---------------------------------------------------------------- selects of one shape, as one statement

/** A parameter placeholder of compiled Postgres SQL ($1, $2, ...). */
const PLACEHOLDER = /\$(\d+)/g;
/** Shapes (SQL texts) whose parameter types are kept, per database; selects of further shapes run alone. */
const MAX_SHAPES = 500;

/**
 * A batchable SQL text: its parameters' Postgres types, and the statement that runs selects of it together
 * (selectTogether), registered as a prepared statement.
 */
interface Shape {
  types: string[];
  text: string;
}

const shapesOf = mapPerOwner<Kysely<Database>, string, Promise<Shape | null>>();
let probes = 0;

/** The alias of a batch's parameters in selectTogether's statement, and its column naming each select. */
const PARAMS = 'batch_params';
const BRANCH = 'batch_branch';

/**
 * The shape of a select's SQL text, made once per text: its parameters' types are asked of Postgres
 * (PREPARE, then pg_prepared_statements). Null when the select cannot be batched: its text holds a
 * `$<digits>` that is not one of its parameters in order, a parameter is an array, or Postgres cannot tell
 * a type.
 */
function shapeOf(db: Kysely<Database>, query: CompiledQuery): Promise<Shape | null> {
  const known = shapesOf(db);
  let shape = known.get(query.sql);
  if (shape) return shape;
  if (known.size >= MAX_SHAPES) return Promise.resolve(null);
  shape = probeTypes(db, query).then(
    (types) => (types ? { types, text: batchStatement(query.sql, types) } : null),
    () => null,
  );
  known.set(query.sql, shape);
  return shape;
}

async function probeTypes(db: Kysely<Database>, query: CompiledQuery): Promise<string[] | null> {
  const placeholders = [...query.sql.matchAll(PLACEHOLDER)].map((m) => Number(m[1]));
  const inOrder = placeholders.length === query.parameters.length && placeholders.every((n, i) => n === i + 1);
  if (!inOrder || query.parameters.some((p) => Array.isArray(p))) return null;
  const name = `batch_probe_${++probes}`;
  const types = await db.connection().execute(async (connection) => {
    await connection.executeQuery(CompiledQuery.raw(`prepare ${name} as ${query.sql}`));
    try {
      const { rows } = await connection.executeQuery<{ types: string[] }>(
        CompiledQuery.raw(
          'select array_to_json(parameter_types::text[]) as types from pg_prepared_statements where name = $1',
          [name],
        ),
      );
      return rows[0]?.types;
    } finally {
      await connection.executeQuery(CompiledQuery.raw(`deallocate ${name}`));
    }
  });
  const batchable =
    types?.length === query.parameters.length && types.every((t) => t !== 'unknown' && !t.endsWith('[]'));
  return batchable ? types : null;
}

/** selectTogether's statement for selects of the SQL text `select` (below), registered as prepared. */
function batchStatement(select: string, types: string[]): string {
  const columns = types.map((_, k) => `p${k + 1}`);
  const arrays = types.map((type, k) => `$${k + 1}::${type}[]`);
  const lateral = select.replace(PLACEHOLDER, (_, n: string) => `${PARAMS}.p${n}`);
  const text =
    `select q.*, ${PARAMS}.${BRANCH} from unnest(${arrays.join(', ')}) with ordinality ` +
    `as ${PARAMS}(${columns.join(', ')}, ${BRANCH}) cross join lateral (${lateral}) as q`;
  if (!preparedStatements.has(text)) preparedStatements.set(text, `batch_${preparedStatements.size + 1}`);
  return text;
}

/**
 * Runs selects of one shape (the same SQL text, other parameter values) as ONE statement: each parameter
 * becomes the array of the selects' values, and the select runs once for each position of the arrays,
 * `select q.*, batch_branch from unnest($1::uuid[], ...) with ordinality as batch_params(p1, ...,
 * batch_branch) cross join lateral (<the select, reading $k as batch_params.pk>) as q`. Postgres plans it
 * once and runs the select's plan for each position: a batch of 25 list pages costs its Postgres about
 * what three single ones do, and the API one round trip. The text does not depend on the batch's size, so
 * it is prepared once per connection. Answers each select's rows, in the order Postgres gives them, which
 * SQL does not promise: a caller that needs an order sorts them (paginate() does).
 *
 * Each row keeps the statement's own column, batch_branch (its select's position, from 1), beside the
 * select's: callers read the columns they selected. Deleting it cost more than the rest of a batch's
 * sorting out: pg makes each row as a copy of a template object, and V8 deletes a property of such a
 * copy slowly (about 0.6 µs a row here, against 0.02 µs for an object built key by key).
 *
 * The statement is planned without the values (they are rows of the arrays): a condition that must match a
 * partial index is written as a literal in the select (`not is_sample`), never as a parameter.
 */
async function selectTogether(
  db: Kysely<Database>,
  queries: readonly CompiledQuery[],
  { types, text }: Shape,
): Promise<unknown[][]> {
  const parameters = types.map((_, k) => queries.map((query) => query.parameters[k]));
  const { rows } = await db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(text, parameters));
  const answers: unknown[][] = queries.map(() => []);
  for (const row of rows) answers[Number(row[BRANCH]) - 1].push(row);
  return answers;
}

/**
 * A select run for many requests at once: the selects asked while earlier batches are on their way go
 * together, those of one SQL text as one statement (selectTogether), so that under load one round trip
 * answers dozens of list pages. A select that cannot be batched, or a batch whose statement fails, runs
 * alone, so that each caller gets its own answer or its own error.
 */
export const batchedSelect = batched<CompiledQuery, unknown[]>(async (db, queries) => {
  const answers: Array<unknown[] | Error> = [];
  const alone = (i: number) =>
    db.executeQuery(queries[i]).then(
      (result) => void (answers[i] = result.rows),
      (err: Error) => void (answers[i] = err),
    );
  await Promise.all(
    groupPositions(queries, (query) => query.sql).map(async (group) => {
      const shape = group.length > 1 ? await shapeOf(db, queries[group[0]]) : null;
      if (!shape) return Promise.all(group.map(alone));
      try {
        const rows = await selectTogether(
          db,
          group.map((i) => queries[i]),
          shape,
        );
        group.forEach((i, branch) => (answers[i] = rows[branch]));
      } catch {
        await Promise.all(group.map(alone));
      }
    }),
  );
  return answers;
}) as <R>(db: Kysely<Database>, query: CompiledQuery<R>) => Promise<R[]>;
