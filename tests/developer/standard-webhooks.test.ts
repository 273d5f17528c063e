// Standard Webhooks beside the spec's headers (docs/api.md "Webhooks"): every delivery carries webhook-id,
// webhook-timestamp and webhook-signature, checked here by the official `standardwebhooks` package on a
// loopback receiver, during a secret rotation too; the spec's X-Service-* headers are unchanged; a secret
// from before the format (base64url) gets only X-Service-Signature.
//
// A database of the file's own, as for every delivery test (tests/developer/helpers.ts).
import crypto from 'node:crypto';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { Session } from '../helpers/http.js';
import { WebhookReceiver, expectedSignature, signaturesOf, type ReceivedRequest } from '../helpers/webhook-receiver.js';
import { createWebhook, hex, ownDatabase, ownerOn, startAppOn, trackSecret, type OwnDatabase } from './helpers.js';

let db: OwnDatabase;
let app: TestApp;
let r: WebhookReceiver;

beforeAll(async () => {
  db = await ownDatabase('stdhooks');
  [app, r] = await Promise.all([startAppOn(db, { WEBHOOK_ALLOW_PRIVATE_URLS: 'true' }), WebhookReceiver.start()]);
  r.reply({ status: 200 });
});
afterAll(async () => {
  await r?.close();
  await app?.close();
  await db?.drop();
});

/** The Standard Webhooks headers of a received request. */
const standardHeaders = (req: ReceivedRequest) => ({
  'webhook-id': String(req.headers['webhook-id']),
  'webhook-timestamp': String(req.headers['webhook-timestamp']),
  'webhook-signature': String(req.headers['webhook-signature']),
});

/** Sends a test delivery to `hookId` and answers what the receiver got. */
async function deliver(s: Session, hookId: string): Promise<{ req: ReceivedRequest; deliveryId: string }> {
  const seen = r.requests.length;
  const res = await app.api('POST', `/workspaces/${s.workspaceId}/webhooks/${hookId}/test`, { token: s.accessToken });
  expect(res.status, res.text).toBe(200);
  const all = await r.waitForRequests(seen + 1);
  return { req: all[seen], deliveryId: res.body.id };
}

/** Whether the official verifier accepts the request with `secret` (and `signature` instead of the header's). */
function verifies(secret: string, req: ReceivedRequest, signature?: string): boolean {
  const headers = standardHeaders(req);
  if (signature !== undefined) headers['webhook-signature'] = signature;
  try {
    new Webhook(secret).verify(req.body, headers);
    return true;
  } catch (err) {
    if (err instanceof WebhookVerificationError) return false;
    throw err;
  }
}

