// Demo data (`npm run demo:seed`, `npm run demo:reset`, DEMO_RESET_CRON in the worker): the accounts the
// settings name, a demo workspace with one member per role, sample AI history, and a webhook with a few
// deliveries. Every row has a fixed id (DEMO_IDS) and tenant rows hang off the demo workspace's id: that is
// how seed and reset find the demo data, and why they never touch anything else.
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database, DeliveryStatus, PlanLimits, PlatformRole, WebhookEvent, WorkspaceRole } from '../db/schema.js';
import { ConfigError, type Config } from '../server/platform/config.js';
import { passwordPolicyViolation, type PasswordHasher } from '../server/platform/security/passwords.js';
import type { SecretBox } from '../server/platform/security/secret-box.js';
import type { Storage } from '../server/platform/storage.js';
import { estimateTokens } from '../routers/ai/providers/mock.js';
import { envelope, newSecret } from '../routers/webhooks/service.js';
import { defaultPlan } from '../routers/billing/service.js';
import { recordAudit } from '../routers/audit/service.js';

type Db = Kysely<Database>;

export interface DemoDeps {
  db: Db;
  config: Pick<
    Config,
    'NODE_ENV' | 'AI_DEMO_RESTRICTED_EMAILS' | 'SEED_DEMO_ADMIN_EMAIL' | 'SEED_DEMO_ADMIN_PASSWORD' | 'DEMO_PASSWORD' | 'WEBHOOK_USER_AGENT'
  >;
  passwords: PasswordHasher;
  /** Seals the demo webhook's signing secret, as routers/webhooks/service.ts does. */
  secrets: SecretBox;
  /** Reset removes the stored objects of the uploads and avatars it deletes; without it they stay. */
  storage?: Pick<Storage, 'delete'>;
}

const fixedId = (n: string) => `de000000-0000-4000-8000-${n.padStart(12, '0')}`;

/** The ids of every demo row. Generated ids never take this shape in practice (gen_random_uuid). */
export const DEMO_IDS = {
  workspace: fixedId('a0'),
  admin: fixedId('b0'),
  users: [fixedId('c0'), fixedId('c1'), fixedId('c2'), fixedId('c3')],
  webhook: fixedId('d0'),
  deliveries: [fixedId('e0'), fixedId('e1'), fixedId('e2')],
  samples: [fixedId('f0'), fixedId('f1'), fixedId('f2'), fixedId('f3')],
} as const;

export const DEMO_WORKSPACE_NAME = 'Demo workspace';
/** DEMO_PASSWORD outside production when it is unset (documented in docs/configuration.md). */
export const DEVELOPMENT_DEMO_PASSWORD = 'Demo-password-1';

/** The workspace role of each address of AI_DEMO_RESTRICTED_EMAILS, in order; later addresses are not seeded. */
const MEMBER_SLOTS: Array<{ role: WorkspaceRole; name: string }> = [
  { role: 'OWNER', name: 'Demo Owner' },
  { role: 'ADMIN', name: 'Demo Workspace Admin' },
  { role: 'MEMBER', name: 'Demo Member' },
  { role: 'VIEWER', name: 'Demo Viewer' },
];

const WEBHOOK = {
  name: 'Demo endpoint',
  url: 'https://example.com/webhooks/demo',
  events: ['member.added', 'ai.generation.completed', 'billing.updated'] satisfies WebhookEvent[],
};

const SAMPLES = [
  {
    prompt: 'Write an outline for a blog post about remote onboarding for engineering managers.',
    output: 'Title: Onboarding remote engineers in 30 days\n1. Before day one\n2. The first week\n3. The first month\n4. Measuring success',
    hoursAgo: 2,
  },
  {
    prompt: 'Write a product description of about 120 words for a standing desk.',
    output: 'Work the way your body wants to: the desk rises from 70 to 120 cm in eight quiet seconds and remembers four heights...',
    hoursAgo: 9,
  },
  {
    prompt: 'Summarise the following text in 3 bullet points: our Q3 results.',
    output: '- Revenue grew 18% to 4.2 M\n- Churn fell to 2.1%\n- Two new enterprise customers signed',
    hoursAgo: 30,
  },
  {
    prompt: 'Draft a friendly reply to a customer asking when the mobile app will support offline mode.',
    output: 'Hi Sam, thanks for asking! Offline mode is on our roadmap for the next quarter; we will write to you as soon as it is in beta.',
    hoursAgo: 75,
  },
];

