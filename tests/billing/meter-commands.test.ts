// Which generations of a metered plan get a meter command (a billing_commands row, kind METER_EVENT,
// identifier = the generation id): exactly the overage ones that succeeded, one each, written by the
// statement that stores the generation (routers/ai/reservations.ts). Generations that ask together are
// reserved by one statement and each gets its own count, so exactly those counted past the plan's amount
// are metered; a generation that fails is neither counted nor metered. Both ways a generation is stored
// are covered: with the reservation (MOCK, in process) and after the provider answered (PROVIDER_A, a fake
// on loopback), each as one JSON answer and as a stream.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { startFakeStripe, type FakeStripe } from '../helpers/fake-stripe.js';
import { expectError, registerAndLogin, type Session } from '../helpers/http.js';
import { openStream } from '../ai/stream-helpers.js';
import { adminLogin, createPlan, randomHex, subscribeAtFakeStripe } from './helpers.js';

const STRIPE_KEY = `sk_test_meter${randomHex(12)}`;
const WHSEC = `whsec_meter${randomHex(12)}`;
const OPENAI_KEY = `sk-test-meter-${randomHex(12)}`;
const CEILING = 8;
const INCLUDED = 2;

let stripe: FakeStripe;
let openai: FakeOpenAI;
let mock: TestApp;
let remote: TestApp;
let metered: { id: string };
let flat: { id: string };

beforeAll(async () => {
  [stripe, openai] = await Promise.all([
    startFakeStripe({ apiKey: STRIPE_KEY }),
    startFakeOpenAI({ apiKey: OPENAI_KEY }),
  ]);
  const shared = {
    AI_MONTHLY_GENERATION_LIMIT: String(CEILING),
    BILLING_PROVIDER: 'PROCESSOR_A',
    PROCESSOR_A_SECRET_KEY: STRIPE_KEY,
    PROCESSOR_A_WEBHOOK_SECRET: WHSEC,
    PROCESSOR_A_BASE_URL: stripe.url,
  };
  [mock, remote] = await Promise.all([
    startTestApp(shared),
    startTestApp({
      ...shared,
      AI_PROVIDER: 'PROVIDER_A',
      PROVIDER_A_API_KEY: OPENAI_KEY,
      PROVIDER_A_BASE_URL: `${openai.url}/v1`,
      AI_PROVIDER_A_MODEL: 'fake-gpt-4o-test',
    }),
  ]);
  const admin = await adminLogin(mock);
  const limits = { members: 5, apiKeys: 0, aiMonthlyGenerations: INCLUDED };
  [metered, flat] = await Promise.all([
    createPlan(mock, admin, {
      status: 'PUBLISHED',
      limits,
      meteredOverage: true,
      providerAPriceId: `price_metered_${randomHex()}`,
      providerAMeterEventName: 'ai_generations',
    }),
    createPlan(mock, admin, { status: 'PUBLISHED', limits, providerAPriceId: `price_flat_${randomHex()}` }),
  ]);
});
afterAll(async () => {
  await Promise.all([mock?.close(), remote?.close()]);
  await Promise.all([stripe?.close(), openai?.close()]);
});

/** A new account of `app` whose workspace is subscribed to `plan` at the fake Stripe. */
async function subscribed(app: TestApp, plan: { id: string }): Promise<Session> {
  const owner = await registerAndLogin(app.api, { prefix: 'meter-cmd' });
  await subscribeAtFakeStripe(app, stripe, WHSEC, owner, plan);
  return owner;
}

const generate = (app: TestApp, owner: Session) =>
  app.api('POST', '/ai/generate', {
    token: owner.accessToken,
    body: { workspaceId: owner.workspaceId, prompt: `meter ${randomHex()}` },
  });

/** A streamed generation to its end: the completed event's generation, or the error event's data. */
async function generateStreamed(app: TestApp, owner: Session) {
  const stream = await openStream(app, '/ai/generate', {
    token: owner.accessToken,
    body: { workspaceId: owner.workspaceId, prompt: `meter stream ${randomHex()}` },
  });
  expect(stream.status).toBe(200);
  const events = await stream.rest();
  const started = events.find((e) => e.event === 'started')?.data as { id: string };
  const completed = events.find((e) => e.event === 'completed')?.data as
    { id: string; usage: { used: number } } | undefined;
  return { id: started.id, completed, events };
}

