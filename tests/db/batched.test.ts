// db/batched.ts against the run's real Postgres: lookups that arrive together share one query, every
// answer comes from a query sent after the lookup was asked for, and the app's authentication built on it
// still answers each caller with their own account and sees a suspension at once.
import { Kysely, PostgresDialect, sql, type CompiledQuery } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchedLookup, batchedSelect } from '../../db/batched.js';
import type { Database } from '../../db/schema.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, registerAndLogin, type Session } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';

let app: TestApp;
const table = `batched_${Date.now().toString(36)}`;

beforeAll(async () => {
  app = await startTestApp();
  await sql`create table ${sql.table(table)} (k text primary key, v int not null)`.execute(app.deps.db);
  await sql`insert into ${sql.table(table)} select 'k' || i, i from generate_series(1, 50) as i`.execute(app.deps.db);
});
afterAll(async () => {
  await sql`drop table if exists ${sql.table(table)}`.execute(app.deps.db);
  await app.close();
});

type Row = { k: string; v: number };

/**
 * A lookup over the test table that records the keys of every query it runs. The queries numbered in
 * `held` (1 for the first) read their rows, then hold their answer until the test calls `release(n)`: a
 * slow query, as long as the test needs and no longer. `read` counts the queries that have read.
 */
function lookupWithLog(opts: { held?: number[]; fail?: boolean; inFlight?: number } = {}) {
  const queries: string[][] = [];
  const gates = new Map(
    (opts.held ?? []).map((n) => {
      let open!: () => void;
      const closed = new Promise<void>((resolve) => (open = resolve));
      return [n, { closed, open }] as const;
    }),
  );
  let read = 0;
  const lookup = batchedLookup<string, Row>(
    async (db, keys) => {
      const call = queries.push(keys);
      if (opts.fail) throw new Error('the database went away');
      const { rows } = await sql<Row>`select k, v from ${sql.table(table)} where k = any(${keys})`.execute(db);
      read++;
      await gates.get(call)?.closed;
      return rows;
    },
    (row) => row.k,
    { inFlight: opts.inFlight },
  );
  const release = (call: number) => gates.get(call)!.open();
  return { lookup, queries, release, read: () => read };
}

/** The end of the current event-loop turn (a batch is sent at the end of the turn it was asked in). */
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/** Asks for keys k<from> to k<to>, each in an event-loop turn of its own; answers the lookups. */
async function askedOneByOne(
  lookup: (db: TestApp['deps']['db'], key: string) => Promise<Row | undefined>,
  from: number,
  to: number,
) {
  const asked: Promise<Row | undefined>[] = [];
  for (let i = from; i <= to; i++) {
    asked.push(lookup(app.deps.db, `k${i}`));
    await nextTurn();
  }
  return asked;
}

