// Every route the product promises (its route tables, and the named team and admin routes) exists in
// /openapi.json and answers a correct request with a 2xx. The list of routes is the fixture
// tests/routes/spec-routes.ts.
//
// One app against a database of this file's own (tests/developer/helpers.ts explains why: every running
// app sweeps the webhook deliveries of its whole database), MOCK providers, signed inbound processor
// webhooks (their webhook secrets are set while MOCK is the active provider: a processor's inbound route
// verifies with that processor's webhook secret whenever the secret is set, active provider or not), and a local webhook receiver that answers 500 so that a delivery fails and can be retried.
//
// That every operation has a summary and tags is asserted by tests/http/openapi.test.ts, not repeated here.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, type TestApp } from '../helpers/app.js';
import {
  login,
  registerAndLogin,
  uniqueEmail,
  type ApiResponse,
  type RequestOptions,
  type Session,
} from '../helpers/http.js';
import { latestMailToken } from '../helpers/mail.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { signStripe, stripeEvent } from '../helpers/fake-stripe.js';
import { lemonEvent, signLemon } from '../helpers/fake-lemonsqueezy.js';
import { INVITATION_TEMPLATE } from '../workspaces/helpers.js';
import { apiKeyHeader, hex, ownDatabase, startAppOn, trackSecret, type OwnDatabase } from '../developer/helpers.js';
import { SPEC_ROUTES, routeKey } from './spec-routes.js';
import { waitFor } from '../helpers/wait.js';

const PROCESSOR_A_WEBHOOK_SECRET = `whsec_specroutes${hex(12)}`;
const PROCESSOR_B_WEBHOOK_SECRET = `spec-routes-lemon-${hex(12)}`;

let db: OwnDatabase;
let app: TestApp;
let receiver: WebhookReceiver;
let storageDir: string;
let png: Buffer;

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  // Every delivery fails (and, with a one-hour backoff, stays `retrying` until the retry route is called).
  receiver.reply({ status: 500, body: 'spec-routes receiver says no' });
  storageDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spec-routes-uploads-'));
  png = await sharp({ create: { width: 24, height: 16, channels: 3, background: '#2a6fdb' } })
    .png()
    .toBuffer();
  db = await ownDatabase('routes');
  app = await startAppOn(db, {
    BILLING_PROVIDER: 'MOCK',
    AI_PROVIDER: 'MOCK',
    EMAIL_PROVIDER: 'MOCK',
    PROCESSOR_A_WEBHOOK_SECRET,
    PROCESSOR_B_WEBHOOK_SECRET,
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    WEBHOOK_RETRY_BACKOFF_SECONDS: '3600',
    WEBHOOK_TIMEOUT_MS: '2000',
    STORAGE_PROVIDER: 'LOCAL',
    STORAGE_LOCAL_DIR: storageDir,
  });
});

afterAll(async () => {
  await app?.close();
  await receiver?.close();
  await db?.drop();
  if (storageDir) fs.rmSync(storageDir, { recursive: true, force: true });
});

const FIXTURE_KEYS = new Set(SPEC_ROUTES.map(routeKey));

// ---------------------------------------------------------------- test 1: the document

describe('the spec routes in /openapi.json', () => {
  it('the fixture has no duplicates and uses {param} paths', () => {
    expect(FIXTURE_KEYS.size).toBe(SPEC_ROUTES.length);
    expect(SPEC_ROUTES.filter((r) => r.path.includes(':')).map(routeKey)).toEqual([]);
  });

  it('documents every route of the spec tables with its method', async () => {
    const res = await app.api('GET', '/openapi.json');
    expect(res.status, res.text.slice(0, 300)).toBe(200);
    const paths = (res.body?.paths ?? {}) as Record<string, Record<string, unknown>>;
    const missing = SPEC_ROUTES.filter((r) => !paths[r.path]?.[r.method.toLowerCase()]).map(
      (r) => `${routeKey(r)}  (${r.source})`,
    );
    expect(missing, `${missing.length} spec route(s) missing from /openapi.json:\n  ${missing.join('\n  ')}`).toEqual(
      [],
    );
  });
});

// ---------------------------------------------------------------- test 2: each route answers

interface Outcome {
  route: string;
  url: string;
  status: number;
  expected: string;
  ok: boolean;
  excerpt: string;
}

/** What a route must answer when, by the spec, it never answers 2xx. */
interface Documented {
  status: number;
  code: string;
}

