// A query built and compiled once, then run with new parameter values, and on Postgres as a named
// prepared statement: parsed once per connection, planned for each execution's values (db/index.ts sets
// plan_cache_mode; docs/decisions.md, Data). For the hottest paths only (the authentication of every
// request, the delivery round trip): there, Kysely's build and compile and Postgres's parsing are much of
// the cost. Everywhere else, build queries the usual way. Keep such queries to explicit columns (no
// `select *`), so that a later migration cannot change the result type of a statement already prepared.
import type { CompiledQuery, Compilable, Kysely } from 'kysely';
import type { Database } from './schema.js';

/** SQL text -> statement name, read by the `pg` client of db/index.ts. */
export const preparedStatements = new Map<string, string>();

/** Placeholder values, recognised by identity in the compiled parameter list. */
class Slot {
  constructor(readonly index: number) {}
}

export function compiledOnce<P extends unknown[], R>(build: (db: Kysely<Database>, ...params: P) => Compilable<R>) {
  const cache = new WeakMap<Kysely<Database>, CompiledQuery<R>>();
  return async (db: Kysely<Database>, ...params: P): Promise<R[]> => {
    let compiled = cache.get(db);
    if (!compiled) {
      const slots = params.map((_, i) => new Slot(i)) as unknown as P;
      compiled = build(db, ...slots).compile();
      cache.set(db, compiled);
      if (!preparedStatements.has(compiled.sql))
        preparedStatements.set(compiled.sql, `hot_${preparedStatements.size + 1}`);
    }
    const parameters = compiled.parameters.map((p) => (p instanceof Slot ? params[p.index] : p));
    const result = await db.executeQuery<R>({ ...compiled, parameters });
    return result.rows;
  };
}