describe('batchedLookup', () => {
  it('answers lookups asked for together with one query, each with its own row', async () => {
    const { lookup, queries } = lookupWithLog();
    const keys = Array.from({ length: 30 }, (_, i) => `k${i + 1}`);
    const rows = await Promise.all(keys.map((k) => lookup(app.deps.db, k)));
    expect(rows.map((r) => r?.v)).toEqual(keys.map((_, i) => i + 1));
    expect(queries).toHaveLength(1);
    expect(queries[0]).toHaveLength(30);
  });

  it('asks for a key once per query however many requests want it, and answers all of them', async () => {
    const { lookup, queries } = lookupWithLog();
    const rows = await Promise.all(Array.from({ length: 20 }, () => lookup(app.deps.db, 'k7')));
    expect(rows.every((r) => r?.v === 7)).toBe(true);
    expect(queries).toEqual([['k7']]);
  });

  it('answers undefined for a key without a row, without failing the others of its batch', async () => {
    const { lookup } = lookupWithLog();
    const [missing, present] = await Promise.all([lookup(app.deps.db, 'nope'), lookup(app.deps.db, 'k2')]);
    expect(missing).toBeUndefined();
    expect(present?.v).toBe(2);
  });

  it('never answers from a query sent before the lookup was asked for', async () => {
    // The first query reads the old value, then holds its answer. A change committed meanwhile must be seen
    // by a lookup asked for after the commit, although a query for the same key is in flight.
    const { lookup, queries, release, read } = lookupWithLog({ held: [1] });
    const early = lookup(app.deps.db, 'k10');
    await waitFor(() => read() === 1, { message: 'the first query to read k10' });
    await sql`update ${sql.table(table)} set v = 1000 where k = 'k10'`.execute(app.deps.db);
    const asked = lookup(app.deps.db, 'k10');
    // A query of its own, sent while the first still holds its answer.
    await waitFor(() => queries.length === 2, { message: 'a second query for the later lookup' });
    const late = await asked;
    expect(late?.v).toBe(1000);
    release(1);
    expect((await early)?.v).toBe(10);
    expect(queries).toEqual([['k10'], ['k10']]);
  });

  it('lets lookups that arrive while queries are running wait and go together in the next query', async () => {
    // Two slow queries fill the running slots; the lookups asked for meanwhile, over several event-loop
    // turns, share the third query.
    const { lookup, queries, release } = lookupWithLog({ held: [1, 2] });
    const first = lookup(app.deps.db, 'k1');
    await waitFor(() => queries.length === 1, { message: 'the first query to be sent' });
    const second = lookup(app.deps.db, 'k2');
    await waitFor(() => queries.length === 2, { message: 'the second query to be sent' });
    const later = await askedOneByOne(lookup, 3, 12);
    release(1);
    release(2);
    const rows = await Promise.all([first, second, ...later]);
    expect(rows.map((r) => r?.k)).toEqual(Array.from({ length: 12 }, (_, i) => `k${i + 1}`));
    expect(queries).toEqual([['k1'], ['k2'], ['k3', 'k4', 'k5', 'k6', 'k7', 'k8', 'k9', 'k10', 'k11', 'k12']]);
  });

  it('with one query in flight (background work), lets every lookup that arrives while it runs go in the next', async () => {
    const { lookup, queries, release } = lookupWithLog({ held: [1], inFlight: 1 });
    const first = lookup(app.deps.db, 'k1');
    await waitFor(() => queries.length === 1, { message: 'the first query to be sent' });
    const later = await askedOneByOne(lookup, 2, 6);
    release(1);
    const rows = await Promise.all([first, ...later]);
    expect(rows.map((r) => r?.k)).toEqual(['k1', 'k2', 'k3', 'k4', 'k5', 'k6']);
    expect(queries).toEqual([['k1'], ['k2', 'k3', 'k4', 'k5', 'k6']]);
  });

  it('fails every lookup of a batch whose query fails, and the next batch runs', async () => {
    const failing = lookupWithLog({ fail: true });
    const results = await Promise.allSettled([failing.lookup(app.deps.db, 'k1'), failing.lookup(app.deps.db, 'k2')]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect((results[0] as PromiseRejectedResult).reason.message).toBe('the database went away');
    const { lookup } = lookupWithLog();
    expect((await lookup(app.deps.db, 'k3'))?.v).toBe(3);
  });
});

describe('batchedSelect', () => {
  /** A database of its own that records every statement it sends. */
  let logged: Kysely<Database>;
  const sent: CompiledQuery[] = [];
  beforeAll(() => {
    logged = new Kysely<Database>({
      dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: app.config.DATABASE_URL, max: 4 }) }),
      log: (event) => void (event.level === 'query' && sent.push(event.query)),
    });
  });
  afterAll(() => logged?.destroy());

  /** The rows of the test table from `from` to `to`, highest first (one shape, other values). */
  const range = (from: number, to: number) =>
    logged
      .selectFrom(sql.table(table).as('t'))
      .select([sql<string>`k`.as('k'), sql<number>`v`.as('v')])
      .where(sql`v`, '>=', from)
      .where(sql`v`, '<=', to)
      .orderBy(sql`v`, 'desc')
      .limit(5)
      .compile() as CompiledQuery<Row>;
  const values = (rows: Row[]) => rows.map((r) => r.v).sort((a, b) => b - a);
  const listStatements = () => sent.filter((q) => q.sql.startsWith('select') && q.sql.includes(table));

  it('answers selects of one shape asked together from one statement, each with its own rows', async () => {
    await batchedSelect(logged, range(1, 2)); // the shape's parameter types, asked of Postgres once
    sent.length = 0;
    const answers = await Promise.all(
      [range(1, 3), range(10, 50), range(40, 45), range(60, 70)].map((q) => batchedSelect(logged, q)),
    );
    expect(answers.map(values)).toEqual([[3, 2, 1], [50, 49, 48, 47, 46], [45, 44, 43, 42, 41], []]);
    expect(listStatements()).toHaveLength(1);
    expect(listStatements()[0].sql).toContain('cross join lateral');
  });

  it("answers each select's columns, plus the batch's own: batch_branch, its place in the batch", async () => {
    const [a, b] = await Promise.all([batchedSelect(logged, range(7, 7)), batchedSelect(logged, range(8, 8))]);
    expect(a).toEqual([{ k: 'k7', v: 7, batch_branch: '1' }]);
    expect(b).toEqual([{ k: 'k8', v: 8, batch_branch: '2' }]);
  });

  it('runs alone, and answers, a select whose parameter is an array', async () => {
    const anyOf = (keys: string[]) =>
      logged
        .selectFrom(sql.table(table).as('t'))
        .select([sql<string>`k`.as('k'), sql<number>`v`.as('v')])
        .where(sql`k`, '=', sql`any(${keys})`)
        .compile() as CompiledQuery<Row>;
    sent.length = 0;
    const [a, b] = await Promise.all([
      batchedSelect(logged, anyOf(['k1', 'k2'])),
      batchedSelect(logged, anyOf(['k3'])),
    ]);
    expect(values(a)).toEqual([2, 1]);
    expect(values(b)).toEqual([3]);
    expect(listStatements()).toHaveLength(2);
    expect(listStatements().some((q) => q.sql.includes('lateral'))).toBe(false);
  });

  it('when the batch fails, runs each select alone: the failing one gets its error, the others their rows', async () => {
    const ratio = (divisor: number) =>
      logged
        .selectFrom(sql.table(table).as('t'))
        .select([sql<string>`k`.as('k'), sql<number>`v / ${divisor}::int`.as('v')])
        .where(sql`v`, '=', 12)
        .compile() as CompiledQuery<Row>;
    await batchedSelect(logged, ratio(1));
    const results = await Promise.allSettled([2, 0, 3].map((d) => batchedSelect(logged, ratio(d))));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[0] as PromiseFulfilledResult<Row[]>).value).toEqual([{ k: 'k12', v: 6 }]);
    expect((results[1] as PromiseRejectedResult).reason.message).toMatch(/division by zero/);
    expect((results[2] as PromiseFulfilledResult<Row[]>).value).toEqual([{ k: 'k12', v: 4 }]);
  });
});

