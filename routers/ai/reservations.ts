// The monthly counters of AI generations and the statements that store generations: a reservation counts
// a generation against its counter only while it stays within the limit, and may store the generation too.
import { sql, type Kysely, type Selectable } from 'kysely';
import { batched, groupPositions } from '../../db/batched.js';
import type { AiGenerationsTable, Database } from '../../db/schema.js';
import { meterCommandsOfRows } from '../billing/commands.js';
import { eventsOfRows } from '../events/emit.js';

type Db = Kysely<Database>;

export type CounterTable = 'ai_usage_counters' | 'ai_user_usage_counters';

/** The column a counter table is keyed by, besides the period. */
const keyColumnOf = (table: CounterTable) => (table === 'ai_usage_counters' ? 'workspace_id' : 'user_id');

export type NewGeneration = Pick<
  Selectable<AiGenerationsTable>,
  | 'id'
  | 'workspace_id'
  | 'user_id'
  | 'template_id'
  | 'provider'
  | 'model'
  | 'prompt'
  | 'system_prompt'
  | 'temperature'
  | 'output'
  | 'status'
  | 'prompt_tokens'
  | 'completion_tokens'
  | 'duration_ms'
>;

/** What the database adds to a stored generation (the temperature as the real column holds it). */
export type Stored = Pick<Selectable<AiGenerationsTable>, 'id' | 'temperature' | 'created_at'>;

/**
 * A generation of a metered plan: past the plan's `included` generations of the month, each one is
 * overage, and its meter command (routers/billing/commands.ts) is written by the statement that stores it.
 */
export interface Metering {
  /** The month of the counter (YYYY-MM-01). */
  period: string;
  included: number;
}

interface Reservation {
  table: CounterTable;
  /** The workspace (ai_usage_counters) or the user (ai_user_usage_counters). */
  key: string;
  period: string;
  limit: number;
  /** A generation already made (by an in-process provider), stored by the statement that reserves. */
  generation?: NewGeneration;
  /** Set on a metered plan: the stored generation is metered when the count it gets is past `included`. */
  metering?: Metering;
}

/**
 * A generation as the storing statements take it: with, on a metered plan, the month of its meter command
 * (`meter_period`), written when it is overage. A reservation decides that from the count it grants
 * (`meter_included`, and the generation's `position`, from 1, among those it reserves together); a
 * generation stored after its reservation comes with `meter_period` only when it is overage.
 */
type ToStore = NewGeneration & { meter_period?: string; meter_included?: number; position?: number };

export interface Granted {
  /** The month's count including this generation. */
  used: number;
  /** Set when the reservation stored a generation. */
  stored?: Stored;
}

/**
 * The CTEs `generation`, which inserts succeeded generations (the rows travel as one JSON parameter, so the
 * statement's text is the same for any number of rows), `meter`, which writes the meter commands of the
 * overage ones, and `event`, their ai.generation.completed domain events. With `reserved` (how many the
 * CTE `reserved` counted), nothing is inserted unless that CTE answered a row, and a generation is overage
 * when its count, from the one `reserved` answered, is past its plan's included amount.
 *
 * A generation's event is written only when an active webhook of its workspace subscribes to
 * ai.generation.completed: one event per generation is most of the outbox's volume, and an event no
 * webhook wants would only be dispatched to nobody (a webhook created later does not get the events from
 * before it; docs/decisions.md, Developer platform).
 */
