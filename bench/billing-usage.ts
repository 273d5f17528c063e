// `npx tsx bench/billing-usage.ts`: usage billing under load (issue 37). On a database of its own, with the
// API and two workers as child processes, compiled as production runs them (`npm run build`, then
// scripts/start.mjs, what `npm start` and `npm run worker` run):
//   1. POST /ai/generate on a flat plan: BENCH_BILLING_GENERATIONS generations across
//      BENCH_BILLING_WORKSPACES workspaces, BENCH_BILLING_CONCURRENCY at a time: the flat rate;
//   2. the same on a metered plan (every generation past the first of each workspace is overage, so that
//      many meter events), one of the workers SIGKILLed halfway, the other going on: the metered rate;
//   the two taking turns in BENCH_BILLING_ROUNDS rounds of each, a share of the generations each;
//   3. waits for every meter event to reach the fake Stripe (tests/helpers/fake-stripe.ts, a real HTTP
//      server the official SDK talks to, in a child process of its own: bench/fake-stripe-server.ts); the
//      worker sends them in batches on Stripe's v2 meter event stream (a meter event session's token).
// Targets: every meter event at the fake Stripe within 60 s of the last generation, none counted twice by
// identifier (resends are counted and printed), the metered rate >= 0.9x the flat rate. Exit code 1 when a
// target is missed. Beside the rates, less noisy on a shared machine, per generation of each round: the
// database's transactions (pg_stat_database: every statement outside a transaction is one; the worker's
// included) and the CPU of the API, the workers, the fake Stripe and Postgres (read from /proc). Those are
// read after the round and a settling pause (Postgres reports a backend's counts up to 10 s late), so the
// worker's sends of a round's meter events count in that round; the worker's and the fake Stripe's CPU are
// also given per meter event of the round, and the fake's requests per meter event. With BENCH_PROFILE_DIR,
// the API and the workers write V8 CPU profiles there (the killed worker excepted).
// Environment: BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres), BENCH_REDIS_URL
// (default redis://127.0.0.1:6379), BENCH_BILLING_GENERATIONS (10000), BENCH_BILLING_WORKSPACES (100),
// BENCH_BILLING_CONCURRENCY (32), BENCH_BILLING_WARM_UP (2000), BENCH_BILLING_ROUNDS (5).
import crypto from 'node:crypto';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { cpuSecondsBetween, cpuSecondsByPid, cpuSecondsOf } from './cpu.js';
import { fakeSubscription, signStripe, stripeEvent } from '../tests/helpers/fake-stripe.js';
import { freePort, queryRows } from './local.js';

const ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const GENERATIONS = Number(process.env.BENCH_BILLING_GENERATIONS ?? 10_000);
const WORKSPACES = Number(process.env.BENCH_BILLING_WORKSPACES ?? 100);
const CONCURRENCY = Number(process.env.BENCH_BILLING_CONCURRENCY ?? 32);
const DELIVERY_TARGET_MS = 60_000;
const RATE_TARGET = 0.9;
/** Rounds of each plan, taking turns: the generations of a plan are shared among them. */
const ROUNDS = Number(process.env.BENCH_BILLING_ROUNDS ?? 5);
const KILL_ROUND = Math.floor((ROUNDS - 1) / 2);
/** Generations before the rounds, on flat accounts of their own. */
const WARM_UP = Number(process.env.BENCH_BILLING_WARM_UP ?? 2_000);
/** A flat workspace's monthly generations: room for its share of the rounds and of the warm-up. */
const FLAT_QUOTA = Math.ceil((GENERATIONS + WARM_UP) / WORKSPACES) + 10;
/** Longer than Postgres's PGSTAT_IDLE_INTERVAL (10 s): an idle backend's counts are in the view by then. */
const SETTLE_MS = 11_000;

const hex = (n = 4) => crypto.randomBytes(n).toString('hex');
const STRIPE_KEY = `sk_test_bench${hex(8)}`;
const WHSEC = `whsec_bench${hex(8)}`;
const ADMIN = { email: 'bench-admin@bench.local', password: 'Bench-admin-pass-1234' };

