// Lists whose cost does not grow with their table (docs/api.md, "Pagination"; server/platform/pagination.ts).
// - list_counters holds the exact size of every list that grows with use, per scope (the platform: '', or a
//   workspace id). Statement-level triggers with transition tables keep it in the same transaction as the
//   rows, for every insert and delete path (cascades included): one upsert per scope a statement touches,
//   however many rows it writes. Each counter is spread over 16 shards chosen by the connection's backend pid, so busy
//   writers of one list do not queue on a single row; the total is the sum of the shards.
// - Indexes that end with (created_at, id), the lists' order, behind each list's scope and filters.
import { sql, type Kysely } from 'kysely';

/** What is counted: a scope name, the column of the scope's id ('' for the platform), a row condition. */
const COUNTERS: Array<{ table: string; scope: string; idColumn: string; where: string }> = [
  { table: 'users', scope: 'users', idColumn: '', where: 'true' },
  { table: 'workspaces', scope: 'workspaces', idColumn: '', where: 'true' },
  { table: 'audit_logs', scope: 'audit_logs', idColumn: '', where: 'true' },
  { table: 'audit_logs', scope: 'audit_logs.workspace', idColumn: 'workspace_id', where: 'workspace_id is not null' },
  { table: 'ai_generations', scope: 'ai_generations', idColumn: 'workspace_id', where: 'not is_sample' },
  { table: 'ai_generations', scope: 'ai_generations.sample', idColumn: 'workspace_id', where: 'is_sample' },
  { table: 'payments', scope: 'payments', idColumn: 'workspace_id', where: 'true' },
  { table: 'webhook_deliveries', scope: 'webhook_deliveries', idColumn: 'workspace_id', where: 'true' },
  { table: 'contact_messages', scope: 'contact_messages', idColumn: '', where: 'true' },
  { table: 'support_tickets', scope: 'support_tickets', idColumn: '', where: 'true' },
  { table: 'email_logs', scope: 'email_logs', idColumn: '', where: 'true' },
  { table: 'analytics_events', scope: 'analytics_events', idColumn: '', where: 'true' },
];

/** [name, table, columns, partial-index condition]: the lists' order behind their scope and filters. */
const INDEXES: Array<[string, string, string, string?]> = [
  ['ai_generations_history_idx', 'ai_generations', 'workspace_id, created_at, id', 'not is_sample'],
  ['audit_logs_workspace_list_idx', 'audit_logs', 'workspace_id, created_at, id'],
  ['audit_logs_actor_list_idx', 'audit_logs', 'actor_user_id, created_at, id'],
  ['audit_logs_action_list_idx', 'audit_logs', 'action, created_at, id'],
  ['users_status_list_idx', 'users', 'status, created_at, id'],
  ['users_role_list_idx', 'users', 'platform_role, created_at, id'],
  ['workspaces_status_list_idx', 'workspaces', 'status, created_at, id'],
  ['webhook_deliveries_webhook_list_idx', 'webhook_deliveries', 'workspace_id, webhook_id, created_at, id'],
  ['webhook_deliveries_status_list_idx', 'webhook_deliveries', 'workspace_id, status, created_at, id'],
  ['email_logs_list_idx', 'email_logs', 'created_at, id'],
  ['email_logs_to_list_idx', 'email_logs', '"to", created_at, id'],
  ['analytics_events_list_idx', 'analytics_events', 'created_at, id'],
  ['analytics_events_name_list_idx', 'analytics_events', 'name, created_at, id'],
];

/** Indexes the new ones make redundant (the same columns without the id tiebreak): [name, table, columns]. */
const REPLACED: Array<[string, string, string]> = [
  ['audit_logs_workspace_idx', 'audit_logs', 'workspace_id, created_at'],
  ['audit_logs_actor_idx', 'audit_logs', 'actor_user_id, created_at'],
  ['audit_logs_action_idx', 'audit_logs', 'action, created_at'],
  ['email_logs_created_idx', 'email_logs', 'created_at'],
  ['email_logs_to_idx', 'email_logs', '"to", created_at'],
  ['analytics_events_created_idx', 'analytics_events', 'created_at'],
  ['analytics_events_name_idx', 'analytics_events', 'name, created_at'],
];

