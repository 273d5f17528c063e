// Fixtures shared by the AI tests: reads of the AI tables scoped to one workspace or user (never global
// counts: the run's database is shared by every test file), the calendar month, and unique prompts.
import crypto from 'node:crypto';
import { expect } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { ApiResponse, Session } from '../helpers/http.js';
import { createWebhook } from '../developer/helpers.js';

/** The fields of a generation as GET /ai/history and POST /ai/generate answer it. */
export const GENERATION_FIELDS = [
  'id',
  'workspaceId',
  'userId',
  'templateId',
  'provider',
  'model',
  'prompt',
  'systemPrompt',
  'temperature',
  'output',
  'status',
  'promptTokens',
  'completionTokens',
  'totalTokens',
  'durationMs',
  'isSample',
  'createdAt',
].sort();

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const tag = () => crypto.randomBytes(5).toString('hex');

/** A prompt no other test sends. */
export const uniquePrompt = (label = 'Write a haiku about') => `${label} ${tag()}`;

/** This calendar month (UTC): YYYY-MM-DD of its first day, and the first instants of it and the next. */
export function thisMonth(now = new Date()) {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const resetsAt = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { period: start.toISOString().slice(0, 10), start, resetsAt };
}

/** POST /ai/generate as `token`. */
export function generate(app: TestApp, token: string, body: Record<string, unknown>, query = '') {
  return app.api('POST', `/ai/generate${query}`, { token, body });
}

/** POST /ai/generate, expecting 200; answers the generation. */
export async function generateOk(app: TestApp, token: string, body: Record<string, unknown>) {
  const res = await generate(app, token, body);
  expect(res.status, res.text).toBe(200);
  return res.body as Record<string, any>;
}

/** This month's counter row of a workspace (generations counted against its limit). */
export async function workspaceCounter(app: TestApp, workspaceId: string): Promise<number> {
  const row = await app.deps.db
    .selectFrom('ai_usage_counters')
    .select('generations')
    .where('workspace_id', '=', workspaceId)
    .where('period', '=', thisMonth().period)
    .executeTakeFirst();
  return row?.generations ?? 0;
}

/** This month's counter of a test account (AI_TEST_USER_EMAILS). */
export async function userCounter(app: TestApp, userId: string): Promise<number> {
  const row = await app.deps.db
    .selectFrom('ai_user_usage_counters')
    .select('generations')
    .where('user_id', '=', userId)
    .where('period', '=', thisMonth().period)
    .executeTakeFirst();
  return row?.generations ?? 0;
}

/** The stored generations of a workspace, oldest first. */
export function generationRows(app: TestApp, workspaceId: string) {
  return app.deps.db
    .selectFrom('ai_generations')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export function generationRow(app: TestApp, id: string) {
  return app.deps.db.selectFrom('ai_generations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

/** The domain events of a workspace of one type. */
export function domainEvents(app: TestApp, workspaceId: string, type: string) {
  return app.deps.db
    .selectFrom('domain_events')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('type', '=', type)
    .orderBy('created_at')
    .execute();
}

/** GET /ai/usage (optionally of a named workspace), expecting 200. */
export async function usageOf(app: TestApp, token: string, workspaceId?: string) {
  const res = await app.api('GET', `/ai/usage${workspaceId ? `?workspaceId=${workspaceId}` : ''}`, { token });
  expect(res.status, res.text).toBe(200);
  return res.body as {
    workspaceId: string;
    period: { start: string; resetsAt: string };
    used: number;
    limit: number;
    limitSource: 'PLAN' | 'SYSTEM' | 'TEST_ACCOUNT';
    remaining: number;
    tokens: number;
    byModel: Array<{ provider: string; model: string; generations: number; tokens: number }>;
  };
}

/** GET /ai/provider-status, expecting 200. */
export async function providerStatusOf(app: TestApp, token: string) {
  const res = await app.api('GET', '/ai/provider-status', { token });
  expect(res.status, res.text).toBe(200);
  return res.body as Record<string, any>;
}

/** Counts answers by `status code` (and error code when there is one), e.g. { '200': 20, '403 AI_MONTHLY_LIMIT_REACHED': 20 }. */
export function tally(responses: ApiResponse[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of responses) {
    const key = r.status === 200 ? '200' : `${r.status} ${(r.body as { code?: string })?.code ?? '?'}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

/**
 * A webhook of the session's workspace subscribed to `events`: a generation's ai.generation.completed
 * event is written only when one is. The apps of the AI tests record its deliveries without sending them
 * (WEBHOOK_DELIVERY_ENABLED=false), and its host could not be reached anyway (.invalid never resolves).
 */
export function subscribeWebhook(app: TestApp, s: Session, events = ['ai.generation.completed']) {
  return createWebhook(app, s, { url: `https://hooks-${tag()}.example.invalid/ai`, events });
}