async function main() {
  const dbName = `bench_billing_${Date.now().toString(36)}_${hex(2)}`;
  await queryRows(ADMIN_URL, `create database "${dbName}"`);
  const dbUrl = new URL(ADMIN_URL);
  dbUrl.pathname = `/${dbName}`;
  const stripeChild = spawn(process.execPath, ['--import', 'tsx', 'bench/fake-stripe-server.ts'], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', FAKE_STRIPE_API_KEY: STRIPE_KEY },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const stripeUrl = await new Promise<string>((resolve, reject) => {
    stripeChild.stdout.once('data', (chunk: Buffer) => resolve((JSON.parse(chunk.toString()) as { url: string }).url));
    stripeChild.once('exit', () => reject(new Error('the fake Stripe exited')));
  });
  const stripe = {
    url: stripeUrl,
    counts: async () =>
      (await (
        await fetch(`${stripeUrl}/__fake/meter-events`, { headers: { authorization: `Bearer ${STRIPE_KEY}` } })
      ).json()) as { counted: number; received: number; duplicates: number; requests: number; sessions: number },
  };
  const port = await freePort();
  const env: Record<string, string> = {
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: String(port),
    DATABASE_URL: dbUrl.toString(),
    REDIS_URL,
    QUEUES_ENABLED: 'true',
    WEBHOOK_QUEUE_ENABLED: 'true',
    QUEUE_PREFIX: `bench-billing-${hex()}`,
    MAINTENANCE_SCHEDULER_ENABLED: 'false',
    RATE_LIMIT_ENABLED: 'false',
    LOG_LEVEL: 'warn',
    BCRYPT_COST: '4',
    JWT_ACCESS_SECRET: `bench-access-${hex(16)}`,
    JWT_REFRESH_SECRET: `bench-refresh-${hex(16)}`,
    WEBHOOK_SECRET_ENCRYPTION_KEY: `bench-webhook-key-${hex(16)}`,
    SEED_ADMIN_EMAIL: ADMIN.email,
    SEED_ADMIN_PASSWORD: ADMIN.password,
    BILLING_PROVIDER: 'PROCESSOR_A',
    PROCESSOR_A_SECRET_KEY: STRIPE_KEY,
    PROCESSOR_A_WEBHOOK_SECRET: WHSEC,
    PROCESSOR_A_BASE_URL: stripe.url,
    AI_MONTHLY_GENERATION_LIMIT: String(FLAT_QUOTA),
    BILLING_OUTBOX_LEASE_SECONDS: '5',
  };
  const children: ChildProcess[] = [];
  const profile = process.env.BENCH_PROFILE_DIR
    ? [`--cpu-prof`, `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`]
    : [];
  // As in production: the compiled JavaScript of dist/, started by what `npm start` and `npm run worker` run.
  await promisify(execFile)(process.execPath, ['scripts/build.mjs']);
  const startChild = (role: 'server' | 'worker') => {
    const child = spawn(process.execPath, [...profile, 'scripts/start.mjs', role], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child.stderr.on('data', (chunk: Buffer) => process.stderr.write(`${role}: ${chunk.toString()}`));
    children.push(child);
    return child;
  };
  const server = { url: `http://127.0.0.1:${port}` };
  startChild('server');
  for (let i = 0; ; i++) {
    const up = await fetch(`${server.url}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    if (i > 600) throw new Error('the API did not start within 60 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  // Two workers, as a deployment runs them; one is SIGKILLed halfway through a metered round and
  // the other goes on (its meter events claimed and not acknowledged are sent again after their lease).
  // The outbox's periodic task runs on one of them at a time: the one killed is the one that spent more
  // CPU since the round began, the one sending.
  // They start once the API has migrated the database, long before the first round.
  const workers = [startChild('worker'), startChild('worker')];

  const api = async (method: string, path: string, body?: unknown, token?: string, raw?: Record<string, string>) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...raw },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
    return JSON.parse(text) as Record<string, any>;
  };

  try {
    const adminToken = (await api('POST', '/auth/login', ADMIN)).accessToken as string;
    const perWorkspace = Math.ceil(GENERATIONS / WORKSPACES);
    const plan = async (metered: boolean) =>
      api(
        'POST',
        '/admin/billing/plans',
        {
          name: metered ? 'Bench metered' : 'Bench flat',
          slug: `bench-${metered ? 'metered' : 'flat'}-${hex()}`,
          priceCents: 1000,
          status: 'PUBLISHED',
          meteredOverage: metered,
          providerAPriceId: `price_bench_${hex()}`,
          providerAMeterEventName: 'ai_generations',
          // Metered: only the first generation of each workspace is included; flat: all of them.
          limits: { members: 5, apiKeys: 0, aiMonthlyGenerations: metered ? 1 : FLAT_QUOTA },
        },
        adminToken,
      );
    const [flatPlan, meteredPlan] = [await plan(false), await plan(true)];

    /** WORKSPACES accounts, each workspace subscribed to `planId` through a signed Stripe event. */
    const accounts = async (planId: string, label: string) => {
      const out: Array<{ token: string; workspaceId: string }> = [];
      for (let i = 0; i < WORKSPACES; i++) {
        const email = `${label}-${i}-${hex()}@bench.local`;
        await api('POST', '/auth/register', { email, password: 'Bench-pass-1234', name: 'Bench' });
        const login = await api('POST', '/auth/login', { email, password: 'Bench-pass-1234' });
        const workspaceId = login.activeWorkspace.id as string;
        const payload = stripeEvent(
          'customer.subscription.created',
          fakeSubscription(`sub_${hex(8)}`, { customer: `cus_${hex(6)}`, metadata: { workspaceId, planId } }),
        );
        await api('POST', '/billing/webhooks/processor-a', payload, undefined, {
          'stripe-signature': signStripe(payload, WHSEC),
        });
        out.push({ token: login.accessToken as string, workspaceId });
      }
      return out;
    };
    const flat = await accounts(flatPlan.id as string, 'flat');
    const metered = await accounts(meteredPlan.id as string, 'metered');

    /** `total` generations round-robin over the accounts, CONCURRENCY at a time; answers generations/s. */
    const run = async (who: typeof flat, total: number, halfway?: () => void) => {
      let next = 0;
      let done = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < total) {
            const a = who[next++ % who.length];
            await api('POST', '/ai/generate', { workspaceId: a.workspaceId, prompt: `bench ${next}` }, a.token);
            if (++done === Math.floor(total / 2)) halfway?.();
          }
        }),
      );
      return total / ((performance.now() - started) / 1000);
    };

    let killed: { worker: number; cpuSecondsInRound: number[] } | undefined;
    const killTheBusierWorker = async (since: Snapshot) => {
      const spent = await Promise.all(
        workers.map(async (w, i) => ((await cpuSecondsOf(w.pid!)) ?? 0) - since.workers[i]!),
      );
      const worker = spent[0] >= spent[1] ? 0 : 1;
      workers[worker].kill('SIGKILL');
      killed = { worker, cpuSecondsInRound: spent.map((s) => +s.toFixed(2)) };
    };
    const apiPid = children[0].pid!;
    /** The database's transactions so far and the CPU seconds of each process of the bench. */
    const snapshot = async () => {
      const [{ n }] = await queryRows<{ n: string }>(
        dbUrl.toString(),
        'select xact_commit + xact_rollback as n from pg_stat_database where datname = current_database()',
      );
      return {
        xacts: Number(n),
        api: await cpuSecondsOf(apiPid),
        workers: await Promise.all(workers.map((w) => cpuSecondsOf(w.pid!))),
        stripe: await cpuSecondsOf(stripeChild.pid!),
        postgres: await cpuSecondsByPid('postgres'),
        meterEvents: (await stripe.counts()).received,
      };
    };
    type Snapshot = Awaited<ReturnType<typeof snapshot>>;
    const settled = async () => {
      await new Promise((r) => setTimeout(r, SETTLE_MS));
      return snapshot();
    };
    /** Per generation between two snapshots: transactions, and CPU µs of each process (undefined when a
     * process's CPU could not be read at both ends: the worker killed meanwhile). */
    const perGeneration = (before: Snapshot, after: Snapshot, n: number) => {
      const us = (a?: number, b?: number) =>
        a === undefined || b === undefined ? undefined : Math.round(((b - a) * 1e6) / n);
      // A worker started meanwhile counts from zero; one dead at both ends counts nothing; one killed
      // meanwhile makes the sum unknown.
      const workerCpu = after.workers.map((w, i) => {
        const from = i < before.workers.length ? before.workers[i] : 0;
        if (from === undefined) return 0;
        return w === undefined ? undefined : w - from;
      });
      return {
        xacts: +((after.xacts - before.xacts) / n).toFixed(3),
        apiCpuUs: us(before.api, after.api),
        workerCpuUs: workerCpu.some((w) => w === undefined)
          ? undefined
          : Math.round((workerCpu.reduce((a, b) => a! + b!, 0)! * 1e6) / n),
        stripeCpuUs: us(before.stripe, after.stripe),
        postgresCpuUs: Math.round(((cpuSecondsBetween(before.postgres, after.postgres) ?? NaN) * 1e6) / n),
      };
    };
    /** Per meter event the fake Stripe received between two snapshots: the worker's and the fake's CPU µs. */
    const perEvent = (before: Snapshot, after: Snapshot, perGen: ReturnType<typeof perGeneration>, n: number) => {
      const events = after.meterEvents - before.meterEvents;
      const us = (perGenUs?: number) => (perGenUs === undefined ? undefined : Math.round((perGenUs * n) / events));
      return events === 0
        ? {}
        : {
            meterEvents: events,
            workerCpuUsPerEvent: us(perGen.workerCpuUs),
            stripeCpuUsPerEvent: us(perGen.stripeCpuUs),
          };
    };
    // Warm-up, untimed, on accounts of its own (the rounds' quotas stay whole): the API's code compiled
    // and its pools open before the first round, which would otherwise pay for it alone.
    await run(await accounts(flatPlan.id as string, 'warm-up'), WARM_UP);
    // ROUNDS rounds, flat then metered each, so that a slow spell of the machine weighs on both alike; the
    // busier worker is killed halfway through the middle metered round (halfway through the metered
    // generations when ROUNDS is odd).
    const overage = WORKSPACES * (perWorkspace - 1);
    /** A round's share of a plan's WORKSPACES * perWorkspace generations. */
    const shareOf = (round: number) =>
      Math.floor((WORKSPACES * perWorkspace * (round + 1)) / ROUNDS) -
      Math.floor((WORKSPACES * perWorkspace * round) / ROUNDS);
    const flatRates: number[] = [];
    const meteredRates: number[] = [];
    const rounds: Array<
      { plan: string; perSec: number } & ReturnType<typeof perGeneration> & ReturnType<typeof perEvent>
    > = [];
    let lastGeneration = 0;
    let counts = await stripe.counts();
    let allThere = false;
    let deliveredIn = 0;
    let before = await settled();
    for (let round = 0; round < ROUNDS; round++) {
      const flatTotal = shareOf(round);
      flatRates.push(await run(flat, flatTotal));
      let after = await settled();
      rounds.push({ plan: 'flat', perSec: Math.round(flatRates[round]), ...perGeneration(before, after, flatTotal) });
      before = after;
      const meteredTotal = shareOf(round);
      meteredRates.push(
        await run(metered, meteredTotal, () => {
          if (round === KILL_ROUND) void killTheBusierWorker(before);
        }),
      );
      if (round === ROUNDS - 1) {
        lastGeneration = performance.now();
        while (performance.now() - lastGeneration < DELIVERY_TARGET_MS + 30_000) {
          counts = await stripe.counts();
          if (counts.counted >= overage) {
            allThere = true;
            break;
          }
          await new Promise((r) => setTimeout(r, 100));
        }
        deliveredIn = performance.now() - lastGeneration;
      }
      after = await settled();
      const perGen = perGeneration(before, after, meteredTotal);
      rounds.push({
        plan: 'metered',
        perSec: Math.round(meteredRates[round]),
        ...perGen,
        ...perEvent(before, after, perGen, meteredTotal),
      });
      before = after;
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const [flatRate, meteredRate] = [mean(flatRates), mean(meteredRates)];
    const resends = counts.received - counts.counted;
    const ratio = meteredRate / flatRate;
    const results = {
      generationsPerSec: { flat: Math.round(flatRate), metered: Math.round(meteredRate), ratio: +ratio.toFixed(3) },
      meterEvents: {
        expected: overage,
        counted: counts.counted,
        resends,
        duplicates: counts.duplicates,
        requests: counts.requests,
        requestsPerEvent: +(counts.requests / Math.max(1, counts.counted)).toFixed(4),
        sessions: counts.sessions,
        killed,
        deliveredInMs: Math.round(deliveredIn),
      },
      // Per generation; the worker CPU of the round of the kill is unknown (the killed worker's is gone).
      rounds,
    };
    console.log(JSON.stringify(results, null, 2));
    const pass = allThere && counts.counted === overage && deliveredIn <= DELIVERY_TARGET_MS && ratio >= RATE_TARGET;
    console.log(pass ? 'billing usage bench: all targets met' : 'billing usage bench: a target was missed');
    process.exitCode = pass ? 0 : 1;
  } finally {
    // With BENCH_PROFILE_DIR, a child stopped by SIGTERM writes its profile as it exits.
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill(profile.length > 0 ? 'SIGTERM' : 'SIGKILL');
          }),
      ),
    );
    stripeChild.kill('SIGKILL');
    await queryRows(ADMIN_URL, `drop database if exists "${dbName}" with (force)`);
  }
}

await main();
