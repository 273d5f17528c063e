// Outbound webhook deliveries with queues off (direct mode): what a receiver gets (every header, the
// envelope, the signature recomputed here from the secret), what the delivery log records, retries by the
// in-process sweep and by the retry route, timeouts, 410, redirects, long answers, domain events, the
// delivery switches, demo workspaces, secret rotation, the URL checked again at delivery, and the
// switching-off of endpoints that keep failing.
//
// The apps of this file run against a database of their own (see helpers.ts: every app sweeps and
// dispatches the whole database, and other files' apps refuse 127.0.0.1 receivers).
import crypto from 'node:crypto';
import dnsPromises from 'node:dns/promises';
import os from 'node:os';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { Session } from '../helpers/http.js';
import { clockAhead } from '../helpers/clock.js';
import { mailsTo } from '../helpers/mail.js';
import {
  WebhookReceiver,
  expectedSignature,
  signaturesOf,
  type ReceivedRequest,
  type Reply,
} from '../helpers/webhook-receiver.js';
import { inviteAndJoin, upgradeWorkspace } from '../workspaces/helpers.js';
import {
  auditActions,
  createKey,
  createWebhook,
  demoEmail,
  expectError,
  hex,
  ownDatabase,
  ownerOn,
  quiet,
  registerDemo,
  startAppOn,
  trackSecret,
  type OwnDatabase,
} from './helpers.js';
import { waitFor } from '../helpers/wait.js';

const DEMO_EMAIL = demoEmail('deliv');
const USER_AGENT = `DevTests-Hooks/${hex(2)}`;
const MAX_RETRIES = 2;
const TIMEOUT_MS = 300;

let db: OwnDatabase;
let app: TestApp;
const extraApps: TestApp[] = [];
const receivers: WebhookReceiver[] = [];
/** Every signing secret this file saw: none may appear in a delivery row or a log line. */
const secrets: string[] = [];

beforeAll(async () => {
  db = await ownDatabase('deliveries');
  app = await startAppOn(db, {
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    WEBHOOK_RETRY_BACKOFF_SECONDS: '1',
    WEBHOOK_MAX_RETRIES: String(MAX_RETRIES),
    WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
    WEBHOOK_USER_AGENT: USER_AGENT,
    AI_DEMO_RESTRICTED_EMAILS: DEMO_EMAIL,
  });
});

afterAll(async () => {
  for (const r of receivers) await r.close().catch(() => undefined);
  for (const a of extraApps) await a.close().catch(() => undefined);
  await app?.close();
  await db?.drop();
});

/** An extra app on the same database with other settings; its timers are stopped so it takes no work of the main app. */
async function extraApp(overrides: Record<string, string>) {
  const a = await startAppOn(db, {
    WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
    AI_DEMO_RESTRICTED_EMAILS: DEMO_EMAIL,
    ...overrides,
  });
  extraApps.push(a);
  return quiet(a);
}

async function receiver(reply?: Reply | Reply[], opts: { tls?: boolean } = {}) {
  const r = await WebhookReceiver.start(opts);
  receivers.push(r);
  if (reply) r.reply(reply);
  return r;
}

async function hookTo(s: Session, r: WebhookReceiver, events: string[] = ['webhook.test'], path = '/hook') {
  const hook = await createWebhook(app, s, { url: r.url(path), events });
  secrets.push(hook.secret);
  return hook;
}