const templateRegExp = (p: string) => new RegExp(`^${p.replace(/\{[^}]+\}/g, '[^/?]+')}(\\?.*)?$`);

function form(field: string, data: Buffer, name: string, type: string, fields: Record<string, string> = {}) {
  const f = new FormData();
  for (const [k, v] of Object.entries(fields)) f.append(k, v);
  f.append(field, new Blob([data], { type }), name);
  return f;
}

describe('every spec route answers a correct request', () => {
  it('with a 2xx (or, where the spec says so, its documented status)', { timeout: 180_000 }, async () => {
    const outcomes: Outcome[] = [];
    const setupProblems: string[] = [];

    /**
     * Sends `url` to the route `route` ("METHOD /template/{param}", which must be a fixture entry) and
     * records the answer. Without `documented`, any 2xx passes.
     */
    async function hit(
      route: string,
      url: string,
      opts: RequestOptions = {},
      documented?: Documented,
    ): Promise<ApiResponse> {
      if (!FIXTURE_KEYS.has(route)) throw new Error(`test bug: ${route} is not a fixture route`);
      const [method, template] = route.split(' ') as [string, string];
      if (!templateRegExp(template).test(url)) throw new Error(`test bug: ${url} does not fit ${template}`);
      let res: ApiResponse;
      try {
        res = await app.api(method, url, opts);
      } catch (err) {
        res = { status: 0, headers: new Headers(), body: undefined, text: `request failed: ${(err as Error).message}` };
      }
      const ok = documented
        ? res.status === documented.status && (res.body as { code?: string } | undefined)?.code === documented.code
        : res.status >= 200 && res.status < 300;
      outcomes.push({
        route,
        url,
        status: res.status,
        expected: documented ? `${documented.status} ${documented.code}` : '2xx',
        ok,
        excerpt: res.text.replace(/\s+/g, ' ').slice(0, 240),
      });
      return res;
    }

    /** A fixture step whose own helper may throw (a missing mail, a delivery that never fails). */
    async function setup<T>(what: string, fn: () => Promise<T>, fallback: T): Promise<T> {
      try {
        return await fn();
      } catch (err) {
        setupProblems.push(`${what}: ${(err as Error).message}`);
        return fallback;
      }
    }

    const NO_ID = '00000000-0000-4000-8000-000000000000';
    const json = (token: string | undefined, body: unknown): RequestOptions => ({ ...(token ? { token } : {}), body });

    // ------------------------------------------------ public status checks and catalogs
    await hit('GET /health', '/health');
    await hit('GET /search/status', '/search/status');
    await hit('GET /security/status', '/security/status');
    await hit('GET /demo/status', '/demo/status');
    await hit('GET /billing/provider-status', '/billing/provider-status');
    await hit('GET /billing/plans', '/billing/plans');

    // ------------------------------------------------ authentication (an account of its own)
    const authEmail = uniqueEmail('routes-auth');
    const authPassword = 'Routes-pass-123';
    const newPassword = 'Routes-pass-456';
    await hit(
      'POST /auth/register',
      '/auth/register',
      json(undefined, { email: authEmail, password: authPassword, name: 'Route Tester' }),
    );
    const firstLogin = await hit(
      'POST /auth/login',
      '/auth/login',
      json(undefined, { email: authEmail, password: authPassword }),
    );
    await hit('GET /auth/me', '/auth/me', { token: firstLogin.body?.accessToken });
    await hit('POST /auth/resend-verification', '/auth/resend-verification', json(undefined, { email: authEmail }));
    const verifyToken = await setup(
      'verification mail',
      () => latestMailToken(app, authEmail, 'email-verification'),
      'no-token',
    );
    await hit('POST /auth/verify-email', '/auth/verify-email', json(undefined, { token: verifyToken }));
    await hit('POST /auth/forgot-password', '/auth/forgot-password', json(undefined, { email: authEmail }));
    const resetToken = await setup(
      'password reset mail',
      () => latestMailToken(app, authEmail, 'password-reset'),
      'no-token',
    );
    await hit('POST /auth/reset-password', '/auth/reset-password', json(undefined, { token: resetToken, newPassword }));
    // A reset revokes every refresh token: sign in again for the refresh and (at the end) logout.
    const authSession = await setup('login after reset', () => login(app.api, authEmail, newPassword), undefined);
    const refreshed = await hit(
      'POST /auth/refresh',
      '/auth/refresh',
      json(undefined, { refreshToken: authSession?.refreshToken ?? 'none' }),
    );
    const refreshTokenForLogout: string = refreshed.body?.refreshToken ?? authSession?.refreshToken ?? 'none';

    // ------------------------------------------------ workspaces (an owner; P = personal, T = team)
    const owner: Session = await registerAndLogin(app.api, { prefix: 'routes-owner', name: 'Route Owner' });
    const P = owner.workspaceId;
    const ownerToken = owner.accessToken;
    await hit('GET /workspaces', '/workspaces', { token: ownerToken });
    const team = await hit('POST /workspaces', '/workspaces', json(ownerToken, { name: `Routes team ${hex()}` }));
    const T: string = team.body?.id ?? NO_ID;
    await hit('GET /workspaces/{workspaceId}', `/workspaces/${P}`, { token: ownerToken });
    await hit(
      'PATCH /workspaces/{workspaceId}',
      `/workspaces/${T}`,
      json(ownerToken, { name: `Routes team renamed ${hex()}` }),
    );
    await hit('GET /workspaces/{workspaceId}/members', `/workspaces/${T}/members`, { token: ownerToken });

    // ------------------------------------------------ billing (MOCK). P moves to Enterprise (API keys need it).
    await hit(
      'POST /billing/checkout',
      '/billing/checkout',
      json(ownerToken, { workspaceId: P, planCode: 'enterprise' }),
    );
    await hit('GET /billing/current', `/billing/current?workspaceId=${P}`, { token: ownerToken });
    await hit('GET /billing/history', `/billing/history?workspaceId=${P}&page=1&limit=10`, { token: ownerToken });
    // T buys Pro through the legacy route, cancels, buys it again through the mock webhook, cancels again.
    await hit('GET /workspaces/{workspaceId}/billing', `/workspaces/${T}/billing`, { token: ownerToken });
    await hit(
      'POST /workspaces/{workspaceId}/billing/mock-checkout',
      `/workspaces/${T}/billing/mock-checkout`,
      json(ownerToken, { planCode: 'pro' }),
    );
    await hit('GET /workspaces/{workspaceId}/billing/payments', `/workspaces/${T}/billing/payments?page=1&limit=10`, {
      token: ownerToken,
    });
    await hit('POST /billing/cancel', '/billing/cancel', json(ownerToken, { workspaceId: T }));
    await hit(
      'POST /billing/webhooks/mock',
      '/billing/webhooks/mock',
      json(undefined, {
        id: `mock_evt_routes_${hex(8)}`,
        type: 'checkout.completed',
        data: { workspaceId: T, planCode: 'pro' },
      }),
    );
    await hit('POST /workspaces/{workspaceId}/billing/cancel', `/workspaces/${T}/billing/cancel`, json(ownerToken, {}));
    // Inbound processor events, correctly signed. Event types the service does not act on are still
    // received (200 { received: true }).
    const stripePayload = stripeEvent('customer.created', { id: `cus_routes${hex()}`, object: 'customer' });
    await hit('POST /billing/webhooks/processor-a', '/billing/webhooks/processor-a', {
      raw: stripePayload,
      headers: {
        'content-type': 'application/json',
        'stripe-signature': signStripe(stripePayload, PROCESSOR_A_WEBHOOK_SECRET),
      },
    });
    const lemonPayload = lemonEvent('license_key_created', {
      type: 'license-keys',
      id: String(Date.now()),
      attributes: { status: 'active' },
    });
    await hit('POST /billing/webhooks/processor-b', '/billing/webhooks/processor-b', {
      raw: lemonPayload,
      headers: {
        'content-type': 'application/json',
        'x-signature': signLemon(lemonPayload, PROCESSOR_B_WEBHOOK_SECRET),
      },
    });

    // ------------------------------------------------ AI (MOCK)
    await hit('GET /ai/provider-status', '/ai/provider-status', { token: ownerToken });
    const templates = await hit('GET /ai/templates', '/ai/templates', { token: ownerToken });
    const templateId: string = templates.body?.items?.[0]?.id ?? NO_ID;
    await hit('GET /ai/templates/{templateId}', `/ai/templates/${templateId}`, { token: ownerToken });
    await hit(
      'POST /ai/generate',
      '/ai/generate',
      json(ownerToken, { workspaceId: P, prompt: `Write a tagline for route checks ${hex()}` }),
    );
    await hit('GET /ai/history', `/ai/history?workspaceId=${P}&page=1&limit=10`, { token: ownerToken });
    await hit('GET /ai/usage', `/ai/usage?workspaceId=${P}`, { token: ownerToken });
    await hit(
      'POST /workspaces/{workspaceId}/ai/generate',
      `/workspaces/${P}/ai/generate`,
      json(ownerToken, { prompt: `Summarise route checks ${hex()}` }),
    );
    await hit('GET /workspaces/{workspaceId}/ai/generations', `/workspaces/${P}/ai/generations?page=1&limit=10`, {
      token: ownerToken,
    });
    await hit('GET /workspaces/{workspaceId}/ai/usage', `/workspaces/${P}/ai/usage`, { token: ownerToken });

    // ------------------------------------------------ developer: API keys and the public API
    const key = await hit(
      'POST /workspaces/{workspaceId}/api-keys',
      `/workspaces/${P}/api-keys`,
      json(ownerToken, { name: 'Routes key', scopes: ['read', 'workspace:read'] }),
    );
    const apiKeyId: string = key.body?.id ?? NO_ID;
    const rawKey: string = key.body?.rawKey ?? 'wsk_missing';
    if (key.body?.rawKey) trackSecret(rawKey, 'an API key');
    await hit('GET /workspaces/{workspaceId}/api-keys', `/workspaces/${P}/api-keys`, { token: ownerToken });
    await hit(
      'PATCH /workspaces/{workspaceId}/api-keys/{apiKeyId}',
      `/workspaces/${P}/api-keys/${apiKeyId}`,
      json(ownerToken, { name: 'Routes key renamed' }),
    );
    await hit('GET /public-api/me', '/public-api/me', { headers: apiKeyHeader(rawKey) });
    await hit('GET /public-api/workspace', '/public-api/workspace', { headers: apiKeyHeader(rawKey) });

    // ------------------------------------------------ developer: webhooks and deliveries
    const hook = await hit(
      'POST /workspaces/{workspaceId}/webhooks',
      `/workspaces/${P}/webhooks`,
      json(ownerToken, { name: 'Routes hook', url: receiver.url('/spec-routes'), events: ['webhook.test'] }),
    );
    const webhookId: string = hook.body?.id ?? NO_ID;
    if (hook.body?.secret) trackSecret(hook.body.secret, 'a webhook signing secret');
    await hit('GET /workspaces/{workspaceId}/webhooks', `/workspaces/${P}/webhooks`, { token: ownerToken });
    await hit(
      'PATCH /workspaces/{workspaceId}/webhooks/{webhookId}',
      `/workspaces/${P}/webhooks/${webhookId}`,
      json(ownerToken, { name: 'Routes hook renamed' }),
    );
    const testDelivery = await hit(
      'POST /workspaces/{workspaceId}/webhooks/{webhookId}/test',
      `/workspaces/${P}/webhooks/${webhookId}/test`,
      { token: ownerToken },
    );
    const deliveryId: string = testDelivery.body?.id ?? NO_ID;
    // The receiver answers 500: wait until the attempt is recorded as failed (retrying, with a 1 h backoff).
    await setup(
      'a failed delivery to retry',
      () =>
        waitFor(
          async () => {
            const row = await app.deps.db
              .selectFrom('webhook_deliveries')
              .select('status')
              .where('id', '=', deliveryId)
              .executeTakeFirst();
            return row && (row.status === 'retrying' || row.status === 'failed');
          },
          { message: 'the test delivery to fail' },
        ),
      undefined,
    );
    await hit(
      'GET /workspaces/{workspaceId}/webhook-deliveries',
      `/workspaces/${P}/webhook-deliveries?page=1&limit=20`,
      { token: ownerToken },
    );
    await hit(
      'POST /workspaces/{workspaceId}/webhook-deliveries/{deliveryId}/retry',
      `/workspaces/${P}/webhook-deliveries/${deliveryId}/retry`,
      json(ownerToken, {}),
    );

    // ------------------------------------------------ branding, uploads, storage, insights, intake
    await hit(
      'PATCH /workspaces/{workspaceId}/branding',
      `/workspaces/${P}/branding`,
      json(ownerToken, { displayName: 'Routes Inc.', primaryColor: '#112233', accentColor: '#445566' }),
    );
    await hit('POST /workspaces/{workspaceId}/branding/logo', `/workspaces/${P}/branding/logo`, {
      token: ownerToken,
      form: form('logo', png, 'logo.png', 'image/png'),
    });
    await hit('POST /profile/avatar', '/profile/avatar', {
      token: ownerToken,
      form: form('avatar', png, 'me.png', 'image/png'),
    });
    await hit('POST /storage/upload', '/storage/upload', {
      token: ownerToken,
      form: form('file', png, 'chart.png', 'image/png', { workspaceId: P }),
    });
    await hit('GET /storage/provider-status', '/storage/provider-status', { token: ownerToken });
    await hit('GET /dashboard/insights', `/dashboard/insights?workspaceId=${P}`, { token: ownerToken });
    await hit(
      'POST /analytics/events',
      '/analytics/events',
      json(ownerToken, { name: 'spec_routes.checked', properties: { routes: SPEC_ROUTES.length }, workspaceId: P }),
    );
    await hit(
      'POST /contact/messages',
      '/contact/messages',
      json(undefined, {
        name: 'Route Visitor',
        email: uniqueEmail('routes-contact'),
        subject: 'Hello',
        message: 'Just checking every route.',
      }),
    );
    await hit(
      'POST /support/tickets',
      '/support/tickets',
      json(ownerToken, { subject: 'Route check', message: 'Does every route answer?', workspaceId: P }),
    );

    // ------------------------------------------------ product updates
    await hit('GET /updates/status', '/updates/status', { token: ownerToken });
    await hit('GET /updates/releases', '/updates/releases', { token: ownerToken });
    const latest = await hit('GET /updates/releases/latest', '/updates/releases/latest', { token: ownerToken });
    const version: string = latest.body?.version ?? '1.2.0';
    await hit('GET /updates/releases/{version}', `/updates/releases/${version}`, { token: ownerToken });
    // The download route is a placeholder that always answers 503 `DOWNLOADS_DISABLED`, with a message
    // saying secure downloads are not enabled in the demo.
    await hit(
      'GET /updates/releases/{version}/download',
      `/updates/releases/${version}/download`,
      { token: ownerToken },
      { status: 503, code: 'DOWNLOADS_DISABLED' },
    );

    // ------------------------------------------------ team: invitation, acceptance, role change
    const invitee = await registerAndLogin(app.api, { prefix: 'routes-invitee', name: 'Route Invitee' });
    await hit(
      'POST /workspaces/{workspaceId}/invitations',
      `/workspaces/${T}/invitations`,
      json(ownerToken, { email: invitee.email, role: 'MEMBER' }),
    );
    const invitationToken = await setup(
      'invitation mail',
      () => latestMailToken(app, invitee.email, INVITATION_TEMPLATE),
      'no-token',
    );
    await hit('POST /invitations/accept', '/invitations/accept', json(invitee.accessToken, { token: invitationToken }));
    await hit(
      'PATCH /workspaces/{workspaceId}/members/{userId}',
      `/workspaces/${T}/members/${invitee.userId}`,
      json(ownerToken, { role: 'VIEWER' }),
    );

    // ------------------------------------------------ workspace lifecycle (a workspace of its own)
    const lifecycleName = `Routes lifecycle ${hex()}`;
    const L: string = await setup(
      'lifecycle workspace',
      async () => {
        const created = await app.api('POST', '/workspaces', json(ownerToken, { name: lifecycleName }));
        if (created.status !== 201) throw new Error(`${created.status} ${created.text}`);
        return created.body.id as string;
      },
      NO_ID,
    );
    /** A new account that joins L as MEMBER through an invitation (not a call under test). */
    const joinL = async (prefix: string) => {
      const person = await registerAndLogin(app.api, { prefix, name: 'Route Joiner' });
      await setup(
        `${prefix} joins`,
        async () => {
          const sent = await app.api(
            'POST',
            `/workspaces/${L}/invitations`,
            json(ownerToken, { email: person.email, role: 'MEMBER' }),
          );
          if (sent.status !== 201) throw new Error(`${sent.status} ${sent.text}`);
          const token = await latestMailToken(app, person.email, INVITATION_TEMPLATE);
          const accepted = await app.api('POST', '/invitations/accept', json(person.accessToken, { token }));
          if (accepted.status !== 200) throw new Error(`${accepted.status} ${accepted.text}`);
        },
        undefined,
      );
      return person;
    };
    const pending = await app.api(
      'POST',
      `/workspaces/${L}/invitations`,
      json(ownerToken, { email: uniqueEmail('routes-pending'), role: 'VIEWER' }),
    );
    const invitationId: string = pending.body?.id ?? NO_ID;
    await hit('GET /workspaces/{workspaceId}/invitations', `/workspaces/${L}/invitations`, { token: ownerToken });
    await hit(
      'POST /workspaces/{workspaceId}/invitations/{invitationId}/resend',
      `/workspaces/${L}/invitations/${invitationId}/resend`,
      json(ownerToken, {}),
    );
    await hit(
      'DELETE /workspaces/{workspaceId}/invitations/{invitationId}',
      `/workspaces/${L}/invitations/${invitationId}`,
      {
        token: ownerToken,
      },
    );
    const leaver = await joinL('routes-leaver');
    await hit('POST /workspaces/{workspaceId}/leave', `/workspaces/${L}/leave`, json(leaver.accessToken, {}));
    const heir = await joinL('routes-heir');
    await hit(
      'POST /workspaces/{workspaceId}/transfer-ownership',
      `/workspaces/${L}/transfer-ownership`,
      json(ownerToken, { newOwnerUserId: heir.userId }),
    );
    await hit(
      'POST /workspaces/{workspaceId}/delete',
      `/workspaces/${L}/delete`,
      json(heir.accessToken, { confirmName: lifecycleName }),
    );
    await hit('POST /workspaces/{workspaceId}/restore', `/workspaces/${L}/restore`, json(heir.accessToken, {}));

    // ------------------------------------------------ platform admin
    const admin = await login(app.api, TEST_ADMIN.email, TEST_ADMIN.password);
    const adminToken = admin.accessToken;
    const subject = await registerAndLogin(app.api, { prefix: 'routes-subject', name: 'Route Subject' });
    await hit('GET /admin/users', `/admin/users?search=routes-subject&page=1&limit=10`, { token: adminToken });
    await hit('GET /admin/users/{userId}', `/admin/users/${subject.userId}`, { token: adminToken });
    await hit(
      'PATCH /admin/users/{userId}',
      `/admin/users/${subject.userId}`,
      json(adminToken, { name: 'Route Subject Renamed' }),
    );
    await hit('POST /admin/users/{userId}/suspend', `/admin/users/${subject.userId}/suspend`, { token: adminToken });
    await hit('POST /admin/users/{userId}/activate', `/admin/users/${subject.userId}/activate`, { token: adminToken });

    await hit('GET /admin/workspaces', '/admin/workspaces?page=1&limit=10', { token: adminToken });
    const adminWs = await hit(
      'POST /admin/workspaces',
      '/admin/workspaces',
      json(adminToken, { name: `Routes admin ws ${hex()}`, ownerUserId: subject.userId }),
    );
    const AW: string = adminWs.body?.id ?? NO_ID;
    await hit('GET /admin/workspaces/{workspaceId}', `/admin/workspaces/${AW}`, { token: adminToken });
    await hit(
      'PATCH /admin/workspaces/{workspaceId}',
      `/admin/workspaces/${AW}`,
      json(adminToken, { name: `Routes admin ws renamed ${hex()}` }),
    );
    await hit('POST /admin/workspaces/{workspaceId}/suspend', `/admin/workspaces/${AW}/suspend`, { token: adminToken });
    await hit('POST /admin/workspaces/{workspaceId}/activate', `/admin/workspaces/${AW}/activate`, {
      token: adminToken,
    });
    await hit('POST /admin/workspaces/{workspaceId}/archive', `/admin/workspaces/${AW}/archive`, { token: adminToken });
    await hit('POST /admin/workspaces/{workspaceId}/restore', `/admin/workspaces/${AW}/restore`, { token: adminToken });
    await hit(
      'POST /admin/workspaces/{workspaceId}/transfer-owner',
      `/admin/workspaces/${AW}/transfer-owner`,
      json(adminToken, { newOwnerUserId: owner.userId }),
    );

    await hit('GET /admin/audit-logs', '/admin/audit-logs?page=1&limit=10', { token: adminToken });
    await hit('GET /admin/email-logs', `/admin/email-logs?to=${encodeURIComponent(authEmail)}`, { token: adminToken });
    await hit('GET /admin/ai-usage', '/admin/ai-usage', { token: adminToken });
    await hit('GET /admin/analytics/summary', '/admin/analytics/summary', { token: adminToken });
    await hit('GET /admin/releases', '/admin/releases', { token: adminToken });
    await hit('GET /admin/releases/latest', '/admin/releases/latest', { token: adminToken });
    await hit('GET /admin/monitoring/status', '/admin/monitoring/status', { token: adminToken });
    await hit('GET /admin/monitoring/summary', '/admin/monitoring/summary', { token: adminToken });
    await hit('GET /admin/monitoring/errors', '/admin/monitoring/errors', { token: adminToken });
    await hit('GET /admin/monitoring/requests', '/admin/monitoring/requests', { token: adminToken });

    await hit('GET /admin/billing/plans', '/admin/billing/plans', { token: adminToken });
    const slug = `routes-${hex()}`;
    const plan = await hit(
      'POST /admin/billing/plans',
      '/admin/billing/plans',
      json(adminToken, { name: `Routes plan ${slug}`, slug, priceCents: 1500, sortOrder: 9_500 }),
    );
    const planId: string = plan.body?.id ?? NO_ID;
    await hit('GET /admin/billing/plans/{planId}', `/admin/billing/plans/${planId}`, { token: adminToken });
    await hit(
      'PATCH /admin/billing/plans/{planId}',
      `/admin/billing/plans/${planId}`,
      json(adminToken, { description: 'Made by the route check.' }),
    );
    await hit('POST /admin/billing/plans/{planId}/archive', `/admin/billing/plans/${planId}/archive`, {
      token: adminToken,
    });
    await hit('POST /admin/billing/plans/{planId}/restore', `/admin/billing/plans/${planId}/restore`, {
      token: adminToken,
    });
    await hit('GET /admin/billing/settings', '/admin/billing/settings', { token: adminToken });
    // PATCH /admin/billing/settings is read-only when settings come from the environment: 409
    // `SETTINGS_READ_ONLY` with a friendly message. This service's
    // settings always come from the environment, so the route never answers 2xx.
    await hit('PATCH /admin/billing/settings', '/admin/billing/settings', json(adminToken, { provider: 'MOCK' }), {
      status: 409,
      code: 'SETTINGS_READ_ONLY',
    });

    // ------------------------------------------------ destructive ones last
    await hit('DELETE /workspaces/{workspaceId}/members/{userId}', `/workspaces/${T}/members/${invitee.userId}`, {
      token: ownerToken,
    });
    await hit('DELETE /workspaces/{workspaceId}/webhooks/{webhookId}', `/workspaces/${P}/webhooks/${webhookId}`, {
      token: ownerToken,
    });
    await hit('DELETE /workspaces/{workspaceId}/api-keys/{apiKeyId}', `/workspaces/${P}/api-keys/${apiKeyId}`, {
      token: ownerToken,
    });
    await hit('DELETE /admin/billing/plans/{planId}', `/admin/billing/plans/${planId}`, { token: adminToken });
    await hit('DELETE /admin/workspaces/{workspaceId}', `/admin/workspaces/${AW}`, { token: adminToken });
    await hit('POST /admin/monitoring/clear', '/admin/monitoring/clear', { token: adminToken });
    await hit('POST /auth/logout', '/auth/logout', json(undefined, { refreshToken: refreshTokenForLogout }));

    // ------------------------------------------------ the verdict
    const exercised = new Set(outcomes.map((o) => o.route));
    const notExercised = SPEC_ROUTES.map(routeKey).filter((k) => !exercised.has(k));
    expect(notExercised, `fixture routes this test never called:\n  ${notExercised.join('\n  ')}`).toEqual([]);

    const failures = outcomes
      .filter((o) => !o.ok)
      .map((o) => `${o.route}  ->  ${o.status} (expected ${o.expected}) at ${o.url}\n      ${o.excerpt}`);
    const report = [
      `${failures.length} of ${outcomes.length} request(s) did not answer as the spec says:`,
      ...failures.map((f) => `  ${f}`),
      ...(setupProblems.length
        ? ['set-up problems (later requests may fail because of them):', ...setupProblems.map((p) => `  ${p}`)]
        : []),
    ].join('\n');
    expect(failures, report).toEqual([]);
    expect(setupProblems, report).toEqual([]);
  });
});
