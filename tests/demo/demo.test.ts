// Demo administration (demo/: data, seed, reset, cli.ts): seeding is idempotent, the seeded accounts work
// through the API with their demo restrictions, and a reset puts the demo data back while leaving every
// other row alone. The run's database is shared with other files, so every check is scoped to the demo
// ids and this file's own demo addresses (set through the settings).
import crypto from 'node:crypto';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, parseConfig, withDevelopmentSecrets } from '../../server/platform/config.js';
import { PasswordHasher } from '../../server/platform/security/passwords.js';
import { SecretBox } from '../../server/platform/security/secret-box.js';
import { createDb, type Db } from '../../db/index.js';
import { DEMO_IDS, DEMO_WORKSPACE_NAME, type DemoDeps } from '../../demo/data.js';
import { resetDemo } from '../../demo/reset.js';
import { seedDemo } from '../../demo/seed.js';
import { formatDemoSummary, type DemoSummary } from '../../demo/summary.js';
import { startTestApp, testEnv, type TestApp } from '../helpers/app.js';
import { expectError, login, registerAndLogin, uniqueEmail, type Session } from '../helpers/http.js';
import { ledger } from '../helpers/secret-ledger.js';

const run = crypto.randomBytes(4).toString('hex');
const DEMO = {
  admin: `demo-admin-${run}@tests.local`,
  adminPassword: 'Demo-admin-pass-1',
  password: 'Demo-users-pass-1',
  users: ['owner', 'ws-admin', 'member', 'viewer'].map((r) => `demo-${r}-${run}@tests.local`),
};
const ROLES = ['OWNER', 'ADMIN', 'MEMBER', 'VIEWER'] as const;
const demoSettings = {
  AI_DEMO_RESTRICTED_EMAILS: DEMO.users.join(','),
  SEED_DEMO_ADMIN_EMAIL: DEMO.admin,
  SEED_DEMO_ADMIN_PASSWORD: DEMO.adminPassword,
  DEMO_PASSWORD: DEMO.password,
};
const ws = DEMO_IDS.workspace;
const userIds = [DEMO_IDS.admin, ...DEMO_IDS.users];

let app: TestApp;
let db: Db;
let deps: DemoDeps;
let firstSeed: DemoSummary;

/** Every demo row, as stored (timestamps, hashes and the sealed secret included). */
async function storedDemoRows() {
  return {
    workspace: await db.selectFrom('workspaces').selectAll().where('id', '=', ws).execute(),
    users: await db.selectFrom('users').selectAll().where('id', 'in', userIds).orderBy('id').execute(),
    members: await db
      .selectFrom('workspace_members')
      .selectAll()
      .where('workspace_id', '=', ws)
      .orderBy('user_id')
      .execute(),
    generations: await db
      .selectFrom('ai_generations')
      .selectAll()
      .where('workspace_id', '=', ws)
      .orderBy('id')
      .execute(),
    webhooks: await db.selectFrom('webhooks').selectAll().where('workspace_id', '=', ws).orderBy('id').execute(),
    deliveries: await db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('workspace_id', '=', ws)
      .orderBy('id')
      .execute(),
  };
}