function insertGenerations(items: readonly ToStore[], reserved?: { n: number }) {
  return sql`input as (
      select * from jsonb_to_recordset(${JSON.stringify(items)}::jsonb) as g(id uuid, workspace_id uuid, user_id uuid,
        template_id uuid, provider text, model text, prompt text, system_prompt text, temperature real, output text,
        status text, prompt_tokens int, completion_tokens int, duration_ms int, meter_period text, meter_included int,
        position int)
    ), generation as (
      insert into ai_generations (id, workspace_id, user_id, template_id, provider, model, prompt, system_prompt, temperature, output,
        status, prompt_tokens, completion_tokens, duration_ms)
      select id, workspace_id, user_id, template_id, provider, model, prompt, system_prompt, temperature, output,
        status, prompt_tokens, completion_tokens, duration_ms
      from input
      ${reserved ? sql`where exists (select 1 from reserved)` : sql``}
      returning id, workspace_id, model, provider, prompt_tokens, completion_tokens, temperature, created_at
    ), meter as (${meterCommandsOfRows({
      workspaceId: sql`g.workspace_id`,
      generationId: sql`g.id`,
      period: sql`i.meter_period`,
      source: reserved
        ? sql`from generation g join input i on i.id = g.id, reserved r
            where i.meter_period is not null and r.generations - ${reserved.n}::int + i.position > i.meter_included`
        : sql`from generation g join input i on i.id = g.id where i.meter_period is not null`,
    })}), ${completedEvents()}`;
}

/** The CTE `event`: the ai.generation.completed events of the CTE `generation`'s rows (see above). */
const completedEvents = () =>
  sql`event as (${eventsOfRows('ai.generation.completed', {
    workspaceId: sql`g.workspace_id`,
    data: {
      generationId: sql`g.id`,
      model: sql`g.model`,
      provider: sql`g.provider`,
      totalTokens: sql`g.prompt_tokens + g.completion_tokens`,
    },
    source: sql`from generation g
        where exists (select 1 from webhooks h where h.workspace_id = g.workspace_id and h.is_active and h.events ? 'ai.generation.completed')`,
  })})`;

/** How a streamed generation ended, as stored; `meter_period` on a metered plan when it is overage (its
 * meter command is written if it SUCCEEDED). */
export type StreamedEnd = Pick<
  NewGeneration,
  'status' | 'output' | 'prompt_tokens' | 'completion_tokens' | 'duration_ms'
> & { error_code?: string; meter_period?: string };

/** A streamed generation as stored when its stream starts. */
export type RunningGeneration = Omit<
  NewGeneration,
  'output' | 'status' | 'prompt_tokens' | 'completion_tokens' | 'duration_ms'
>;

/** Stores streamed generations RUNNING, many requests' in one statement. */
export const insertRunning = batched<RunningGeneration, true>(async (db, inputs) => {
  await db
    .insertInto('ai_generations')
    .values(inputs.map((g) => ({ ...g, status: 'RUNNING' as const, heartbeat_at: sql<Date>`now()` })))
    .execute();
  return inputs.map(() => true as const);
});

/**
 * Closes RUNNING (streamed) generations in one statement (the rows travel as one JSON parameter), with the
 * ai.generation.completed event and, when overage, the meter command of each that SUCCEEDED. A generation
 * no longer RUNNING (the sweep closed it) is left as it is, and answered undefined.
 */
async function closeMany(db: Db, items: ReadonlyArray<StreamedEnd & { id: string }>) {
  const rows = JSON.stringify(items.map((i) => ({ ...i, error_code: i.error_code ?? null })));
  const { rows: closed } = await sql<Stored>`with ended as (
      select * from jsonb_to_recordset(${rows}::jsonb) as e(id uuid, status text, output text, prompt_tokens int,
        completion_tokens int, duration_ms int, error_code text, meter_period text)
    ), closed as (
      update ai_generations g set status = e.status, output = e.output, prompt_tokens = e.prompt_tokens,
        completion_tokens = e.completion_tokens, duration_ms = e.duration_ms, error_code = e.error_code,
        heartbeat_at = null
      from ended e where g.id = e.id and g.status = 'RUNNING'
      returning g.id, g.workspace_id, g.model, g.provider, g.prompt_tokens, g.completion_tokens, g.temperature,
        g.created_at, g.status
    ), generation as (select * from closed where status = 'SUCCEEDED'), meter as (${meterCommandsOfRows({
      workspaceId: sql`g.workspace_id`,
      generationId: sql`g.id`,
      period: sql`e.meter_period`,
      source: sql`from generation g join ended e on e.id = g.id where e.meter_period is not null`,
    })}), ${completedEvents()}
    select id, temperature, created_at from closed`.execute(db);
  return closed;
}

