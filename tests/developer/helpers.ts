// Fixtures of the developer-platform tests: accounts on a chosen plan, API keys and webhooks created over
// HTTP, audit rows, and databases of their own for the delivery tests.
//
// Why a database of its own: every running app sweeps and dispatches webhook deliveries of the WHOLE
// database (routers/webhooks/runner.ts: by design, several instances share the work). Other test files run
// apps at the same time with other settings (WEBHOOK_ALLOW_PRIVATE_URLS off, for one), and their sweeps
// would take our retries and domain events and record them as refused. Delivery tests therefore run
// against a database created for the file (migrated by the app at start-up) and dropped afterwards.
import crypto from 'node:crypto';
import pg from 'pg';
import { expect, inject } from 'vitest';
import { TEST_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, login, registerAndLogin, uniqueEmail, type Session } from '../helpers/http.js';
import { ledger } from '../helpers/secret-ledger.js';
import { registerAs, upgradeWorkspace } from '../workspaces/helpers.js';

export const API_KEY_FORMAT = /^wsk_[A-Za-z0-9]{40}$/;
export const sha256Hex = (s: string) => crypto.createHash('sha256').update(s, 'utf8').digest('hex');
export const hex = (bytes = 4) => crypto.randomBytes(bytes).toString('hex');

export type Plan = 'lite' | 'pro' | 'enterprise';

/** A fresh account whose personal workspace is on `plan` (MOCK checkout). */
export async function ownerOn(app: TestApp, plan: Plan = 'pro', prefix = 'dev'): Promise<Session> {
  const s = await registerAndLogin(app.api, { prefix });
  if (plan !== 'lite') await upgradeWorkspace(app, s.accessToken, s.workspaceId, plan);
  return s;
}

/** A demo account (its address must be in the app's AI_DEMO_RESTRICTED_EMAILS). */
export const demoEmail = (label: string) => `demo-${label}-${hex()}@tests.local`;
export const registerDemo = (app: TestApp, email: string) => registerAs(app, email, 'Demo Person');

export const adminSession = (app: TestApp) => login(app.api, TEST_ADMIN.email, TEST_ADMIN.password);

/** Tells the secret ledger that a key or secret is now in the caller's hands: it must never come back. */
export function trackSecret(value: string, label: string) {
  ledger.sent(value, label);
}

/** X-API-Key header for `rawKey` (recorded in the ledger as sent). */
export function apiKeyHeader(rawKey: string) {
  trackSecret(rawKey, 'an API key');
  return { 'x-api-key': rawKey };
}

export interface CreatedKey {
  id: string;
  workspaceId: string;
  name: string;
  prefix: string;
  scopes: string[];
  status: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  rawKey: string;
}

export async function createKey(
  app: TestApp,
  s: Session,
  body: Record<string, unknown> = {},
  workspaceId = s.workspaceId,
): Promise<CreatedKey> {
  const res = await app.api('POST', `/workspaces/${workspaceId}/api-keys`, {
    token: s.accessToken,
    body: { name: `key ${hex()}`, scopes: ['read'], ...body },
  });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

export interface CreatedWebhook {
  id: string;
  workspaceId: string;
  name: string;
  url: string;
  events: string[];
  isActive: boolean;
  secret: string;
}

/** POST .../webhooks; the answered secret is recorded in the ledger (it must never be shown again). */
export async function createWebhook(
  app: TestApp,
  s: Session,
  body: { url: string; events?: string[]; name?: string },
  workspaceId = s.workspaceId,
): Promise<CreatedWebhook> {
  const res = await app.api('POST', `/workspaces/${workspaceId}/webhooks`, {
    token: s.accessToken,
    body: { name: body.name ?? `hook ${hex()}`, url: body.url, events: body.events ?? ['webhook.test'] },
  });
  expect(res.status, res.text).toBe(201);
  trackSecret(res.body.secret, 'a webhook signing secret');
  return res.body;
}

export async function auditActions(app: TestApp, workspaceId: string, targetId?: string) {
  let q = app.deps.db.selectFrom('audit_logs').selectAll().where('workspace_id', '=', workspaceId);
  if (targetId) q = q.where('target_id', '=', targetId);
  return q.orderBy('created_at').execute();
}

export { expectError, registerAndLogin, uniqueEmail };

// ---------------------------------------------------------------- a database of the file's own

export interface OwnDatabase {
  url: string;
  drop(): Promise<void>;
}

export async function ownDatabase(label: string): Promise<OwnDatabase> {
  const shared = inject('databaseUrl');
  const name = `dev_${label}_${Date.now().toString(36)}_${hex(3)}`;
  const run = async (sql: string) => {
    const client = new pg.Client({ connectionString: shared });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await run(`create database "${name}"`);
  const url = new URL(shared);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => run(`drop database if exists "${name}" with (force)`) };
}

/** startTestApp against `db`, with rate limits off. */
export const startAppOn = (db: OwnDatabase, overrides: Record<string, string | undefined> = {}) =>
  startTestApp({ RATE_LIMIT_ENABLED: 'false', DATABASE_URL: db.url, ...overrides });

/** Stops the delivery timers of an extra app, so it does not dispatch or sweep the work of the main one. */
export async function quiet(app: TestApp) {
  await app.deps.webhooks.stop();
  return app;
}
