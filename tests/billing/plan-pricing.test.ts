// The pricing fields of a plan: per-seat pricing, included
// seats, trial days, metered overage and the processor ids of the seat price and the meter, edited through
// the admin plan routes and shown in the public catalogue and /openapi.json.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, type Session } from '../helpers/http.js';
import { adminLogin, createPlan } from './helpers.js';

let app: TestApp;
let admin: Session;

beforeAll(async () => {
  app = await startTestApp({ BILLING_PROVIDER: 'MOCK' });
  admin = await adminLogin(app);
});
afterAll(() => app?.close());

describe('plan pricing fields', () => {
  it('a published per-seat, metered plan with a trial shows its pricing in the public catalogue', async () => {
    const plan = await createPlan(app, admin, {
      status: 'PUBLISHED',
      pricingModel: 'PER_SEAT',
      includedSeats: 5,
      trialDays: 14,
      meteredOverage: true,
      providerASeatPriceId: 'price_seat_x',
      providerAMeterEventName: 'ai_generations',
      providerBSeatVariantId: '555',
    });
    const res = await app.api('GET', '/billing/plans');
    expect(res.status).toBe(200);
    const shown = (res.body.items as Array<Record<string, unknown>>).find((p) => p.id === plan.id);
    expect(shown).toMatchObject({
      pricingModel: 'PER_SEAT',
      includedSeats: 5,
      trialDays: 14,
      meteredOverage: true,
      providerASeatPriceId: 'price_seat_x',
      providerAMeterEventName: 'ai_generations',
      providerBSeatVariantId: '555',
    });
  });

  it('an admin switches a plan to flat pricing and clears its seat price', async () => {
    const plan = await createPlan(app, admin, { pricingModel: 'PER_SEAT', providerASeatPriceId: 'price_seat_y' });
    const res = await app.api('PATCH', `/admin/billing/plans/${plan.id}`, {
      token: admin.accessToken,
      body: { pricingModel: 'FLAT', providerASeatPriceId: null, trialDays: 0, meteredOverage: false },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ pricingModel: 'FLAT', providerASeatPriceId: null, trialDays: 0 });
  });

  it('refuses an unknown pricing model, negative seats, a trial past a year and a malformed meter name (400)', async () => {
    for (const body of [
      { pricingModel: 'PER_USER' },
      { includedSeats: -1 },
      { trialDays: 366 },
      { includedSeats: 1.5 },
      { providerAMeterEventName: 'has spaces in it' },
      { meteredOverage: 'yes' },
    ]) {
      const res = await app.api('POST', '/admin/billing/plans', {
        token: admin.accessToken,
        body: { name: 'Bad', slug: `bad-${Date.now()}`, priceCents: 0, ...body },
      });
      expectError(res, 400, 'BAD_REQUEST');
      expect(res.body.issues.length).toBeGreaterThan(0);
    }
  });

  it('documents the fields in /openapi.json', async () => {
    const res = await app.api('GET', '/openapi.json');
    const plan = res.body.components.schemas.Plan;
    expect(plan.properties.pricingModel.enum).toEqual(['FLAT', 'PER_SEAT']);
    for (const field of ['includedSeats', 'trialDays', 'meteredOverage', 'providerAMeterEventName'])
      expect(plan.required).toContain(field);
  });
});
