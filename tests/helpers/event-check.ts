// Every domain event the suite wrote, parsed against the catalogue (routers/events/catalog.ts): the
// compiler checks what services pass to emitEvent, this checks what reached the table, including the
// payloads that SQL builds (a generation's event). Run by the global teardown before the database goes.
import type { Kysely } from 'kysely';
import { EVENTS, isEventName } from '../../routers/events/catalog.js';

export interface EventProblem {
  type: string;
  problem: string;
}

/** The events whose name is not in the catalogue or whose payload does not parse (extra fields included). */
export async function eventsOutsideTheCatalogue(
  db: Kysely<any>,
  workspaceId?: string,
): Promise<{ checked: number; problems: EventProblem[] }> {
  let query = db.selectFrom('domain_events').select(['type', 'payload']).orderBy('created_at').orderBy('id');
  if (workspaceId) query = query.where('workspace_id', '=', workspaceId);
  const rows = await query.execute();
  const problems: EventProblem[] = [];
  for (const { type, payload } of rows as Array<{ type: string; payload: unknown }>) {
    if (!isEventName(type)) {
      problems.push({ type, problem: 'not in the catalogue' });
      continue;
    }
    const parsed = EVENTS[type].data.strict().safeParse(payload);
    if (!parsed.success) problems.push({ type, problem: parsed.error.message });
  }
  return { checked: rows.length, problems };
}
