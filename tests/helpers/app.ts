// Boots the real service in-process on port 0 against the run's Postgres database, with its log lines
// captured, and gives tests an HTTP client bound to it.
import { inject } from 'vitest';
import { parseConfig, withDevelopmentSecrets, type Config } from '../../server/platform/config.js';
import { createLogger } from '../../server/platform/logger.js';
import { startServer, type RunningServer } from '../../server/server.js';
import { ledger } from './secret-ledger.js';
import { errorLedger } from './error-ledger.js';
import { apiClient, type Api } from './http.js';
import { TcpProxy } from './tcp-proxy.js';

export const TEST_ADMIN = { email: 'admin@tests.local', password: 'Admin-pass-1234' };
export const TEST_DEMO_ADMIN = { email: 'demo-admin@tests.local', password: 'Demo-pass-1234' };
export const TEST_JWT_ACCESS_SECRET = 'test-access-secret-0123456789abcdef0123456789';
export const TEST_JWT_REFRESH_SECRET = 'test-refresh-secret-0123456789abcdef012345678';

export interface TestApp {
  url: string;
  config: Config;
  deps: RunningServer['deps'];
  api: Api;
  /** Every log line this app wrote, as JSON text. */
  logs: string[];
  close(): Promise<void>;
}

export function testEnv(overrides: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  return {
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: inject('databaseUrl'),
    LOG_LEVEL: 'debug',
    JWT_ACCESS_SECRET: TEST_JWT_ACCESS_SECRET,
    JWT_REFRESH_SECRET: TEST_JWT_REFRESH_SECRET,
    WEBHOOK_SECRET_ENCRYPTION_KEY: 'test-webhook-encryption-key-0123456789abcdef',
    BCRYPT_COST: '4',
    // Rate-limit tests turn it on; elsewhere one client address would soon be limited.
    RATE_LIMIT_ENABLED: 'false',
    // No load balancer to drain from: close() at once (tests/instances/ turns the drain on).
    SHUTDOWN_DRAIN_DELAY_MS: '0',
    // Every test app shares the run's database: one app's purge or export task would take another file's
    // rows (with another storage folder). Tests call the tasks themselves, or turn them on.
    PERIODIC_TASKS_ENABLED: 'false',
    SEED_ADMIN_EMAIL: TEST_ADMIN.email,
    SEED_ADMIN_PASSWORD: TEST_ADMIN.password,
    SEED_DEMO_ADMIN_EMAIL: TEST_DEMO_ADMIN.email,
    SEED_DEMO_ADMIN_PASSWORD: TEST_DEMO_ADMIN.password,
    APP_URL: 'http://app.tests.local',
    ...overrides,
  };
}

export async function startTestApp(overrides: Record<string, string | undefined> = {}): Promise<TestApp> {
  const { config } = withDevelopmentSecrets(parseConfig(testEnv(overrides)));
  const logs: string[] = [];
  const logger = createLogger(config, {
    write(line: string) {
      logs.push(line);
      ledger.observe('a log line', line);
      errorLedger.observe(line);
    },
  });
  const server = await startServer(config, logger);
  return { url: server.url, config, deps: server.deps, api: apiClient(server.url), logs, close: server.close };
}

/**
 * A test app whose Postgres is behind a TCP proxy that the test can cut and restore (a database outage);
 * `close` restores the proxy, closes the app, then the proxy.
 */
export async function startAppBehindDatabaseProxy(overrides: Record<string, string | undefined> = {}) {
  const proxy = await TcpProxy.start(new URL(inject('databaseUrl')));
  const app = await startTestApp({ DATABASE_URL: proxy.url, ...overrides });
  const close = async () => {
    await proxy.restore();
    await app.close();
    await proxy.close();
  };
  return { app, proxy, close };
}
