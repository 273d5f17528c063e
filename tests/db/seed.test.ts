import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, TEST_DEMO_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { login, uniqueEmail } from '../helpers/http.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

describe('seeding the platform admins', () => {
  it('creates the admin and the demo admin from SEED_*, verified, each with a workspace', async () => {
    const rows = await app.deps.db
      .selectFrom('users')
      .select(['email', 'platform_role', 'email_verified_at'])
      .where('email', 'in', [TEST_ADMIN.email, TEST_DEMO_ADMIN.email])
      .orderBy('email')
      .execute();
    expect(rows.map((r) => [r.email, r.platform_role])).toEqual([
      [TEST_ADMIN.email, 'ADMIN'],
      [TEST_DEMO_ADMIN.email, 'DEMO_ADMIN'],
    ]);
    expect(rows.every((r) => r.email_verified_at)).toBe(true);
    const admin = await login(app.api, TEST_ADMIN.email, TEST_ADMIN.password);
    expect(admin.workspaceId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('never overwrites: a changed name, role or password survives a restart with other SEED_* values', async () => {
    const email = uniqueEmail('seeded');
    const first = await startTestApp({ SEED_ADMIN_EMAIL: email, SEED_ADMIN_PASSWORD: 'First-pass-111' });
    await first.close();
    await app.deps.db
      .updateTable('users')
      .set({ name: 'Renamed', platform_role: 'USER' })
      .where('email', '=', email)
      .execute();

    const second = await startTestApp({ SEED_ADMIN_EMAIL: email, SEED_ADMIN_PASSWORD: 'Second-pass-222' });
    try {
      const row = await app.deps.db
        .selectFrom('users')
        .select(['name', 'platform_role'])
        .where('email', '=', email)
        .executeTakeFirstOrThrow();
      expect(row).toEqual({ name: 'Renamed', platform_role: 'USER' });
      expect((await second.api('POST', '/auth/login', { body: { email, password: 'First-pass-111' } })).status).toBe(
        200,
      );
      expect((await second.api('POST', '/auth/login', { body: { email, password: 'Second-pass-222' } })).status).toBe(
        401,
      );
    } finally {
      await second.close();
    }
  });
});
