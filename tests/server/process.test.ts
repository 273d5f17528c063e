import http from 'node:http';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { STRONG_PASSWORD, apiClient, uniqueEmail } from '../helpers/http.js';
import { listeningPort, startEntry } from '../helpers/entry.js';

/** The entry point on the run's database at bcrypt cost 12 (a login or registration takes ~200 ms), listening. */
async function startListening() {
  const run = startEntry({
    NODE_ENV: 'test',
    DATABASE_URL: inject('databaseUrl'),
    HOST: '127.0.0.1',
    PORT: '0',
    BCRYPT_COST: '12',
    JWT_ACCESS_SECRET: 'process-test-access-secret-0123456789abcdef',
    JWT_REFRESH_SECRET: 'process-test-refresh-secret-0123456789abcdef',
  });
  return { run, port: await listeningPort(run) };
}

/**
 * POST `body` as JSON with `Expect: 100-continue`: `headRead` resolves once the server has read the head (its
 * 100 Continue; the request is then under way there) and the body has been sent; `status` is the answer's.
 */
function postWithContinue(port: number, path: string, body: object) {
  const payload = JSON.stringify(body);
  let headRead!: () => void;
  const read = new Promise<void>((resolve) => (headRead = resolve));
  const status = new Promise<number>((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          expect: '100-continue',
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('continue', () => req.end(payload, headRead));
    req.on('error', reject);
  });
  return { headRead: read, status };
}

describe('server/index.ts', () => {
  it('stops at start-up with exit code 1 and a message naming each bad variable', async () => {
    const run = startEntry({ DATABASE_URL: 'memory://', BCRYPT_COST: 'abc', RATE_LIMIT_ENABLED: 'maybe' });
    expect(await run.exited).toBe(1);
    expect(run.output()).toContain('BCRYPT_COST');
    expect(run.output()).toContain('RATE_LIMIT_ENABLED');
    expect(run.output()).not.toMatch(/\n\s+at /);
  }, 30_000);

  it('on SIGTERM finishes the request in flight, then closes and exits 0', async () => {
    const { run, port } = await startListening();
    const api = apiClient(`http://127.0.0.1:${port}`);
    const email = uniqueEmail('sigterm');
    expect(
      (await api('POST', '/auth/register', { body: { email, password: STRONG_PASSWORD, name: 'S' } })).status,
    ).toBe(201);

    // A login costs one bcrypt at cost 12 (about 200 ms): SIGTERM lands while it is in flight, once the
    // server has read the request's head (it answers 100 Continue then) and the body is on its way.
    const inFlight = postWithContinue(port, '/auth/login', { email, password: STRONG_PASSWORD });
    await inFlight.headRead;
    run.child.kill('SIGTERM');
    expect(await inFlight.status).toBe(200);
    expect(await run.exited).toBe(0);
    expect(run.output()).toContain('shutdown complete');
    await expect(api('GET', '/health')).rejects.toThrow();
  }, 60_000);

  it('on SIGTERM lets a request whose client went away finish its writes before the pool closes', async () => {
    const { run, port } = await startListening();
    const email = uniqueEmail('abandoned');

    // A registration hashes at cost 12 (about 200 ms) before it writes; its client gives up after 50 ms,
    // which closes the connection, and SIGTERM follows at once.
    const abandoned = fetch(`http://127.0.0.1:${port}/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: STRONG_PASSWORD, name: 'A' }),
      signal: AbortSignal.timeout(50),
    });
    await expect(abandoned).rejects.toThrow();
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
    expect(run.output()).toContain('shutdown complete');
    expect(run.output()).not.toContain('"level":50');

    const client = new pg.Client({ connectionString: inject('databaseUrl') });
    await client.connect();
    try {
      const { rows } = await client.query('select count(*)::int as n from users where email = $1', [email]);
      expect(rows[0].n).toBe(1);
    } finally {
      await client.end();
    }
  }, 60_000);
});
