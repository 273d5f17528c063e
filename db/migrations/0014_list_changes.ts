// Deep pages without the walk (server/platform/pagination.ts, "page anchors"): list_counters also counts the
// rows every statement inserts or deletes in a scope, `changes`, which only ever grows. A page's first row
// found by walking the offset stays that page's first row exactly as long as the scope's `changes` has not
// moved, so the next read of the page can start from it. The trigger functions of 0013 are replaced by the
// same ones with `changes` added; the existing counters start at 0.
import { sql, type Kysely } from 'kysely';
import { OPS, TABLES, countsOf, functionName } from './0013_list_scale.js';

async function replaceFunctions(db: Kysely<any>, withChanges: boolean) {
  for (const table of TABLES) {
    for (const { op, rows, sign } of OPS) {
      const counts = countsOf(table, rows, sign);
      const body = withChanges
        ? `insert into list_counters (scope, scope_id, shard, n, changes)
            select scope, scope_id, shard, n, abs(n) from (${counts}) as counted (scope, scope_id, shard, n)
          on conflict (scope, scope_id, shard)
            do update set n = list_counters.n + excluded.n, changes = list_counters.changes + excluded.changes;`
        : `insert into list_counters (scope, scope_id, shard, n)
            ${counts}
          on conflict (scope, scope_id, shard) do update set n = list_counters.n + excluded.n;`;
      await sql`create or replace function ${sql.id(functionName(table, op))}() returns trigger language plpgsql as ${sql.lit(`
        begin
          ${body}
          return null;
        end`)}`.execute(db);
    }
  }
}

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table list_counters add column changes bigint not null default 0`.execute(db);
  await replaceFunctions(db, true);
}

export async function down(db: Kysely<any>): Promise<void> {
  await replaceFunctions(db, false);
  await sql`alter table list_counters drop column changes`.execute(db);
}