// ---------------------------------------------------------------- the demo set, from the settings

interface PlannedAccount {
  id: string;
  email: string;
  name: string;
  platformRole: PlatformRole;
  /** Role in the demo workspace; none for the demo admin. */
  role?: WorkspaceRole;
  password: string;
  /** The setting holding the password: printed instead of the password. */
  passwordSetting: 'SEED_DEMO_ADMIN_PASSWORD' | 'DEMO_PASSWORD';
}

function checkPassword(setting: string, password: string) {
  const violation = passwordPolicyViolation(password);
  if (violation) throw new ConfigError(`Invalid configuration:\n  ${setting}: ${violation}`);
}

/** DEMO_PASSWORD, or the development default; production has no default. */
function demoPassword(config: DemoDeps['config']) {
  if (config.DEMO_PASSWORD) {
    checkPassword('DEMO_PASSWORD', config.DEMO_PASSWORD);
    return config.DEMO_PASSWORD;
  }
  if (config.NODE_ENV === 'production') {
    throw new ConfigError('Invalid configuration:\n  DEMO_PASSWORD: required when NODE_ENV is production (the password of the demo accounts)');
  }
  return DEVELOPMENT_DEMO_PASSWORD;
}

function plannedAccounts(config: DemoDeps['config']): { accounts: PlannedAccount[]; ignored: string[] } {
  const userEmails = [...new Set(config.AI_DEMO_RESTRICTED_EMAILS)];
  if (userEmails.length === 0) {
    throw new ConfigError('Invalid configuration:\n  AI_DEMO_RESTRICTED_EMAILS: names no account; the demo workspace needs at least its owner');
  }
  const accounts: PlannedAccount[] = [];
  const adminEmail = config.SEED_DEMO_ADMIN_EMAIL?.trim().toLowerCase();
  if (adminEmail && config.SEED_DEMO_ADMIN_PASSWORD) {
    if (userEmails.includes(adminEmail)) {
      throw new ConfigError('Invalid configuration:\n  SEED_DEMO_ADMIN_EMAIL: must not be one of AI_DEMO_RESTRICTED_EMAILS');
    }
    checkPassword('SEED_DEMO_ADMIN_PASSWORD', config.SEED_DEMO_ADMIN_PASSWORD);
    accounts.push({
      id: DEMO_IDS.admin,
      email: adminEmail,
      name: 'Demo Admin',
      platformRole: 'DEMO_ADMIN',
      password: config.SEED_DEMO_ADMIN_PASSWORD,
      passwordSetting: 'SEED_DEMO_ADMIN_PASSWORD',
    });
  }
  const password = demoPassword(config);
  MEMBER_SLOTS.forEach((slot, i) => {
    const email = userEmails[i];
    if (email) accounts.push({ id: DEMO_IDS.users[i]!, email, name: slot.name, platformRole: 'USER', role: slot.role, password, passwordSetting: 'DEMO_PASSWORD' });
  });
  return { accounts, ignored: userEmails.slice(MEMBER_SLOTS.length) };
}

interface ResolvedAccount extends PlannedAccount {
  /** present: its row exists; missing: seed creates it; skipped: the address belongs to someone else. */
  state: 'present' | 'missing' | 'skipped';
  storedHash?: string;
}

