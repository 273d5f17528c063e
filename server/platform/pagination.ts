// The list conventions (docs/api.md, "Pagination"). Every list is { items }; the lists that grow with use
// are read with paginate() below, by page (page, limit) or by cursor (cursor, limit), in their fixed order
// (created_at desc, id desc), so that no page costs more than the first as the table grows:
// - a cursor is the position after the last row of a page (its created_at to the microsecond and its id),
//   signed with a key derived from a server secret, so a cursor the service did not issue is refused;
// - a page is an offset, which Postgres has to walk: page × limit is capped at MAX_PAGE_DEPTH;
// - an unfiltered total is read from list_counters (kept by triggers in the same transaction as the rows,
//   db/migrations/0013_list_scale.ts); a filtered one is counted up to TOTAL_CAP rows and no further.
import crypto from 'node:crypto';
import { sql, type InferResult, type Kysely, type SelectQueryBuilder } from 'kysely';
import { z } from 'zod';
import type { Database } from '../../db/schema.js';
import type { Config } from './config.js';
import { batchedSelect } from '../../db/batched.js';
import { mapPerOwner, remember } from './bounded-cache.js';
import { AppError } from './errors.js';

/** The deepest row a page may reach (page × limit); deeper rows are read with `cursor`. */
export const MAX_PAGE_DEPTH = 10_000;
/** A filtered total is counted up to this many rows, then reported as this with `totalCapped: true`. */
export const TOTAL_CAP = 10_000;
/** The longest cursor the service issues is about 120 characters. */
export const CURSOR_MAX_LENGTH = 256;

const DEPTH_MESSAGE = `page × limit may be at most ${MAX_PAGE_DEPTH.toLocaleString('en')}: to read further, use cursor (the nextCursor of each answer).`;

// ---------------------------------------------------------------- page-only lists (in memory: monitoring)

/** The last page anyone can ask for (a bound on `page`: deep pages are slow, and nobody reads them). */
export const MAX_PAGE = 100_000;

export const paginationInput = z.object({
  page: z.number().int().min(1).max(MAX_PAGE).default(1).meta({ description: 'Page number, from 1.' }),
  limit: z.number().int().min(1).max(100).default(20).meta({ description: 'Items per page, 1 to 100 (default 20).' }),
});

export type Pagination = z.infer<typeof paginationInput>;

/** A page of `item`s; named `<Item>Page` in /openapi.json when the item schema has an id. */
export function pageOutput<T extends z.ZodType>(item: T) {
  const page = z.object({
    items: z.array(item).max(100),
    page: z.number().int().min(1).max(MAX_PAGE),
    limit: z.number().int().min(1).max(100),
    total: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    totalPages: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  });
  const id = z.globalRegistry.get(item)?.id;
  return id ? page.meta({ id: `${id}Page` }) : page;
}

export const offsetOf = (p: Pagination) => (p.page - 1) * p.limit;

export function pageOf<T>(items: T[], total: number, p: Pagination) {
  return { items, page: p.page, limit: p.limit, total, totalPages: Math.ceil(total / p.limit) };
}

// ---------------------------------------------------------------- lists that grow: page or cursor

export const listInput = z.object({
  page: z
    .number()
    .int()
    .min(1)
    .max(MAX_PAGE_DEPTH, { error: () => DEPTH_MESSAGE })
    .optional()
    .meta({
      description: `Page number, from 1 (default 1). page × limit may be at most ${MAX_PAGE_DEPTH.toLocaleString('en')}: go further with cursor. Not with cursor.`,
    }),
  limit: z.number().int().min(1).max(100).default(20).meta({ description: 'Items per page, 1 to 100 (default 20).' }),
  cursor: z
    .string()
    .min(1)
    .max(CURSOR_MAX_LENGTH)
    .optional()
    .meta({ description: 'Where to continue: the nextCursor of the previous answer, as is. Not with page.' }),
});

export type ListRequest = z.infer<typeof listInput>;

/** Picks the list fields out of a route's input (the rest are its filters). */
export const listRequestOf = ({ page, limit, cursor }: ListRequest): ListRequest => ({ page, limit, cursor });