describe('Standard Webhooks headers', () => {
  it('carry the delivery id, the timestamp and a v1 signature that the official library verifies', async () => {
    const s = await ownerOn(app, 'lite', 'std-sign');
    const hook = await createWebhook(app, s, { url: r.url('/std') });
    const { req, deliveryId } = await deliver(s, hook.id);

    expect(req.headers['webhook-id']).toBe(deliveryId);
    expect(req.headers['webhook-timestamp']).toBe(req.headers['x-service-timestamp']);
    expect(Math.abs(Number(req.headers['webhook-timestamp']) - req.receivedAt / 1000)).toBeLessThan(10);
    expect(req.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(verifies(hook.secret, req)).toBe(true);
    expect(new Webhook(hook.secret).verify(req.body, standardHeaders(req))).toEqual(JSON.parse(req.body));

    // The spec's headers, unchanged beside them.
    expect(req.headers['x-service-delivery']).toBe(deliveryId);
    expect(req.headers['x-service-event']).toBe('webhook.test');
    expect(signaturesOf(req)).toEqual([
      expectedSignature(hook.secret, String(req.headers['x-service-timestamp']), req.body),
    ]);

    // The delivery log records the headers sent, never a signature.
    const row = await app.deps.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('id', '=', deliveryId)
      .executeTakeFirstOrThrow();
    expect(row.request_headers).toMatchObject({ 'webhook-id': deliveryId });
    expect(Object.keys(row.request_headers ?? {}).filter((k) => /signature/i.test(k))).toEqual([]);
    expect(JSON.stringify(row)).not.toContain(String(req.headers['webhook-signature']).slice(3));

    // Anything changed fails: another secret, another body, another id, another timestamp.
    const other = `whsec_${crypto.randomBytes(32).toString('base64')}`;
    expect(verifies(other, req)).toBe(false);
    expect(() => new Webhook(hook.secret).verify(`${req.body} `, standardHeaders(req))).toThrow(
      WebhookVerificationError,
    );
    expect(() =>
      new Webhook(hook.secret).verify(req.body, { ...standardHeaders(req), 'webhook-id': crypto.randomUUID() }),
    ).toThrow(WebhookVerificationError);
    expect(() =>
      new Webhook(hook.secret).verify(req.body, {
        ...standardHeaders(req),
        'webhook-timestamp': String(Number(req.headers['webhook-timestamp']) + 1),
      }),
    ).toThrow(WebhookVerificationError);
  });

  it('during a secret rotation carry both signatures, space-separated, each verifying with its own secret', async () => {
    const s = await ownerOn(app, 'lite', 'std-rotate');
    const hook = await createWebhook(app, s, { url: r.url('/std-rotate') });
    const rotated = await app.api('POST', `/workspaces/${s.workspaceId}/webhooks/${hook.id}/rotate-secret`, {
      token: s.accessToken,
      body: { gracePeriodSeconds: 600 },
    });
    expect(rotated.status, rotated.text).toBe(200);
    const newSecret = rotated.body.secret as string;
    trackSecret(newSecret, 'a webhook signing secret');

    const { req } = await deliver(s, hook.id);
    const signatures = String(req.headers['webhook-signature']).split(' ');
    expect(signatures).toHaveLength(2);
    // Either secret verifies the delivery as sent.
    expect(verifies(newSecret, req)).toBe(true);
    expect(verifies(hook.secret, req)).toBe(true);
    // The new secret's first; each signature is its own secret's.
    expect(verifies(newSecret, req, signatures[0])).toBe(true);
    expect(verifies(hook.secret, req, signatures[1])).toBe(true);
    expect(verifies(hook.secret, req, signatures[0])).toBe(false);
    expect(verifies(newSecret, req, signatures[1])).toBe(false);
    // The spec's header still carries its two, comma-separated.
    expect(signaturesOf(req)).toHaveLength(2);
  });
});

describe('a secret from before the Standard Webhooks format', () => {
  /** A webhook whose secret is base64url (as secrets were made before), written as an old row is. */
  async function oldHook(s: Session, path: string) {
    let secret: string;
    // A base64url secret that standard base64 cannot read (it has a '-' or '_').
    do secret = `whsec_${crypto.randomBytes(32).toString('base64url')}`;
    while (!/[-_]/.test(secret.slice(6)));
    trackSecret(secret, 'a webhook signing secret');
    const row = await app.deps.db
      .insertInto('webhooks')
      .values({
        workspace_id: s.workspaceId,
        name: `old ${hex()}`,
        url: r.url(path),
        events: JSON.stringify(['webhook.test']),
        secret_encrypted: app.deps.secrets.seal(secret),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return { id: row.id, secret };
  }

  it('gets only X-Service-Signature', async () => {
    const s = await ownerOn(app, 'lite', 'std-old');
    const hook = await oldHook(s, '/old');
    const { req, deliveryId } = await deliver(s, hook.id);
    expect(req.headers['webhook-signature']).toBeUndefined();
    expect(req.headers['webhook-id']).toBe(deliveryId);
    expect(signaturesOf(req)).toEqual([
      expectedSignature(hook.secret, String(req.headers['x-service-timestamp']), req.body),
    ]);
  });

  it('rotated to a new secret: webhook-signature carries the new one only, X-Service-Signature both', async () => {
    const s = await ownerOn(app, 'lite', 'std-old-rotate');
    const hook = await oldHook(s, '/old-rotate');
    const rotated = await app.api('POST', `/workspaces/${s.workspaceId}/webhooks/${hook.id}/rotate-secret`, {
      token: s.accessToken,
      body: { gracePeriodSeconds: 600 },
    });
    expect(rotated.status, rotated.text).toBe(200);
    const newSecret = rotated.body.secret as string;
    trackSecret(newSecret, 'a webhook signing secret');
    const { req } = await deliver(s, hook.id);
    expect(String(req.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verifies(newSecret, req)).toBe(true);
    expect(signaturesOf(req)).toHaveLength(2);
  });
});