/**
 * Matches the planned accounts with the users table. A row with the fixed id is the demo account. The
 * demo admin may also be the DEMO_ADMIN account of SEED_DEMO_ADMIN_EMAIL created at start-up
 * (db/seed.ts): the settings name it and the role is only ever given to demo admins. Any other account
 * holding a demo address is not ours and is left alone.
 */
async function resolveAccounts(db: Db, planned: PlannedAccount[]): Promise<ResolvedAccount[]> {
  const rows = await db
    .selectFrom('users')
    .select(['id', 'email', 'platform_role', 'password_hash'])
    .where((eb) => eb.or([eb('id', 'in', planned.map((a) => a.id)), eb('email', 'in', planned.map((a) => a.email))]))
    .execute();
  const resolved = planned.map((a): ResolvedAccount => {
    const own = rows.find((r) => r.id === a.id);
    const holder = rows.find((r) => r.email === a.email && r.id !== a.id);
    if (own && !holder) return { ...a, state: 'present', storedHash: own.password_hash };
    if (holder && !own && a.platformRole === 'DEMO_ADMIN' && holder.platform_role === 'DEMO_ADMIN') {
      return { ...a, id: holder.id, state: 'present', storedHash: holder.password_hash };
    }
    return { ...a, state: holder ? 'skipped' : 'missing' };
  });
  if (resolved.find((a) => a.role === 'OWNER')?.state === 'skipped') {
    const owner = resolved.find((a) => a.role === 'OWNER')!;
    throw new ConfigError(
      `Invalid configuration:\n  AI_DEMO_RESTRICTED_EMAILS: the demo owner's address ${owner.email} belongs to an account the demo seed did not create; name another address first`,
    );
  }
  return resolved;
}

// ---------------------------------------------------------------- rows

async function workspaceValues(db: Db, memberCount: number) {
  const plan = await defaultPlan(db);
  const limits: PlanLimits = { ...(plan?.limits ?? {}) };
  // Four roles to show: the member limit of the copy is raised to fit them, so invitations still work.
  limits.members = Math.max(limits.members ?? 3, memberCount + 1);
  return {
    name: DEMO_WORKSPACE_NAME,
    status: 'ACTIVE' as const,
    edition: plan?.edition ?? 'LITE',
    is_personal: false,
    plan_id: plan?.id ?? null,
    limits: JSON.stringify(limits),
    processor_a_customer_id: null,
    branding_display_name: null,
    branding_primary_color: null,
    branding_accent_color: null,
    logo_file_id: null,
    deleted_at: null,
  };
}

/** Samples as routers/ai/service.ts writes them for demo accounts: marked is_sample, never counted. */
function sampleRows(members: ResolvedAccount[], now: Date) {
  return SAMPLES.map((s, i) => ({
    id: DEMO_IDS.samples[i]!,
    workspace_id: DEMO_IDS.workspace,
    user_id: members[i % members.length]?.id ?? null,
    template_id: null,
    provider: 'MOCK' as const,
    model: 'sample',
    prompt: s.prompt,
    system_prompt: null,
    temperature: null,
    output: s.output,
    status: 'SUCCEEDED' as const,
    error_code: null,
    prompt_tokens: estimateTokens(s.prompt),
    completion_tokens: estimateTokens(s.output),
    duration_ms: 0,
    is_sample: true,
    created_at: new Date(now.getTime() - s.hoursAgo * 3_600_000),
  }));
}

function webhookValues(secrets: SecretBox, owner: ResolvedAccount | undefined) {
  return {
    workspace_id: DEMO_IDS.workspace,
    name: WEBHOOK.name,
    url: WEBHOOK.url,
    events: JSON.stringify(WEBHOOK.events),
    // A fresh secret nobody has seen: it is never shown or printed (a demo account cannot rotate it).
    secret_encrypted: secrets.seal(newSecret()),
    previous_secret_encrypted: null,
    previous_secret_expires_at: null,
    is_active: true,
    disabled_reason: null,
    consecutive_failures: 0,
    failing_since: null,
    created_by: owner?.id ?? null,
  };
}