/** A webhook row written directly (as the demo seed does, or as an old row from before a rule). */
async function insertHook(workspaceId: string, url: string, events: string[] = ['webhook.test']) {
  const secret = `whsec_${crypto.randomBytes(32).toString('base64url')}`;
  trackSecret(secret, 'a webhook signing secret');
  secrets.push(secret);
  const row = await app.deps.db
    .insertInto('webhooks')
    .values({
      workspace_id: workspaceId,
      name: `seeded ${hex()}`,
      url,
      events: JSON.stringify(events),
      secret_encrypted: app.deps.secrets.seal(secret),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { id: row.id, secret };
}

/** An app whose attempts wait up to 10 s for an answer (its timers stopped: the test sweeps when it wants). */
let patientApp: TestApp | undefined;
const patient = async () =>
  (patientApp ??= await extraApp({ WEBHOOK_ALLOW_PRIVATE_URLS: 'true', WEBHOOK_TIMEOUT_MS: '10000' }));

/** Makes a delivery older than the sweep's 30 s for pending deliveries. */
const ageDelivery = (id: string) =>
  sql`update webhook_deliveries set created_at = now() - interval '31 seconds' where id = ${id}`.execute(app.deps.db);

const testPath = (s: Session, hookId: string) => `/workspaces/${s.workspaceId}/webhooks/${hookId}/test`;
async function sendTest(s: Session, hookId: string, via: TestApp = app) {
  const res = await via.api('POST', testPath(s, hookId), { token: s.accessToken });
  expect(res.status, res.text).toBe(200);
  return res.body as Record<string, any>;
}
const deliveryRow = (id: string) =>
  app.deps.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const deliveriesOf = (webhookId: string) =>
  app.deps.db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('webhook_id', '=', webhookId)
    .orderBy('created_at')
    .execute();
/** Domain events of the workspace not dispatched yet. */
const undispatchedEvents = async (workspaceId: string) =>
  Number(
    (
      await app.deps.db
        .selectFrom('domain_events')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('workspace_id', '=', workspaceId)
        .where('dispatched_at', 'is', null)
        .executeTakeFirstOrThrow()
    ).n,
  );
const deleteHook = (s: Session, hookId: string) =>
  app.api('DELETE', `/workspaces/${s.workspaceId}/webhooks/${hookId}`, { token: s.accessToken });

// "Nothing was sent" is checked after something LATER that went the same way has arrived, never after a
// sleep: a slow machine cannot make such a check pass by accident.

/** The owner of the marker webhooks below (one for the file). */
let markerOwner: Session | undefined;
const marker = async () => (markerOwner ??= await ownerOn(app, 'lite', 'deliv-marker'));

/**
 * Sends `r` a later request: a test delivery of a webhook of its own (path /later), by the main app, which
 * waits for its answer. Whatever an attempt made earlier had sent to `r` has arrived by then. Answers the
 * requests `r` got but that one.
 */
async function requestsBeforeALaterOne(r: WebhookReceiver): Promise<ReceivedRequest[]> {
  const s = await marker();
  const hook = await hookTo(s, r, ['webhook.test'], '/later');
  const later = await sendTest(s, hook.id);
  expect(r.requests.map((q) => q.headers['x-service-delivery'])).toContain(later.id);
  expect((await deleteHook(s, hook.id)).status).toBe(200);
  return r.requests.filter((q) => q.headers['x-service-delivery'] !== later.id);
}

/**
 * A sweep of `via` that is sure to send something, waited for until that has arrived: a delivery of its own
 * (to a receiver of its own), due for a retry now, is claimed by this sweep (or by a timer's sweep at the
 * same moment) and sent. What an earlier sweep started has been sent by then. With `ahead`, the sweep runs
 * with the clock that far ahead (as if it came that much later).
 */
async function sweepAndSettle(opts: { via?: TestApp; ahead?: number } = {}) {
  const { via = app, ahead = 0 } = opts;
  const s = await marker();
  const r = await receiver([{ status: 500 }, { status: 200 }]);
  const hook = await hookTo(s, r, ['webhook.test'], '/later');
  const d = await sendTest(s, hook.id);
  expect(d.status).toBe('retrying');
  await sql`update webhook_deliveries set next_retry_at = now() where id = ${d.id}`.execute(app.deps.db);
  if (ahead) await clockAhead(ahead, () => via.deps.webhooks.sweep());
  else await via.deps.webhooks.sweep();
  await r.waitForRequests(2);
  await waitFor(async () => (await deliveryRow(d.id)).status === 'success', { message: 'the marker delivery' });
  expect((await deleteHook(s, hook.id)).status).toBe(200);
}

/** Asserts the documented headers and the signature of one received request; answers the parsed envelope. */
function expectSignedDelivery(req: ReceivedRequest, secret: string, event: string) {
  expect(req.method).toBe('POST');
  expect(req.headers['content-type']).toMatch(/^application\/json\b/);
  expect(req.headers['user-agent']).toBe(USER_AGENT);
  expect(req.headers['x-service-event']).toBe(event);
  expect(req.headers['x-service-delivery']).toMatch(/^[0-9a-f-]{36}$/);
  const ts = String(req.headers['x-service-timestamp']);
  expect(ts).toMatch(/^\d+$/);
  expect(Math.abs(Number(ts) - req.receivedAt / 1000)).toBeLessThan(10);
  const [signature, ...more] = signaturesOf(req);
  expect(more).toEqual([]);
  expect(signature).toMatch(/^[0-9a-f]{64}$/);
  expect(signature).toBe(expectedSignature(secret, ts, req.body));
  const envelope = JSON.parse(req.body);
  expect(Object.keys(envelope).sort()).toEqual(['createdAt', 'data', 'event', 'workspaceId']);
  expect(envelope.event).toBe(event);
  expect(new Date(envelope.createdAt).toISOString()).toBe(envelope.createdAt);
  expect(typeof envelope.data).toBe('object');
  expect(envelope.data).not.toBeNull();
  return envelope as { event: string; createdAt: string; workspaceId: string; data: Record<string, unknown> };
}

/** A resolver the test controls: `name` resolves to the IPv4 `address`, every other name as usual. */
function resolving(name: string, address: string) {
  const original = dnsPromises.lookup.bind(dnsPromises);
  return vi
    .spyOn(dnsPromises, 'lookup')
    .mockImplementation((async (host: string, opts: never) =>
      host === name ? [{ address, family: 4 }] : original(host, opts)) as unknown as typeof dnsPromises.lookup);
}

describe('a test delivery', () => {
  it('is POSTed with every documented header, the envelope, and a signature that verifies with the secret', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-headers');
    const r = await receiver({ status: 200, body: 'thanks' });
    const hook = await hookTo(s, r, ['webhook.test'], '/hook?source=tests');
    const before = Date.now();
    const delivery = await sendTest(s, hook.id);
    expect(delivery).toMatchObject({
      webhookId: hook.id,
      event: 'webhook.test',
      status: 'success',
      attempts: 1,
      responseStatus: 200,
    });

    expect(r.requests).toHaveLength(1);
    const [req] = r.requests;
    expect(req.url).toBe('/hook?source=tests');
    expect(req.headers['x-service-delivery']).toBe(delivery.id);
    const envelope = expectSignedDelivery(req, hook.secret, 'webhook.test');
    expect(envelope.workspaceId).toBe(s.workspaceId);
    expect(typeof envelope.data.message).toBe('string');
    expect(new Date(envelope.createdAt).getTime()).toBeGreaterThanOrEqual(before - 1_000);
    // The signature depends on the secret, the timestamp and every byte of the body.
    const ts = String(req.headers['x-service-timestamp']);
    expect(signaturesOf(req)[0]).not.toBe(expectedSignature(`${hook.secret}x`, ts, req.body));
    expect(signaturesOf(req)[0]).not.toBe(expectedSignature(hook.secret, String(Number(ts) + 1), req.body));
    expect(signaturesOf(req)[0]).not.toBe(expectedSignature(hook.secret, ts, `${req.body} `));
  });

  it('shows no next retry time on a delivery that is not waiting for a retry (its attempt holds a lease)', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-lease');
    const r = await receiver();
    const hook = await hookTo(s, r);
    const delivery = await sendTest(s, hook.id);
    // As a first attempt in flight, or a retry started by hand, leaves it: pending, leased a minute ahead.
    await app.deps.db
      .updateTable('webhook_deliveries')
      .set({ status: 'pending', next_retry_at: new Date(Date.now() + 60_000) })
      .where('id', '=', delivery.id)
      .execute();
    const res = await app.api('GET', `/workspaces/${s.workspaceId}/webhook-deliveries`, { token: s.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(res.body.items.find((d: { id: string }) => d.id === delivery.id)).toMatchObject({
      status: 'pending',
      nextRetryAt: null,
    });
  });

  it('is recorded in the delivery log with every field, the safe request headers only, and the payload sent', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-log');
    const r = await receiver({ status: 202, body: 'accepted for processing' });
    const hook = await hookTo(s, r);
    const delivery = await sendTest(s, hook.id);
    const [req] = await r.waitForRequests(1);

    const res = await app.api('GET', `/workspaces/${s.workspaceId}/webhook-deliveries`, { token: s.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ page: 1, limit: 20, total: 1, totalPages: 1 });
    const [item] = res.body.items;
    expect(Object.keys(item).sort()).toEqual(
      [
        'attempts',
        'createdAt',
        'durationMs',
        'error',
        'event',
        'id',
        'nextRetryAt',
        'payload',
        'requestHeaders',
        'responsePreview',
        'responseStatus',
        'status',
        'updatedAt',
        'webhookId',
      ].sort(),
    );
    expect(item).toMatchObject({
      id: delivery.id,
      webhookId: hook.id,
      event: 'webhook.test',
      status: 'success',
      attempts: 1,
      responseStatus: 202,
      responsePreview: 'accepted for processing',
      nextRetryAt: null,
      error: null,
    });
    expect(Number.isInteger(item.durationMs)).toBe(true);
    expect(item.durationMs).toBeGreaterThanOrEqual(0);
    expect(item.payload).toEqual(JSON.parse(req.body));

    const headers = Object.fromEntries(
      Object.entries(item.requestHeaders as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]),
    );
    expect(headers).toMatchObject({
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      'x-service-event': 'webhook.test',
      'x-service-delivery': delivery.id,
      'x-service-timestamp': req.headers['x-service-timestamp'],
    });
    expect(Object.keys(headers).filter((k) => /signature|secret|authorization/i.test(k))).toEqual([]);
    expect(res.text).not.toContain(signaturesOf(req)[0]);
    expect(res.text).not.toContain(hook.secret);

    const row = await deliveryRow(delivery.id);
    expect(JSON.stringify(row)).not.toContain(signaturesOf(req)[0]);
    expect(JSON.stringify(row)).not.toContain(hook.secret);
  });

  it('records each of many deliveries made at once with its own answer (attempts are stored in shared statements)', async () => {
    // 24 test deliveries in flight together; the receiver answers each with a status and body derived from
    // its X-Service-Delivery, so a record mixed up between deliveries would show.
    const s = await ownerOn(app, 'lite', 'deliv-many');
    const statusOf = (id: string) => [200, 201, 202, 410][parseInt(id.slice(-1), 16) % 4];
    const r = await receiver();
    r.reply((req) => {
      const id = String(req.headers['x-service-delivery']);
      return { status: statusOf(id), body: `answer for ${id}` };
    });
    const hook = await hookTo(s, r);
    const sent = await Promise.all(Array.from({ length: 24 }, () => sendTest(s, hook.id)));
    await r.waitForRequests(24);
    for (const delivery of sent) {
      const row = await deliveryRow(delivery.id);
      const status = statusOf(delivery.id);
      expect(row).toMatchObject({
        response_status: status,
        response_preview: `answer for ${delivery.id}`,
        attempts: 1,
      });
      expect(row.status).toBe(status === 410 ? 'failed' : 'success');
      expect((row.request_headers as Record<string, string>)['X-Service-Delivery']).toBe(delivery.id);
      expect(row.last_error).toBe(status === 410 ? 'The endpoint answered HTTP 410.' : null);
      expect(row.next_retry_at).toBeNull();
    }
  });

  it('paginates the delivery log newest first, and filters it by webhook and status', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-page');
    const ok = await receiver({ status: 200 });
    const gone = await receiver({ status: 410 });
    const a = await hookTo(s, ok);
    const b = await hookTo(s, gone);
    const d1 = await sendTest(s, a.id);
    const d2 = await sendTest(s, a.id);
    const d3 = await sendTest(s, b.id);
    const page = (q: string) =>
      app.api('GET', `/workspaces/${s.workspaceId}/webhook-deliveries?${q}`, { token: s.accessToken });

    const first = await page('page=1&limit=2');
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ page: 1, limit: 2, total: 3, totalPages: 2 });
    expect(first.body.items.map((d: { id: string }) => d.id)).toEqual([d3.id, d2.id]);
    expect((await page('page=2&limit=2')).body.items.map((d: { id: string }) => d.id)).toEqual([d1.id]);
    expect((await page(`webhookId=${a.id}`)).body.items.map((d: { id: string }) => d.id)).toEqual([d2.id, d1.id]);
    expect((await page('status=failed')).body.items.map((d: { id: string }) => d.id)).toEqual([d3.id]);
    expectError(await page('limit=101'), 400, 'BAD_REQUEST');
    expectError(await page('page=0'), 400, 'BAD_REQUEST');
    expectError(await page('status=exploded'), 400, 'BAD_REQUEST');
  });
});

