// Demo data (`npm run demo:seed`, `npm run demo:reset`, DEMO_RESET_CRON in the worker): the accounts the
// settings name, a demo workspace with one member per role, sample AI history, and a webhook with a few
// deliveries. Every row has a fixed id (DEMO_IDS) and tenant rows hang off the demo workspace's id: that is
// how seed (seed.ts) and reset (reset.ts) find the demo data, and why they never touch anything else.
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database, DeliveryStatus, PlanLimits, PlatformRole, WorkspaceRole } from '../db/schema.js';
import type { EventName } from '../routers/events/catalog.js';
import { ConfigError, type Config } from '../server/platform/config.js';
import { passwordPolicyViolation, type PasswordHasher } from '../server/platform/security/passwords.js';
import type { SecretBox } from '../server/platform/security/secret-box.js';
import type { Storage } from '../server/platform/storage.js';
import { estimateTokens } from '../routers/ai/providers/mock.js';
import { envelope, newSecret } from '../routers/webhooks/service.js';
import { defaultPlan } from '../routers/billing/service.js';

export type Db = Kysely<Database>;

export interface DemoDeps {
  db: Db;
  config: Pick<
    Config,
    | 'NODE_ENV'
    | 'AI_DEMO_RESTRICTED_EMAILS'
    | 'SEED_DEMO_ADMIN_EMAIL'
    | 'SEED_DEMO_ADMIN_PASSWORD'
    | 'DEMO_PASSWORD'
    | 'WEBHOOK_USER_AGENT'
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
  events: ['member.added', 'ai.generation.completed', 'billing.updated'] satisfies EventName[],
};

const SAMPLES = [
  {
    prompt: 'Write an outline for a blog post about remote onboarding for engineering managers.',
    output:
      'Title: Onboarding remote engineers in 30 days\n1. Before day one\n2. The first week\n3. The first month\n4. Measuring success',
    hoursAgo: 2,
  },
  {
    prompt: 'Write a product description of about 120 words for a standing desk.',
    output:
      'Work the way your body wants to: the desk rises from 70 to 120 cm in eight quiet seconds and remembers four heights...',
    hoursAgo: 9,
  },
  {
    prompt: 'Summarise the following text in 3 bullet points: our Q3 results.',
    output: '- Revenue grew 18% to 4.2 M\n- Churn fell to 2.1%\n- Two new enterprise customers signed',
    hoursAgo: 30,
  },
  {
    prompt: 'Draft a friendly reply to a customer asking when the mobile app will support offline mode.',
    output:
      'Hi Sam, thanks for asking! Offline mode is on our roadmap for the next quarter; we will write to you as soon as it is in beta.',
    hoursAgo: 75,
  },
];

// ---------------------------------------------------------------- the demo set, from the settings

export interface PlannedAccount {
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
    throw new ConfigError(
      'Invalid configuration:\n  DEMO_PASSWORD: required when NODE_ENV is production (the password of the demo accounts)',
    );
  }
  return DEVELOPMENT_DEMO_PASSWORD;
}

export function plannedAccounts(config: DemoDeps['config']): { accounts: PlannedAccount[]; ignored: string[] } {
  const userEmails = [...new Set(config.AI_DEMO_RESTRICTED_EMAILS)];
  if (userEmails.length === 0) {
    throw new ConfigError(
      'Invalid configuration:\n  AI_DEMO_RESTRICTED_EMAILS: names no account; the demo workspace needs at least its owner',
    );
  }
  const accounts: PlannedAccount[] = [];
  const adminEmail = config.SEED_DEMO_ADMIN_EMAIL?.trim().toLowerCase();
  if (adminEmail && config.SEED_DEMO_ADMIN_PASSWORD) {
    if (userEmails.includes(adminEmail)) {
      throw new ConfigError(
        'Invalid configuration:\n  SEED_DEMO_ADMIN_EMAIL: must not be one of AI_DEMO_RESTRICTED_EMAILS',
      );
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
    if (email)
      accounts.push({
        id: DEMO_IDS.users[i],
        email,
        name: slot.name,
        platformRole: 'USER',
        role: slot.role,
        password,
        passwordSetting: 'DEMO_PASSWORD',
      });
  });
  return { accounts, ignored: userEmails.slice(MEMBER_SLOTS.length) };
}