/** Final statuses only, so no sweep ever picks a demo delivery up. */
function deliveryRows(config: DemoDeps['config'], members: ResolvedAccount[], now: Date) {
  const specs: Array<{ event: WebhookEvent; data: Record<string, unknown>; status: DeliveryStatus; attempts: number; responseStatus: number; preview: string; durationMs: number; error: string | null; hoursAgo: number }> = [
    {
      event: 'webhook.test',
      data: { message: `This is a test delivery of the webhook "${WEBHOOK.name}".`, webhookId: DEMO_IDS.webhook },
      status: 'success', attempts: 1, responseStatus: 200, preview: '{"received":true}', durationMs: 184, error: null, hoursAgo: 80,
    },
    {
      event: 'member.added',
      data: { userId: members[1]?.id ?? members[0]?.id ?? null, role: members[1]?.role ?? 'OWNER' },
      status: 'success', attempts: 1, responseStatus: 204, preview: '', durationMs: 97, error: null, hoursAgo: 50,
    },
    {
      event: 'ai.generation.completed',
      data: { generationId: DEMO_IDS.samples[0], model: 'sample', provider: 'MOCK', totalTokens: 60 },
      status: 'failed', attempts: 4, responseStatus: 503, preview: 'Service Unavailable', durationMs: 2011, error: 'The endpoint answered HTTP 503.', hoursAgo: 2,
    },
  ];
  return specs.map((d, i) => {
    const at = new Date(now.getTime() - d.hoursAgo * 3_600_000);
    const id = DEMO_IDS.deliveries[i]!;
    return {
      id,
      webhook_id: DEMO_IDS.webhook,
      workspace_id: DEMO_IDS.workspace,
      event: d.event,
      domain_event_id: null,
      payload: JSON.stringify(envelope(d.event, DEMO_IDS.workspace, d.data, at)),
      status: d.status,
      attempts: d.attempts,
      // As routers/webhooks/delivery.ts stores them: never the signature.
      request_headers: JSON.stringify({
        'Content-Type': 'application/json',
        'User-Agent': config.WEBHOOK_USER_AGENT,
        'X-Service-Event': d.event,
        'X-Service-Delivery': id,
        'X-Service-Timestamp': String(Math.floor(at.getTime() / 1000)),
      }),
      response_status: d.responseStatus,
      response_preview: d.preview,
      duration_ms: d.durationMs,
      next_retry_at: null,
      last_error: d.error,
      created_at: at,
      updated_at: at,
    };
  });
}

const lockDemoData = (trx: Transaction<Database>) => sql`select pg_advisory_xact_lock(hashtext('demo-data'))`.execute(trx);

// ---------------------------------------------------------------- summary

export interface DemoAccountSummary {
  email: string;
  role: 'DEMO_ADMIN' | WorkspaceRole;
  state: 'created' | 'present' | 'restored' | 'skipped';
  /** The setting that holds the password (never the password itself). */
  passwordSetting: PlannedAccount['passwordSetting'];
  note?: string;
}

export type DemoRowKind = 'accounts' | 'workspaces' | 'members' | 'samples' | 'webhooks' | 'deliveries';

export interface DemoSummary {
  action: 'seed' | 'reset';
  workspace: { id: string; name: string };
  accounts: DemoAccountSummary[];
  /** seed: rows created (missing ones only); reset: demo rows written back as seeded. */
  written: Record<DemoRowKind, number>;
  /** reset: rows of the demo workspace and demo accounts that were not part of the demo data. */
  removed: Record<string, number>;
  /** seed: whether anything was created; reset: whether anything was removed. */
  changed: boolean;
  notes: string[];
}

const noRows = (): Record<DemoRowKind, number> => ({ accounts: 0, workspaces: 0, members: 0, samples: 0, webhooks: 0, deliveries: 0 });

