// Migration 0011 on a database that already holds refresh-token families: each family becomes a session
// (its first token's device and address, its last token's times; ended when every token is revoked), and
// the refresh tokens of a live family go on working, now in a listed session.
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
let userId: string;
const live = crypto.randomUUID();
const ended = crypto.randomUUID();
const tokens = { first: raw(), newest: raw(), revoked: raw() };

beforeAll(async () => {
  await admin(`create database "${name}"`);
  const pool = new pg.Pool({ connectionString: dbUrl.toString(), max: 1 });
  db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) });
  const migrator = new Migrator({ db, provider: migrationProvider });
  const before = await migrator.migrateTo('0010_identity_providers');
  expect(before.error).toBeUndefined();

  const user = await db
    .insertInto('users')
    .values({ email: `sessions-${crypto.randomBytes(4).toString('hex')}@tests.local`, name: 'S', password_hash: 'x' })
    .returning('id')
    .executeTakeFirstOrThrow();
  userId = user.id;
  const expires = new Date(Date.now() + 86_400_000);
  const first = await db
    .insertInto('refresh_tokens')
    .values({
      user_id: userId,
      family_id: live,
      token_hash: digest(tokens.first),
      expires_at: expires,
      created_at: ago(60),
      rotated_at: ago(30),
      superseded_at: ago(30),
      created_ip: '203.0.113.7',
      user_agent: 'Laptop browser',
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db
    .insertInto('refresh_tokens')
    .values({
      user_id: userId,
      family_id: live,
      parent_id: first.id,
      token_hash: digest(tokens.newest),
      expires_at: expires,
      created_at: ago(30),
      created_ip: '198.51.100.9',
      user_agent: 'Laptop browser',
    })
    .execute();
  await db
    .insertInto('refresh_tokens')
    .values({
      user_id: userId,
      family_id: ended,
      token_hash: digest(tokens.revoked),
      expires_at: expires,
      created_at: ago(20),
      revoked_at: ago(10),
      revoked_reason: 'logout',
      user_agent: 'Phone',
    })
    .execute();

  const after = await migrator.migrateToLatest();
  expect(after.error).toBeUndefined();
});

afterAll(async () => {
  await app?.close();
  await db?.destroy();
  await admin(`drop database if exists "${name}" with (force)`);
});

describe('migration 0011_mfa_sessions', () => {
  it('makes each family a session: first device and address, last use, ended when every token is revoked', async () => {
    const rows = await db
      .selectFrom('sessions')
      .selectAll()
      .where('user_id', '=', userId)
      .orderBy('created_at')
      .execute();
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({
      id: live,
      user_agent: 'Laptop browser',
      ip_address: '203.0.113.7',
      revoked_at: null,
    });
    expect(Math.abs(rows[0].created_at.getTime() - ago(60).getTime())).toBeLessThan(5_000);
    expect(Math.abs(rows[0].last_used_at.getTime() - ago(30).getTime())).toBeLessThan(5_000);
    expect(rows[1]).toMatchObject({ id: ended, user_agent: 'Phone' });
    expect(rows[1].revoked_at).not.toBeNull();
    const users = await db.selectFrom('users').select('mfa_enabled').where('id', '=', userId).execute();
    expect(users).toEqual([{ mfa_enabled: false }]);
  });

  it('lets the live family refresh, into a session the account lists; the ended one stays ended', async () => {
    app = await startTestApp({ DATABASE_URL: dbUrl.toString() });
    const res = await app.api('POST', '/auth/refresh', { body: { refreshToken: tokens.newest } });
    expect(res.status, res.text).toBe(200);
    const sid = JSON.parse(Buffer.from(res.body.accessToken.split('.')[1], 'base64url').toString()).sid;
    expect(sid).toBe(live);
    const list = await app.api('GET', '/auth/sessions', { token: res.body.accessToken });
    expect(list.body.items).toEqual([
      expect.objectContaining({ id: live, current: true, userAgent: 'Laptop browser' }),
    ]);
    expectError(
      await app.api('POST', '/auth/refresh', { body: { refreshToken: tokens.revoked } }),
      401,
      'UNAUTHORIZED',
    );
  });
});
