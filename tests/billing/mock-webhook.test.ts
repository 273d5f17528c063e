// POST /billing/webhooks/mock, the unsigned development webhook of BILLING_PROVIDER=MOCK: checkout
// completion and cancellation, idempotency by event id, and what it refuses.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, registerAndLogin } from '../helpers/http.js';
import {
  LITE_LIMITS,
  PRO_LIMITS,
  billingEventsWithId,
  currentOf,
  domainEventTypes,
  liveSubscriptionsOf,
  paymentsOf,
  planBySlug,
  randomHex,
  subscriptionsOf,
  workspaceRow,
} from './helpers.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false', BILLING_PROVIDER: 'MOCK' });
});
afterAll(() => app?.close());

const send = (body: unknown) => app.api('POST', '/billing/webhooks/mock', { body });
const sendRaw = (raw: string) =>
  app.api('POST', '/billing/webhooks/mock', { raw, headers: { 'content-type': 'application/json' } });
const eventId = () => `mock_evt_${randomHex(8)}`;

describe('POST /billing/webhooks/mock', () => {
  it('checkout.completed { workspaceId, planCode } moves the workspace to the plan, unsigned', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'mockhook' });
    const id = eventId();
    const res = await send({ id, type: 'checkout.completed', data: { workspaceId: s.workspaceId, planCode: 'pro' } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ received: true, outcome: 'applied' });
    expect(await currentOf(app, s.accessToken, s.workspaceId)).toMatchObject({
      edition: 'PRO',
      plan: { slug: 'pro' },
      limits: PRO_LIMITS,
      status: 'ACTIVE',
    });
    expect(await paymentsOf(app, s.workspaceId)).toHaveLength(1);
    const [stored] = await billingEventsWithId(app, 'MOCK', id);
    expect(stored).toMatchObject({ event_type: 'checkout.completed', outcome: 'applied', workspace_id: s.workspaceId });
    expect(await domainEventTypes(app, s.workspaceId)).toContain('billing.updated');
  });

  it('accepts planId as well as planCode', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'mockhook-id' });
    const enterprise = await planBySlug(app, 'enterprise');
    const res = await send({
      id: eventId(),
      type: 'checkout.completed',
      data: { workspaceId: s.workspaceId, planId: enterprise.id },
    });
    expect(res.status, res.text).toBe(200);
    expect((await workspaceRow(app, s.workspaceId)).edition).toBe('ENTERPRISE');
  });

  it('the same event id again answers 200 duplicate and changes nothing, even for another plan', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'mockhook-dup' });
    const id = eventId();
    expect(
      (await send({ id, type: 'checkout.completed', data: { workspaceId: s.workspaceId, planCode: 'pro' } })).body
        .outcome,
    ).toBe('applied');
    const subsBefore = await subscriptionsOf(app, s.workspaceId);
    const eventsBefore = await domainEventTypes(app, s.workspaceId);

    const again = await send({
      id,
      type: 'checkout.completed',
      data: { workspaceId: s.workspaceId, planCode: 'enterprise' },
    });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ received: true, outcome: 'duplicate' });
    expect(await subscriptionsOf(app, s.workspaceId)).toEqual(subsBefore);
    expect(await paymentsOf(app, s.workspaceId)).toHaveLength(1);
    expect(await domainEventTypes(app, s.workspaceId)).toEqual(eventsBefore);
    expect((await workspaceRow(app, s.workspaceId)).edition).toBe('PRO');
    expect(await billingEventsWithId(app, 'MOCK', id)).toHaveLength(1);
  });

  it('subscription.canceled { workspaceId } ends the live subscription: back to Lite', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'mockhook-cancel' });
    await send({ id: eventId(), type: 'checkout.completed', data: { workspaceId: s.workspaceId, planCode: 'pro' } });
    const res = await send({ id: eventId(), type: 'subscription.canceled', data: { workspaceId: s.workspaceId } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ received: true, outcome: 'applied' });
    expect(await currentOf(app, s.accessToken, s.workspaceId)).toMatchObject({
      edition: 'LITE',
      limits: LITE_LIMITS,
      status: 'FREE',
    });
    expect(await liveSubscriptionsOf(app, s.workspaceId)).toEqual([]);
    expect(await domainEventTypes(app, s.workspaceId)).toContain('subscription.canceled');
  });

  it('refuses malformed JSON with 400 and stores nothing', async () => {
    const before = await app.deps.db
      .selectFrom('billing_events')
      .select('id')
      .where('event_id', 'like', 'broken%')
      .execute();
    expectError(await sendRaw('{"id":"broken-1","type":'), 400, 'BAD_REQUEST');
    expect(
      await app.deps.db.selectFrom('billing_events').select('id').where('event_id', 'like', 'broken%').execute(),
    ).toEqual(before);
  });

  it('refuses an event id or type with a NUL character with 400 BAD_REQUEST, and stores nothing (was a 500)', async () => {
    for (const raw of ['{"id":"nul-1\\u0000","type":"other.thing"}', '{"id":"nul-2","type":"other\\u0000thing"}']) {
      const res = await sendRaw(raw);
      expectError(res, 400, 'BAD_REQUEST');
      expect(res.body.message).toBe('Text may not contain NUL characters or unpaired UTF-16 surrogates.');
    }
    expect(
      await app.deps.db.selectFrom('billing_events').select('id').where('event_id', 'like', 'nul-%').execute(),
    ).toEqual([]);
  });

  it.each([
    ['no id', { type: 'checkout.completed' }],
    ['an empty id', { id: '', type: 'checkout.completed' }],
    ['no type', { id: 'x-1' }],
    [
      'a non-UUID workspaceId',
      { id: 'x-2', type: 'checkout.completed', data: { workspaceId: 'abc', planCode: 'pro' } },
    ],
    ['an array', [1, 2]],
  ])('refuses an event with %s with 400 BAD_REQUEST', async (_label, body) => {
    expectError(await send(body), 400, 'BAD_REQUEST');
  });

  it('answers 404 PLAN_NOT_FOUND for checkout.completed of an unknown plan, and stores nothing', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'mockhook-noplan' });
    const id = eventId();
    expectError(
      await send({
        id,
        type: 'checkout.completed',
        data: { workspaceId: s.workspaceId, planCode: `nope-${randomHex(3)}` },
      }),
      404,
      'PLAN_NOT_FOUND',
    );
    expect(await billingEventsWithId(app, 'MOCK', id)).toEqual([]);
    expect(await subscriptionsOf(app, s.workspaceId)).toEqual([]);
  });

  it('answers 200 unmatched for checkout.completed of an unknown workspace, and records no payment (was a 500)', async () => {
    const workspaceId = crypto.randomUUID();
    const id = eventId();
    const res = await send({ id, type: 'checkout.completed', data: { workspaceId, planCode: 'pro' } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ received: true, outcome: 'unmatched' });
    expect(
      await app.deps.db.selectFrom('payments').select('id').where('workspace_id', '=', workspaceId).execute(),
    ).toEqual([]);
    expect(await billingEventsWithId(app, 'MOCK', id)).toMatchObject([{ outcome: 'unmatched', workspace_id: null }]);
  });

  it('records an unknown event type and answers 200 ignored', async () => {
    const id = eventId();
    const res = await send({ id, type: 'something.new', data: { workspaceId: crypto.randomUUID() } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ received: true, outcome: 'ignored' });
    const [stored] = await billingEventsWithId(app, 'MOCK', id);
    expect(stored).toMatchObject({ event_type: 'something.new', outcome: 'ignored' });
  });
});