function accountSummary(a: ResolvedAccount, state: DemoAccountSummary['state']): DemoAccountSummary {
  return {
    email: a.email,
    role: a.role ?? 'DEMO_ADMIN',
    state,
    passwordSetting: a.passwordSetting,
    ...(a.state === 'skipped' && { note: 'the address belongs to an account the demo seed did not create; left as it is' }),
  };
}

function ignoredNotes(ignored: string[]) {
  return ignored.length
    ? [`AI_DEMO_RESTRICTED_EMAILS names ${ignored.length} more address(es) than the four roles; not seeded: ${ignored.join(', ')}`]
    : [];
}

const ROW_LABELS: Record<string, [string, string]> = {
  accounts: ['account', 'accounts'],
  workspaces: ['workspace', 'workspaces'],
  members: ['membership', 'memberships'],
  samples: ['sample generation', 'sample generations'],
  generations: ['generation', 'generations'],
  webhooks: ['webhook', 'webhooks'],
  deliveries: ['webhook delivery', 'webhook deliveries'],
  openLinks: ['open reset or verification link', 'open reset or verification links'],
  invitations: ['invitation', 'invitations'],
  apiKeys: ['API key', 'API keys'],
  files: ['upload', 'uploads'],
  payments: ['payment', 'payments'],
  subscriptions: ['subscription', 'subscriptions'],
  usageCounters: ['usage counter', 'usage counters'],
  domainEvents: ['domain event', 'domain events'],
};

/** What a command prints: counts, addresses and setting names, never a password or a secret. */
export function formatDemoSummary(s: DemoSummary): string[] {
  const counts = (r: Record<string, number>) =>
    Object.entries(r)
      .filter(([, n]) => n > 0)
      .map(([k, n]) => {
        const [one, many] = ROW_LABELS[k] ?? [k, k];
        return `${n} ${n === 1 ? one : many}`;
      })
      .join(', ');
  const lines: string[] = [];
  if (s.action === 'seed') {
    const created = counts(s.written);
    lines.push(
      !s.changed
        ? 'demo:seed: the demo data is already in place; nothing changed (npm run demo:reset undoes changes made to it).'
        : created
          ? `demo:seed created ${created}.`
          : 'demo:seed created nothing; it changed what the notes say.',
    );
  } else {
    lines.push(`demo:reset removed ${s.changed ? counts(s.removed) : 'nothing'} and wrote back ${counts(s.written)}.`);
  }
  lines.push(`  workspace  "${s.workspace.name}" (${s.workspace.id})`);
  for (const a of s.accounts) {
    const password = a.state === 'skipped' ? '' : ` (password: ${a.passwordSetting})`;
    lines.push(`  ${a.role.padEnd(10)} ${a.email}  ${a.state}${password}${a.note ? `: ${a.note}` : ''}`);
  }
  for (const note of s.notes) lines.push(`  note: ${note}`);
  return lines;
}

// ---------------------------------------------------------------- seed

