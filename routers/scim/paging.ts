// Unfiltered pages of /scim/v2/Users by startIndex (RFC 7644 3.4.2.4), at a cost that does not grow with
// the workspace or the depth of the page. The order is (created_at, id), on workspace_members_scim_page_idx.
// - totalResults is the workspace's `workspace_members` counter of list_counters (db/migrations/0023), exact
//   and kept by triggers in the rows' own transaction: no count of the members.
// - A deep page is not found by walking its offset from the first member. Each process keeps, per
//   workspace, the (created_at, id) of every STRIDE-th member (1, STRIDE + 1, ...), read in one pass, with
//   the counter's `changes` (rows ever inserted or deleted) of that pass's snapshot: the version. A page
//   starts at the mark before it and walks fewer than STRIDE entries from there; the statement itself
//   checks that the version is still the same in its own snapshot, and walks from the first member
//   otherwise (a `union all` of the two walks, each gated on the version, so exactly one of them runs).
//   So a page is always exact in the statement's snapshot, the marks are only ever a shortcut, and a page
//   has no duplicates within itself.
// - Marks are read again when a page finds them behind the version, one pass at a time per workspace and
//   at most once per REBUILD_INTERVAL_MS, so a directory writing while it reads costs one index pass a
//   second at most, and its pages walk (as exactly as ever) until the writes stop. A deep page asked while
//   a pass runs, or while the process has no marks of the workspace, waits for the pass (about 100 ms at
//   100,000 members), which costs less than the walks of the deep pages asked meanwhile.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { batchedSelect } from '../../db/batched.js';
import { mapPerOwner, remember } from '../../server/platform/bounded-cache.js';

/** Members between two marks: the longest walk of a page whose marks are current. */
export const STRIDE = 256;
/** Workspaces whose marks a process keeps (the most recently built). */
const MAX_WORKSPACES = 1_000;
/** The shortest time between two passes over one workspace's members. */
const REBUILD_INTERVAL_MS = 1_000;

/** The list_counters scope of a workspace's members. */
export const MEMBER_SCOPE = 'workspace_members';

interface Marks {
  version: string;
  /** keys[i]: created_at (text, to the microsecond) and id of the member at position i × STRIDE + 1. */
  keys: Array<{ at: string; id: string }>;
}

const marksOf = mapPerOwner<Kysely<Database>, string, Marks>();
interface Pass {
  startedAt: number;
  /** Set while the pass runs. */
  running?: Promise<void>;
}
const passesOf = mapPerOwner<Kysely<Database>, string, Pass>();

