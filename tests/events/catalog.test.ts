// The event catalogue: emitEvent takes only names of the catalogue with payloads of their schema (the
// compiler refuses the rest: the @ts-expect-error lines below fail `npm run typecheck` if it ever stops),
// what it writes parses against the schema, and the suite-wide check finds a payload that does not.
import { inject } from 'vitest';
import pg from 'pg';
import { Kysely, PostgresDialect } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../db/schema.js';
import { emitEvent } from '../../routers/events/emit.js';
import { EVENT_NAMES, EVENTS } from '../../routers/events/catalog.js';
import { eventsOutsideTheCatalogue } from '../helpers/event-check.js';

let db: Kysely<Database>;
let workspaceId: string;

beforeAll(async () => {
  db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: inject('databaseUrl'), max: 2 }) }),
  });
  const ws = await db
    .insertInto('workspaces')
    .values({ name: 'Events', limits: JSON.stringify({ apiKeys: 0, aiMonthlyGenerations: 20, members: 3 }) })
    .returning('id')
    .executeTakeFirstOrThrow();
  workspaceId = ws.id;
});
afterAll(() => db.destroy());

/** Runs `body` in a transaction that is rolled back, so nothing it writes reaches the suite-wide check. */
async function rolledBack(body: (trx: Kysely<Database>) => Promise<void>) {
  const rollback = new Error('rollback');
  await db
    .transaction()
    .execute(async (trx) => {
      await body(trx);
      throw rollback;
    })
    .catch((err) => {
      if (err !== rollback) throw err;
    });
}

describe('the event catalogue', () => {
  it('refuses, at compile time, a name it does not list and a payload of the wrong shape', () => {
    const wrongCalls = (trx: Kysely<Database>) => [
      // @ts-expect-error 'member.joined' is not an event of the catalogue
      emitEvent(trx, workspaceId, 'member.joined', { userId: workspaceId, role: 'MEMBER' }),
      // @ts-expect-error member.added needs its role
      emitEvent(trx, workspaceId, 'member.added', { userId: workspaceId }),
      // @ts-expect-error the role is one of the workspace roles
      emitEvent(trx, workspaceId, 'member.added', { userId: workspaceId, role: 'KING' }),
    ];
    expect(typeof wrongCalls).toBe('function');
  });

  it('writes an event whose payload parses against its schema, in the caller transaction', async () => {
    await rolledBack(async (trx) => {
      await emitEvent(trx, workspaceId, 'member.added', { userId: workspaceId, role: 'ADMIN' });
      const row = await trx
        .selectFrom('domain_events')
        .select(['type', 'payload', 'dispatched_at'])
        .where('workspace_id', '=', workspaceId)
        .executeTakeFirstOrThrow();
      expect(row).toMatchObject({ type: 'member.added', dispatched_at: null });
      expect(EVENTS['member.added'].data.strict().parse(row.payload)).toEqual({ userId: workspaceId, role: 'ADMIN' });
    });
    const after = await db.selectFrom('domain_events').select('id').where('workspace_id', '=', workspaceId).execute();
    expect(after).toEqual([]);
  });

  it('gives every event a description and an object schema, and the webhook enum is its names', () => {
    for (const name of EVENT_NAMES) {
      expect(EVENTS[name].when.length, name).toBeGreaterThan(10);
      expect(EVENTS[name].data.def.type, name).toBe('object');
    }
    expect(new Set(EVENT_NAMES).size).toBe(EVENT_NAMES.length);
  });

  it("the suite's check finds an unknown name, a missing field and an extra field", async () => {
    await rolledBack(async (trx) => {
      const insert = (type: string, payload: object) =>
        trx
          .insertInto('domain_events')
          .values({ workspace_id: workspaceId, type, payload: JSON.stringify(payload) })
          .execute();
      await insert('member.joined', { userId: workspaceId, role: 'MEMBER' });
      await insert('member.added', { userId: workspaceId });
      await insert('member.removed', { userId: workspaceId, role: 'MEMBER', email: 'a@b.c' });
      const { checked, problems } = await eventsOutsideTheCatalogue(trx, workspaceId);
      expect(checked).toBe(3);
      expect(problems.map((p) => p.type).sort()).toEqual(['member.added', 'member.joined', 'member.removed']);
    });
  });
});