/** The demo data as a visitor sees it: what a reset must give back (dates and the sealed secret aside). */
async function demoState() {
  const countOf = async (
    table:
      | 'workspace_invitations'
      | 'api_keys'
      | 'files'
      | 'subscriptions'
      | 'payments'
      | 'ai_usage_counters'
      | 'domain_events',
  ) =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('workspace_id', '=', ws)
          .executeTakeFirstOrThrow()
      ).n,
    );
  return {
    workspace: await db
      .selectFrom('workspaces')
      .select(['id', 'name', 'status', 'edition', 'plan_id', 'limits', 'is_personal', 'logo_file_id', 'deleted_at'])
      .where('id', '=', ws)
      .executeTakeFirst(),
    users: await db
      .selectFrom('users')
      .select(['id', 'email', 'name', 'status', 'platform_role', 'password_hash'])
      .where('id', 'in', userIds)
      .orderBy('id')
      .execute(),
    members: await db
      .selectFrom('workspace_members')
      .select(['user_id', 'role'])
      .where('workspace_id', '=', ws)
      .orderBy('user_id')
      .execute(),
    generations: await db
      .selectFrom('ai_generations')
      .select(['id', 'user_id', 'prompt', 'output', 'status', 'is_sample', 'provider', 'model'])
      .where('workspace_id', '=', ws)
      .orderBy('id')
      .execute(),
    webhooks: await db
      .selectFrom('webhooks')
      .select([
        'id',
        'name',
        'url',
        'events',
        'is_active',
        'previous_secret_encrypted',
        'consecutive_failures',
        'created_by',
      ])
      .where('workspace_id', '=', ws)
      .orderBy('id')
      .execute(),
    deliveries: await db
      .selectFrom('webhook_deliveries')
      .select([
        'id',
        'webhook_id',
        'event',
        'status',
        'attempts',
        'response_status',
        'response_preview',
        'last_error',
        'next_retry_at',
      ])
      .where('workspace_id', '=', ws)
      .orderBy('id')
      .execute(),
    others: {
      invitations: await countOf('workspace_invitations'),
      apiKeys: await countOf('api_keys'),
      files: await countOf('files'),
      subscriptions: await countOf('subscriptions'),
      payments: await countOf('payments'),
      usageCounters: await countOf('ai_usage_counters'),
      domainEvents: await countOf('domain_events'),
    },
  };
}

const demoLogin = (i: number) => login(app.api, DEMO.users[i], DEMO.password);

beforeAll(async () => {
  ledger.sent(DEMO.password, 'DEMO_PASSWORD');
  ledger.sent(DEMO.adminPassword, 'SEED_DEMO_ADMIN_PASSWORD');
  // The app knows this file's demo accounts (AI_DEMO_RESTRICTED_EMAILS) and keeps the suite's shared demo
  // admin; the seed creates this file's own demo admin.
  app = await startTestApp({ AI_DEMO_RESTRICTED_EMAILS: demoSettings.AI_DEMO_RESTRICTED_EMAILS });
  const { config } = withDevelopmentSecrets(parseConfig(testEnv(demoSettings)));
  db = await createDb(config);
  deps = {
    db,
    config,
    passwords: new PasswordHasher(config.BCRYPT_COST),
    secrets: new SecretBox(config.WEBHOOK_SECRET_ENCRYPTION_KEY),
  };
  firstSeed = await seedDemo(deps);
});

afterAll(async () => {
  await db?.destroy();
  await app?.close();
});