/** Creates the demo data that is missing; never overwrites a row. Running it again changes nothing. */
export async function seedDemo(deps: DemoDeps): Promise<DemoSummary> {
  const { db } = deps;
  const { accounts: planned, ignored } = plannedAccounts(deps.config);
  const accounts = await resolveAccounts(db, planned);
  const hashes = new Map<string, string>();
  for (const a of accounts) if (a.state === 'missing') hashes.set(a.id, await deps.passwords.hash(a.password));
  const members = accounts.filter((a) => a.role && a.state !== 'skipped');
  const owner = members.find((a) => a.role === 'OWNER');
  const written = noRows();
  const created = new Set<string>();
  const now = new Date();
  /** The members of the demo workspace and one invitation; an older copy of its limits may hold fewer. */
  const memberLimit = members.length + 1;
  let limitRaised = false;

  await db.transaction().execute(async (trx) => {
    await lockDemoData(trx);
    for (const a of accounts.filter((x) => x.state === 'missing')) {
      const row = await trx
        .insertInto('users')
        .values({ id: a.id, email: a.email, name: a.name, password_hash: hashes.get(a.id)!, platform_role: a.platformRole, email_verified_at: now })
        .onConflict((oc) => oc.doNothing())
        .returning('id')
        .executeTakeFirst();
      if (row) created.add(a.id);
    }
    written.accounts = created.size;
    // A concurrent run may have taken an address between the look-up and the lock.
    const present = new Set((await trx.selectFrom('users').select('id').where('id', 'in', members.map((m) => m.id)).execute()).map((r) => r.id));
    const seatedMembers = members.filter((m) => present.has(m.id));

    const workspace = await trx
      .insertInto('workspaces')
      .values({ id: DEMO_IDS.workspace, ...(await workspaceValues(trx, members.length)), created_at: now })
      .onConflict((oc) => oc.column('id').doNothing())
      .returning('id')
      .executeTakeFirst();
    // Seeded before with fewer addresses: the member limit of its copy is raised to fit those seated now
    // (else invitations are refused until the next reset), and only then: a seed of nothing new writes nothing.
    const raised = workspace
      ? undefined
      : await sql`update workspaces set limits = jsonb_set(limits, '{members}', to_jsonb(${memberLimit}::int))
          where id = ${DEMO_IDS.workspace} and coalesce((limits->>'members')::int, 3) < ${memberLimit}`.execute(trx);
    limitRaised = Number(raised?.numAffectedRows ?? 0) > 0;
    written.workspaces = workspace ? 1 : 0;

    if (seatedMembers.length) {
      const rows = await trx
        .insertInto('workspace_members')
        .values(seatedMembers.map((m) => ({ workspace_id: DEMO_IDS.workspace, user_id: m.id, role: m.role!, created_at: now })))
        .onConflict((oc) => oc.columns(['workspace_id', 'user_id']).doNothing())
        .returning('user_id')
        .execute();
      written.members = rows.length;
    }

    const samples = await trx
      .insertInto('ai_generations')
      .values(sampleRows(seatedMembers, now))
      .onConflict((oc) => oc.column('id').doNothing())
      .returning('id')
      .execute();
    written.samples = samples.length;

    const webhook = await trx
      .insertInto('webhooks')
      .values({ id: DEMO_IDS.webhook, ...webhookValues(deps.secrets, seatedMembers.find((m) => m.id === owner?.id)), created_at: now, updated_at: now })
      .onConflict((oc) => oc.column('id').doNothing())
      .returning('id')
      .executeTakeFirst();
    written.webhooks = webhook ? 1 : 0;

    // Only under the demo webhook: a delivery row never moves to another one.
    const hook = await trx.selectFrom('webhooks').select('id').where('id', '=', DEMO_IDS.webhook).where('workspace_id', '=', DEMO_IDS.workspace).executeTakeFirst();
    if (hook) {
      const deliveries = await trx
        .insertInto('webhook_deliveries')
        .values(deliveryRows(deps.config, seatedMembers, now))
        .onConflict((oc) => oc.column('id').doNothing())
        .returning('id')
        .execute();
      written.deliveries = deliveries.length;
    }
  });

  const workspace = await db.selectFrom('workspaces').select(['id', 'name']).where('id', '=', DEMO_IDS.workspace).executeTakeFirstOrThrow();
  return {
    action: 'seed',
    workspace,
    accounts: accounts.map((a) => accountSummary(a, a.state === 'skipped' ? 'skipped' : created.has(a.id) ? 'created' : 'present')),
    written,
    removed: {},
    changed: Object.values(written).some((n) => n > 0) || limitRaised,
    notes: [...ignoredNotes(ignored), ...(limitRaised ? [`raised the demo workspace's member limit to ${memberLimit}, to fit its members and one invitation`] : [])],
  };
}

// ---------------------------------------------------------------- reset

const count = (r: { numDeletedRows: bigint } | undefined) => Number(r?.numDeletedRows ?? 0);