export const TABLES = [...new Set(COUNTERS.map((c) => c.table))];
export const OPS = [
  { op: 'ins', event: 'insert', rows: 'list_counter_rows_new', referencing: 'new table', sign: 1 },
  { op: 'del', event: 'delete', rows: 'list_counter_rows_old', referencing: 'old table', sign: -1 },
] as const;
export const functionName = (table: string, op: string) => `list_counters_${table}_${op}`;

/** One row per scope (and scope id) of the statement's rows, with their count; none for a scope not touched. */
export function countsOf(table: string, rows: string, sign: number) {
  const selects = COUNTERS.filter((c) => c.table === table).map((c) => {
    const id = c.idColumn ? `${c.idColumn}::text` : `''`;
    const groupBy = c.idColumn ? `group by ${c.idColumn}` : '';
    return `select '${c.scope}', ${id}, (pg_backend_pid() % 16)::smallint, ${sign} * count(*) from ${rows} where ${c.where} ${groupBy} having count(*) > 0`;
  });
  return selects.join('\n        union all ');
}

export async function up(db: Kysely<any>): Promise<void> {
  await sql`create table list_counters (
    scope text not null,
    scope_id text not null default '',
    shard smallint not null default 0,
    n bigint not null default 0,
    primary key (scope, scope_id, shard)
  )`.execute(db);

  // One function per table and event, with static SQL (planned once per connection): a statement's rows
  // are counted from its transition table, one upsert per scope it touched.
  for (const table of TABLES) {
    for (const { op, event, rows, referencing, sign } of OPS) {
      await sql`create function ${sql.id(functionName(table, op))}() returns trigger language plpgsql as ${sql.lit(`
        begin
          insert into list_counters (scope, scope_id, shard, n)
            ${countsOf(table, rows, sign)}
          on conflict (scope, scope_id, shard) do update set n = list_counters.n + excluded.n;
          return null;
        end`)}`.execute(db);
      await sql`create trigger ${sql.id(`${table}_list_count_${op}`)} after ${sql.raw(event)} on ${sql.table(table)}
        referencing ${sql.raw(referencing)} as ${sql.id(rows)} for each statement
        execute function ${sql.id(functionName(table, op))}()`.execute(db);
    }
  }
  // The rows already there, counted after the triggers exist (creating a trigger holds off writers until
  // this transaction commits, so nothing is counted twice or missed).
  for (const c of COUNTERS) {
    const scopeId = c.idColumn ? sql`${sql.ref(c.idColumn)}::text` : sql.lit('');
    const groupBy = c.idColumn ? sql`group by ${sql.ref(c.idColumn)}` : sql``;
    await sql`insert into list_counters (scope, scope_id, shard, n)
      select ${sql.lit(c.scope)}, ${scopeId}, 0, count(*) from ${sql.table(c.table)}
      where ${sql.raw(c.where)} ${groupBy} having count(*) > 0`.execute(db);
  }

  for (const [name, table, columns, where] of INDEXES)
    await sql`create index ${sql.id(name)} on ${sql.table(table)} (${sql.raw(columns)})${
      where ? sql` where ${sql.raw(where)}` : sql``
    }`.execute(db);
  for (const [name] of REPLACED) await sql`drop index if exists ${sql.id(name)}`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const [name, table, columns] of REPLACED)
    await sql`create index if not exists ${sql.id(name)} on ${sql.table(table)} (${sql.raw(columns)})`.execute(db);
  for (const [name] of INDEXES) await sql`drop index if exists ${sql.id(name)}`.execute(db);
  for (const table of TABLES)
    for (const { op } of OPS) {
      await sql`drop trigger if exists ${sql.id(`${table}_list_count_${op}`)} on ${sql.table(table)}`.execute(db);
      await sql`drop function if exists ${sql.id(functionName(table, op))}()`.execute(db);
    }
  await sql`drop table if exists list_counters`.execute(db);
}