describe('retries in direct mode', () => {
  it('500 then 200: recorded retrying, then the in-process sweep sends it again (same X-Service-Delivery, fresh timestamp) and it ends success', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-retry');
    const r = await receiver([
      { status: 500, body: 'boom' },
      { status: 200, body: 'ok' },
    ]);
    const hook = await hookTo(s, r);
    const sentAt = Date.now();
    const first = await sendTest(s, hook.id);
    expect(first).toMatchObject({ status: 'retrying', attempts: 1, responseStatus: 500, responsePreview: 'boom' });
    expect(first.error).toMatch(/500/);
    const retryAt = new Date(first.nextRetryAt).getTime();
    expect(retryAt).toBeGreaterThan(sentAt);
    expect(retryAt).toBeLessThanOrEqual(Date.now() + 2_000);

    const done = await waitFor(
      async () => {
        const row = await deliveryRow(first.id);
        return row.status === 'success' ? row : undefined;
      },
      { timeout: 15_000, message: 'the retry to succeed' },
    );
    expect(done).toMatchObject({
      attempts: 2,
      response_status: 200,
      response_preview: 'ok',
      next_retry_at: null,
      last_error: null,
    });

    expect(r.requests).toHaveLength(2);
    const [a, b] = r.requests;
    expect(b.headers['x-service-delivery']).toBe(first.id);
    expect(a.headers['x-service-delivery']).toBe(first.id);
    expect(Number(b.headers['x-service-timestamp'])).toBeGreaterThan(Number(a.headers['x-service-timestamp']));
    expectSignedDelivery(a, hook.secret, 'webhook.test');
    expectSignedDelivery(b, hook.secret, 'webhook.test');
    expect(b.body).toBe(a.body);
    expect(signaturesOf(b)[0]).not.toBe(signaturesOf(a)[0]);
  }, 30_000);

  it(`always 500: ends failed after WEBHOOK_MAX_RETRIES + 1 = ${MAX_RETRIES + 1} attempts, and is not tried again`, async () => {
    const s = await ownerOn(app, 'lite', 'deliv-fail');
    const r = await receiver({ status: 500, body: 'still broken' });
    const hook = await hookTo(s, r);
    const first = await sendTest(s, hook.id);
    expect(first.status).toBe('retrying');

    const failed = await waitFor(
      async () => {
        const row = await deliveryRow(first.id);
        return row.status === 'failed' ? row : undefined;
      },
      { timeout: 25_000, message: 'the delivery to fail for good' },
    );
    expect(failed).toMatchObject({ attempts: MAX_RETRIES + 1, response_status: 500, next_retry_at: null });
    expect(failed.last_error).toMatch(/500/);
    expect(r.requests).toHaveLength(MAX_RETRIES + 1);
    expect(new Set(r.requests.map((q) => q.headers['x-service-delivery']))).toEqual(new Set([first.id]));

    await sweepAndSettle();
    expect(r.requests).toHaveLength(MAX_RETRIES + 1);
    expect((await deliveryRow(first.id)).status).toBe('failed');
  }, 40_000);

  it(`records a timeout when the receiver never answers (WEBHOOK_TIMEOUT_MS=${TIMEOUT_MS})`, async () => {
    const s = await ownerOn(app, 'lite', 'deliv-hang');
    const r = await receiver('hang');
    const hook = await hookTo(s, r);
    const started = Date.now();
    const d = await sendTest(s, hook.id);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(d).toMatchObject({ status: 'retrying', attempts: 1, responseStatus: null, responsePreview: null });
    expect(d.error).toMatch(new RegExp(`${TIMEOUT_MS} ?ms|time(d)? ?out`, 'i'));
    expect(d.durationMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(d.durationMs).toBeLessThan(5_000);
    expect(r.requests).toHaveLength(1);
    expect((await deleteHook(s, hook.id)).status).toBe(200);
    r.releaseHanging();
  });

  it('a first attempt still waiting on a slow endpoint when the delivery is 30 s old is not swept and sent again', async () => {
    const slow = await patient();
    const s = await ownerOn(app, 'lite', 'deliv-slow-first');
    // The endpoint holds its answer until the test releases it.
    const r = await receiver({ status: 200, body: 'slow but fine', held: true });
    const hook = await hookTo(s, r);
    const answered = sendTest(s, hook.id, slow);
    const [req] = await r.waitForRequests(1);
    const id = String(req.headers['x-service-delivery']);
    // As if this attempt had taken 31 s so far (an endpoint slow to connect, to answer and to finish).
    await ageDelivery(id);
    await slow.deps.webhooks.sweep();
    await app.deps.webhooks.sweep();
    // A second attempt, had one of those sweeps started it, has reached the receiver before a later sweep's.
    await sweepAndSettle();
    r.release();

    expect(await answered).toMatchObject({ id, status: 'success', attempts: 1, responsePreview: 'slow but fine' });
    expect(r.requests).toHaveLength(1);
    expect(await deliveryRow(id)).toMatchObject({ status: 'success', attempts: 1 });
  }, 20_000);

  it('410 Gone: failed at once and never retried', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-410');
    const r = await receiver({ status: 410, body: 'gone' });
    const hook = await hookTo(s, r);
    const d = await sendTest(s, hook.id);
    expect(d).toMatchObject({ status: 'failed', attempts: 1, responseStatus: 410, nextRetryAt: null });
    expect(d.error).toMatch(/410/);
    // A sweep after the backoff (1 s) would have retried it: one with the clock 1.2 s ahead, then its sending.
    await sweepAndSettle({ ahead: 1_200 });
    expect(r.requests).toHaveLength(1);
    expect((await deliveryRow(d.id)).status).toBe('failed');
  });

  it('302: a failure, and the Location is never fetched', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-302');
    const elsewhere = await receiver({ status: 200, body: 'you should not be here' });
    const r = await receiver({ status: 302, headers: { location: elsewhere.url('/stolen') } });
    const hook = await hookTo(s, r);
    const d = await sendTest(s, hook.id);
    expect(d.status).not.toBe('success');
    expect(['retrying', 'failed']).toContain(d.status);
    expect(d.responseStatus).toBe(302);
    expect(d.error).toMatch(/302/);
    expect(await requestsBeforeALaterOne(elsewhere)).toHaveLength(0);
    expect(r.requests).toHaveLength(1);
    expect((await deleteHook(s, hook.id)).status).toBe(200);
  });

  it('https: a certificate the server does not trust is a failure, and nothing is sent', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-tls');
    // Issued by the test CA, which this process does not trust (only the queue tests' workers do).
    const r = await receiver({ status: 200, body: 'should not be read' }, { tls: true });
    const hook = await hookTo(s, r);
    const d = await sendTest(s, hook.id);
    expect(d).toMatchObject({ status: 'retrying', attempts: 1, responseStatus: null, responsePreview: null });
    expect(d.error).toMatch(/certificate/i);
    expect(r.requests).toHaveLength(0);
    expect((await deleteHook(s, hook.id)).status).toBe(200);
  });

  it('keeps a preview of at most 1,024 characters of a long answer', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-long');
    const body = Array.from({ length: 1_000 }, (_, i) => `${String(i).padStart(9, '0')}|`).join('');
    expect(body.length).toBe(10_000);
    const r = await receiver({ status: 200, body });
    const hook = await hookTo(s, r);
    const d = await sendTest(s, hook.id);
    expect(d.status).toBe('success');
    expect(d.responsePreview.length).toBeLessThanOrEqual(1_024);
    expect(d.responsePreview).toBe(body.slice(0, d.responsePreview.length));
    expect(d.responsePreview.length).toBe(1_024);
    expect((await deliveryRow(d.id)).response_preview).toBe(d.responsePreview);
  });

  it('keeps an answer with NUL bytes as a preview with U+FFFD in their place (the delivery stayed pending: Postgres refused the record), beside a delivery of another workspace sent at the same time', async () => {
    const hostile = await ownerOn(app, 'lite', 'deliv-nul');
    const hostileHook = await hookTo(hostile, await receiver({ status: 200, body: 'ok\u0000then\u0000more' }));
    const other = await ownerOn(app, 'lite', 'deliv-nul-other');
    const otherHook = await hookTo(other, await receiver({ status: 200, body: 'fine' }));
    // At the same time: the two attempts may be recorded by one statement (db/batched.ts), which one
    // unstorable answer used to fail for both.
    const [d, o] = await Promise.all([sendTest(hostile, hostileHook.id), sendTest(other, otherHook.id)]);
    expect(d).toMatchObject({ status: 'success', responseStatus: 200, responsePreview: 'ok\ufffdthen\ufffdmore' });
    expect((await deliveryRow(d.id)).response_preview).toBe('ok\ufffdthen\ufffdmore');
    expect(o).toMatchObject({ status: 'success', responsePreview: 'fine' });
    expect(await deliveryRow(o.id)).toMatchObject({ status: 'success', response_preview: 'fine', attempts: 1 });
  });
});