/** A list of `item`s; named `<Item>List` in /openapi.json when the item schema has an id. */
export function listOutput<T extends z.ZodType>(item: T) {
  const list = z.object({
    items: z.array(item).max(100),
    page: z.number().int().min(1).max(MAX_PAGE_DEPTH).optional().meta({ description: 'Page mode only.' }),
    limit: z.number().int().min(1).max(100),
    total: z
      .number()
      .int()
      .min(0)
      .max(Number.MAX_SAFE_INTEGER)
      .optional()
      .meta({
        description: `Page mode only. Exact for the whole list; with filters, counted up to ${TOTAL_CAP.toLocaleString('en')}.`,
      }),
    totalPages: z
      .number()
      .int()
      .min(0)
      .max(Number.MAX_SAFE_INTEGER)
      .optional()
      .meta({ description: 'Page mode only.' }),
    totalCapped: z
      .boolean()
      .optional()
      .meta({
        description: `Page mode only. True when the filtered list holds more than ${TOTAL_CAP.toLocaleString('en')} items and total stops there.`,
      }),
    nextCursor: z.string().nullable().meta({
      description: 'Pass as cursor to read the items after these; null on the last page.',
      maxLength: CURSOR_MAX_LENGTH,
    }),
  });
  const id = z.globalRegistry.get(item)?.id;
  return id ? list.meta({ id: `${id}List` }) : list;
}

export interface ListPage<T> {
  items: T[];
  limit: number;
  nextCursor: string | null;
  page?: number;
  total?: number;
  totalPages?: number;
  totalCapped?: boolean;
}

/** A row of list_counters: `scope` names what is counted, `id` whose (a workspace id; '' for the platform). */
export interface CounterRef {
  scope: string;
  id?: string;
}

export interface ListQuery {
  /** Names the list in its cursors: a cursor of one list is refused by another. */
  list: string;
  request: ListRequest;
  /** Where the exact total is kept, when the query has no filter; otherwise it is counted, capped. */
  counters?: CounterRef | CounterRef[];
  /** The sort columns, as the query names them (default created_at and id). */
  createdAt?: string;
  id?: string;
}

// Inside paginate() the query is loosely typed: its rows are handed back to the caller as its own type says.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyQuery = SelectQueryBuilder<any, any, any>;

const badRequest = (path: string, message: string) =>
  new AppError('BAD_REQUEST', message, [{ path, message, code: 'custom' }]);

const invalidCursor = () =>
  badRequest('cursor', 'This cursor was not issued by this list: pass the nextCursor of a previous answer, as is.');

// A cursor: base64url(JSON [createdAt, id]) "." base64url(HMAC-SHA256(key, list "." payload)).
const keys = new WeakMap<object, Buffer>();
/** The key of the cursors of a service with this configuration (the bench signs a deep cursor with it). */
export function cursorKey(config: Pick<Config, 'JWT_ACCESS_SECRET'>): Buffer {
  let key = keys.get(config);
  if (!key) {
    key = crypto.createHmac('sha256', config.JWT_ACCESS_SECRET).update('list-cursor-v1').digest();
    keys.set(config, key);
  }
  return key;
}

const sign = (key: Buffer, list: string, payload: string) =>
  crypto.createHmac('sha256', key).update(`${list}.${payload}`).digest('base64url');

const AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function encodeCursor(key: Buffer, list: string, at: string, id: string): string {
  const payload = Buffer.from(JSON.stringify([at, id])).toString('base64url');
  return `${payload}.${sign(key, list, payload)}`;
}

export function decodeCursor(key: Buffer, list: string, cursor: string): { at: string; id: string } {
  const [payload, mac, ...rest] = cursor.split('.');
  if (!payload || !mac || rest.length > 0) throw invalidCursor();
  const expected = Buffer.from(sign(key, list, payload));
  const given = Buffer.from(mac);
  if (given.length !== expected.length || !crypto.timingSafeEqual(given, expected)) throw invalidCursor();
  let position: unknown;
  try {
    position = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw invalidCursor();
  }
  if (!Array.isArray(position) || position.length !== 2) throw invalidCursor();
  const [at, id] = position as unknown[];
  if (typeof at !== 'string' || !AT.test(at) || typeof id !== 'string' || !UUID.test(id)) throw invalidCursor();
  return { at, id };
}

