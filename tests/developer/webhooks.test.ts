// Webhook endpoints (webhooks.manage): create, list, update, delete, secret rotation; the signing secret
// shown once and kept encrypted (AES-256-GCM); URL rules at creation and update (an app WITHOUT
// WEBHOOK_ALLOW_PRIVATE_URLS); events; permissions; demo accounts; audit. Nothing here reaches a network:
// the URLs are public names that are never called (disabled webhook) or refused before any call.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, testEnv, type TestApp } from '../helpers/app.js';
import type { Session } from '../helpers/http.js';
import { invite, inviteAndJoin } from '../workspaces/helpers.js';
import {
  auditActions,
  createWebhook,
  demoEmail,
  expectError,
  hex,
  ownerOn,
  registerAndLogin,
  registerDemo,
  trackSecret,
} from './helpers.js';

const DEMO_EMAIL = demoEmail('hooks');
const DEMO_EMAIL_2 = demoEmail('hooks2');
const PUBLIC_URL = 'https://example.com/hook';
let app: TestApp;
let owner: Session;
beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false', AI_DEMO_RESTRICTED_EMAILS: `${DEMO_EMAIL},${DEMO_EMAIL_2}` });
  owner = await ownerOn(app, 'lite', 'hooks');
});
afterAll(() => app?.close());

const hooksPath = (workspaceId: string, webhookId?: string) =>
  `/workspaces/${workspaceId}/webhooks${webhookId ? `/${webhookId}` : ''}`;
const hookRow = (id: string) => app.deps.db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst();
const create = (s: Session, body: Record<string, unknown>, workspaceId = s.workspaceId) =>
  app.api('POST', hooksPath(workspaceId), {
    token: s.accessToken,
    body: { name: `hook ${hex()}`, events: ['webhook.test'], ...body },
  });
const patch = (s: Session, id: string, body: Record<string, unknown>) =>
  app.api('PATCH', hooksPath(s.workspaceId, id), { token: s.accessToken, body });
/** A URL of exactly `length` characters on a public host. */
const urlOfLength = (length: number) => {
  const base = 'https://example.com/';
  return base + 'a'.repeat(length - base.length);
};

/** AES-256-GCM under SHA-256(WEBHOOK_SECRET_ENCRYPTION_KEY), stored as iv.tag.ciphertext (base64url): opened here with node:crypto only. */
function openSealed(sealed: string): string {
  const key = crypto.createHash('sha256').update(String(testEnv().WEBHOOK_SECRET_ENCRYPTION_KEY), 'utf8').digest();
  const [iv, tag, ciphertext] = sealed.split('.').map((p) => Buffer.from(p, 'base64url'));
  const decipher = crypto.createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
}

const WEBHOOK_FIELDS = [
  'consecutiveFailures',
  'createdAt',
  'disabledReason',
  'events',
  'id',
  'isActive',
  'name',
  'secretRotationEndsAt',
  'updatedAt',
  'url',
  'workspaceId',
];

