// What a workspace uses of its plan, as GET /billing/current shows it and the outbox bills it: seats
// (active memberships) and the month's overage generations with how many the processor acknowledged.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';

type Db = Kysely<Database>;

/** Seats billed: the active members, and never fewer than the plan includes. */
export const billedSeats = (used: number, included: number) => Math.max(used, included);

/** Active memberships of a workspace (pending invitations are not members yet). */
export async function seatsUsed(db: Db, workspaceId: string): Promise<number> {
  const row = await db
    .selectFrom('workspace_members')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The month's overage of a workspace: metered generations, and those the processor acknowledged. */
export async function overageOf(db: Db, workspaceId: string, period: string) {
  const row = await db
    .selectFrom('billing_commands')
    .select([sql<string>`count(*)`.as('overage'), sql<string>`count(*) filter (where result = 'SENT')`.as('reported')])
    .where('workspace_id', '=', workspaceId)
    .where('kind', '=', 'METER_EVENT')
    .where('period', '=', period)
    .executeTakeFirstOrThrow();
  return { overage: Number(row.overage), reported: Number(row.reported) };
}
