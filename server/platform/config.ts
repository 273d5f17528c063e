// Every setting of the service, parsed once at boot by one Zod schema. The rest of the code imports the
// parsed object, never `process.env`. Keys are the environment variable names, so docs/configuration.md,
// the code and a deployment's environment all use the same words.
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { createRequire } from 'node:module';
import { Resolver } from 'node:dns/promises';
import { z } from 'zod';
import { newPasswordSchema } from './security/passwords.js';

/** Empty strings count as unset, so `FOO=` in an env file falls back to the default. */
const unsetIfEmpty = (v: unknown) => (typeof v === 'string' && v.trim() === '' ? undefined : v);
const trimmedOrUnset = (v: unknown) => (typeof unsetIfEmpty(v) === 'string' ? String(v).trim() : undefined);

const bool = (fallback: boolean) =>
  z.preprocess(
    (v) => {
      const s = unsetIfEmpty(v);
      if (typeof s !== 'string') return s;
      const t = s.trim().toLowerCase();
      if (['true', '1', 'yes', 'on'].includes(t)) return true;
      if (['false', '0', 'no', 'off'].includes(t)) return false;
      return s;
    },
    z.boolean({ error: (i) => (i.code === 'invalid_type' ? 'must be true or false' : undefined) }).default(fallback),
  );

const int = (fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  z.preprocess(
    (v) => {
      const s = unsetIfEmpty(v);
      return typeof s === 'string' && /^-?\d+$/.test(s.trim()) ? Number(s) : s;
    },
    z
      .number({ error: (i) => (i.code === 'invalid_type' ? 'must be a whole number' : undefined) })
      .int({ error: 'must be a whole number' })
      .min(min, { error: `must be at least ${min}` })
      .max(max, { error: `must be at most ${max}` })
      .default(fallback),
  );

const str = (fallback: string) => z.preprocess(unsetIfEmpty, z.string().default(fallback));
const optionalStr = () => z.preprocess(unsetIfEmpty, z.string().optional());
const url = (fallback: string) => z.preprocess(unsetIfEmpty, z.url({ error: 'must be a URL' }).default(fallback));
const optionalUrl = () => z.preprocess(unsetIfEmpty, z.url({ error: 'must be a URL' }).optional());
const oneOf = <T extends readonly [string, ...string[]]>(values: T, fallback: T[number]) =>
  z.preprocess(
    (v) => (typeof unsetIfEmpty(v) === 'string' ? String(v).trim().toUpperCase() : unsetIfEmpty(v)),
    z.enum(values, { error: `must be one of ${values.join(', ')}` }).default(fallback as never),
  );

/** Comma-separated e-mail addresses, trimmed and lower-cased. */
const emailList = (fallback: string) =>
  z.preprocess(
    (v) => (unsetIfEmpty(v) ?? fallback) as string,
    z
      .string()
      .transform((s) =>
        s
          .split(',')
          .map((e) => e.trim().toLowerCase())
          .filter(Boolean),
      )
      .pipe(z.array(z.email({ error: 'must be a comma-separated list of e-mail addresses' }))),
  );

const stringList = (fallback: string) =>
  z.preprocess(
    (v) => (unsetIfEmpty(v) ?? fallback) as string,
    z.string().transform((s) =>
      s
        .split(',')
        .map((e) => e.trim())
        .filter(Boolean),
    ),
  );

/** Durations as seconds (`900`) or with a unit (`15m`, `12h`, `30d`). */
const duration = (fallback: string) =>
  z.preprocess(
    (v) => unsetIfEmpty(v) ?? fallback,
    z
      .string()
      .regex(/^\d+\s*[smhd]?$/i, { error: 'must be seconds or a number with s, m, h or d (e.g. 15m)' })
      .transform((s) => {
        const n = Number.parseInt(s, 10);
        const unit = s.trim().slice(-1).toLowerCase();
        return n * ({ s: 1, m: 60, h: 3600, d: 86_400 }[unit] ?? 1);
      })
      .pipe(z.number().int().positive({ error: 'must be longer than 0 seconds' })),
  );

/** Whether `attempt` runs without throwing. */
const succeeds = (attempt: () => unknown) => {
  try {
    attempt();
    return true;
  } catch {
    return false;
  }
};

/**
 * A BullMQ repeat pattern: 5 or 6 cron fields (`0 * * * *`), parsed with the cron-parser BullMQ uses, so a
 * bad one stops the boot here rather than the worker later. Unset or empty: off.
 */
/** cron-parser (with luxon, about 8 MB), loaded only when a pattern is set: its CommonJS build, synchronously. */
const cronParser = () =>
  (createRequire(import.meta.url)('cron-parser') as typeof import('cron-parser')).CronExpressionParser;

const cronPattern = () =>
  z.preprocess(
    trimmedOrUnset,
    z
      .string()
      .refine((s) => /^[\w*?#/,-]+(\s+[\w*?#/,-]+){4,5}$/.test(s) && succeeds(() => cronParser().parse(s)), {
        error: 'must be a cron pattern of 5 or 6 fields (e.g. 0 * * * *)',
      })
      .optional(),
  );

/** The URL when it parses (well-formed host, port at most 65535) with one of `protocols` and a port other than 0. */
const parseUrl = (s: string, protocols: readonly string[]) => {
  try {
    const url = new URL(s);
    return protocols.includes(url.protocol) && url.port !== '0' ? url : undefined;
  } catch {
    return undefined;
  }
};

const POSTGRES_PROTOCOLS = ['postgres:', 'postgresql:'];
const isDatabaseUrl = (s: string) =>
  s === 'memory://' ||
  // pg also takes `user:pass@/db?host=/socket` (no host), parsing it with a stand-in host; so do we.
  (/^postgres(ql)?:\/\//i.test(s) &&
    Boolean(parseUrl(s, POSTGRES_PROTOCOLS) ?? parseUrl(s.replace('@/', '@localhost/'), POSTGRES_PROTOCOLS)));

const isRedisUrl = (s: string) => {
  const url = /^rediss?:\/\//i.test(s) ? parseUrl(s, ['redis:', 'rediss:']) : undefined;
  // ioredis decodes the credentials, where a stray '%' would throw.
  return url !== undefined && succeeds(() => [url.username, url.password].map((part) => decodeURIComponent(part)));
};

/**
 * A connection URL, which may hold a password: checked here so a bad one is refused by name, where the
 * driver's error would print it. The message is fixed and never repeats the value.
 */
const connectionUrl = (isValid: (s: string) => boolean, message: string) =>
  z.preprocess(trimmedOrUnset, z.string().refine(isValid, { error: message }).optional());

/** Loopback hosts: the only ones an identity provider may be reached at over plain http (tests, development). */
export const isLoopbackHost = (hostname: string) =>
  hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname);