describe('npm run demo:seed (seedDemo)', () => {
  it('creates the demo admin, one account per role, the workspace, samples and a webhook with deliveries', () => {
    expect(firstSeed.changed).toBe(true);
    expect(firstSeed.written).toEqual({
      accounts: 5,
      workspaces: 1,
      members: 4,
      samples: 4,
      webhooks: 1,
      deliveries: 3,
    });
    expect(firstSeed.workspace).toEqual({ id: ws, name: DEMO_WORKSPACE_NAME });
    expect(firstSeed.accounts.map((a) => [a.email, a.role, a.state])).toEqual([
      [DEMO.admin, 'DEMO_ADMIN', 'created'],
      ...DEMO.users.map((email, i) => [email, ROLES[i], 'created']),
    ]);
  });

  it('changes nothing when run again, and says so', async () => {
    const before = await storedDemoRows();
    const again = await seedDemo(deps);
    expect(again.changed).toBe(false);
    expect(Object.values(again.written).every((n) => n === 0)).toBe(true);
    expect(again.accounts.every((a) => a.state === 'present')).toBe(true);
    expect(formatDemoSummary(again)[0]).toMatch(/already in place; nothing changed/);
    expect(await storedDemoRows()).toEqual(before);
  });

  it('raises the member limit of a demo workspace seeded before with fewer addresses, so invitations still work', async () => {
    // As a seed with the default single address left it: a limit of 3.
    await sql`update workspaces set limits = jsonb_set(limits, '{members}', '3') where id = ${ws}`.execute(db);
    const again = await seedDemo(deps);
    expect(again.changed).toBe(true);
    expect(again.written.workspaces).toBe(0);
    expect(formatDemoSummary(again)[0]).toBe('demo:seed created nothing; it changed what the notes say.');
    expect(formatDemoSummary(again)).toContain(
      `  note: raised the demo workspace's member limit to ${DEMO.users.length + 1}, to fit its members and one invitation`,
    );
    const { limits } = await db
      .selectFrom('workspaces')
      .select('limits')
      .where('id', '=', ws)
      .executeTakeFirstOrThrow();
    // Four members and one place left for an invitation, as the first seed makes it.
    expect(limits.members).toBe(DEMO.users.length + 1);
    expect((await seedDemo(deps)).changed).toBe(false);
  });

  it('reports addresses and setting names, never a password or the webhook secret', async () => {
    const [hook] = (await storedDemoRows()).webhooks;
    const secret = deps.secrets.open(hook.secret_encrypted);
    expect(secret).toMatch(/^whsec_/);
    const printed = JSON.stringify(firstSeed) + formatDemoSummary(firstSeed).join('\n');
    for (const value of [DEMO.password, DEMO.adminPassword, secret, hook.secret_encrypted])
      expect(printed).not.toContain(value);
    expect(printed).toContain('DEMO_PASSWORD');
  });

  it('lets the demo admin sign in, read the admin routes, and refuses an admin write with 403 DEMO_READ_ONLY', async () => {
    const admin = await login(app.api, DEMO.admin, DEMO.adminPassword);
    expect(admin.userId).toBe(DEMO_IDS.admin);
    const me = await app.api('GET', '/auth/me', { token: admin.accessToken });
    expect(me.body.user).toMatchObject({ email: DEMO.admin, platformRole: 'DEMO_ADMIN', emailVerified: true });
    expect((await app.api('GET', '/admin/users', { token: admin.accessToken })).status).toBe(200);
    const write = await app.api('PATCH', `/admin/users/${DEMO_IDS.users[0]}`, {
      token: admin.accessToken,
      body: { name: 'Changed' },
    });
    expect(expectError(write, 403, 'DEMO_READ_ONLY').message).toBe('Demo admin is read-only.');
  });

  it('makes the demo workspace the active one of each demo account, with one member per role', async () => {
    for (const i of [0, 1, 2, 3]) {
      const s = await demoLogin(i);
      expect(s.userId).toBe(DEMO_IDS.users[i]);
      expect(s.workspaceId).toBe(ws);
    }
    const owner = await demoLogin(0);
    const members = await app.api('GET', `/workspaces/${ws}/members`, { token: owner.accessToken });
    expect(members.status, members.text).toBe(200);
    expect(members.body.items.map((m: { email: string; role: string }) => [m.email, m.role]).sort()).toEqual(
      DEMO.users.map((e, i) => [e, ROLES[i]]).sort(),
    );
  });

  it('shows the sample history on GET /ai/history to a demo account, marked isSample', async () => {
    const member = await demoLogin(2);
    const res = await app.api('GET', '/ai/history', { token: member.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(res.body.total).toBe(4);
    expect(res.body.items.map((g: { id: string }) => g.id).sort()).toEqual([...DEMO_IDS.samples].sort());
    expect(
      res.body.items.every(
        (g: { isSample: boolean; status: string; workspaceId: string }) =>
          g.isSample && g.status === 'SUCCEEDED' && g.workspaceId === ws,
      ),
    ).toBe(true);
  });

  it('lists the demo webhook (no secret) and its deliveries (no signature header)', async () => {
    const owner = await demoLogin(0);
    const hooks = await app.api('GET', `/workspaces/${ws}/webhooks`, { token: owner.accessToken });
    expect(hooks.status, hooks.text).toBe(200);
    expect(hooks.body.items).toHaveLength(1);
    expect(hooks.body.items[0]).toMatchObject({
      id: DEMO_IDS.webhook,
      name: 'Demo endpoint',
      url: 'https://example.com/webhooks/demo',
      isActive: true,
    });
    expect(hooks.text).not.toMatch(/whsec_|secret_encrypted/);
    const deliveries = await app.api('GET', `/workspaces/${ws}/webhook-deliveries`, { token: owner.accessToken });
    expect(deliveries.status, deliveries.text).toBe(200);
    expect(deliveries.body.items.map((d: { id: string }) => d.id).sort()).toEqual([...DEMO_IDS.deliveries].sort());
    expect(deliveries.body.items.map((d: { status: string }) => d.status).sort()).toEqual([
      'failed',
      'success',
      'success',
    ]);
    for (const d of deliveries.body.items) {
      expect(d.webhookId).toBe(DEMO_IDS.webhook);
      expect(d.nextRetryAt).toBeNull();
      expect(Object.keys(d.requestHeaders)).not.toContain('X-Service-Signature');
      expect(d.payload).toMatchObject({ event: d.event, workspaceId: ws });
    }
  });
});

describe('npm run demo:reset (resetDemo)', () => {
  let seeded: Awaited<ReturnType<typeof demoState>>;
  let outsider: Session;

  beforeAll(async () => {
    seeded = await demoState();
    outsider = await registerAndLogin(app.api, { prefix: 'demo-outsider' });
  });

  it('puts changed demo data back as seeded and leaves unrelated data alone', async () => {
    const owner = await demoLogin(0);
    // Visitors change the demo data...
    expect(
      (
        await app.api('PATCH', `/workspaces/${ws}`, {
          token: owner.accessToken,
          body: { name: 'Renamed by a visitor' },
        })
      ).status,
    ).toBe(200);
    expect(
      (await app.api('DELETE', `/workspaces/${ws}/members/${DEMO_IDS.users[3]}`, { token: owner.accessToken })).status,
    ).toBe(200);
    const invited = await app.api('POST', `/workspaces/${ws}/invitations`, {
      token: owner.accessToken,
      body: { email: uniqueEmail('demo-invitee'), role: 'MEMBER' },
    });
    expect(invited.status, invited.text).toBe(201);
    // (written directly: demo accounts may not generate, and a generation event would reach the webhook)
    await db
      .insertInto('ai_generations')
      .values({
        workspace_id: ws,
        user_id: DEMO_IDS.users[1],
        provider: 'MOCK',
        model: 'mock-1',
        prompt: 'a visitor prompt',
        output: 'out',
        status: 'SUCCEEDED',
      })
      .execute();
    await db.updateTable('users').set({ name: 'Visitor was here' }).where('id', '=', DEMO_IDS.users[2]).execute();
    // ...and someone else uses the service meanwhile.
    expect(
      (
        await app.api('PATCH', `/workspaces/${outsider.workspaceId}`, {
          token: outsider.accessToken,
          body: { name: 'Not demo data' },
        })
      ).status,
    ).toBe(200);
    const theirs = await db
      .insertInto('ai_generations')
      .values({
        workspace_id: outsider.workspaceId,
        user_id: outsider.userId,
        provider: 'MOCK',
        model: 'mock-1',
        prompt: 'mine',
        output: 'mine too',
        status: 'SUCCEEDED',
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    expect(await demoState()).not.toEqual(seeded);

    const summary = await resetDemo(deps);

    expect(summary.changed).toBe(true);
    expect(summary.removed).toMatchObject({ invitations: 1, generations: 1, accounts: 0 });
    expect(summary.removed.domainEvents).toBeGreaterThanOrEqual(1); // member.removed
    expect(summary.accounts.every((a) => a.state === 'restored')).toBe(true);
    expect(await demoState()).toEqual(seeded);
    const viewer = await demoLogin(3);
    expect(viewer.workspaceId).toBe(ws);
    expect((await app.api('GET', '/ai/history', { token: viewer.accessToken })).body.total).toBe(4);

    // The outsider's account, workspace and generation are as they were.
    const me = await login(app.api, outsider.email, outsider.password);
    expect(me.workspaceId).toBe(outsider.workspaceId);
    const theirWorkspace = await app.api('GET', `/workspaces/${outsider.workspaceId}`, { token: me.accessToken });
    expect(theirWorkspace.body.name).toBe('Not demo data');
    expect(
      await db.selectFrom('ai_generations').select('prompt').where('id', '=', theirs.id).executeTakeFirst(),
    ).toEqual({ prompt: 'mine' });
  });

  it('gives the same data when run twice, and audit-logs each reset', async () => {
    const again = await resetDemo(deps, { via: 'schedule' });
    expect(again.changed).toBe(false);
    expect(await demoState()).toEqual(seeded);
    const audits = await db
      .selectFrom('audit_logs')
      .select(['action', 'metadata'])
      .where('workspace_id', '=', ws)
      .where('action', '=', 'demo.reset')
      .orderBy('created_at')
      .execute();
    expect(audits.length).toBeGreaterThanOrEqual(2);
    expect(audits.at(-1)!.metadata).toMatchObject({ via: 'schedule', removedRows: 0 });
  });

  it('puts a demo password back when it was changed', async () => {
    await db
      .updateTable('users')
      .set({ password_hash: await deps.passwords.hash('Changed-pass-99') })
      .where('id', '=', DEMO_IDS.users[1])
      .execute();
    expectError(
      await app.api('POST', '/auth/login', { body: { email: DEMO.users[1], password: DEMO.password } }),
      401,
      'INVALID_CREDENTIALS',
    );
    await resetDemo(deps);
    expect((await demoLogin(1)).userId).toBe(DEMO_IDS.users[1]);
  });
});

describe('demo/cli.ts', () => {
  it('runs as `tsx demo/cli.ts seed`: recreates what is missing and prints what it did, without passwords or secrets', async () => {
    await db
      .deleteFrom('workspace_members')
      .where('workspace_id', '=', ws)
      .where('user_id', '=', DEMO_IDS.users[3])
      .execute();
    const env: NodeJS.ProcessEnv = { ...process.env, ...testEnv(demoSettings), LOG_LEVEL: 'error' };
    const { stdout, stderr } = await promisify(execFile)(
      path.resolve('node_modules/.bin/tsx'),
      ['demo/cli.ts', 'seed'],
      { env, cwd: path.resolve('.') },
    );
    const printed = stdout + stderr;
    ledger.observe('demo:seed output', printed);
    expect(stdout).toMatch(/demo:seed created 1 membership\./);
    for (const email of [DEMO.admin, ...DEMO.users]) expect(stdout).toContain(email);
    expect(stdout).toContain('password: DEMO_PASSWORD');
    const hook = await db
      .selectFrom('webhooks')
      .select('secret_encrypted')
      .where('id', '=', DEMO_IDS.webhook)
      .executeTakeFirstOrThrow();
    for (const value of [
      DEMO.password,
      DEMO.adminPassword,
      deps.secrets.open(hook.secret_encrypted),
      env.WEBHOOK_SECRET_ENCRYPTION_KEY!,
    ]) {
      expect(printed).not.toContain(value);
    }
    expect(printed).not.toContain('whsec_');
    expect(
      await db
        .selectFrom('workspace_members')
        .select('role')
        .where('workspace_id', '=', ws)
        .where('user_id', '=', DEMO_IDS.users[3])
        .executeTakeFirst(),
    ).toEqual({ role: 'VIEWER' });
  }, 60_000);
});

describe('demo settings', () => {
  it('refuse to seed in production without DEMO_PASSWORD, or with a weak one, before writing anything', async () => {
    const production = parseConfig(testEnv({ ...demoSettings, NODE_ENV: 'production', DEMO_PASSWORD: undefined }));
    await expect(seedDemo({ ...deps, config: { ...production, DEMO_PASSWORD: undefined } })).rejects.toThrow(
      /DEMO_PASSWORD: required when NODE_ENV is production/,
    );
    await expect(resetDemo({ ...deps, config: { ...production, DEMO_PASSWORD: 'short' } })).rejects.toThrow(
      ConfigError,
    );
  });

  it('parse DEMO_RESET_CRON as a 5 or 6 field cron pattern, empty meaning off', () => {
    expect(parseConfig(testEnv({ DEMO_RESET_CRON: '0 * * * *' })).DEMO_RESET_CRON).toBe('0 * * * *');
    expect(parseConfig(testEnv({ DEMO_RESET_CRON: '*/30 * * * * *' })).DEMO_RESET_CRON).toBe('*/30 * * * * *');
    expect(parseConfig(testEnv({ DEMO_RESET_CRON: '' })).DEMO_RESET_CRON).toBeUndefined();
    expect(() => parseConfig(testEnv({ DEMO_RESET_CRON: 'every hour' }))).toThrow(
      /DEMO_RESET_CRON: must be a cron pattern/,
    );
  });
});
