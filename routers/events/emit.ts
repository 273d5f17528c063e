// The one way to write a domain event: into the `domain_events` outbox, in the transaction of the change it
// describes, so the event exists exactly when the change does. The webhook runner
// (routers/webhooks/runner.ts) turns events into deliveries afterwards. The name must be in the catalogue
// and the payload of its schema: both are checked by the compiler.
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { EventData, EventName } from './catalog.js';

/** The insert every event goes through; `rows` is a VALUES list or a SELECT of (workspace_id, type, payload). */
const insertEvents = (rows: RawBuilder<unknown>) =>
  sql`insert into domain_events (workspace_id, type, payload) ${rows}`;

/** Writes `event` of a workspace with its data, on `db` (the caller's transaction). */
export async function emitEvent<E extends EventName>(
  db: Kysely<Database>,
  workspaceId: string,
  event: E,
  data: EventData<E>,
): Promise<void> {
  await insertEvents(sql`values (${workspaceId}, ${event}, ${JSON.stringify(data)}::jsonb)`).execute(db);
}

/** A SQL expression for each field of an event's data (every field named, optional ones too). */
export type EventDataSql<E extends EventName> = { [K in keyof Required<EventData<E>>]: RawBuilder<unknown> };

/**
 * The statement that writes one `event` per row of a query, for callers that must stay a single statement
 * (a generation's CTE, routers/ai/reservations.ts): `source` is the `from ... where ...` of the rows,
 * `workspaceId` and each data field an expression over them.
 */
export function eventsOfRows<E extends EventName>(
  event: E,
  rows: { workspaceId: RawBuilder<unknown>; data: EventDataSql<E>; source: RawBuilder<unknown> },
): RawBuilder<unknown> {
  const fields = Object.entries(rows.data as Record<string, RawBuilder<unknown>>).map(
    ([key, value]) => sql`${sql.lit(key)}, ${value}`,
  );
  return insertEvents(
    sql`select ${rows.workspaceId}, ${sql.lit(event)}, jsonb_build_object(${sql.join(fields)}) ${rows.source}`,
  );
}
