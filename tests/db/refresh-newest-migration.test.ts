// Migration 0009 on a database that already holds refresh-token families as the earlier rotation left them:
// a family forked by a refresh within the reuse grace has two unrotated tokens, and each of them could be
// refreshed for ever. After the migration only the last issued token of each family is the newest.
import crypto from 'node:crypto';
import pg from 'pg';
import { Kysely, Migrator, PostgresDialect } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { migrationProvider } from '../../db/migrate.js';
import { TEST_JWT_REFRESH_SECRET, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/http.js';

const adminUrl = new URL(inject('databaseUrl'));
adminUrl.pathname = '/postgres';
const name = `test_mig_${crypto.randomBytes(4).toString('hex')}`;
const dbUrl = new URL(adminUrl);
dbUrl.pathname = `/${name}`;

const raw = () => `rt_${crypto.randomBytes(32).toString('base64url')}`;
const digest = (token: string) => crypto.createHmac('sha256', TEST_JWT_REFRESH_SECRET).update(token).digest('hex');
const ago = (minutes: number) => new Date(Date.now() - minutes * 60_000);

async function admin(query: string) {
  const client = new pg.Client({ connectionString: adminUrl.toString() });
  await client.connect();
  try {
    await client.query(query);
  } finally {
    await client.end();
  }
}

let db: Kysely<any>;
let app: TestApp | undefined;
const tokens = { root: raw(), first: raw(), second: raw(), alone: raw() };

beforeAll(async () => {
  await admin(`create database "${name}"`);
  const pool = new pg.Pool({ connectionString: dbUrl.toString(), max: 1 });
  db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) });
  const migrator = new Migrator({ db, provider: migrationProvider });
  const before = await migrator.migrateTo('0008_api_key_rotation');
  expect(before.error).toBeUndefined();

  const user = await db
    .insertInto('users')
    .values({ email: `forked-${crypto.randomBytes(4).toString('hex')}@tests.local`, name: 'F', password_hash: 'x' })
    .returning('id')
    .executeTakeFirstOrThrow();
  const family = crypto.randomUUID();
  const expires = new Date(Date.now() + 86_400_000);
  const base = { user_id: user.id, expires_at: expires };
  const root = await db
    .insertInto('refresh_tokens')
    .values({ ...base, family_id: family, token_hash: digest(tokens.root), rotated_at: ago(59), created_at: ago(60) })
    .returning('id')
    .executeTakeFirstOrThrow();
  // Two children of the root, neither presented yet: the fork.
  await db
    .insertInto('refresh_tokens')
    .values([
      { ...base, family_id: family, parent_id: root.id, token_hash: digest(tokens.first), created_at: ago(59) },
      { ...base, family_id: family, parent_id: root.id, token_hash: digest(tokens.second), created_at: ago(58) },
    ])
    .execute();
  await db
    .insertInto('refresh_tokens')
    .values({ ...base, family_id: crypto.randomUUID(), token_hash: digest(tokens.alone), created_at: ago(30) })
    .execute();

  const after = await migrator.migrateToLatest();
  expect(after.error).toBeUndefined();
});

afterAll(async () => {
  await app?.close();
  await db?.destroy();
  await admin(`drop database if exists "${name}" with (force)`);
});

describe('migration 0009_refresh_token_newest', () => {
  it('marks every token but the last issued of its family superseded, when the next one was issued', async () => {
    const rows = await db.selectFrom('refresh_tokens').select(['token_hash', 'created_at', 'superseded_at']).execute();
    const of = (token: string) => rows.find((r) => r.token_hash === digest(token))!;
    expect(of(tokens.root).superseded_at).toEqual(of(tokens.first).created_at);
    expect(of(tokens.first).superseded_at).toEqual(of(tokens.second).created_at);
    expect(of(tokens.second).superseded_at).toBeNull();
    expect(of(tokens.alone).superseded_at).toBeNull();
  });

  it("so the older branch of a fork is refused (401), ending its session; another family's newest works", async () => {
    app = await startTestApp({ DATABASE_URL: dbUrl.toString(), REFRESH_TOKEN_REUSE_GRACE_SECONDS: '1' });
    const refresh = (refreshToken: string) => app!.api('POST', '/auth/refresh', { body: { refreshToken } });
    expect((await refresh(tokens.alone)).status).toBe(200);
    expectError(await refresh(tokens.first), 401, 'UNAUTHORIZED');
    expectError(await refresh(tokens.second), 401, 'UNAUTHORIZED');
    const forked = await db
      .selectFrom('refresh_tokens')
      .select('revoked_reason')
      .where('token_hash', 'in', [tokens.root, tokens.first, tokens.second].map(digest))
      .execute();
    expect(forked.map((r) => r.revoked_reason)).toEqual(['reuse', 'reuse', 'reuse']);
  });

  it('refuses a second newest token in a family (partial unique index)', async () => {
    const { family_id, user_id } = await db
      .selectFrom('refresh_tokens')
      .select(['family_id', 'user_id'])
      .where('token_hash', '=', digest(tokens.alone))
      .executeTakeFirstOrThrow();
    const insert = db
      .insertInto('refresh_tokens')
      .values({ user_id, family_id, token_hash: digest(raw()), expires_at: new Date(Date.now() + 60_000) })
      .execute();
    await expect(insert).rejects.toThrow(/refresh_tokens_newest_idx/);
  });
});