describe('POST /workspaces/:workspaceId/webhooks', () => {
  it('answers 201 with the record and a whsec_ signing secret, on a Lite workspace (webhooks are not plan-gated)', async () => {
    const res = await create(owner, {
      name: 'Orders',
      url: PUBLIC_URL,
      events: ['billing.updated', 'payment.succeeded'],
    });
    expect(res.status, res.text).toBe(201);
    trackSecret(res.body.secret, 'a webhook signing secret');
    expect(Object.keys(res.body).sort()).toEqual([...WEBHOOK_FIELDS, 'secret'].sort());
    expect(res.body).toMatchObject({
      workspaceId: owner.workspaceId,
      name: 'Orders',
      url: PUBLIC_URL,
      events: ['billing.updated', 'payment.succeeded'],
      isActive: true,
      disabledReason: null,
      consecutiveFailures: 0,
      secretRotationEndsAt: null,
    });
    // Standard Webhooks' format: 32 random bytes in standard base64.
    expect(res.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(res.body.secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
  });

  it('gives each webhook its own secret', async () => {
    const a = await createWebhook(app, owner, { url: PUBLIC_URL });
    const b = await createWebhook(app, owner, { url: PUBLIC_URL });
    expect(a.secret).not.toBe(b.secret);
  });

  it('keeps the secret encrypted with AES-256-GCM: the row never holds it in clear, and it opens with the configured key', async () => {
    const hook = await createWebhook(app, owner, { url: PUBLIC_URL });
    const row = await hookRow(hook.id);
    const text = JSON.stringify(row);
    expect(text).not.toContain(hook.secret);
    expect(text).not.toContain(hook.secret.slice('whsec_'.length));
    expect(text).not.toContain(Buffer.from(hook.secret).toString('base64'));
    expect(openSealed(row!.secret_encrypted)).toBe(hook.secret);
    // A fresh IV each time: sealing is not deterministic, so two rows never reveal equal secrets.
    expect(row!.secret_encrypted).not.toBe(
      (await hookRow((await createWebhook(app, owner, { url: PUBLIC_URL })).id))!.secret_encrypted,
    );
  });

  it('drops repeated event names', async () => {
    const res = await create(owner, { url: PUBLIC_URL, events: ['member.added', 'member.added', 'member.removed'] });
    expect(res.status, res.text).toBe(201);
    trackSecret(res.body.secret, 'a webhook signing secret');
    expect(res.body.events).toEqual(['member.added', 'member.removed']);
  });

  it('accepts every documented event', async () => {
    const events = [
      'webhook.test',
      'billing.updated',
      'subscription.created',
      'subscription.canceled',
      'payment.succeeded',
      'payment.failed',
      'member.added',
      'member.removed',
      'api_key.created',
      'api_key.revoked',
      'ai.generation.completed',
    ];
    const hook = await createWebhook(app, owner, { url: PUBLIC_URL, events });
    expect([...hook.events].sort()).toEqual([...events].sort());
  });

  it.each([
    ['an unknown event', { url: PUBLIC_URL, events: ['billing.exploded'] }],
    ['no events', { url: PUBLIC_URL, events: [] }],
    ['events that are not a list', { url: PUBLIC_URL, events: 'billing.updated' }],
    ['no url', { events: ['webhook.test'] }],
    ['a blank name', { url: PUBLIC_URL, name: '   ' }],
  ])('refuses %s with 400 BAD_REQUEST and stores nothing', async (_label, body) => {
    const s = await ownerOn(app, 'lite', 'hooks-bad');
    expectError(await create(s, body), 400, 'BAD_REQUEST');
    expect(
      await app.deps.db.selectFrom('webhooks').select('id').where('workspace_id', '=', s.workspaceId).execute(),
    ).toEqual([]);
  });

  it('accepts a URL of 2,048 characters and refuses one of 2,049 with 400 WEBHOOK_URL_NOT_ALLOWED', async () => {
    const ok = await create(owner, { url: urlOfLength(2048) });
    expect(ok.status, ok.text.slice(0, 200)).toBe(201);
    trackSecret(ok.body.secret, 'a webhook signing secret');
    expect(ok.body.url).toHaveLength(2048);
    expectError(await create(owner, { url: urlOfLength(2049) }), 400, 'WEBHOOK_URL_NOT_ALLOWED');
  });
});

describe('SSRF: hostile URLs are refused at creation', () => {
  // Every form is checked on an app without WEBHOOK_ALLOW_PRIVATE_URLS.
  const hostile: Array<[string, string]> = [
    ['decimal loopback', 'http://2130706433/'],
    ['hex loopback', 'http://0x7f000001/'],
    ['octal loopback', 'http://0177.0.0.1/'],
    ['dotted hex loopback', 'http://0x7f.0x0.0x0.0x1/'],
    ['short loopback', 'http://127.1/'],
    ['loopback', 'http://127.0.0.1:8080/hook'],
    ['IPv6 loopback', 'http://[::1]/'],
    ['IPv4-mapped IPv6 loopback', 'http://[::ffff:127.0.0.1]/'],
    ['IPv4-mapped IPv6 loopback, long form', 'http://[0:0:0:0:0:ffff:7f00:1]/'],
    ['IPv4-mapped IPv6 metadata address', 'http://[::ffff:169.254.169.254]/'],
    ['IPv4-compatible IPv6 loopback', 'http://[::127.0.0.1]/'],
    ['10/8', 'http://10.1.2.3/'],
    ['172.16/12, low end', 'http://172.16.0.1/'],
    ['172.16/12, high end', 'http://172.31.255.254/'],
    ['192.168/16', 'http://192.168.1.1/'],
    ['cloud metadata address', 'http://169.254.169.254/latest/meta-data/'],
    ['CGNAT 100.64/10', 'http://100.64.0.1/'],
    ['multicast', 'http://224.0.0.1/'],
    ['broadcast', 'http://255.255.255.255/'],
    ['unspecified IPv4', 'http://0.0.0.0/'],
    ['unspecified IPv4, short', 'http://0/'],
    ['unspecified IPv6', 'http://[::]/'],
    ['IPv6 link-local', 'http://[fe80::1]/'],
    ['IPv6 unique local', 'http://[fc00::1]/'],
    ['IPv6 unique local fd00::/8', 'http://[fd12:3456::1]/'],
    ['localhost', 'http://localhost/'],
    ['LOCALHOST with a trailing dot', 'http://LOCALHOST./'],
    ['a subdomain of localhost', 'http://x.localhost/'],
    ['a .local name', 'http://printer.local/'],
    ['an .internal name', 'http://service.internal/'],
    ['the metadata host name', 'http://metadata.google.internal/computeMetadata/v1/'],
    ['a single-label host', 'http://intranet/'],
    ['a single-label host with a trailing dot', 'http://intranet./'],
    ['the metadata host name with a trailing dot', 'http://metadata./'],
    ['a host name of dots only', 'http://../'],
    ['a host name ending in two dots', 'http://metadata../'],
    ['credentials in the URL', 'https://user:pass@example.com/hook'],
    ['a user name in the URL', 'https://deploy@example.com/hook'],
    ['an ftp: URL', 'ftp://example.com/hook'],
    ['a file: URL', 'file:///etc/passwd'],
    ['a javascript: URL', 'javascript:alert(1)'],
    ['the empty string', ''],
    ['a relative URL', '/hook'],
    ['a URL of 2,049 characters', urlOfLength(2049)],
    ['port 0', 'https://example.com:0/hook'],
    ['port 0 written with leading zeros', 'https://example.com:000/hook'],
    ['port 0 on a public address', 'http://8.8.8.8:0/hook'],
  ];

  it('covers at least 25 forms', () => {
    expect(hostile.length).toBeGreaterThanOrEqual(25);
  });

  it.each(hostile)('refuses %s with 400 WEBHOOK_URL_NOT_ALLOWED', async (_label, url) => {
    const s = await ownerOn(app, 'lite', 'ssrf');
    const res = await create(s, { url });
    expectError(res, 400, 'WEBHOOK_URL_NOT_ALLOWED');
    expect(
      await app.deps.db.selectFrom('webhooks').select('id').where('workspace_id', '=', s.workspaceId).execute(),
    ).toEqual([]);
  });

  it.each([
    ['a number', 2130706433],
    ['null', null],
    ['an object', { href: 'http://127.0.0.1/' }],
    ['a list', ['https://example.com/hook']],
  ])('refuses a url that is %s with 400 BAD_REQUEST', async (_label, url) => {
    expectError(await create(owner, { url }), 400, 'BAD_REQUEST');
  });

  it('accepts the public control URL https://example.com/hook', async () => {
    const res = await create(owner, { url: PUBLIC_URL });
    expect(res.status, res.text).toBe(201);
    trackSecret(res.body.secret, 'a webhook signing secret');
  });
});

describe('GET /workspaces/:workspaceId/webhooks', () => {
  it('lists the webhooks, newest first, never with their secrets', async () => {
    const s = await ownerOn(app, 'lite', 'hooks-list');
    const a = await createWebhook(app, s, { url: PUBLIC_URL, name: 'first' });
    const b = await createWebhook(app, s, {
      url: 'https://hooks.example.org/in',
      name: 'second',
      events: ['member.added'],
    });
    const res = await app.api('GET', hooksPath(s.workspaceId), { token: s.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.body)).toEqual(['items']);
    expect(res.body.items.map((h: { id: string }) => h.id)).toEqual([b.id, a.id]);
    for (const item of res.body.items) expect(Object.keys(item).sort()).toEqual(WEBHOOK_FIELDS);
    expect(res.body.items[0]).toMatchObject({
      name: 'second',
      url: 'https://hooks.example.org/in',
      events: ['member.added'],
      isActive: true,
    });
    expect(res.text).not.toContain(a.secret);
    expect(res.text).not.toContain(b.secret);
    expect(res.text).not.toContain('whsec_');
  });
});

describe('PATCH /workspaces/:workspaceId/webhooks/:webhookId', () => {
  it('changes name, events and url, and never answers the secret', async () => {
    const hook = await createWebhook(app, owner, { url: PUBLIC_URL });
    const res = await patch(owner, hook.id, {
      name: 'renamed',
      events: ['payment.failed'],
      url: 'https://example.net/new',
    });
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(WEBHOOK_FIELDS);
    expect(res.body).toMatchObject({
      id: hook.id,
      name: 'renamed',
      events: ['payment.failed'],
      url: 'https://example.net/new',
    });
    expect(res.text).not.toContain(hook.secret);
    expect(await hookRow(hook.id)).toMatchObject({
      name: 'renamed',
      url: 'https://example.net/new',
      events: ['payment.failed'],
    });
  });

  it('checks the URL again: a hostile URL is refused with 400 WEBHOOK_URL_NOT_ALLOWED and nothing changes', async () => {
    const hook = await createWebhook(app, owner, { url: PUBLIC_URL });
    const hostile = ['http://127.0.0.1/', 'http://[::ffff:10.0.0.1]/', 'http://metadata.google.internal/'];
    hostile.push('file:///etc/hosts');
    for (const url of [...hostile, urlOfLength(2049), 'https://example.com:0/hook']) {
      expectError(await patch(owner, hook.id, { url }), 400, 'WEBHOOK_URL_NOT_ALLOWED');
      expectError(await patch(owner, hook.id, { url, name: 'sneaky' }), 400, 'WEBHOOK_URL_NOT_ALLOWED');
    }
    expect(await hookRow(hook.id)).toMatchObject({ url: PUBLIC_URL, name: hook.name });
  });

  it('accepts a URL of 2,048 characters on update', async () => {
    const hook = await createWebhook(app, owner, { url: PUBLIC_URL });
    const res = await patch(owner, hook.id, { url: urlOfLength(2048) });
    expect(res.status, res.text.slice(0, 200)).toBe(200);
    expect(res.body.url).toHaveLength(2048);
  });

  it('refuses an unknown event and an empty change with 400 BAD_REQUEST', async () => {
    const hook = await createWebhook(app, owner, { url: PUBLIC_URL });
    expectError(await patch(owner, hook.id, { events: ['nope.never'] }), 400, 'BAD_REQUEST');
    expectError(await patch(owner, hook.id, {}), 400, 'BAD_REQUEST');
  });

  it('refuses an isActive that is not a boolean with 400 BAD_REQUEST: the string "false" never switches a webhook on', async () => {
    const hook = await createWebhook(app, owner, { url: PUBLIC_URL });
    expect((await patch(owner, hook.id, { isActive: false })).status).toBe(200);
    expectError(await patch(owner, hook.id, { isActive: 'false' }), 400, 'BAD_REQUEST');
    expect((await hookRow(hook.id))!.is_active).toBe(false);
  });

  it('switches a webhook off: isActive false, and its test delivery is recorded disabled without any call', async () => {
    const hook = await createWebhook(app, owner, { url: PUBLIC_URL });
    const off = await patch(owner, hook.id, { isActive: false });
    expect(off.status, off.text).toBe(200);
    expect(off.body).toMatchObject({ isActive: false, disabledReason: expect.any(String) });

    const test = await app.api('POST', `${hooksPath(owner.workspaceId, hook.id)}/test`, { token: owner.accessToken });
    expect(test.status, test.text).toBe(200);
    expect(test.body).toMatchObject({
      webhookId: hook.id,
      event: 'webhook.test',
      status: 'disabled',
      responseStatus: null,
    });

    const on = await patch(owner, hook.id, { isActive: true });
    expect(on.body).toMatchObject({ isActive: true, disabledReason: null, consecutiveFailures: 0 });
  });

  it('answers 404 NOT_FOUND for an unknown webhook and a webhook of another workspace', async () => {
    const other = await ownerOn(app, 'lite', 'hooks-other');
    const theirs = await createWebhook(app, other, { url: PUBLIC_URL });
    for (const id of [crypto.randomUUID(), theirs.id]) {
      expectError(await patch(owner, id, { name: 'x' }), 404, 'NOT_FOUND');
      expectError(
        await app.api('DELETE', hooksPath(owner.workspaceId, id), { token: owner.accessToken }),
        404,
        'NOT_FOUND',
      );
      expectError(
        await app.api('POST', `${hooksPath(owner.workspaceId, id)}/test`, { token: owner.accessToken }),
        404,
        'NOT_FOUND',
      );
      expectError(
        await app.api('POST', `${hooksPath(owner.workspaceId, id)}/rotate-secret`, {
          token: owner.accessToken,
          body: {},
        }),
        404,
        'NOT_FOUND',
      );
    }
    expect(await hookRow(theirs.id)).toMatchObject({ name: theirs.name });
  });
});

describe('DELETE /workspaces/:workspaceId/webhooks/:webhookId', () => {
  it('answers 200, then 404 NOT_FOUND; the webhook and its delivery log are gone', async () => {
    const hook = await createWebhook(app, owner, { url: PUBLIC_URL });
    await patch(owner, hook.id, { isActive: false });
    expect(
      (await app.api('POST', `${hooksPath(owner.workspaceId, hook.id)}/test`, { token: owner.accessToken })).status,
    ).toBe(200);

    const res = await app.api('DELETE', hooksPath(owner.workspaceId, hook.id), { token: owner.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(typeof res.body.message).toBe('string');
    expect(await hookRow(hook.id)).toBeUndefined();
    expect(
      await app.deps.db.selectFrom('webhook_deliveries').select('id').where('webhook_id', '=', hook.id).execute(),
    ).toEqual([]);
    expectError(
      await app.api('DELETE', hooksPath(owner.workspaceId, hook.id), { token: owner.accessToken }),
      404,
      'NOT_FOUND',
    );
    expectError(await patch(owner, hook.id, { name: 'ghost' }), 404, 'NOT_FOUND');
  });
});

describe('POST /workspaces/:workspaceId/webhooks/:webhookId/rotate-secret', () => {
  const rotate = (s: Session, id: string, body: Record<string, unknown> = {}) =>
    app.api('POST', `${hooksPath(s.workspaceId, id)}/rotate-secret`, { token: s.accessToken, body });

  it('answers a new secret once, with a rotation window of 86,400 s by default, and keeps the old one encrypted for it', async () => {
    const hook = await createWebhook(app, owner, { url: PUBLIC_URL });
    const before = Date.now();
    const res = await rotate(owner, hook.id);
    expect(res.status, res.text).toBe(200);
    trackSecret(res.body.secret, 'a webhook signing secret');
    expect(res.body.secret).toMatch(/^whsec_/);
    expect(res.body.secret).not.toBe(hook.secret);
    expect(res.text).not.toContain(hook.secret);
    const ends = new Date(res.body.secretRotationEndsAt).getTime();
    expect(ends).toBeGreaterThanOrEqual(before + 86_400_000 - 2_000);
    expect(ends).toBeLessThanOrEqual(Date.now() + 86_400_000 + 2_000);

    const row = (await hookRow(hook.id))!;
    expect(openSealed(row.secret_encrypted)).toBe(res.body.secret);
    expect(openSealed(row.previous_secret_encrypted!)).toBe(hook.secret);
    expect(JSON.stringify(row)).not.toContain(res.body.secret);
    expect(JSON.stringify(row)).not.toContain(hook.secret);

    const listed = await app.api('GET', hooksPath(owner.workspaceId), { token: owner.accessToken });
    expect(listed.text).not.toContain(res.body.secret);
    expect(listed.body.items.find((h: { id: string }) => h.id === hook.id).secretRotationEndsAt).toBe(
      res.body.secretRotationEndsAt,
    );
  });

  it('with gracePeriodSeconds 0 drops the old secret at once', async () => {
    const hook = await createWebhook(app, owner, { url: PUBLIC_URL });
    const res = await rotate(owner, hook.id, { gracePeriodSeconds: 0 });
    expect(res.status, res.text).toBe(200);
    trackSecret(res.body.secret, 'a webhook signing secret');
    expect(res.body.secretRotationEndsAt).toBeNull();
    expect((await hookRow(hook.id))!.previous_secret_encrypted).toBeNull();
  });

  it('refuses a negative grace period with 400 BAD_REQUEST', async () => {
    const hook = await createWebhook(app, owner, { url: PUBLIC_URL });
    expectError(await rotate(owner, hook.id, { gracePeriodSeconds: -5 }), 400, 'BAD_REQUEST');
    expect(openSealed((await hookRow(hook.id))!.secret_encrypted)).toBe(hook.secret);
  });
});

describe('who may manage webhooks', () => {
  it('refuses a MEMBER with 403 PERMISSION_DENIED', async () => {
    const s = await ownerOn(app, 'lite', 'hooks-perm');
    const hook = await createWebhook(app, s, { url: PUBLIC_URL });
    const member = await inviteAndJoin(app, s.accessToken, s.workspaceId, 'MEMBER');
    const t = member.accessToken;
    expectError(await app.api('GET', hooksPath(s.workspaceId), { token: t }), 403, 'PERMISSION_DENIED');
    expectError(
      await app.api('POST', hooksPath(s.workspaceId), {
        token: t,
        body: { name: 'm', url: PUBLIC_URL, events: ['webhook.test'] },
      }),
      403,
      'PERMISSION_DENIED',
    );
    expectError(
      await app.api('PATCH', hooksPath(s.workspaceId, hook.id), { token: t, body: { name: 'm' } }),
      403,
      'PERMISSION_DENIED',
    );
    expectError(await app.api('DELETE', hooksPath(s.workspaceId, hook.id), { token: t }), 403, 'PERMISSION_DENIED');
    expectError(
      await app.api('POST', `${hooksPath(s.workspaceId, hook.id)}/test`, { token: t }),
      403,
      'PERMISSION_DENIED',
    );
    expectError(
      await app.api('GET', `/workspaces/${s.workspaceId}/webhook-deliveries`, { token: t }),
      403,
      'PERMISSION_DENIED',
    );
    expect(await hookRow(hook.id)).toBeDefined();
  });

  it('answers 404 NOT_FOUND to a non-member', async () => {
    const s = await ownerOn(app, 'lite', 'hooks-out');
    const hook = await createWebhook(app, s, { url: PUBLIC_URL });
    const outsider = await registerAndLogin(app.api, { prefix: 'hooks-outsider' });
    expectError(await app.api('GET', hooksPath(s.workspaceId), { token: outsider.accessToken }), 404, 'NOT_FOUND');
    expectError(
      await app.api('DELETE', hooksPath(s.workspaceId, hook.id), { token: outsider.accessToken }),
      404,
      'NOT_FOUND',
    );
    expect(await hookRow(hook.id)).toBeDefined();
  });

  it('refuses a demo account with 403 DEMO_READ_ONLY on create, update, delete and rotate-secret, and changes nothing', async () => {
    const s = await ownerOn(app, 'lite', 'hooks-demo-owner');
    const hook = await createWebhook(app, s, { url: PUBLIC_URL, name: 'untouched' });
    const demo = await registerDemo(app, DEMO_EMAIL);
    const { token } = await invite(app, s.accessToken, s.workspaceId, DEMO_EMAIL, 'ADMIN');
    expect((await app.api('POST', '/invitations/accept', { token: demo.accessToken, body: { token } })).status).toBe(
      200,
    );
    const t = demo.accessToken;

    expect((await app.api('GET', hooksPath(s.workspaceId), { token: t })).status).toBe(200);
    expectError(
      await app.api('POST', hooksPath(s.workspaceId), {
        token: t,
        body: { name: 'd', url: PUBLIC_URL, events: ['webhook.test'] },
      }),
      403,
      'DEMO_READ_ONLY',
    );
    expectError(
      await app.api('PATCH', hooksPath(s.workspaceId, hook.id), { token: t, body: { name: 'changed' } }),
      403,
      'DEMO_READ_ONLY',
    );
    expectError(await app.api('DELETE', hooksPath(s.workspaceId, hook.id), { token: t }), 403, 'DEMO_READ_ONLY');
    expectError(
      await app.api('POST', `${hooksPath(s.workspaceId, hook.id)}/rotate-secret`, { token: t, body: {} }),
      403,
      'DEMO_READ_ONLY',
    );

    const row = await hookRow(hook.id);
    expect(row).toMatchObject({ name: 'untouched', is_active: true });
    expect(openSealed(row!.secret_encrypted)).toBe(hook.secret);
    expect(
      await app.deps.db.selectFrom('webhooks').select('id').where('workspace_id', '=', s.workspaceId).execute(),
    ).toHaveLength(1);
  });

  it('refuses a demo account creating a webhook in its own workspace', async () => {
    const demo = await registerDemo(app, DEMO_EMAIL_2);
    const res = await app.api('POST', hooksPath(demo.workspaceId), {
      token: demo.accessToken,
      body: { name: 'd', url: PUBLIC_URL, events: ['webhook.test'] },
    });
    expectError(res, 403, 'DEMO_READ_ONLY');
    expect(
      await app.deps.db.selectFrom('webhooks').select('id').where('workspace_id', '=', demo.workspaceId).execute(),
    ).toEqual([]);
  });
});

describe('audit log', () => {
  it('records webhook.created, updated, secret_rotated and deleted with the actor, and no secret in the metadata', async () => {
    const s = await ownerOn(app, 'lite', 'hooks-audit');
    const hook = await createWebhook(app, s, { url: PUBLIC_URL });
    expect((await patch(s, hook.id, { name: 'renamed' })).status).toBe(200);
    const rotated = await app.api('POST', `${hooksPath(s.workspaceId, hook.id)}/rotate-secret`, {
      token: s.accessToken,
      body: { gracePeriodSeconds: 60 },
    });
    expect(rotated.status, rotated.text).toBe(200);
    trackSecret(rotated.body.secret, 'a webhook signing secret');
    expect((await app.api('DELETE', hooksPath(s.workspaceId, hook.id), { token: s.accessToken })).status).toBe(200);

    const rows = (await auditActions(app, s.workspaceId, hook.id)).filter((r) => r.action.startsWith('webhook.'));
    expect(rows.map((r) => r.action)).toEqual([
      'webhook.created',
      'webhook.updated',
      'webhook.secret_rotated',
      'webhook.deleted',
    ]);
    for (const r of rows) {
      expect(r.actor_user_id).toBe(s.userId);
      expect(r.target_type).toBe('webhook');
      const text = JSON.stringify(r);
      expect(text).not.toContain(hook.secret);
      expect(text).not.toContain(rotated.body.secret);
      expect(text).not.toContain('whsec_');
    }
  });
});

describe('secrets in logs', () => {
  it('never writes a signing secret into a log line', () => {
    expect(app.logs.join('\n')).not.toContain('whsec_');
  });
});