describe('POST /workspaces/:workspaceId/webhook-deliveries/:deliveryId/retry', () => {
  const retry = (s: Session, id: string) =>
    app.api('POST', `/workspaces/${s.workspaceId}/webhook-deliveries/${id}/retry`, { token: s.accessToken });

  it('re-sends a failed delivery with the same X-Service-Delivery and a fresh timestamp and signature', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-manual');
    const r = await receiver([{ status: 410 }, { status: 200, body: 'back' }]);
    const hook = await hookTo(s, r);
    const failed = await sendTest(s, hook.id);
    expect(failed.status).toBe('failed');

    // A second later (the timestamp has whole seconds): the clock 1.1 s ahead.
    const res = await clockAhead(1_100, () => retry(s, failed.id));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      id: failed.id,
      status: 'success',
      attempts: 2,
      responseStatus: 200,
      responsePreview: 'back',
      error: null,
    });
    expect(r.requests).toHaveLength(2);
    const [a, b] = r.requests;
    expect(b.headers['x-service-delivery']).toBe(failed.id);
    expect(a.headers['x-service-delivery']).toBe(failed.id);
    expect(Number(b.headers['x-service-timestamp'])).toBeGreaterThan(Number(a.headers['x-service-timestamp']));
    expectSignedDelivery(b, hook.secret, 'webhook.test');
    expect(signaturesOf(b)[0]).not.toBe(signaturesOf(a)[0]);
  });

  it('makes one more attempt: a sweep while the endpoint holds it does not send the delivery a second time', async () => {
    const slow = await patient();
    const s = await ownerOn(app, 'lite', 'deliv-manual-slow');
    const r = await receiver([{ status: 410 }, { status: 200, body: 'slow but fine', held: true }]);
    const hook = await hookTo(s, r);
    const failed = await sendTest(s, hook.id);
    expect(failed).toMatchObject({ status: 'failed', attempts: 1 });
    // Older than 30 s, as a delivery retried by hand usually is: pending again, the sweep would take it.
    await ageDelivery(failed.id);

    const retried = slow.api('POST', `/workspaces/${s.workspaceId}/webhook-deliveries/${failed.id}/retry`, {
      token: s.accessToken,
    });
    await r.waitForRequests(2);
    await slow.deps.webhooks.sweep();
    await app.deps.webhooks.sweep();
    // A second attempt, had one of those sweeps started it, has reached the receiver before a later sweep's.
    await sweepAndSettle();
    r.release();
    const res = await retried;
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: failed.id, status: 'success', attempts: 2, responsePreview: 'slow but fine' });
    expect(r.requests).toHaveLength(2);
    expect(new Set(r.requests.map((q) => q.headers['x-service-delivery']))).toEqual(new Set([failed.id]));
    expect(await deliveryRow(failed.id)).toMatchObject({ status: 'success', attempts: 2 });
  }, 20_000);

  it('refuses to retry a successful delivery with 409 INVALID_STATE, and answers 404 for an unknown or foreign delivery', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-manual-ok');
    const r = await receiver({ status: 200 });
    const hook = await hookTo(s, r);
    const ok = await sendTest(s, hook.id);
    expectError(await retry(s, ok.id), 409, 'INVALID_STATE');
    expect(r.requests).toHaveLength(1);
    expectError(await retry(s, crypto.randomUUID()), 404, 'NOT_FOUND');
    const other = await ownerOn(app, 'lite', 'deliv-manual-other');
    expectError(await retry(other, ok.id), 404, 'NOT_FOUND');
    expect(r.requests).toHaveLength(1);
  });
});

