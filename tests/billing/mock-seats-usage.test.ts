// MOCK billing runs the whole flow locally (npm start with nothing configured): a per-seat, metered plan
// bought with the MOCK checkout follows its members and reports its overage generations without any
// processor; /billing/current shows both.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { clockAhead } from '../helpers/clock.js';
import { registerAndLogin } from '../helpers/http.js';
import { inviteAndJoin } from '../workspaces/helpers.js';
import { drainBillingOutbox } from '../../routers/billing/outbox.js';
import { adminLogin, createPlan, currentOf } from './helpers.js';

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp({ BILLING_PROVIDER: 'MOCK', AI_MONTHLY_GENERATION_LIMIT: '4' });
});
afterAll(() => app?.close());

it('a per-seat, metered MOCK subscription counts seats and reports overage locally', async () => {
  const admin = await adminLogin(app);
  const plan = await createPlan(app, admin, {
    status: 'PUBLISHED',
    pricingModel: 'PER_SEAT',
    includedSeats: 1,
    meteredOverage: true,
    limits: { members: 10, apiKeys: 0, aiMonthlyGenerations: 2 },
  });
  const owner = await registerAndLogin(app.api, { prefix: 'mock-seats' });
  const checkout = await app.api('POST', '/billing/checkout', {
    token: owner.accessToken,
    body: { workspaceId: owner.workspaceId, planCode: plan.slug },
  });
  expect(checkout.status, checkout.text).toBe(200);
  await inviteAndJoin(app, owner.accessToken, owner.workspaceId, 'MEMBER');
  for (let i = 0; i < 4; i++) {
    const res = await app.api('POST', '/ai/generate', {
      token: owner.accessToken,
      body: { workspaceId: owner.workspaceId, prompt: `mock ${i}` },
    });
    expect(res.status, res.text).toBe(200);
  }
  await clockAhead(61_000, () => drainBillingOutbox(app.deps, { workspaceIds: [owner.workspaceId] }));
  const current = await currentOf(app, owner.accessToken, owner.workspaceId);
  expect(current.seats).toEqual({ used: 2, included: 1, billed: 2 });
  expect(current.usage).toEqual({ generations: 4, included: 2, overage: 2, reported: 2 });
  const sub = await app.deps.db
    .selectFrom('subscriptions')
    .select('seats_reported')
    .where('workspace_id', '=', owner.workspaceId)
    .where('status', '=', 'ACTIVE')
    .executeTakeFirstOrThrow();
  expect(sub.seats_reported).toBe(2);
});