/** The list order, on the columns paginate() adds: a batched select's rows come back in no set order. */
const newestFirst = (a: { list_at: string; list_id: string }, b: { list_at: string; list_id: string }) =>
  a.list_at === b.list_at ? compareText(b.list_id, a.list_id) : compareText(b.list_at, a.list_at);
const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The counters' rows of a list (spread over shards: a figure is their sum). */
const countersOf = (db: Kysely<Database>, refs: CounterRef[]) =>
  db
    .selectFrom('list_counters')
    .where((eb) => eb.or(refs.map((r) => eb.and([eb('scope', '=', r.scope), eb('scope_id', '=', r.id ?? '')]))));

/** Reads the total from list_counters. */
const counterQuery = (db: Kysely<Database>, refs: CounterRef[]) =>
  countersOf(db, refs).select(sql<string>`coalesce(sum(n), 0)`.as('n'));

/** The list's version: the rows ever inserted into it or deleted from it, which moves with every change. */
const versionQuery = (db: Kysely<Database>, refs: CounterRef[]) =>
  countersOf(db, refs).select(sql<string>`coalesce(sum(changes), 0)`.as('v'));

// ---------------------------------------------------------------- page anchors

// A deep page of a list with counters is found by walking its offset on the index, which costs the depth:
// about a millisecond of Postgres at row 10,000. The page's first row found that way stays its first row
// for as long as the list's version (versionQuery) has not moved, so it is kept, with that version, as the
// page's anchor: the next read of the page starts at the anchor when the version is still the same in the
// statement's own snapshot, and walks again otherwise, in the same statement (a `union all` of the anchor
// and the walk under `limit 1`: Postgres runs the walk only when the anchor's branch gives no row).
// Anchors are kept per process, the most recently used MAX_ANCHORS of them.

interface Anchor {
  at: string;
  id: string;
  version: string;
}
const MAX_ANCHORS = 10_000;
const anchorsOf = mapPerOwner<Kysely<Database>, string, Anchor>();

async function counted(db: Kysely<Database>, refs: CounterRef[]): Promise<number> {
  const [row] = await batchedSelect(db, counterQuery(db, refs).compile());
  return Number(row.n);
}

/** Counts the rows of a filtered query, stopping past TOTAL_CAP. */
async function cappedCount(db: Kysely<Database>, query: AnyQuery) {
  const counting = db
    .selectFrom(
      query
        .clearSelect()
        .clearOrderBy()
        .select(sql`1`.as('one'))
        .limit(TOTAL_CAP + 1)
        .as('capped'),
    )
    .select((eb) => eb.fn.countAll<string>().as('n'));
  // Alone, not batched: planned for its filter's values, a count reads the filter's own index, where a
  // plan for any value (a batch's) may read the whole table.
  const row = await counting.executeTakeFirstOrThrow();
  const n = Number(row.n);
  return n > TOTAL_CAP ? { total: TOTAL_CAP, totalCapped: true } : { total: n, totalCapped: false };
}

/**
 * One page of a list, newest first: `query` is the list's table with its scope and filters applied and its
 * columns selected (no order, no limit). Page mode answers page, total and totalPages; cursor mode only
 * the items; both answer nextCursor. The items are the rows as Postgres sent them: the query's columns,
 * and paginate's own (list_at, list_id, and list_total, list_version where read; batch_branch when the
 * page was batched, db/batched.ts), which the route's mapper (mapItems) leaves behind. They are not
 * deleted: V8 deletes slowly from pg's rows (a page of AI history: 290 -> 220 µs of CPU without deletes).
 */