describe('signing secret rotation', () => {
  const rotate = (s: Session, hookId: string, gracePeriodSeconds: number) =>
    app.api('POST', `/workspaces/${s.workspaceId}/webhooks/${hookId}/rotate-secret`, {
      token: s.accessToken,
      body: { gracePeriodSeconds },
    });

  it('during the grace period sends both signatures, new first, each valid with its secret; after it only the new one', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-rotate');
    const r = await receiver({ status: 200 });
    const hook = await hookTo(s, r);
    const rotated = await rotate(s, hook.id, 2);
    expect(rotated.status, rotated.text).toBe(200);
    const newSecret = rotated.body.secret as string;
    trackSecret(newSecret, 'a webhook signing secret');
    secrets.push(newSecret);
    const endsAt = new Date(rotated.body.secretRotationEndsAt).getTime();

    await sendTest(s, hook.id);
    const [during] = await r.waitForRequests(1);
    const ts = String(during.headers['x-service-timestamp']);
    const sigs = signaturesOf(during);
    expect(sigs).toHaveLength(2);
    expect(sigs[0]).toBe(expectedSignature(newSecret, ts, during.body));
    expect(sigs[1]).toBe(expectedSignature(hook.secret, ts, during.body));

    // After the grace period: the clock 300 ms past its end.
    await clockAhead(Math.max(0, endsAt - Date.now()) + 300, () => sendTest(s, hook.id));
    const [, after] = await r.waitForRequests(2);
    expectSignedDelivery(after, newSecret, 'webhook.test');
  });

  it('with gracePeriodSeconds 0 signs with the new secret only, at once', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-rotate0');
    const r = await receiver({ status: 200 });
    const hook = await hookTo(s, r);
    const rotated = await rotate(s, hook.id, 0);
    expect(rotated.status, rotated.text).toBe(200);
    trackSecret(rotated.body.secret, 'a webhook signing secret');
    secrets.push(rotated.body.secret);
    await sendTest(s, hook.id);
    const [req] = await r.waitForRequests(1);
    expectSignedDelivery(req, rotated.body.secret, 'webhook.test');
    expect(signaturesOf(req)[0]).not.toBe(
      expectedSignature(hook.secret, String(req.headers['x-service-timestamp']), req.body),
    );
  });
});

