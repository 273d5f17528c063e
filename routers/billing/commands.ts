// What writes to the billing outbox besides the membership trigger: overage generations of metered plans
// (meter events, written by the statement that stores the generation; the generation id is the
// identifier, so a generation is metered once) and seat syncs asked for when a subscription goes live.
// outbox.ts sends them. Kept apart from outbox.ts so that the AI domain and the provider events can write
// commands without importing what sends them.
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../../db/schema.js';

/**
 * Asks for a seat sync of the workspace (a subscription went live on a PER_SEAT plan); memberships ask
 * through their trigger. One pending request per workspace.
 */
export async function requestSeatSync(db: Kysely<Database>, workspaceId: string, period: string) {
  await db
    .insertInto('billing_commands')
    .values({ workspace_id: workspaceId, kind: 'SEAT_QUANTITY', identifier: workspaceId, period })
    .onConflict((oc) =>
      oc.column('workspace_id').where('kind', '=', 'SEAT_QUANTITY').where('acked_at', 'is', null).doNothing(),
    )
    .execute();
}

/**
 * The statement that writes the meter command of each overage generation of a query, for callers that
 * must stay a single statement (a generation's CTE, routers/ai/reservations.ts): `source` is the
 * `from ... where ...` of the rows, `workspaceId`, `generationId` and `period` (the month of the AI
 * counters, YYYY-MM-01) expressions over them. The generation id is the identifier, unique among meter
 * commands: a generation is metered once, whatever writes it again.
 */
export function meterCommandsOfRows(rows: {
  workspaceId: RawBuilder<unknown>;
  generationId: RawBuilder<unknown>;
  period: RawBuilder<unknown>;
  source: RawBuilder<unknown>;
}): RawBuilder<unknown> {
  return sql`insert into billing_commands (workspace_id, kind, identifier, period)
    select ${rows.workspaceId}, 'METER_EVENT', (${rows.generationId})::text, ${rows.period} ${rows.source}
    on conflict (identifier) where kind = 'METER_EVENT' do nothing`;
}