/** An identity provider's URL: https, or http on a loopback address (a provider run locally, or tests). */
const isProviderUrl = (s: string) => {
  const url = parseUrl(s, ['https:', 'http:']);
  return url !== undefined && (url.protocol === 'https:' || isLoopbackHost(url.hostname));
};
const PROVIDER_URL_MESSAGE = 'must be an https:// URL (http:// only on a loopback address)';
const providerUrl = (fallback: string) =>
  z.preprocess((v) => trimmedOrUnset(v) ?? fallback, z.string().refine(isProviderUrl, { error: PROVIDER_URL_MESSAGE }));
const optionalProviderUrl = () =>
  z.preprocess(trimmedOrUnset, z.string().refine(isProviderUrl, { error: PROVIDER_URL_MESSAGE }).optional());

/** An account's e-mail, held to the sign-in form's rule so the account can sign in. */
const optionalEmail = () =>
  z.preprocess(
    trimmedOrUnset,
    z.email({ error: 'must be an e-mail address' }).max(254, { error: 'must be at most 254 characters' }).optional(),
  );

/** A password held to the sign-up policy; the message is the policy's and never repeats the password. */
const optionalPassword = () => z.preprocess(unsetIfEmpty, newPasswordSchema.optional());

/**
 * Which X-Forwarded-For entries name the client, as Express's `trust proxy`: `false` (none: the socket
 * address), a hop count, or a comma-separated list of proxy addresses or subnets. `true` is one hop: the
 * right-most entry, the address the nearest proxy saw. (Express reads `true` as "trust every hop", which
 * takes the left-most entry, one the client wrote: a new value per request would be a new client.)
 */