describe('domain events', () => {
  it('a MOCK checkout sends billing.updated, subscription.created and payment.succeeded to a subscribed webhook, and nothing to an unsubscribed one', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-checkout');
    const subscribed = await receiver({ status: 200 });
    const other = await receiver({ status: 200 });
    const hook = await hookTo(s, subscribed, ['billing.updated', 'subscription.created', 'payment.succeeded']);
    const unsubscribed = await hookTo(s, other, ['member.added', 'ai.generation.completed', 'subscription.canceled']);

    await upgradeWorkspace(app, s.accessToken, s.workspaceId, 'pro');
    const reqs = await subscribed.waitForRequests(3, 10_000);
    expect(reqs.map((q) => q.headers['x-service-event']).sort()).toEqual([
      'billing.updated',
      'payment.succeeded',
      'subscription.created',
    ]);
    for (const q of reqs) {
      const env = expectSignedDelivery(q, hook.secret, String(q.headers['x-service-event']));
      expect(env.workspaceId).toBe(s.workspaceId);
    }

    const rows = await deliveriesOf(hook.id);
    await waitFor(async () => (await deliveriesOf(hook.id)).every((d) => d.status === 'success') || undefined, {
      timeout: 5_000,
      message: 'the deliveries to be recorded success',
    });
    expect(rows.map((d) => d.event).sort()).toEqual(['billing.updated', 'payment.succeeded', 'subscription.created']);
    // Every event of the checkout dispatched: a delivery to each subscribed webhook is written in the same
    // transaction as the event is marked dispatched, so none will come for the unsubscribed one.
    await waitFor(async () => (await undispatchedEvents(s.workspaceId)) === 0, {
      message: 'the events of the checkout to be dispatched',
    });
    expect(await deliveriesOf(unsubscribed.id)).toEqual([]);
    expect(other.requests).toHaveLength(0);
    expect(subscribed.requests).toHaveLength(3);
  });

  it('an accepted invitation sends member.added, and a removal member.removed', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-member');
    const r = await receiver({ status: 200 });
    const hook = await hookTo(s, r, ['member.added', 'member.removed']);
    const member = await inviteAndJoin(app, s.accessToken, s.workspaceId, 'MEMBER');
    const [added] = await r.waitForRequests(1);
    const env = expectSignedDelivery(added, hook.secret, 'member.added');
    expect(env.workspaceId).toBe(s.workspaceId);
    expect(env.data).toMatchObject({ userId: member.userId, role: 'MEMBER' });

    const removed = await app.api('DELETE', `/workspaces/${s.workspaceId}/members/${member.userId}`, {
      token: s.accessToken,
    });
    expect(removed.status, removed.text).toBe(200);
    const [, gone] = await r.waitForRequests(2);
    expect(expectSignedDelivery(gone, hook.secret, 'member.removed').data).toMatchObject({ userId: member.userId });
  });

  it('creating and revoking an API key sends api_key.created and api_key.revoked, without the raw key', async () => {
    const s = await ownerOn(app, 'pro', 'deliv-keys');
    const r = await receiver({ status: 200 });
    const hook = await hookTo(s, r, ['api_key.created', 'api_key.revoked']);
    const key = await createKey(app, s, { name: 'hooked key', scopes: ['read'] });
    const [created] = await r.waitForRequests(1);
    const env = expectSignedDelivery(created, hook.secret, 'api_key.created');
    expect(env.data).toMatchObject({ apiKeyId: key.id, name: 'hooked key', prefix: key.prefix });
    expect(created.body).not.toContain(key.rawKey);

    expect(
      (await app.api('DELETE', `/workspaces/${s.workspaceId}/api-keys/${key.id}`, { token: s.accessToken })).status,
    ).toBe(200);
    const [, revoked] = await r.waitForRequests(2);
    expect(expectSignedDelivery(revoked, hook.secret, 'api_key.revoked').data).toMatchObject({ apiKeyId: key.id });
    expect(revoked.body).not.toContain(key.rawKey);
  });

  it('a text generation sends ai.generation.completed', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-ai');
    const r = await receiver({ status: 200 });
    const hook = await hookTo(s, r, ['ai.generation.completed']);
    const gen = await app.api('POST', '/ai/generate', {
      token: s.accessToken,
      body: { workspaceId: s.workspaceId, prompt: 'Write a haiku about webhooks.' },
    });
    expect(gen.status, gen.text).toBe(200);
    const [req] = await r.waitForRequests(1);
    expect(expectSignedDelivery(req, hook.secret, 'ai.generation.completed').data).toMatchObject({
      generationId: gen.body.id,
    });
  });

  it('a burst of events larger than a dispatch batch is dispatched within a run or two, not at a batch a second', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-burst');
    const r = await receiver({ status: 200 });
    const hook = await hookTo(s, r, ['member.added']);
    // 1,200 events at once, as a burst of changes writes them (more than two batches of 500).
    await sql`insert into domain_events (workspace_id, type, payload)
      select ${s.workspaceId}, 'member.added', jsonb_build_object('n', i) from generate_series(1, 1200) as i`.execute(
      app.deps.db,
    );
    const pending = () =>
      app.deps.db
        .selectFrom('domain_events')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('workspace_id', '=', s.workspaceId)
        .where('dispatched_at', 'is', null)
        .executeTakeFirstOrThrow();
    await waitFor(async () => (Number((await pending()).n) === 0 ? true : undefined), {
      timeout: 4_000,
      interval: 100,
      message: 'the burst to be dispatched',
    });
    expect(await deliveriesOf(hook.id)).toHaveLength(1200);
    await r.waitForRequests(1200, 20_000);
  }, 30_000);

  it('an inactive webhook gets no delivery for an event it subscribes to', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-inactive');
    const r = await receiver({ status: 200 });
    const hook = await hookTo(s, r, ['member.added']);
    const live = await hookTo(s, await receiver({ status: 200 }), ['member.added']);
    expect(
      (
        await app.api('PATCH', `/workspaces/${s.workspaceId}/webhooks/${hook.id}`, {
          token: s.accessToken,
          body: { isActive: false },
        })
      ).status,
    ).toBe(200);
    await inviteAndJoin(app, s.accessToken, s.workspaceId, 'VIEWER');
    await waitFor(async () => (await deliveriesOf(live.id)).length > 0 || undefined, {
      message: 'the active webhook to get member.added',
    });
    expect((await deliveriesOf(hook.id)).filter((d) => d.status !== 'disabled')).toEqual([]);
    expect(r.requests).toHaveLength(0);
  });
});

