import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig, withDevelopmentSecrets } from '../../server/platform/config.js';

const errorOf = (env: NodeJS.ProcessEnv) => {
  try {
    parseConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  throw new Error('expected a ConfigError');
};

describe('configuration', () => {
  it('starts from the defaults of the spec with nothing set', () => {
    const c = parseConfig({});
    expect(c).toMatchObject({
      RATE_LIMIT_ENABLED: true,
      RATE_LIMIT_WINDOW_SECONDS: 60,
      RATE_LIMIT_MAX_REQUESTS: 120,
      RATE_LIMIT_AUTH_MAX_REQUESTS: 20,
      RATE_LIMIT_UPLOAD_MAX_REQUESTS: 20,
      RATE_LIMIT_PUBLIC_API_MAX_REQUESTS: 300,
      RATE_LIMIT_WEBHOOK_MAX_REQUESTS: 60,
      TRUST_PROXY: 1,
      MONITORING_ENABLED: true,
      LOG_LEVEL: 'info',
      ERROR_LOGGING_ENABLED: true,
      ERROR_LOG_RETENTION_DAYS: 14,
      REQUEST_LOGGING_ENABLED: true,
      REQUEST_LOG_SLOW_MS: 1000,
      REQUEST_LOG_RING_BUFFER_SIZE: 300,
      ERROR_LOG_RING_BUFFER_SIZE: 200,
      AI_PROVIDER: 'MOCK',
      AI_MONTHLY_GENERATION_LIMIT: 100,
      AI_TEST_USER_MONTHLY_LIMIT: 5,
      AI_DEMO_BLOCK_REAL_GENERATION: true,
      AI_DEMO_SHOW_SAMPLE_HISTORY: true,
      BILLING_PROVIDER: 'MOCK',
      BILLING_MOCK_WEBHOOK_ENABLED: false,
      EMAIL_PROVIDER: 'MOCK',
      QUEUES_ENABLED: false,
      WEBHOOK_QUEUE_ENABLED: false,
      WEBHOOK_DELIVERY_ENABLED: true,
      WEBHOOK_MAX_RETRIES: 3,
      WEBHOOK_RETRY_BACKOFF_SECONDS: 30,
      MAINTENANCE_SCHEDULER_ENABLED: false,
      SERVICE_VERSION: '1.2.0',
      UPDATE_CHANNEL: 'stable',
      UPDATE_CHECK_ENABLED: true,
      UPDATE_PROVIDER: 'MOCK',
      LICENSE_ENFORCEMENT_ENABLED: false,
      JWT_ACCESS_TTL: 900,
      JWT_REFRESH_TTL: 30 * 86_400,
      REFRESH_TOKEN_REUSE_GRACE_SECONDS: 10,
      BCRYPT_COST: 12,
    });
    expect(c.DATABASE_URL).toBeUndefined();
    expect(c.REDIS_URL).toBeUndefined();
  });

  it('bounds slow clients by default: headers 30 s, the whole request 60 s, idle keep-alive 65 s', () => {
    expect(parseConfig({})).toMatchObject({
      HTTP_HEADERS_TIMEOUT_MS: 30_000,
      HTTP_REQUEST_TIMEOUT_MS: 60_000,
      HTTP_KEEP_ALIVE_TIMEOUT_MS: 65_000,
    });
  });

  it('when the headers may take longer than the whole request, or a timeout is under 1 s, then it is refused', () => {
    expect(errorOf({ HTTP_HEADERS_TIMEOUT_MS: '40000', HTTP_REQUEST_TIMEOUT_MS: '30000' })).toMatch(
      /HTTP_HEADERS_TIMEOUT_MS: must be at most HTTP_REQUEST_TIMEOUT_MS/,
    );
    for (const name of ['HTTP_HEADERS_TIMEOUT_MS', 'HTTP_REQUEST_TIMEOUT_MS', 'HTTP_KEEP_ALIVE_TIMEOUT_MS']) {
      expect(errorOf({ [name]: '0' })).toContain(`${name}: must be at least 1000`);
    }
  });

  it('names every bad variable in one message', () => {
    const message = errorOf({
      BCRYPT_COST: '99',
      RATE_LIMIT_ENABLED: 'maybe',
      LOG_LEVEL: 'loud',
      SMTP_PORT: 'abc',
      AI_PROVIDER: 'OTHER',
    });
    for (const name of ['BCRYPT_COST', 'RATE_LIMIT_ENABLED', 'LOG_LEVEL', 'SMTP_PORT', 'AI_PROVIDER'])
      expect(message).toContain(name);
  });

  it('checks rules across variables: SMTP host, seed pairs, database URL, secret length', () => {
    expect(errorOf({ EMAIL_PROVIDER: 'SMTP' })).toContain('SMTP_HOST');
    expect(errorOf({ SEED_ADMIN_EMAIL: 'a@b.co' })).toContain('SEED_ADMIN_PASSWORD');
    expect(errorOf({ DATABASE_URL: 'mysql://x' })).toContain('DATABASE_URL');
    expect(errorOf({ JWT_ACCESS_SECRET: 'short' })).toContain('JWT_ACCESS_SECRET');
  });

  it('refuses to start in production without JWT secrets, and generates them elsewhere', () => {
    expect(errorOf({ NODE_ENV: 'production' })).toMatch(
      /JWT_ACCESS_SECRET: required[\s\S]*JWT_REFRESH_SECRET: required/,
    );
    const { config, warning } = withDevelopmentSecrets(parseConfig({ DATABASE_URL: 'memory://' }));
    expect(config.JWT_ACCESS_SECRET.length).toBeGreaterThanOrEqual(32);
    expect(config.JWT_ACCESS_SECRET).not.toBe(config.JWT_REFRESH_SECRET);
    expect(warning).toMatch(/generated development secrets \(memory only\)/);
  });

  it('treats empty strings as unset and lets keys of inactive providers stay empty', () => {
    const c = parseConfig({
      PROCESSOR_A_SECRET_KEY: '',
      PROVIDER_A_API_KEY: '',
      RATE_LIMIT_MAX_REQUESTS: '',
      BILLING_PROVIDER: 'PROCESSOR_B',
    });
    expect(c.PROCESSOR_A_SECRET_KEY).toBeUndefined();
    expect(c.RATE_LIMIT_MAX_REQUESTS).toBe(120);
    expect(c.BILLING_PROVIDER).toBe('PROCESSOR_B');
  });

  it('reads lists, durations, booleans and the proxy setting', () => {
    const c = parseConfig({
      AI_TEST_USER_EMAILS: ' A@x.io , b@y.io',
      CORS_ORIGINS: 'https://a.io,https://b.io',
      JWT_ACCESS_TTL: '5m',
      QUEUES_ENABLED: '1',
      TRUST_PROXY: '10.0.0.0/8, loopback',
    });
    expect(c.AI_TEST_USER_EMAILS).toEqual(['a@x.io', 'b@y.io']);
    expect(c.CORS_ORIGINS).toEqual(['https://a.io', 'https://b.io']);
    expect(c.JWT_ACCESS_TTL).toBe(300);
    expect(c.QUEUES_ENABLED).toBe(true);
    expect(c.TRUST_PROXY).toEqual(['10.0.0.0/8', 'loopback']);
    expect(parseConfig({ TRUST_PROXY: '2' }).TRUST_PROXY).toBe(2);
    // `true` is one hop (the right-most X-Forwarded-For entry), not Express's "trust every hop".
    expect(parseConfig({ TRUST_PROXY: 'true' }).TRUST_PROXY).toBe(1);
    expect(parseConfig({ TRUST_PROXY: ' TRUE ' }).TRUST_PROXY).toBe(1);
    expect(parseConfig({ TRUST_PROXY: 'false' }).TRUST_PROXY).toBe(false);
    expect(errorOf({ TRUST_PROXY: 'yes please' })).toContain('TRUST_PROXY');
    expect(errorOf({ AI_TEST_USER_EMAILS: 'not-an-address' })).toContain('AI_TEST_USER_EMAILS');
  });

  /** A connection URL setting: each of `refused` is refused with `message`, naming neither its password nor `host`; each of `accepted` is kept as written. */
  function expectConnectionUrlChecked(
    name: 'REDIS_URL' | 'DATABASE_URL',
    opts: { refused: string[]; accepted: string[]; message: string; host: string },
  ) {
    for (const value of opts.refused) {
      const message = errorOf({ [name]: value });
      expect(message).toContain(opts.message);
      expect(message).not.toContain('TopSecret');
      expect(message).not.toContain(opts.host);
    }
    for (const value of opts.accepted) expect(parseConfig({ [name]: value })[name]).toBe(value);
  }

  it('when REDIS_URL is malformed, then it is refused by name without printing the URL or its password', () => {
    expectConnectionUrlChecked('REDIS_URL', {
      refused: [
        'redis://:TopSecretPw2@redis.internal:99999',
        'redis://:TopSecretPw2@redis internal:6379',
        'redis://:TopSecretPw2@[redis.internal]:6379',
        'redis://:TopSecretPw2@redis.internal:0',
        'redis://:TopSecret%zz@redis.internal:6379',
        'http://:TopSecretPw2@redis.internal:6379',
      ],
      accepted: ['redis://localhost:6379', 'rediss://:pw@redis.internal:6380/2', 'redis://[::1]:6379'],
      message: 'REDIS_URL: must be a redis:// or rediss:// URL',
      host: 'redis.internal',
    });
  });

  it('when DATABASE_URL is malformed, then it is refused by name without printing the URL or its password', () => {
    expectConnectionUrlChecked('DATABASE_URL', {
      refused: [
        'postgres://app:TopSecretPw2@db.internal:99999/app',
        'postgresql://app:TopSecretPw2@db internal/app',
        'postgres://app:TopSecretPw2@[db.internal]/app',
        'mysql://app:TopSecretPw2@db.internal/app',
      ],
      accepted: [
        'memory://',
        'postgres://app:pw@db.internal:5432/app',
        'postgresql://app:pw@/app?host=/var/run/postgresql',
      ],
      message: 'DATABASE_URL: must be a postgres:// or postgresql:// URL, or memory://',
      host: 'db.internal',
    });
  });

  it('when a seed password breaks the password policy, then it is refused by name without printing it', () => {
    for (const [email, password] of [
      ['SEED_ADMIN_EMAIL', 'SEED_ADMIN_PASSWORD'],
      ['SEED_DEMO_ADMIN_EMAIL', 'SEED_DEMO_ADMIN_PASSWORD'],
    ] as const) {
      for (const weak of ['admin', 'onlyletters', '12345678901']) {
        const message = errorOf({ [email]: 'admin@example.com', [password]: weak });
        expect(message).toContain(`${password}: Password must`);
        expect(message).not.toContain(weak);
      }
      expect(parseConfig({ [email]: 'admin@example.com', [password]: 'Admin-pass-1234' })[password]).toBe(
        'Admin-pass-1234',
      );
    }
  });

  it('when a seed e-mail is not an e-mail address, then it is refused by name', () => {
    for (const name of ['SEED_ADMIN_EMAIL', 'SEED_DEMO_ADMIN_EMAIL'] as const) {
      const password = name === 'SEED_ADMIN_EMAIL' ? 'SEED_ADMIN_PASSWORD' : 'SEED_DEMO_ADMIN_PASSWORD';
      expect(errorOf({ [name]: 'not-an-email', [password]: 'Admin-pass-1234' })).toContain(
        `${name}: must be an e-mail address`,
      );
      expect(parseConfig({ [name]: ' admin@tests.local ', [password]: 'Admin-pass-1234' })[name]).toBe(
        'admin@tests.local',
      );
    }
  });

  it('when DEMO_RESET_CRON does not parse as cron, then it is refused by name', () => {
    for (const value of ['99 99 99 99 99', 'a b c d e', '0 0 30 2 *']) {
      const message = errorOf({ DEMO_RESET_CRON: value });
      expect(message).toContain('DEMO_RESET_CRON: must be a cron pattern');
      expect(message).not.toContain(value);
    }
    for (const value of ['0 * * * *', '*/30 * * * * *', '0 3 * * MON'])
      expect(parseConfig({ DEMO_RESET_CRON: value }).DEMO_RESET_CRON).toBe(value);
  });

  it('when REDIS_COMMAND_TIMEOUT_MS is outside 100 to 2000 ms, then it is refused by name (default 1000)', () => {
    expect(parseConfig({}).REDIS_COMMAND_TIMEOUT_MS).toBe(1_000);
    expect(parseConfig({ REDIS_COMMAND_TIMEOUT_MS: '2000' }).REDIS_COMMAND_TIMEOUT_MS).toBe(2_000);
    expect(errorOf({ REDIS_COMMAND_TIMEOUT_MS: '2001' })).toContain('REDIS_COMMAND_TIMEOUT_MS: must be at most 2000');
    expect(errorOf({ REDIS_COMMAND_TIMEOUT_MS: '99' })).toContain('REDIS_COMMAND_TIMEOUT_MS: must be at least 100');
  });

  it('when an identity provider has only part of its settings, then start-up names the missing ones', () => {
    expect(errorOf({ GITHUB_CLIENT_ID: 'id' })).toContain('GITHUB_CLIENT_ID / GITHUB_CLIENT_SECRET: set all or none');
    expect(errorOf({ GOOGLE_CLIENT_SECRET: 'secret' })).toContain(
      'GOOGLE_CLIENT_ID / GOOGLE_CLIENT_SECRET: set all or none',
    );
    expect(errorOf({ OIDC_ISSUER_URL: 'https://sso.example.com', OIDC_CLIENT_ID: 'id' })).toContain(
      'OIDC_ISSUER_URL / OIDC_CLIENT_ID / OIDC_CLIENT_SECRET: set all or none',
    );
    const c = parseConfig({});
    expect(c).toMatchObject({
      GITHUB_BASE_URL: 'https://github.com',
      GITHUB_API_URL: 'https://api.github.com',
      GOOGLE_ISSUER_URL: 'https://accounts.google.com',
      OIDC_DISPLAY_NAME: 'Single sign-on',
      OAUTH_EXCHANGE_CODE_TTL: 60,
    });
    expect(c.API_URL).toBeUndefined();
  });

  it('when an identity provider URL is plain http off the loopback address, then it is refused by name', () => {
    for (const name of ['GITHUB_BASE_URL', 'GITHUB_API_URL', 'GOOGLE_ISSUER_URL', 'OIDC_ISSUER_URL'] as const) {
      for (const bad of ['http://sso.example.com', 'ftp://sso.example.com', 'not a url', 'http://10.0.0.1'])
        expect(errorOf({ [name]: bad }), `${name}=${bad}`).toContain(
          `${name}: must be an https:// URL (http:// only on a loopback address)`,
        );
      const complete = name === 'OIDC_ISSUER_URL' ? { OIDC_CLIENT_ID: 'id', OIDC_CLIENT_SECRET: 'secret' } : {};
      for (const good of ['https://sso.example.com/realms/acme', 'http://127.0.0.1:4000', 'http://localhost:8080'])
        expect(parseConfig({ [name]: good, ...complete })[name]).toBe(good);
    }
    expect(errorOf({ OAUTH_EXCHANGE_CODE_TTL: '11m' })).toContain('OAUTH_EXCHANGE_CODE_TTL: must be at most 10m');
  });
});