const trustProxy = z.preprocess(
  (v) => unsetIfEmpty(v) ?? 'true',
  z.string().transform((s, ctx): false | number | string[] => {
    const t = s.trim().toLowerCase();
    if (t === 'true') return 1;
    if (t === 'false') return false;
    if (/^\d+$/.test(t)) return Number(t);
    const list = s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean);
    if (list.every((x) => /^[0-9a-f.:/]+$/i.test(x) || ['loopback', 'linklocal', 'uniquelocal'].includes(x)))
      return list;
    ctx.addIssue({ code: 'custom', message: 'must be true, false, a hop count or a list of proxy addresses' });
    return z.NEVER;
  }),
);

export const configSchema = z.object({
  // ---- service
  NODE_ENV: z.preprocess(unsetIfEmpty, z.enum(['development', 'test', 'production']).default('development')),
  HOST: str('0.0.0.0'),
  PORT: int(3000, 0, 65_535),
  APP_URL: url('http://localhost:3000'),
  SERVICE_VERSION: str('1.2.0'),
  LOG_LEVEL: z.preprocess(
    (v) => (typeof unsetIfEmpty(v) === 'string' ? String(v).trim().toLowerCase() : undefined),
    z.enum(['debug', 'info', 'warn', 'error'], { error: 'must be one of debug, info, warn, error' }).default('info'),
  ),
  TRUST_PROXY: trustProxy,
  CORS_ORIGINS: stringList(''),
  DATA_DIR: str('./data'),
  SHUTDOWN_TIMEOUT_MS: int(10_000, 0),
  HTTP_HEADERS_TIMEOUT_MS: int(30_000, 1_000, 600_000),
  HTTP_REQUEST_TIMEOUT_MS: int(60_000, 1_000, 3_600_000),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: int(65_000, 1_000, 600_000),
  // The most calls one /trpc batch may carry; the body (1 MiB) and URL (16 KiB) limits bound it anyway.
  TRPC_MAX_BATCH_SIZE: int(100, 1, 1_000),
  SHUTDOWN_DRAIN_DELAY_MS: int(5_000, 0),

  // ---- data
  DATABASE_URL: connectionUrl(
    isDatabaseUrl,
    'must be a postgres:// or postgresql:// URL, or memory:// (unset: embedded database under DATA_DIR)',
  ),
  DATABASE_POOL_MAX: int(10, 1, 1000),
  REDIS_URL: connectionUrl(isRedisUrl, 'must be a redis:// or rediss:// URL (e.g. redis://host:6379)'),
  // The longest a request waits for Redis before going on without it (docs/decisions.md, "Redis away").
  REDIS_COMMAND_TIMEOUT_MS: int(1_000, 100, 2_000),

  // ---- accounts
  JWT_ACCESS_SECRET: optionalStr(),
  JWT_REFRESH_SECRET: optionalStr(),
  JWT_ACCESS_TTL: duration('15m'),
  JWT_REFRESH_TTL: duration('30d'),
  JWT_ISSUER: str('workspace-saas-api'),
  JWT_AUDIENCE: str('workspace-saas'),
  REFRESH_TOKEN_REUSE_GRACE_SECONDS: int(10, 0, 300),
  BCRYPT_COST: int(12, 4, 15),
  PASSWORD_RESET_TTL: duration('1h'),
  EMAIL_VERIFICATION_TTL: duration('24h'),
  // Two-factor sign-in: how long the token between a sign-in's two steps lives, and the name authenticator
  // apps show beside the account.
  MFA_TOKEN_TTL: duration('5m'),
  MFA_ISSUER: str('Workspace SaaS'),
  SEED_ADMIN_EMAIL: optionalEmail(),
  SEED_ADMIN_PASSWORD: optionalPassword(),
  SEED_DEMO_ADMIN_EMAIL: optionalEmail(),
  SEED_DEMO_ADMIN_PASSWORD: optionalPassword(),

  // ---- sign-in with identity providers (routers/oauth): each provider is off until its settings are set
  // Public base URL of this API, which providers redirect back to (unset: the base of the request).
  API_URL: optionalUrl(),
  // The RSA private key (PEM) /oauth signs ID tokens with (routers/mcp/oauth.ts); unset: one per process.
  OAUTH_SIGNING_KEY: optionalStr(),
  GITHUB_CLIENT_ID: optionalStr(),
  GITHUB_CLIENT_SECRET: optionalStr(),
  GITHUB_BASE_URL: providerUrl('https://github.com'),
  GITHUB_API_URL: providerUrl('https://api.github.com'),
  GOOGLE_CLIENT_ID: optionalStr(),
  GOOGLE_CLIENT_SECRET: optionalStr(),
  GOOGLE_ISSUER_URL: providerUrl('https://accounts.google.com'),
  OIDC_ISSUER_URL: optionalProviderUrl(),
  OIDC_CLIENT_ID: optionalStr(),
  OIDC_CLIENT_SECRET: optionalStr(),
  OIDC_DISPLAY_NAME: str('Single sign-on'),
  OAUTH_EXCHANGE_CODE_TTL: duration('60s'),

  // ---- e-mail
  EMAIL_PROVIDER: oneOf(['MOCK', 'SMTP'] as const, 'MOCK'),
  EMAIL_FROM: str('Workspace SaaS <no-reply@localhost>'),
  SMTP_HOST: optionalStr(),
  SMTP_PORT: int(587, 1, 65_535),
  SMTP_SECURE: bool(false),
  SMTP_USER: optionalStr(),
  SMTP_PASS: optionalStr(),

  // ---- rate limiting
  RATE_LIMIT_ENABLED: bool(true),
  RATE_LIMIT_WINDOW_SECONDS: int(60, 1),
  RATE_LIMIT_MAX_REQUESTS: int(120, 1),
  RATE_LIMIT_AUTH_MAX_REQUESTS: int(20, 1),
  RATE_LIMIT_UPLOAD_MAX_REQUESTS: int(20, 1),
  RATE_LIMIT_PUBLIC_API_MAX_REQUESTS: int(300, 1),
  RATE_LIMIT_WEBHOOK_MAX_REQUESTS: int(60, 1),
  RATE_LIMIT_SCIM_MAX_REQUESTS: int(600, 1),

  // ---- monitoring
  MONITORING_ENABLED: bool(true),
  ERROR_LOGGING_ENABLED: bool(true),
  ERROR_LOG_RETENTION_DAYS: int(14, 1),
  REQUEST_LOGGING_ENABLED: bool(true),
  REQUEST_LOG_SLOW_MS: int(1000, 1),
  REQUEST_LOG_RING_BUFFER_SIZE: int(300, 1, 100_000),
  ERROR_LOG_RING_BUFFER_SIZE: int(200, 1, 100_000),
  METRICS_TOKEN: optionalStr(),

  // ---- AI
  AI_PROVIDER: oneOf(['MOCK', 'PROVIDER_A', 'PROVIDER_B'] as const, 'MOCK'),
  AI_DEFAULT_MODEL: optionalStr(),
  AI_PROVIDER_A_MODEL: str('gpt-4o-mini'),
  AI_PROVIDER_B_MODEL: str('claude-3-5-haiku-latest'),
  PROVIDER_A_API_KEY: optionalStr(),
  PROVIDER_B_API_KEY: optionalStr(),
  PROVIDER_A_BASE_URL: optionalUrl(),
  PROVIDER_B_BASE_URL: optionalUrl(),
  AI_REQUEST_TIMEOUT_MS: int(30_000, 100),
  AI_MOCK_STREAM_CHUNK_DELAY_MS: int(20, 0, 10_000),
  // Internal (tests): how often an open event stream sends its `: keep-alive` comment.
  AI_STREAM_KEEPALIVE_MS: int(15_000, 10, 600_000),
  AI_MONTHLY_GENERATION_LIMIT: int(100, 0),
  AI_TEST_USER_MONTHLY_LIMIT: int(5, 0),
  AI_TEST_USER_EMAILS: emailList('tester1@example.com,tester2@example.com'),
  AI_DEMO_RESTRICTED_EMAILS: emailList('demo@example.com'),
  AI_DEMO_BLOCK_REAL_GENERATION: bool(true),
  AI_DEMO_SHOW_SAMPLE_HISTORY: bool(true),

  // ---- billing
  BILLING_PROVIDER: oneOf(['MOCK', 'PROCESSOR_A', 'PROCESSOR_B'] as const, 'MOCK'),
  BILLING_SUCCESS_URL: url('http://localhost:3000/billing/success'),
  BILLING_CANCEL_URL: url('http://localhost:3000/billing/cancel'),
  BILLING_SUPPORT_EMAIL: str('billing@localhost'),
  // The unsigned POST /billing/webhooks/mock in production too (it lets anyone move any workspace's plan).
  BILLING_MOCK_WEBHOOK_ENABLED: bool(false),
  // Days a PAST_DUE subscription keeps its plan before the workspace goes to the default plan.
  BILLING_GRACE_DAYS: int(7, 0, 365),
  // How long a claimed command of the billing outbox is a worker's before another may send it again.
  BILLING_OUTBOX_LEASE_SECONDS: int(60, 1, 3600),
  PROCESSOR_A_SECRET_KEY: optionalStr(),
  PROCESSOR_A_WEBHOOK_SECRET: optionalStr(),
  PROCESSOR_A_PRICE_LITE: optionalStr(),
  PROCESSOR_A_PRICE_PRO: optionalStr(),
  PROCESSOR_A_PRICE_ENTERPRISE: optionalStr(),
  PROCESSOR_A_CUSTOMER_PORTAL_ENABLED: bool(false),
  PROCESSOR_A_BASE_URL: optionalUrl(),
  PROCESSOR_B_API_KEY: optionalStr(),
  PROCESSOR_B_STORE_ID: optionalStr(),
  PROCESSOR_B_WEBHOOK_SECRET: optionalStr(),
  PROCESSOR_B_VARIANT_LITE: optionalStr(),
  PROCESSOR_B_VARIANT_PRO: optionalStr(),
  PROCESSOR_B_VARIANT_ENTERPRISE: optionalStr(),
  PROCESSOR_B_BASE_URL: optionalUrl(),

  // ---- queues and webhooks
  QUEUES_ENABLED: bool(false),
  WEBHOOK_QUEUE_ENABLED: bool(false),
  QUEUE_PREFIX: str('bull'),
  WEBHOOK_DELIVERY_ENABLED: bool(true),
  WEBHOOK_DEMO_DELIVERY_DISABLED: bool(true),
  WEBHOOK_MAX_RETRIES: int(3, 0, 20),
  WEBHOOK_RETRY_BACKOFF_SECONDS: int(30, 1),
  WEBHOOK_TIMEOUT_MS: int(10_000, 100),
  WEBHOOK_WORKER_CONCURRENCY: int(100, 1, 1000),
  WEBHOOK_JOB_LOCK_MS: int(30_000, 1_000, 600_000),
  WEBHOOK_ENDPOINT_CONCURRENCY: int(10, 1, 1000),
  WEBHOOK_SLOW_LANE_CONCURRENCY: int(10, 1, 1000),
  WEBHOOK_SLOW_LANE_SECONDS: int(300, 1, 86_400),
  WEBHOOK_USER_AGENT: str('WorkspaceSaaS-Webhooks/1.0'),
  WEBHOOK_ALLOW_PRIVATE_URLS: bool(false),
  WEBHOOK_DNS_CACHE_SECONDS: int(30, 0, 3600),
  WEBHOOK_SECRET_ENCRYPTION_KEY: optionalStr(),
  MAINTENANCE_SCHEDULER_ENABLED: bool(false),

  // ---- verified domains (routers/sso/domains.ts): DNS servers for the TXT look-ups, `host` or `host:port`,
  // comma-separated; empty: the system's.
  DNS_SERVERS: stringList('').refine((servers) => succeeds(() => new Resolver().setServers(servers)), {
    error: 'must be a comma-separated list of IP addresses, each with an optional :port',
  }),

  // ---- periodic tasks (server/tasks.ts): on timers of the API process when the queues are off
  PERIODIC_TASKS_ENABLED: bool(true),

  // ---- workspace lifecycle (routers/workspaces/lifecycle.ts)
  WORKSPACE_DELETION_GRACE_DAYS: int(30, 0, 365),
  PURGE_BATCH_SIZE: int(2000, 10, 100_000),

  // ---- demo data (npm run demo:seed / demo:reset, demo/)
  DEMO_PASSWORD: optionalStr(),
  DEMO_RESET_CRON: cronPattern(),

  // ---- product updates and license
  UPDATE_CHANNEL: str('stable'),
  UPDATE_CHECK_ENABLED: bool(true),
  UPDATE_PROVIDER: oneOf(['MOCK'] as const, 'MOCK'),
  UPDATE_SUPPORT_EMAIL: str('support@localhost'),
  LICENSE_ENFORCEMENT_ENABLED: bool(false),
  LICENSE_KEY: optionalStr(),

  // ---- contact and support
  SUPPORT_EMAIL: str('support@localhost'),

  // ---- storage
  STORAGE_PROVIDER: oneOf(['LOCAL', 'S3'] as const, 'LOCAL'),
  STORAGE_LOCAL_DIR: str('./data/uploads'),
  // Uploaded images worked at once (in the image process, routers/files/images.ts), and uploads that may
  // wait for a turn (503 with Retry-After past them).
  IMAGE_WORK_CONCURRENCY: int(1, 1, 64),
  IMAGE_WORK_QUEUE: int(16, 0, 10_000),
  // S3 settings may be missing: the provider then reports configured: false and uploads answer 503.
  S3_ENDPOINT: optionalUrl(),
  S3_REGION: str('us-east-1'),
  S3_BUCKET: optionalStr(),
  S3_ACCESS_KEY_ID: optionalStr(),
  S3_SECRET_ACCESS_KEY: optionalStr(),
  S3_FORCE_PATH_STYLE: bool(false),
});