describe('authentication on batched lookups', () => {
  let sessions: Session[];
  beforeAll(async () => {
    sessions = await Promise.all(
      Array.from({ length: 8 }, (_, i) => registerAndLogin(app.api, { prefix: `batch${i}` })),
    );
  });

  it('answers each of many concurrent callers with their own account', async () => {
    const calls = sessions.flatMap((s) =>
      Array.from({ length: 5 }, () => ({ s, res: app.api('GET', '/auth/me', { token: s.accessToken }) })),
    );
    for (const { s, res } of calls) {
      const answer = await res;
      expect(answer.status).toBe(200);
      expect(answer.body.user.email).toBe(s.email);
    }
  });

  it('refuses a suspended user on the very next request while other requests keep the lookups busy', async () => {
    const [victim, ...others] = sessions;
    const busy = others.flatMap((s) =>
      Array.from({ length: 10 }, () => app.api('GET', '/auth/me', { token: s.accessToken })),
    );
    await app.deps.db.updateTable('users').set({ status: 'SUSPENDED' }).where('email', '=', victim.email).execute();
    expectError(await app.api('GET', '/auth/me', { token: victim.accessToken }), 403, 'USER_SUSPENDED');
    expect((await Promise.all(busy)).every((r) => r.status === 200)).toBe(true);
  });
});