describe('delivery switches', () => {
  it('WEBHOOK_DELIVERY_ENABLED=false records the delivery disabled and calls nothing', async () => {
    const off = await extraApp({ WEBHOOK_DELIVERY_ENABLED: 'false', WEBHOOK_ALLOW_PRIVATE_URLS: 'true' });
    const s = await ownerOn(app, 'lite', 'deliv-off');
    const r = await receiver({ status: 200 });
    const hook = await hookTo(s, r);
    const d = await sendTest(s, hook.id, off);
    expect(d).toMatchObject({ status: 'disabled', responseStatus: null });
    expect(d.error).toMatch(/WEBHOOK_DELIVERY_ENABLED/);
    expect(await requestsBeforeALaterOne(r)).toHaveLength(0);
    expect((await deliveryRow(d.id)).status).toBe('disabled');
  });

  it('a demo workspace\u2019s deliveries are recorded disabled by default (WEBHOOK_DEMO_DELIVERY_DISABLED), and sent when it is false; a demo account as a mere member changes nothing', async () => {
    const demo = await registerDemo(app, DEMO_EMAIL);
    const r = await receiver({ status: 200 });
    // Demo accounts cannot create webhooks (DEMO_READ_ONLY): their webhooks come from the demo seed.
    const hook = await insertHook(demo.workspaceId, r.url());
    const d = await sendTest(demo, hook.id);
    expect(d.status).toBe('disabled');
    expect(d.error).toMatch(/demo/i);

    const allowed = await extraApp({
      WEBHOOK_DEMO_DELIVERY_DISABLED: 'false',
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      WEBHOOK_USER_AGENT: USER_AGENT,
    });
    const sent = await sendTest(demo, hook.id, allowed);
    expect(sent.status).toBe('success');
    const [req] = await r.waitForRequests(1);
    expectSignedDelivery(req, hook.secret, 'webhook.test');
    // The disabled delivery sent nothing: the receiver's one request is the later one's.
    expect(r.requests.map((q) => q.headers['x-service-delivery'])).toEqual([sent.id]);

    // A workspace is a demo workspace through its owners: the demo account as a mere member changes nothing.
    const s = await ownerOn(app, 'lite', 'deliv-demo-member');
    await app.deps.db
      .insertInto('workspace_members')
      .values({ workspace_id: s.workspaceId, user_id: demo.userId, role: 'ADMIN' })
      .execute();
    const other = await receiver({ status: 200 });
    const otherHook = await hookTo(s, other);
    expect((await sendTest(s, otherHook.id)).status).toBe('success');
    expect(other.requests).toHaveLength(1);
  });
});