/** Closes a RUNNING (streamed) generation, batched with other requests' (see closeMany). */
const closeOne = batched<StreamedEnd & { id: string }, Stored | undefined>(async (db, inputs) => {
  const closed = new Map((await closeMany(db, inputs)).map((row) => [row.id, row]));
  return inputs.map((i) => closed.get(i.id));
});

export const closeStreamed = (db: Db, id: string, end: StreamedEnd) => closeOne(db, { ...end, id });

/**
 * Closes the streamed generations whose API process stopped renewing their heartbeat (it died
 * mid-stream) before `staleBefore`: FAILED (INTERRUPTED), and uncounted as failures are. Answers how many.
 */
export async function closeAbandoned(db: Db, staleBefore: Date): Promise<number> {
  const { rows } = await sql<{ closed: number }>`
    with closed as (
      update ai_generations set status = 'FAILED', error_code = 'INTERRUPTED', heartbeat_at = null,
        duration_ms = greatest(0, (extract(epoch from (now() - created_at)) * 1000)::int)
      where id in (select id from ai_generations where status = 'RUNNING' and heartbeat_at < ${staleBefore}
        order by heartbeat_at limit 500 for update skip locked)
      returning workspace_id, user_id, created_at
    ), per_workspace as (
      select workspace_id, to_char(date_trunc('month', created_at at time zone 'UTC'), 'YYYY-MM-DD') as period,
        count(*)::int as n
      from closed group by 1, 2
    ), released as (
      update ai_usage_counters c set generations = greatest(c.generations - p.n, 0)
      from per_workspace p where c.workspace_id = p.workspace_id and c.period = p.period::date
      returning 1
    )
    select count(*)::int as closed from closed`.execute(db);
  return rows[0]?.closed ?? 0;
}

/**
 * Counts `members.length` generations against a monthly counter if all of them stay within the limit,
 * in one statement: the conditional upsert takes the row lock, so concurrent statements see each other's
 * counts. The generations some members bring are stored by the same statement, only when the count is
 * granted. Answers the count including them (and what was stored), or undefined when they do not all fit
 * (then nothing is counted or stored).
 */
async function reserveMany(
  db: Db,
  r: Reservation,
  members: readonly Reservation[],
): Promise<{ used: number; stored: Map<string, Stored> } | undefined> {
  const n = members.length;
  const keyColumn = keyColumnOf(r.table);
  const upsert = sql`insert into ${sql.table(r.table)} (${sql.ref(keyColumn)}, period, generations) values (${r.key}, ${r.period}, ${n})
    on conflict (${sql.ref(keyColumn)}, period) do update set generations = ${sql.table(r.table)}.generations + ${n}
    where ${sql.table(r.table)}.generations + ${n} <= ${r.limit}
    returning generations`;
  const generations = members.flatMap(({ generation, metering }, j): ToStore[] =>
    generation
      ? [{ ...generation, meter_period: metering?.period, meter_included: metering?.included, position: j + 1 }]
      : [],
  );
  if (generations.length === 0) {
    const { rows } = await sql<{ generations: number }>`${upsert}`.execute(db);
    return rows[0] && { used: rows[0].generations, stored: new Map() };
  }
  const { rows } = await sql<Stored & { used: number }>`
    with reserved as (${upsert}), ${insertGenerations(generations, { n })}
    select g.id, g.temperature, g.created_at, r.generations as used from generation g, reserved r`.execute(db);
  return rows[0] && { used: rows[0].used, stored: new Map(rows.map(({ used: _, ...stored }) => [stored.id, stored])) };
}