/**
 * Puts the demo data back as seeded under the current settings: rows of the demo workspace that the seed
 * did not write are removed (memberships, invitations, generations, API keys, webhooks and deliveries,
 * uploads, subscriptions and payments, usage counters, domain events), the demo rows are written
 * back with their seeded values, and the demo accounts get their passwords back. Audit logs, billing
 * events, analytics and support tickets are records and stay. Running it twice gives the same data (dates
 * of the samples and deliveries are set relative to now, and the webhook gets a fresh unseen secret).
 */
export async function resetDemo(deps: DemoDeps, opts: { via?: 'command' | 'schedule' } = {}): Promise<DemoSummary> {
  const { db } = deps;
  const { accounts: planned, ignored } = plannedAccounts(deps.config);
  const accounts = await resolveAccounts(db, planned);
  const managed = accounts.filter((a) => a.state !== 'skipped');
  // The stored hash stays when the password still matches it (no new salt: the same data twice).
  const hashes = new Map<string, string>();
  for (const a of managed) {
    const keep = a.storedHash && (await deps.passwords.verify(a.password, a.storedHash));
    hashes.set(a.id, keep ? a.storedHash! : await deps.passwords.hash(a.password));
  }
  const members = managed.filter((a) => a.role);
  const owner = members.find((a) => a.role === 'OWNER');
  const managedIds = managed.map((a) => a.id);
  const memberIds = members.map((a) => a.id);
  const fixedUserIds = [DEMO_IDS.admin, ...DEMO_IDS.users];
  const removed: Record<string, number> = {};
  const written = noRows();
  const objectKeys: string[] = [];
  const now = new Date();

  await db.transaction().execute(async (trx) => {
    await lockDemoData(trx);
    const ws = DEMO_IDS.workspace;

    // Stored objects go once the rows are gone for good (after the commit).
    const files = await trx.selectFrom('files').select('storage_key').where('workspace_id', '=', ws).execute();
    const avatars = await trx.selectFrom('users').select('avatar_key').where('id', 'in', managedIds).where('avatar_key', 'is not', null).execute();
    objectKeys.push(...files.map((f) => f.storage_key), ...avatars.map((a) => a.avatar_key!));

    const values = await workspaceValues(trx, members.length);
    await trx
      .insertInto('workspaces')
      .values({ id: ws, ...values, created_at: now })
      .onConflict((oc) => oc.column('id').doUpdateSet({ ...values, updated_at: now }))
      .execute();
    written.workspaces = 1;

    // Accounts: fixed-id accounts the settings no longer name go; the others get their seeded values.
    const unnamed = fixedUserIds.filter((id) => !managedIds.includes(id));
    removed.accounts = unnamed.length ? count(await trx.deleteFrom('users').where('id', 'in', unnamed).executeTakeFirst()) : 0;
    for (const a of managed) {
      const values = {
        email: a.email,
        name: a.name,
        password_hash: hashes.get(a.id)!,
        status: 'ACTIVE' as const,
        platform_role: a.platformRole,
        avatar_key: null,
        avatar_updated_at: null,
      };
      await trx
        .insertInto('users')
        .values({ id: a.id, ...values, email_verified_at: now })
        .onConflict((oc) => oc.column('id').doUpdateSet({ ...values, email_verified_at: (eb) => eb.fn.coalesce('users.email_verified_at', eb.val(now)), updated_at: now }))
        .execute();
    }
    written.accounts = managed.length;
    // Open reset and verification links of demo accounts (MOCK mail is readable by the demo admin).
    removed.openLinks = count(await trx.deleteFrom('user_tokens').where('user_id', 'in', managedIds).where('used_at', 'is', null).executeTakeFirst());

    removed.members = count(await trx.deleteFrom('workspace_members').where('workspace_id', '=', ws).where('user_id', 'not in', memberIds).executeTakeFirst());
    await trx
      .insertInto('workspace_members')
      .values(members.map((m) => ({ workspace_id: ws, user_id: m.id, role: m.role!, created_at: now })))
      .onConflict((oc) => oc.columns(['workspace_id', 'user_id']).doUpdateSet({ role: (eb) => eb.ref('excluded.role') }))
      .execute();
    written.members = members.length;

    removed.invitations = count(await trx.deleteFrom('workspace_invitations').where('workspace_id', '=', ws).executeTakeFirst());
    removed.apiKeys = count(await trx.deleteFrom('api_keys').where('workspace_id', '=', ws).executeTakeFirst());
    removed.files = count(await trx.deleteFrom('files').where('workspace_id', '=', ws).executeTakeFirst());
    removed.payments = count(await trx.deleteFrom('payments').where('workspace_id', '=', ws).executeTakeFirst());
    removed.subscriptions = count(await trx.deleteFrom('subscriptions').where('workspace_id', '=', ws).executeTakeFirst());
    removed.usageCounters = count(await trx.deleteFrom('ai_usage_counters').where('workspace_id', '=', ws).executeTakeFirst());
    removed.domainEvents = count(await trx.deleteFrom('domain_events').where('workspace_id', '=', ws).executeTakeFirst());

    // Samples and deliveries are written anew (their dates follow "now"); other rows there were not demo data.
    const samples = sampleRows(members, now);
    const sampleIds = samples.map((r) => r.id);
    removed.generations = count(await trx.deleteFrom('ai_generations').where('workspace_id', '=', ws).where('id', 'not in', sampleIds).executeTakeFirst());
    await trx.deleteFrom('ai_generations').where('id', 'in', sampleIds).execute();
    await trx.insertInto('ai_generations').values(samples).execute();
    written.samples = samples.length;

    removed.webhooks = count(await trx.deleteFrom('webhooks').where('workspace_id', '=', ws).where('id', '!=', DEMO_IDS.webhook).executeTakeFirst());
    const hook = webhookValues(deps.secrets, owner);
    await trx
      .insertInto('webhooks')
      .values({ id: DEMO_IDS.webhook, ...hook, created_at: now, updated_at: now })
      .onConflict((oc) => oc.column('id').doUpdateSet({ ...hook, updated_at: now }))
      .execute();
    written.webhooks = 1;

    const deliveries = deliveryRows(deps.config, members, now);
    const deliveryIds = deliveries.map((r) => r.id);
    removed.deliveries = count(await trx.deleteFrom('webhook_deliveries').where('workspace_id', '=', ws).where('id', 'not in', deliveryIds).executeTakeFirst());
    await trx.deleteFrom('webhook_deliveries').where('id', 'in', deliveryIds).execute();
    await trx.insertInto('webhook_deliveries').values(deliveries).execute();
    written.deliveries = deliveries.length;

    const removedTotal = Object.values(removed).reduce((a, b) => a + b, 0);
    await recordAudit(trx, { userId: null, email: null, requestId: null, ip: null }, {
      action: 'demo.reset',
      targetType: 'workspace',
      targetId: ws,
      workspaceId: ws,
      metadata: { via: opts.via ?? 'command', removedRows: removedTotal, accounts: managed.map((a) => a.email) },
    });
  });

  const failedObjects: string[] = [];
  if (deps.storage) {
    for (const key of objectKeys) await deps.storage.delete(key).catch(() => failedObjects.push(key));
  }
  const notes = ignoredNotes(ignored);
  if (objectKeys.length && !deps.storage) notes.push(`${objectKeys.length} stored upload(s) of removed rows were left in storage`);
  if (failedObjects.length) notes.push(`${failedObjects.length} stored upload(s) could not be removed from storage`);

  return {
    action: 'reset',
    workspace: { id: DEMO_IDS.workspace, name: DEMO_WORKSPACE_NAME },
    accounts: accounts.map((a) => accountSummary(a, a.state === 'skipped' ? 'skipped' : 'restored')),
    written,
    removed,
    changed: Object.values(removed).some((n) => n > 0),
    notes,
  };
}
