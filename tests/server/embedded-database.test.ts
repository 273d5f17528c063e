import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseConfig, withDevelopmentSecrets } from '../../server/platform/config.js';
import { createLogger } from '../../server/platform/logger.js';
import { startServer } from '../../server/server.js';
import { apiClient, login, registerAndLogin } from '../helpers/http.js';

// The embedded default (PGlite): what `npm start` runs with nothing configured.
const boot = (env: NodeJS.ProcessEnv) => {
  const { config } = withDevelopmentSecrets(
    parseConfig({ HOST: '127.0.0.1', PORT: '0', BCRYPT_COST: '4', LOG_LEVEL: 'warn', ...env }),
  );
  return startServer(config, createLogger(config, { write() {} }));
};

describe('embedded database', () => {
  it('boots on memory://, registers and signs in', async () => {
    const server = await boot({ DATABASE_URL: 'memory://' });
    try {
      const api = apiClient(server.url);
      expect((await api('GET', '/health')).body.database.reachable).toBe(true);
      const session = await registerAndLogin(api);
      expect((await api('GET', '/auth/me', { token: session.accessToken })).status).toBe(200);
    } finally {
      await server.close();
    }
  }, 60_000);

  it('keeps data and generated secrets under DATA_DIR across a restart', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'saas-data-'));
    try {
      const first = await boot({ DATA_DIR: dataDir });
      const session = await registerAndLogin(apiClient(first.url));
      await first.close();
      expect(fs.statSync(path.join(dataDir, 'secrets.json')).mode & 0o777).toBe(0o600);

      const second = await boot({ DATA_DIR: dataDir });
      try {
        const api = apiClient(second.url);
        // The access token of the first run still verifies: the secrets were kept.
        expect((await api('GET', '/auth/me', { token: session.accessToken })).status).toBe(200);
        expect((await login(api, session.email, session.password)).userId).toBe(session.userId);
      } finally {
        await second.close();
      }
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  it("is one process's: a demo command refuses it while the server runs, and a lock left by a dead process is taken over", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'saas-data-'));
    const lockFile = path.join(dataDir, 'pglite.lock');
    const demoSeed = () =>
      promisify(execFile)(process.execPath, ['--import', 'tsx', 'demo/cli.ts', 'seed'], {
        env: { PATH: process.env.PATH, DATA_DIR: dataDir, BCRYPT_COST: '4', LOG_LEVEL: 'warn' },
        timeout: 60_000,
      }).then(
        () => ({ code: 0, stderr: '' }),
        (err: { code: number; stderr: string }) => ({ code: err.code, stderr: err.stderr }),
      );
    try {
      const server = await boot({ DATA_DIR: dataDir });
      try {
        expect(fs.readFileSync(lockFile, 'utf8')).toBe(String(process.pid));
        const refused = await demoSeed();
        expect(refused.code).toBe(1);
        expect(refused.stderr).toContain(
          `demo:seed failed: The embedded database in ${path.join(dataDir, 'pglite')} is in use by process ${process.pid}`,
        );
        expect(refused.stderr).not.toMatch(/\bat .+:\d+:\d+/);
      } finally {
        await server.close();
      }
      expect(fs.existsSync(lockFile)).toBe(false);
      // A process that died holding it (no such pid): the next one takes the directory over.
      fs.writeFileSync(lockFile, '2147483646');
      const again = await boot({ DATA_DIR: dataDir });
      await again.close();
      expect(fs.existsSync(lockFile)).toBe(false);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