describe('the URL is checked again at delivery (app without WEBHOOK_ALLOW_PRIVATE_URLS)', () => {
  let strictApp: TestApp;
  beforeAll(async () => {
    strictApp = await extraApp({ WEBHOOK_ALLOW_PRIVATE_URLS: 'false', WEBHOOK_USER_AGENT: USER_AGENT });
  });

  it('refuses a loopback URL written before the rule (row inserted directly): failed, not retried, nothing sent', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-ssrf-literal');
    const r = await receiver({ status: 200 });
    const hook = await insertHook(s.workspaceId, r.url());
    const d = await sendTest(s, hook.id, strictApp);
    expect(d).toMatchObject({ status: 'failed', attempts: 1, responseStatus: null, nextRetryAt: null });
    expect(d.error).toMatch(/not allowed/i);
    expect(await requestsBeforeALaterOne(r)).toHaveLength(0);
  });

  it('refuses port 0 written before the rule (private URLs allowed): failed at once, not retried', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-port-0');
    const hook = await insertHook(s.workspaceId, 'http://127.0.0.1:0/hook');
    const d = await sendTest(s, hook.id);
    expect(d).toMatchObject({ status: 'failed', attempts: 1, responseStatus: null, nextRetryAt: null });
    expect(d.error).toMatch(/not allowed.*port 0/i);
  });

  it(`refuses the machine's own name (${os.hostname()}, resolved by /etc/hosts) at delivery, and nothing is sent`, async () => {
    const s = await ownerOn(app, 'lite', 'deliv-ssrf-hostname');
    const r = await receiver({ status: 200 });
    const hook = await insertHook(s.workspaceId, `http://${os.hostname()}:${r.port}/hook`);
    const d = await sendTest(s, hook.id, strictApp);
    expect(d.status).toBe('failed');
    expect(d.error).toMatch(/not allowed/i);
    expect(await requestsBeforeALaterOne(r)).toHaveLength(0);
  });

  it('refuses a public-looking name whose DNS answer is 127.0.0.1 at delivery time, though it passed at creation', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-ssrf-dns');
    const r = await receiver({ status: 200 });
    const name = `hooks-${hex()}.rebind.example`;
    const created = await strictApp.api('POST', `/workspaces/${s.workspaceId}/webhooks`, {
      token: s.accessToken,
      body: { name: 'rebinding', url: `http://${name}:${r.port}/hook`, events: ['webhook.test'] },
    });
    expect(created.status, created.text).toBe(201);
    trackSecret(created.body.secret, 'a webhook signing secret');
    secrets.push(created.body.secret);

    const spy = resolving(name, '127.0.0.1');
    try {
      const d = await sendTest(s, created.body.id, strictApp);
      expect(spy.mock.calls.some(([h]) => h === name)).toBe(true);
      expect(d.status).toBe('failed');
      expect(d.error).toMatch(/resolves to a private/i);
      expect(await requestsBeforeALaterOne(r)).toHaveLength(0);
    } finally {
      spy.mockRestore();
    }
  });

  it('connects to the address that was checked: a name only the checked lookup knows is delivered to that address, looked up once for the deliveries of WEBHOOK_DNS_CACHE_SECONDS (30 by default)', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-pinned');
    const r = await receiver({ status: 200 });
    const name = `pinned-${hex()}.example`;
    const hook = await createWebhook(app, s, { url: `http://${name}:${r.port}/hook`, events: ['webhook.test'] });
    secrets.push(hook.secret);

    const spy = resolving(name, '127.0.0.1');
    try {
      for (let i = 0; i < 3; i++) {
        const d = await sendTest(s, hook.id);
        expect(d.status, d.error).toBe('success');
      }
      expect(spy.mock.calls.filter(([h]) => h === name)).toHaveLength(1);
    } finally {
      spy.mockRestore();
    }
    const requests = await r.waitForRequests(3);
    expect(requests.map((req) => req.headers.host)).toEqual(Array(3).fill(`${name}:${r.port}`));
  });
});

describe('endpoints that keep failing', () => {
  const DAY = 86_400_000;
  const setStreak = (id: string, failures: number, sinceMsAgo: number) =>
    app.deps.db
      .updateTable('webhooks')
      .set({ consecutive_failures: failures, failing_since: new Date(Date.now() - sinceMsAgo) })
      .where('id', '=', id)
      .execute();
  const hookRow = (id: string) =>
    app.deps.db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  it('are switched off after 15 failed deliveries in a row over at least 3 days, and the owners are mailed', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-streak');
    const r = await receiver({ status: 410 });
    const hook = await hookTo(s, r);
    await setStreak(hook.id, 14, 4 * DAY);

    const d = await sendTest(s, hook.id);
    expect(d.status).toBe('failed');
    const row = await hookRow(hook.id);
    expect(row.is_active).toBe(false);
    expect(row.consecutive_failures).toBe(15);
    expect(row.disabled_reason).toMatch(/15/);

    const listed = await app.api('GET', `/workspaces/${s.workspaceId}/webhooks`, { token: s.accessToken });
    expect(listed.body.items.find((h: { id: string }) => h.id === hook.id)).toMatchObject({
      isActive: false,
      disabledReason: row.disabled_reason,
    });

    const mails = (await mailsTo(app, s.email)).filter((m) => m.template === 'webhook-disabled');
    expect(mails).toHaveLength(1);
    expect(mails[0].text).toContain(hook.name);
    expect(mails[0].text).not.toContain(hook.secret);
    expect((await auditActions(app, s.workspaceId, hook.id)).map((a) => a.action)).toContain('webhook.disabled');

    const next = await sendTest(s, hook.id);
    expect(next.status).toBe('disabled');
    expect(r.requests).toHaveLength(1);
  });

  it('stay on when the 15 failures span less than 3 days', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-streak-short');
    const r = await receiver({ status: 410 });
    const hook = await hookTo(s, r);
    await setStreak(hook.id, 14, 1 * DAY);
    expect((await sendTest(s, hook.id)).status).toBe('failed');
    const row = await hookRow(hook.id);
    expect(row).toMatchObject({ is_active: true, consecutive_failures: 15, disabled_reason: null });
    expect((await mailsTo(app, s.email)).filter((m) => m.template === 'webhook-disabled')).toEqual([]);
  });

  it('start a new streak after a success', async () => {
    const s = await ownerOn(app, 'lite', 'deliv-streak-reset');
    const r = await receiver({ status: 200 });
    const hook = await hookTo(s, r);
    await setStreak(hook.id, 9, 2 * DAY);
    expect((await sendTest(s, hook.id)).status).toBe('success');
    expect(await hookRow(hook.id)).toMatchObject({ consecutive_failures: 0, failing_since: null, is_active: true });
  });
});

describe('the signing secret stays secret', () => {
  it('never appears in a delivery row, its request headers, or a log line of any app of this file', async () => {
    expect(secrets.length).toBeGreaterThan(10);
    const rows = await app.deps.db.selectFrom('webhook_deliveries').selectAll().execute();
    expect(rows.length).toBeGreaterThan(10);
    const stored = JSON.stringify(rows);
    for (const secret of secrets) expect(stored).not.toContain(secret);
    for (const row of rows) {
      expect(Object.keys(row.request_headers ?? {}).filter((k) => /signature|secret/i.test(k))).toEqual([]);
    }
    const logs = [app, ...extraApps].flatMap((a) => a.logs).join('\n');
    expect(logs).not.toContain('whsec_');
    for (const secret of secrets) expect(logs).not.toContain(secret.slice('whsec_'.length));
  });
});