export interface ResolvedAccount extends PlannedAccount {
  /** present: its row exists; missing: seed creates it; skipped: the address belongs to someone else. */
  state: 'present' | 'missing' | 'skipped';
  storedHash?: string;
}

/**
 * Matches the planned accounts with the users table. A row with the fixed id is the demo account. The
 * demo admin may also be the DEMO_ADMIN account of SEED_DEMO_ADMIN_EMAIL created at start-up
 * (routers/users/seed.ts): the settings name it and the role is only ever given to demo admins. Any other account
 * holding a demo address is not ours and is left alone.
 */
export async function resolveAccounts(db: Db, planned: PlannedAccount[]): Promise<ResolvedAccount[]> {
  const rows = await db
    .selectFrom('users')
    .select(['id', 'email', 'platform_role', 'password_hash'])
    .where((eb) =>
      eb.or([
        eb(
          'id',
          'in',
          planned.map((a) => a.id),
        ),
        eb(
          'email',
          'in',
          planned.map((a) => a.email),
        ),
      ]),
    )
    .execute();
  const resolved = planned.map((a): ResolvedAccount => {
    const own = rows.find((r) => r.id === a.id);
    const holder = rows.find((r) => r.email === a.email && r.id !== a.id);
    if (own && !holder) return { ...a, state: 'present', storedHash: own.password_hash ?? undefined };
    if (holder && !own && a.platformRole === 'DEMO_ADMIN' && holder.platform_role === 'DEMO_ADMIN') {
      return { ...a, id: holder.id, state: 'present', storedHash: holder.password_hash ?? undefined };
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

export async function workspaceValues(db: Db, memberCount: number) {
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

/** Samples as routers/ai/history.ts writes them for demo accounts: marked is_sample, never counted. */
export function sampleRows(members: ResolvedAccount[], now: Date) {
  return SAMPLES.map((s, i) => ({
    id: DEMO_IDS.samples[i],
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

export function webhookValues(secrets: SecretBox, owner: ResolvedAccount | undefined) {
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
export function deliveryRows(config: DemoDeps['config'], members: ResolvedAccount[], now: Date) {
  const specs: Array<{
    event: EventName;
    data: Record<string, unknown>;
    status: DeliveryStatus;
    attempts: number;
    responseStatus: number;
    preview: string;
    durationMs: number;
    error: string | null;
    hoursAgo: number;
  }> = [
    {
      event: 'webhook.test',
      data: { message: `This is a test delivery of the webhook "${WEBHOOK.name}".`, webhookId: DEMO_IDS.webhook },
      status: 'success',
      attempts: 1,
      responseStatus: 200,
      preview: '{"received":true}',
      durationMs: 184,
      error: null,
      hoursAgo: 80,
    },
    {
      event: 'member.added',
      data: { userId: members[1]?.id ?? members[0]?.id ?? null, role: members[1]?.role ?? 'OWNER' },
      status: 'success',
      attempts: 1,
      responseStatus: 204,
      preview: '',
      durationMs: 97,
      error: null,
      hoursAgo: 50,
    },
    {
      event: 'ai.generation.completed',
      data: { generationId: DEMO_IDS.samples[0], model: 'sample', provider: 'MOCK', totalTokens: 60 },
      status: 'failed',
      attempts: 4,
      responseStatus: 503,
      preview: 'Service Unavailable',
      durationMs: 2011,
      error: 'The endpoint answered HTTP 503.',
      hoursAgo: 2,
    },
  ];
  return specs.map((d, i) => {
    const at = new Date(now.getTime() - d.hoursAgo * 3_600_000);
    const id = DEMO_IDS.deliveries[i];
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

/** Seed and reset of the demo data run one at a time. */
export const lockDemoData = (trx: Transaction<Database>) =>
  sql`select pg_advisory_xact_lock(hashtext('demo-data'))`.execute(trx);