/**
 * Reserves one generation per request against its counter, batched: the requests of a batch that count
 * against the same counter are reserved together by one statement when they all fit. When they do not
 * (the limit is near) or that statement fails, they are reserved one at a time, so exactly the room left
 * is granted (and a failure is only its own request's), and once one is refused the rest of the batch is
 * too (the counter is full). Each granted request gets its own count, as if they had come one after
 * another.
 */
const reserveOne = batched<Reservation, Granted | undefined>(async (db, inputs) => {
  // Refused unless granted below (DataLoader wants an answer in every position).
  const results: Array<Granted | undefined | Error> = inputs.map(() => undefined);
  const grant = (i: number, used: number, stored: Map<string, Stored>) => {
    const id = inputs[i].generation?.id;
    results[i] = id === undefined ? { used } : { used, stored: stored.get(id) };
  };
  await Promise.all(
    groupPositions(inputs, (r) => `${r.table}|${r.key}|${r.period}|${r.limit}`).map(async (positions) => {
      const r = inputs[positions[0]];
      const n = positions.length;
      const members = positions.map((i) => inputs[i]);
      if (r.limit <= 0) return; // nothing fits: all refused
      const together = n > r.limit ? undefined : await reserveMany(db, r, members).catch((err: Error) => err);
      if (together && !(together instanceof Error)) {
        positions.forEach((i, j) => grant(i, together.used - n + 1 + j, together.stored));
        return;
      }
      if (n === 1) {
        results[positions[0]] = together;
        return;
      }
      let full = false;
      for (const i of positions) {
        if (full) continue;
        const one = await reserveMany(db, r, [inputs[i]]).catch((err: Error) => err);
        if (one instanceof Error) results[i] = one;
        else if (one) grant(i, one.used, one.stored);
        else full = true;
      }
    }),
  );
  return results;
});

/** Counts one generation against a monthly counter if it stays within `limit` (storing `generation` with
 * it when given): the count including it, or undefined when the limit is reached. */
export function reserve(
  db: Db,
  table: CounterTable,
  key: string,
  period: string,
  limit: number,
  generation?: NewGeneration,
  metering?: Metering,
) {
  return reserveOne(db, { table, key, period, limit, generation, metering });
}

export async function release(db: Db, table: CounterTable, key: string, period: string) {
  await sql`update ${sql.table(table)} set generations = greatest(generations - 1, 0)
    where ${sql.ref(keyColumnOf(table))} = ${key} and period = ${period}`.execute(db);
}

/**
 * Stores succeeded generations in one statement (atomic without a transaction's extra round trips): the
 * generations, the meter commands of the overage ones and their domain events. Token totals are summed from the generations when read, so this
 * statement does not touch the month's counter row, whose lock the reservations of other requests are
 * waiting for.
 */
async function storeSucceeded(db: Db, items: readonly ToStore[]) {
  const { rows } =
    await sql<Stored>`with ${insertGenerations(items)} select id, temperature, created_at from generation`.execute(db);
  return rows;
}

/** storeSucceeded for many requests at once (`meter_period` given when the generation is overage, its
 * meter command written with it). If the batch's statement fails, each is stored on its own, so only a
 * generation that cannot be stored fails its request. */
export const recordSucceeded = batched<NewGeneration & { meter_period?: string }, Stored>(async (db, inputs) => {
  try {
    const rows = new Map((await storeSucceeded(db, inputs)).map((row) => [row.id, row]));
    return inputs.map((i) => rows.get(i.id) ?? new Error('the generation was not stored'));
  } catch (err) {
    if (inputs.length === 1) return [err as Error];
    return Promise.all(
      inputs.map((i) =>
        storeSucceeded(db, [i]).then(
          ([row]) => row,
          (e: Error) => e,
        ),
      ),
    );
  }
});