type ParsedConfig = z.infer<typeof configSchema>;

/** The parsed settings, with the generated secrets always present (generated in development). */
export type Config = Readonly<
  ParsedConfig & { JWT_ACCESS_SECRET: string; JWT_REFRESH_SECRET: string; WEBHOOK_SECRET_ENCRYPTION_KEY: string }
>;

/** Secrets a deployment must set in production and that development generates. */
const GENERATED_SECRETS = ['JWT_ACCESS_SECRET', 'JWT_REFRESH_SECRET', 'WEBHOOK_SECRET_ENCRYPTION_KEY'] as const;

/** Whether `pem` is an RSA private key (the key ID tokens are signed with: RS256, clients' default). */
function isRsaPrivateKey(pem: string): boolean {
  try {
    return crypto.createPrivateKey(pem).asymmetricKeyType === 'rsa';
  } catch {
    return false;
  }
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parses the environment; throws ConfigError naming every bad variable. Pure: touches no file. */
export function parseConfig(env: NodeJS.ProcessEnv): ParsedConfig {
  const result = configSchema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const cfg = result.data;
  const problems: string[] = [];
  if (cfg.EMAIL_PROVIDER === 'SMTP' && !cfg.SMTP_HOST)
    problems.push('  SMTP_HOST: required when EMAIL_PROVIDER is SMTP');
  if (Boolean(cfg.SEED_ADMIN_EMAIL) !== Boolean(cfg.SEED_ADMIN_PASSWORD)) {
    problems.push('  SEED_ADMIN_EMAIL / SEED_ADMIN_PASSWORD: set both or neither');
  }
  if (Boolean(cfg.SEED_DEMO_ADMIN_EMAIL) !== Boolean(cfg.SEED_DEMO_ADMIN_PASSWORD)) {
    problems.push('  SEED_DEMO_ADMIN_EMAIL / SEED_DEMO_ADMIN_PASSWORD: set both or neither');
  }
  const together: Array<[string, unknown[]]> = [
    ['GITHUB_CLIENT_ID / GITHUB_CLIENT_SECRET', [cfg.GITHUB_CLIENT_ID, cfg.GITHUB_CLIENT_SECRET]],
    ['GOOGLE_CLIENT_ID / GOOGLE_CLIENT_SECRET', [cfg.GOOGLE_CLIENT_ID, cfg.GOOGLE_CLIENT_SECRET]],
    [
      'OIDC_ISSUER_URL / OIDC_CLIENT_ID / OIDC_CLIENT_SECRET',
      [cfg.OIDC_ISSUER_URL, cfg.OIDC_CLIENT_ID, cfg.OIDC_CLIENT_SECRET],
    ],
  ];
  for (const [names, values] of together) {
    if (values.some(Boolean) && !values.every(Boolean)) problems.push(`  ${names}: set all or none`);
  }
  if (cfg.OAUTH_SIGNING_KEY !== undefined && !isRsaPrivateKey(cfg.OAUTH_SIGNING_KEY)) {
    problems.push('  OAUTH_SIGNING_KEY: must be an RSA private key in PEM');
  }
  if (cfg.OAUTH_EXCHANGE_CODE_TTL > 600) problems.push('  OAUTH_EXCHANGE_CODE_TTL: must be at most 10m');
  if (cfg.MFA_TOKEN_TTL > 900) problems.push('  MFA_TOKEN_TTL: must be at most 15m');
  if (cfg.HTTP_HEADERS_TIMEOUT_MS > cfg.HTTP_REQUEST_TIMEOUT_MS) {
    problems.push('  HTTP_HEADERS_TIMEOUT_MS: must be at most HTTP_REQUEST_TIMEOUT_MS (headers are part of it)');
  }
  for (const name of GENERATED_SECRETS) {
    const value = cfg[name];
    if (value !== undefined && value.length < 32) problems.push(`  ${name}: must be at least 32 characters`);
    if (value === undefined && cfg.NODE_ENV === 'production')
      problems.push(`  ${name}: required when NODE_ENV is production`);
  }
  if (problems.length) throw new ConfigError(`Invalid configuration:\n${problems.join('\n')}`);
  return cfg;
}

export const isMemoryDatabase = (cfg: Pick<ParsedConfig, 'DATABASE_URL'>) => cfg.DATABASE_URL === 'memory://';

type GeneratedSecrets = Partial<Record<(typeof GENERATED_SECRETS)[number], string>>;
const generateSecret = () => crypto.randomBytes(48).toString('base64url');

/**
 * The development secrets kept in `file` (mode 0600), made on first use with every generated secret.
 * Processes started together on a new DATA_DIR (the API and the worker, two API instances) agree on them:
 * the file is written aside and linked into place, so it is seen whole or not at all and the first link
 * wins; each process then reads what is there. A file of an older version, without a secret added since,
 * is completed the same way (replaced by rename).
 */
function storedSecrets(file: string): GeneratedSecrets {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  for (;;) {
    const stored = fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as GeneratedSecrets) : undefined;
    if (stored && GENERATED_SECRETS.every((name) => stored[name])) return stored;
    const complete: GeneratedSecrets = { ...stored };
    for (const name of GENERATED_SECRETS) complete[name] ??= generateSecret();
    const aside = `${file}.${process.pid}.${crypto.randomBytes(4).toString('hex')}`;
    fs.writeFileSync(aside, JSON.stringify(complete, null, 2), { mode: 0o600 });
    try {
      if (stored) fs.renameSync(aside, file);
      else fs.linkSync(aside, file);
    } catch (err) {
      // Another process linked its file first: read that one.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      fs.rmSync(aside, { force: true });
    }
  }
}