export async function paginate<Q extends AnyQuery>(
  deps: { db: Kysely<Database>; config: Pick<Config, 'JWT_ACCESS_SECRET'> },
  query: Q,
  spec: ListQuery,
): Promise<ListPage<InferResult<Q>[number]>> {
  type O = InferResult<Q>[number];
  const { request, list } = spec;
  const { limit } = request;
  if (request.cursor !== undefined && request.page !== undefined)
    throw badRequest('page', 'Send page or cursor, not both.');
  const page = request.page ?? 1;
  if (request.cursor === undefined && page * limit > MAX_PAGE_DEPTH) throw badRequest('page', DEPTH_MESSAGE);
  const key = cursorKey(deps.config);
  const createdAt = sql.ref(spec.createdAt ?? 'created_at');
  const id = sql.ref(spec.id ?? 'id');
  // Loosely typed inside: the rows are handed back as the caller's query selects them.
  const base: AnyQuery = query;
  const { db } = deps;

  let rowsQuery = base
    .select(sql<string>`to_char(${createdAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`.as('list_at'))
    .select(sql<string>`${id}::text`.as('list_id'))
    .orderBy(createdAt, 'desc')
    .orderBy(id, 'desc')
    .limit(limit + 1);
  if (request.cursor !== undefined) {
    const after = decodeCursor(key, list, request.cursor);
    rowsQuery = rowsQuery.where(sql<boolean>`(${createdAt}, ${id}) < (${after.at}::timestamptz, ${after.id}::uuid)`);
  }
  const counters = spec.counters === undefined ? undefined : [spec.counters].flat();
  let anchorKey: string | undefined;
  if (request.cursor === undefined && page > 1) {
    // The offset is walked on the index alone, to the page's first row; the page is then read from there
    // like a cursor's (past the end there is no such row, and no page).
    const walk = base
      .clearSelect()
      .select([sql`${createdAt}`.as('list_at'), sql`${id}`.as('list_id')])
      .orderBy(createdAt, 'desc')
      .orderBy(id, 'desc')
      .offset((page - 1) * limit)
      .limit(1);
    let firstOfPage: AnyQuery = walk;
    if (counters) {
      // A list with counters has a version: the page may start at its anchor (above).
      const compiled = walk.compile();
      anchorKey = `${list}\n${compiled.sql}\n${JSON.stringify(compiled.parameters)}`;
      const anchor = anchorsOf(db).get(anchorKey);
      const version = versionQuery(db, counters);
      if (anchor) {
        const atAnchor = db
          .selectNoFrom([sql`${anchor.at}::timestamptz`.as('list_at'), sql`${anchor.id}::uuid`.as('list_id')])
          .where(sql<boolean>`${version} = ${anchor.version}`);
        firstOfPage = db
          .selectFrom(atAnchor.unionAll(db.selectFrom(walk.as('walk')).selectAll()).as('start'))
          .selectAll()
          .limit(1);
      }
      rowsQuery = rowsQuery.select(version.as('list_version'));
    }
    rowsQuery = rowsQuery.where(sql<boolean>`(${createdAt}, ${id}) <= ${firstOfPage}`);
  }

  // An exact total rides along with the rows, as one more column (one statement, one round trip).
  const withCounter = request.cursor === undefined && counters !== undefined;
  if (withCounter) rowsQuery = rowsQuery.select(counterQuery(db, counters).as('list_total'));
  type Row = Record<string, unknown> & { list_at: string; list_id: string; list_total?: string; list_version?: string };
  const [rows, capped] = await Promise.all([
    (batchedSelect(db, rowsQuery.compile()) as Promise<Row[]>).then((page) => page.sort(newestFirst)),
    request.cursor !== undefined || withCounter ? undefined : cappedCount(db, base),
  ]);
  let totals = capped;
  if (withCounter) {
    // A page past the end has no row to carry the total: it is read alone.
    const total = rows.length > 0 ? Number(rows[0].list_total) : await counted(db, counters);
    totals = { total, totalCapped: false };
  }
  if (anchorKey && rows.length > 0) {
    const [first] = rows;
    remember(
      anchorsOf(db),
      anchorKey,
      { at: first.list_at, id: first.list_id, version: first.list_version! },
      MAX_ANCHORS,
    );
  }
  const more = rows.length > limit;
  const pageRows = more ? rows.slice(0, limit) : rows;
  const last = pageRows.at(-1);
  const nextCursor = more && last ? encodeCursor(key, list, last.list_at, last.list_id) : null;
  const items = pageRows as O[];
  if (!totals) return { items, limit, nextCursor };
  return {
    items,
    page,
    limit,
    total: totals.total,
    totalPages: Math.ceil(totals.total / limit),
    totalCapped: totals.totalCapped,
    nextCursor,
  };
}

/** The same page with its items converted (rows to the route's output). */
export const mapItems = <T, U>(page: ListPage<T>, f: (item: T) => U): ListPage<U> => ({
  ...page,
  items: page.items.map(f),
});