/** created_at as fixed-width text (UTC, microseconds): sorts as time does, and keeps what a Date drops. */
const AT = (column: string) =>
  sql<string>`to_char(${sql.ref(column)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/**
 * A timestamp as a User's `meta` has it: text from Postgres (UTC, milliseconds, as Date#toISOString writes
 * it; both truncate the microseconds), so a page decodes and formats no Date.
 */
export const isoMs = (column: string) =>
  sql<string>`to_char(${sql.ref(column)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

const counters = (workspaceId: string) =>
  sql`(select coalesce(sum(n), 0)::text as total, coalesce(sum(changes), 0)::text as version
       from list_counters where scope = ${MEMBER_SCOPE} and scope_id = ${workspaceId})`;

/**
 * The Groups a member is in (a User's read-only `groups`, RFC 7643 4.1.2): JSON of {id, name}, in no order.
 * Looked for only when the workspace has a Group at all (one probe of its groups' index per statement,
 * where a lookup per member would cost a page of 100 more than its members do); each group's name by its
 * primary key, so the plan never depends on the groups table's statistics.
 */
export const groupsOf = (memberId: string, workspaceId: string) =>
  sql<Array<{ id: string; name: string }>>`case when exists (
      select 1 from scim_groups wg where wg.workspace_id = ${workspaceId}::uuid)
    then coalesce((
      select json_agg(json_build_object('id', gm.group_id,
        'name', (select g.display_name from scim_groups g where g.id = gm.group_id)))
      from scim_group_members gm
      where gm.member_id = ${sql.ref(memberId)}), '[]'::json)
    else '[]'::json end`;

/** What a User of a page is made of (toScimUser), and no more. */
export interface MemberPageRow {
  id: string | null;
  status: 'ACTIVE' | 'SUSPENDED';
  external_id: string | null;
  given_name: string | null;
  family_name: string | null;
  created: string;
  last_modified: string;
  email: string;
  name: string;
  groups: Array<{ id: string; name: string }>;
  list_at: string;
  total: string;
  version: string;
}

/**
 * One page: `count` members from position `startIndex` (1-based), in order, with the exact total and the
 * version of the same snapshot. Batched with the pages of concurrent requests (db/batched.ts).
 */
export async function memberPage(db: Kysely<Database>, workspaceId: string, startIndex: number, count: number) {
  if (startIndex > STRIDE) {
    // A pass under way brings marks of a newer version; without marks, one pass (an index scan) costs less
    // than the walks of the deep pages asked meanwhile, and serves them all.
    const pass = passesOf(db).get(workspaceId);
    if (pass?.running) await pass.running;
    else if (!marksOf(db).has(workspaceId)) await markAgain(db, workspaceId);
  }
  const marks = marksOf(db).get(workspaceId);
  const slot = marks ? Math.min(Math.floor((startIndex - 1) / STRIDE), marks.keys.length - 1) : -1;
  const mark = slot >= 0 ? marks!.keys[slot] : { at: '-infinity', id: '00000000-0000-0000-0000-000000000000' };
  // No marks: a version no counter has, so the statement walks from the first member.
  const markVersion = slot >= 0 ? marks!.version : 'none';
  const fromMark = slot >= 0 ? startIndex - 1 - slot * STRIDE : 0;
  const query = sql<MemberPageRow>`
    select p.*, c.total, c.version from ${counters(workspaceId)} as c
    left join lateral (
      select m.id, m.status, m.external_id, m.given_name, m.family_name, ${isoMs('m.created_at')} as created,
        ${isoMs('m.updated_at')} as last_modified, u.email, u.name, ${groupsOf('m.id', workspaceId)} as groups,
        ${AT('m.created_at')} as list_at
      from workspace_members m
      join users u on u.id = m.user_id
      where m.workspace_id = ${workspaceId}::uuid
        and (m.created_at, m.id) >= (
          select s.at, s.id from (
            (select w.created_at as at, w.id from workspace_members w
              where c.version = ${markVersion} and w.workspace_id = ${workspaceId}::uuid
                and (w.created_at, w.id) >= (${mark.at}::timestamptz, ${mark.id}::uuid)
              order by w.created_at, w.id offset ${fromMark}::bigint limit 1)
            union all
            (select w.created_at, w.id from workspace_members w
              where c.version <> ${markVersion} and w.workspace_id = ${workspaceId}::uuid
              order by w.created_at, w.id offset ${startIndex - 1}::bigint limit 1)
          ) as s limit 1)
      order by m.created_at, m.id
      limit ${count}::bigint
    ) as p on true`;
  const rows = await batchedSelect(db, query.compile(db));
  const [first] = rows;
  const total = Number(first.total);
  // A batch's statement does not keep each select's order: sorted again, as the page was cut.
  const page = rows
    .filter((r): r is MemberPageRow & { id: string } => r.id !== null)
    .sort((x, y) => (x.list_at < y.list_at ? -1 : x.list_at > y.list_at ? 1 : x.id < y.id ? -1 : 1));
  if (startIndex > STRIDE && marks?.version !== first.version) void markAgain(db, workspaceId);
  return { rows: page, total };
}

/**
 * Reads the workspace's marks again, unless a pass is under way (answered instead) or one started less than
 * REBUILD_INTERVAL_MS ago (then nothing). Never fails: without marks, pages walk.
 */
function markAgain(db: Kysely<Database>, workspaceId: string): Promise<void> {
  const passes = passesOf(db);
  const pass = passes.get(workspaceId);
  const now = Date.now();
  if (pass?.running) return pass.running;
  if (pass && now - pass.startedAt < REBUILD_INTERVAL_MS) return Promise.resolve();
  const state: Pass = { startedAt: now };
  state.running = readMarks(db, workspaceId)
    .then(
      (marks) => void remember(marksOf(db), workspaceId, marks, MAX_WORKSPACES),
      () => undefined,
    )
    .finally(() => (state.running = undefined));
  remember(passes, workspaceId, state, MAX_WORKSPACES);
  return state.running;
}

/** Every STRIDE-th member's position key, and the version, of one snapshot (one statement). */
export async function readMarks(db: Kysely<Database>, workspaceId: string): Promise<Marks> {
  const { rows } = await sql<{ version: string; at: string | null; id: string | null }>`
    select c.version, k.at, k.id from ${counters(workspaceId)} as c
    left join lateral (
      select ${AT('t.created_at')} as at, t.id::text as id from (
        select created_at, id, row_number() over (order by created_at, id) as rn
        from workspace_members where workspace_id = ${workspaceId}::uuid
      ) as t
      where (t.rn - 1) % ${STRIDE} = 0
      order by t.rn
    ) as k on true`.execute(db);
  return {
    version: rows[0].version,
    keys: rows.filter((r) => r.id !== null).map((r) => ({ at: r.at!, id: r.id! })),
  };
}

/** The version of the marks this process holds for a workspace, if any (the tests wait for it). */
export const marksVersion = (db: Kysely<Database>, workspaceId: string) => marksOf(db).get(workspaceId)?.version;
