// db/compiled.ts's prepared statements against the run's real Postgres: each execution is planned for its
// own values (db/index.ts sets plan_cache_mode), so a statement first run while its table was small does
// not keep a plan for a small table as the table grows.
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { compiledOnce } from '../../db/compiled.js';
import { createDb, type Db } from '../../db/index.js';

const table = `compiled_${Date.now().toString(36)}`;
let db: Db;

beforeAll(async () => {
  // One connection, so that the statement and the view of it are in the same session.
  db = await createDb({ DATABASE_URL: inject('databaseUrl'), DATABASE_POOL_MAX: 1, DATA_DIR: './data' });
  await sql`create table ${sql.table(table)} (k text primary key, v int not null)`.execute(db);
  await sql`insert into ${sql.table(table)} select 'k' || i, i from generate_series(1, 3) as i`.execute(db);
  await sql`analyze ${sql.table(table)}`.execute(db);
});
afterAll(async () => {
  await sql`drop table if exists ${sql.table(table)}`.execute(db);
  await db.destroy();
});

describe('compiledOnce statements', () => {
  it('are planned for each execution: no generic plan made while the table was small serves it once it has grown', async () => {
    // The test table is not in the schema's types.
    const lookup = compiledOnce((d, keys: string[]) =>
      (d as unknown as Kysely<any>)
        .selectFrom(table)
        .select('v')
        .where(sql<boolean>`k = any(${keys})`),
    );
    for (let i = 0; i < 8; i++) expect(await lookup(db, ['k1', 'k2'])).toHaveLength(2);
    await sql`insert into ${sql.table(table)} select 'k' || i, i from generate_series(4, 20000) as i`.execute(db);
    for (let i = 0; i < 4; i++) expect(await lookup(db, [`k${19_990 + i}`])).toEqual([{ v: 19_990 + i }]);

    const { rows } = await sql<{ generic_plans: string; custom_plans: string }>`
      select generic_plans, custom_plans from pg_prepared_statements where statement like ${`%${table}%`}`.execute(db);
    expect(rows).toHaveLength(1);
    expect(Number(rows[0].generic_plans)).toBe(0);
    expect(Number(rows[0].custom_plans)).toBe(12);
  });
});

describe('connections of the pool', () => {
  it('never JIT-compile a statement: a batched list page, estimated as costly, ran 20 times slower compiled', async () => {
    // The batch's estimate knows no parameter value; with JIT on, its cost crossed jit_above_cost.
    const { rows } = await sql<{ jit: string }>`select current_setting('jit') as jit`.execute(db);
    expect(rows[0].jit).toBe('off');
    // Planned, not run: an estimate far above jit_above_cost, which EXPLAIN would show with a JIT section.
    const plan = await sql<{ 'QUERY PLAN': string }>`explain
      select sum(v) from ${sql.table(table)} cross join generate_series(1, 2000000) as g`.execute(db);
    expect(plan.rows.map((r) => r['QUERY PLAN']).join('\n')).not.toMatch(/JIT/);
  });
});
