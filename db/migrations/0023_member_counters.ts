// The members of a workspace counted in list_counters (scope `workspace_members`, one per workspace), as
// 0013 and 0014 count the other lists that grow: statement-level triggers with transition tables keep `n`
// (the exact size) and `changes` (rows ever inserted or deleted, which only grows) in the same transaction
// as the rows, for every insert and delete path (cascades included), spread over 16 shards by backend pid.
// /scim/v2/Users reads its totalResults from `n`, and trusts a deep page's remembered start while
// `changes` has not moved (routers/scim/paging.ts).
import { sql, type Kysely } from 'kysely';

const SCOPE = 'workspace_members';
const OPS = [
  { op: 'ins', event: 'insert', rows: 'list_counter_rows_new', referencing: 'new table', sign: 1 },
  { op: 'del', event: 'delete', rows: 'list_counter_rows_old', referencing: 'old table', sign: -1 },
] as const;
const functionName = (op: string) => `list_counters_workspace_members_${op}`;
const triggerName = (op: string) => `workspace_members_list_count_${op}`;

export async function up(db: Kysely<any>): Promise<void> {
  for (const { op, event, rows, referencing, sign } of OPS) {
    await sql`create function ${sql.id(functionName(op))}() returns trigger language plpgsql as ${sql.lit(`
      begin
        insert into list_counters (scope, scope_id, shard, n, changes)
          select '${SCOPE}', workspace_id::text, (pg_backend_pid() % 16)::smallint, ${sign} * count(*), count(*)
          from ${rows} group by workspace_id
        on conflict (scope, scope_id, shard)
          do update set n = list_counters.n + excluded.n, changes = list_counters.changes + excluded.changes;
        return null;
      end`)}`.execute(db);
    await sql`create trigger ${sql.id(triggerName(op))} after ${sql.raw(event)} on workspace_members
      referencing ${sql.raw(referencing)} as ${sql.id(rows)} for each statement
      execute function ${sql.id(functionName(op))}()`.execute(db);
  }
  // The rows already there, counted after the triggers exist (creating a trigger holds off writers until
  // this transaction commits, so nothing is counted twice or missed).
  await sql`insert into list_counters (scope, scope_id, shard, n)
    select ${SCOPE}, workspace_id::text, 0, count(*) from workspace_members group by workspace_id
    on conflict (scope, scope_id, shard) do update set n = list_counters.n + excluded.n`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const { op } of OPS) {
    await sql`drop trigger if exists ${sql.id(triggerName(op))} on workspace_members`.execute(db);
    await sql`drop function if exists ${sql.id(functionName(op))}()`.execute(db);
  }
  await sql`delete from list_counters where scope = ${SCOPE}`.execute(db);
}