/** The meter commands of a workspace: identifier and period, one row each. */
const meterCommands = (app: TestApp, workspaceId: string) =>
  app.deps.db
    .selectFrom('billing_commands')
    .select(['identifier', 'period'])
    .where('workspace_id', '=', workspaceId)
    .where('kind', '=', 'METER_EVENT')
    .execute();

const thisMonth = () => `${new Date().toISOString().slice(0, 7)}-01`;

describe('meter commands of generations stored with their reservation (MOCK)', () => {
  it('generations asking at once: exactly those counted past the plan are metered, one command each', async () => {
    const owner = await subscribed(mock, metered);
    const answers = await Promise.all(Array.from({ length: CEILING }, () => generate(mock, owner)));
    for (const res of answers) expect(res.status, res.text).toBe(200);
    const used = answers.map((res) => res.body.usage.used as number).sort((a, b) => a - b);
    expect(used).toEqual(Array.from({ length: CEILING }, (_, i) => i + 1));
    const overage = answers.filter((res) => res.body.usage.used > INCLUDED).map((res) => res.body.id as string);
    expect(overage).toHaveLength(CEILING - INCLUDED);

    const commands = await meterCommands(mock, owner.workspaceId);
    expect(commands.map((c) => c.identifier).sort()).toEqual([...overage].sort());
    for (const c of commands) expect(c.period).toBe(thisMonth());

    // Refused at the ceiling: nothing stored, nothing metered.
    expectError(await generate(mock, owner), 403, 'AI_MONTHLY_LIMIT_REACHED');
    expect(await meterCommands(mock, owner.workspaceId)).toHaveLength(CEILING - INCLUDED);
  });

  it('a streamed overage generation is metered once; the included ones are not', async () => {
    const owner = await subscribed(mock, metered);
    const runs = [];
    for (let i = 0; i < INCLUDED + 2; i++) runs.push(await generateStreamed(mock, owner));
    for (const run of runs) expect(run.completed?.id).toBe(run.id);
    expect((await meterCommands(mock, owner.workspaceId)).map((c) => c.identifier).sort()).toEqual(
      runs
        .slice(INCLUDED)
        .map((r) => r.id)
        .sort(),
    );
  });

  it('a flat plan meters nothing', async () => {
    const owner = await subscribed(mock, flat);
    for (let i = 0; i < INCLUDED; i++) expect((await generate(mock, owner)).status).toBe(200);
    expectError(await generate(mock, owner), 403, 'AI_MONTHLY_LIMIT_REACHED');
    expect(await meterCommands(mock, owner.workspaceId)).toEqual([]);
  });
});

describe('meter commands of generations stored after the provider answered (PROVIDER_A)', () => {
  it('an overage generation that fails is not metered; the next, which succeeds, is metered once', async () => {
    const owner = await subscribed(remote, metered);
    openai.setMode('ok');
    for (let i = 0; i < INCLUDED; i++) expect((await generate(remote, owner)).status).toBe(200);
    expect(await meterCommands(remote, owner.workspaceId)).toEqual([]);

    openai.setMode('error');
    try {
      expectError(await generate(remote, owner), 502, 'AI_PROVIDER_ERROR');
    } finally {
      openai.setMode('ok');
    }
    expect(await meterCommands(remote, owner.workspaceId)).toEqual([]);

    const ok = await generate(remote, owner);
    expect(ok.status, ok.text).toBe(200);
    // The failure cost no quota: this one is the first past the plan.
    expect(ok.body.usage.used).toBe(INCLUDED + 1);
    expect(await meterCommands(remote, owner.workspaceId)).toEqual([{ identifier: ok.body.id, period: thisMonth() }]);
  });

  it('a streamed overage generation that breaks off is not metered; one that completes is', async () => {
    const owner = await subscribed(remote, metered);
    openai.setMode('ok');
    for (let i = 0; i < INCLUDED; i++) expect((await generate(remote, owner)).status).toBe(200);

    openai.setMode('error-mid-stream');
    let broken;
    try {
      broken = await generateStreamed(remote, owner);
    } finally {
      openai.setMode('ok');
    }
    expect(broken.completed).toBeUndefined();
    expect(broken.events.some((e) => e.event === 'error')).toBe(true);
    expect(await meterCommands(remote, owner.workspaceId)).toEqual([]);

    const done = await generateStreamed(remote, owner);
    expect(done.completed?.usage.used).toBe(INCLUDED + 1);
    expect(await meterCommands(remote, owner.workspaceId)).toEqual([{ identifier: done.id, period: thisMonth() }]);
  });
});