describe('POST /billing/webhooks/mock with NODE_ENV=production', () => {
  // Production with the default BILLING_PROVIDER (MOCK): the unsigned route would let anyone move any
  // workspace's plan by naming its id. It exists there only with BILLING_MOCK_WEBHOOK_ENABLED=true.
  let production: TestApp;
  let enabled: TestApp;
  beforeAll(async () => {
    [production, enabled] = await Promise.all([
      // Rate limiting on: the route's answer must not differ from an unknown route's in its headers either.
      startTestApp({ NODE_ENV: 'production', BILLING_PROVIDER: 'MOCK', RATE_LIMIT_ENABLED: 'true' }),
      startTestApp({ NODE_ENV: 'production', BILLING_PROVIDER: 'MOCK', BILLING_MOCK_WEBHOOK_ENABLED: 'true' }),
    ]);
  });
  afterAll(() => Promise.all([production, enabled].map((a) => a?.close())));

  /** A victim whose workspace is on Pro, bought through the signed-in MOCK checkout. */
  async function proVictim(on: TestApp) {
    const s = await registerAndLogin(on.api, { prefix: 'mockhook-prod' });
    const body = { workspaceId: s.workspaceId, planCode: 'pro' };
    const upgrade = await on.api('POST', '/billing/checkout', { token: s.accessToken, body });
    expect(upgrade.status, upgrade.text).toBe(200);
    expect((await workspaceRow(on, s.workspaceId)).edition).toBe('PRO');
    return s;
  }

  it('answers 404 exactly like an unknown route, and the plan does not move (cancel or upgrade)', async () => {
    const s = await proVictim(production);
    const post = (path: string, body: unknown) => production.api('POST', path, { body });
    const unknown = await post('/billing/webhooks/nothing-here', { id: eventId(), type: 'subscription.canceled' });
    expectError(unknown, 404, 'NOT_FOUND');

    const canceled = { id: eventId(), type: 'subscription.canceled', data: { workspaceId: s.workspaceId } };
    const cancel = await post('/billing/webhooks/mock', canceled);
    expectError(cancel, 404, 'NOT_FOUND');
    expect({ ...cancel.body, requestId: undefined }).toEqual({ ...unknown.body, requestId: undefined });
    // Counted, logged and recorded as an unknown route: the default tier's policy, no route of its own.
    expect(cancel.headers.get('ratelimit-policy')).toBe(unknown.headers.get('ratelimit-policy'));
    const requestId = cancel.headers.get('x-request-id');
    const line = production.logs.map((l) => JSON.parse(l)).find((l) => l.requestId === requestId && l.route);
    expect(line).toMatchObject({ route: '(unmatched)', status: 404, code: 'NOT_FOUND' });
    const data = { workspaceId: s.workspaceId, planCode: 'enterprise' };
    const completed = { id: eventId(), type: 'checkout.completed', data };
    expectError(await post('/billing/webhooks/mock', completed), 404, 'NOT_FOUND');

    const current = await currentOf(production, s.accessToken, s.workspaceId);
    expect(current).toMatchObject({ edition: 'PRO', limits: PRO_LIMITS, status: 'ACTIVE' });
    expect(await liveSubscriptionsOf(production, s.workspaceId)).toHaveLength(1);
    const events = await production.deps.db
      .selectFrom('billing_events')
      .select('event_type')
      .where('workspace_id', '=', s.workspaceId)
      .execute();
    expect(events.map((e) => e.event_type)).toEqual(['checkout.completed']); // the signed-in checkout's own
  });

  it('with BILLING_MOCK_WEBHOOK_ENABLED=true, the route works in production as it does in development', async () => {
    const s = await proVictim(enabled);
    const body = { id: eventId(), type: 'subscription.canceled', data: { workspaceId: s.workspaceId } };
    const res = await enabled.api('POST', '/billing/webhooks/mock', { body });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ received: true, outcome: 'applied' });
    expect(await currentOf(enabled, s.accessToken, s.workspaceId)).toMatchObject({ edition: 'LITE', status: 'FREE' });
  });

  it('with BILLING_MOCK_WEBHOOK_ENABLED=true but another provider, the route still does not exist', async () => {
    const settings = { NODE_ENV: 'production', BILLING_PROVIDER: 'PROCESSOR_B', BILLING_MOCK_WEBHOOK_ENABLED: 'true' };
    const other = await startTestApp(settings);
    try {
      const body = { id: eventId(), type: 'subscription.canceled', data: { workspaceId: crypto.randomUUID() } };
      const res = await other.api('POST', '/billing/webhooks/mock', { body });
      expectError(res, 404, 'NOT_FOUND');
    } finally {
      await other.close();
    }
  });
});
