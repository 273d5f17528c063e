// One Postgres database per test run: created and migrated here, dropped at the end. Test files connect
// to it through inject('databaseUrl') and use unique data, so they can run in parallel.
import crypto from 'node:crypto';
import pg from 'pg';
import { Kysely, PostgresDialect } from 'kysely';
import type { TestProject } from 'vitest/node';
import { migrateToLatest } from '../db/migrate.js';
import { eventsOutsideTheCatalogue } from './helpers/event-check.js';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    redisUrl: string;
  }
}

const ADMIN_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export default async function setup(project: TestProject) {
  const name = `test_${Date.now().toString(36)}_${crypto.randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect().catch((err: Error) => {
    throw new Error(`Tests need Postgres at ${ADMIN_URL} (set TEST_POSTGRES_URL): ${err.message}`);
  });
  await admin.query(`create database "${name}"`);
  await admin.end();

  const dropDatabase = async () => {
    const client = new pg.Client({ connectionString: ADMIN_URL });
    await client.connect();
    await client.query(`drop database if exists "${name}" with (force)`);
    await client.end();
  };

  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  const db = new Kysely<any>({
    dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: databaseUrl, max: 1 }) }),
  });
  try {
    await migrateToLatest(db);
  } catch (err) {
    await db.destroy();
    await dropDatabase();
    throw err;
  }
  await db.destroy();

  project.provide('databaseUrl', databaseUrl);
  project.provide('redisUrl', process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');
  return async () => {
    const problems = await checkEmittedEvents(databaseUrl).finally(dropDatabase);
    if (problems.length === 0) return;
    // Vitest prints an error thrown here but still exits 0: the exit code is set by hand.
    process.exitCode = 1;
    throw new Error(
      `domain events outside the catalogue:\n${problems.map((p) => `${p.type}: ${p.problem}`).join('\n')}`,
    );
  };
}

/** Every event the run wrote parses against the catalogue (tests/helpers/event-check.ts). */
async function checkEmittedEvents(databaseUrl: string) {
  const db = new Kysely<any>({
    dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: databaseUrl, max: 1 }) }),
  });
  try {
    const { checked, problems } = await eventsOutsideTheCatalogue(db);
    console.log(`domain events checked against the catalogue: ${checked}`);
    return problems;
  } finally {
    await db.destroy();
  }
}
