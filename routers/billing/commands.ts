// What writes to the billing outbox besides the membership trigger: overage generations of metered plans
// (meter events; the generation id is the identifier, so a generation is metered once) and seat syncs
// asked for when a subscription goes live. outbox.ts sends them. Kept apart from outbox.ts so that the AI
// domain and the provider events can write commands without importing what sends them.
import { sql, type Kysely } from 'kysely';
import { batched } from '../../db/batched.js';
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

export interface Overage {
  workspaceId: string;
  generationId: string;
  /** The month of the AI counters (YYYY-MM-01). */
  period: string;
}

/** Records overage generations, many requests' in one statement. */
export const recordOverage = batched<Overage, void>(async (db, inputs) => {
  await sql`insert into billing_commands (workspace_id, kind, identifier, period)
    select o.workspace_id, 'METER_EVENT', o.generation_id::text, o.period
    from jsonb_to_recordset(${JSON.stringify(
      inputs.map((i) => ({ workspace_id: i.workspaceId, generation_id: i.generationId, period: i.period })),
    )}::jsonb) as o(workspace_id uuid, generation_id uuid, period text)
    on conflict (identifier) where kind = 'METER_EVENT' do nothing`.execute(db);
  return inputs.map(() => undefined);
});