/**
 * Fills in the secrets missing outside production (JWT secrets, the webhook-secret encryption key):
 * generated once and kept in `DATA_DIR/secrets.json` (storedSecrets) so tokens and encrypted webhook
 * secrets survive a restart and the worker shares them with the API; kept in memory only when the database
 * is in memory too. Returns the warning to log.
 */
export function withDevelopmentSecrets(cfg: ParsedConfig): { config: Config; warning?: string } {
  const missing = GENERATED_SECRETS.filter((name) => !cfg[name]);
  if (missing.length === 0) return { config: Object.freeze(cfg) as Config };
  let stored: GeneratedSecrets = {};
  let where = 'memory only';
  if (!isMemoryDatabase(cfg)) {
    where = path.resolve(cfg.DATA_DIR, 'secrets.json');
    stored = storedSecrets(where);
  }
  const filled = Object.fromEntries(
    GENERATED_SECRETS.map((name) => [name, cfg[name] ?? stored[name] ?? generateSecret()]),
  );
  return {
    config: Object.freeze({ ...cfg, ...filled }) as Config,
    warning: `${missing.join(', ')} not set: using generated development secrets (${where}). Set them in production.`,
  };
}

/**
 * Reads the settings of `.env` in the working directory into process.env, when the file is there, with
 * Node's own loader (process.loadEnvFile: `NAME=value` lines, `#` comments, quotes). A variable that the
 * real environment sets keeps its value: the file fills in, it never overrides. For local runs; a
 * deployment sets its environment. A file that cannot be read stops the start-up (ConfigError).
 */
export function loadDotEnv(file = '.env'): void {
  const full = path.resolve(file);
  if (!fs.existsSync(full)) return;
  try {
    process.loadEnvFile(full);
  } catch (err) {
    throw new ConfigError(`Could not read ${full}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** parseConfig + withDevelopmentSecrets: what the server and the worker call once at boot. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env) {
  return withDevelopmentSecrets(parseConfig(env));
}

/**
 * loadConfig for an entry point (server, worker): a bad setting prints the message naming each variable
 * and exits with code 1, without a stack trace.
 */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env): ReturnType<typeof loadConfig> {
  try {
    if (env === process.env) loadDotEnv();
    return loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
}
