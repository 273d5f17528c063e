// Lists at scale on the embedded database (PGlite, what `npm start` runs with nothing configured): the
// migration's counters and triggers work there too, and a list reads the same by page and by cursor.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/index.js';
import { migrateToLatest } from '../../db/migrate.js';
import { paginate } from '../../server/platform/pagination.js';

let db: Db;
const config = { JWT_ACCESS_SECRET: 'pglite-list-secret-0123456789abcdef0123456789' };

beforeAll(async () => {
  db = await createDb({ DATABASE_URL: 'memory://', DATABASE_POOL_MAX: 1, DATA_DIR: '' });
  await migrateToLatest(db);
}, 120_000);
afterAll(() => db?.destroy());

describe('lists on PGlite', () => {
  it('count rows in the same transaction, follow deletes, and read every row once by cursor', async () => {
    await sql`insert into contact_messages (name, email, message, created_at)
      select 'n', 'e@tests.local', 'm' || g, '2026-01-01T00:00:00.5Z'::timestamptz - (g / 4) * interval '1 microsecond'
      from generate_series(1, 103) g`.execute(db);
    await db.transaction().execute(async (trx) => {
      await sql`insert into contact_messages (name, email, message) values ('rolled', 'back@tests.local', 'x')`.execute(
        trx,
      );
      await sql`delete from contact_messages where message = 'm1'`.execute(trx);
    });
    await db
      .transaction()
      .execute(async (trx) => {
        await sql`insert into contact_messages (name, email, message) values ('lost', 'x@tests.local', 'x')`.execute(
          trx,
        );
        throw new Error('roll back');
      })
      .catch(() => undefined);
    const query = () => db.selectFrom('contact_messages').select(['id', 'message']);
    const first = await paginate({ db, config }, query(), {
      list: 'contacts',
      request: { limit: 10 },
      counters: { scope: 'contact_messages' },
    });
    expect(first).toMatchObject({ total: 103, totalPages: 11, totalCapped: false });
    const seen = first.items.map((r) => r.message);
    let cursor = first.nextCursor;
    while (cursor) {
      const next = await paginate({ db, config }, query(), {
        list: 'contacts',
        request: { limit: 10, cursor },
        counters: { scope: 'contact_messages' },
      });
      seen.push(...next.items.map((r) => r.message));
      cursor = next.nextCursor;
    }
    expect(seen).toHaveLength(103);
    expect(new Set(seen).size).toBe(103);
    const deep = await paginate({ db, config }, query(), {
      list: 'contacts',
      request: { page: 11, limit: 10 },
      counters: { scope: 'contact_messages' },
    });
    expect(deep.items.map((r) => r.message)).toEqual(seen.slice(100));
    expect(deep.nextCursor).toBeNull();
  });
});
