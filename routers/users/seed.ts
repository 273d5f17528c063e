// Start-up seeding of the platform's admin accounts (run by the composition root). Only creates: an
// existing row is never overwritten, so admin edits survive restarts.
import type { AppDeps } from '../../server/platform/context.js';
import type { PlatformRole } from '../../db/schema.js';
import { createPersonalWorkspace } from '../auth/service.js';

type SeedDeps = Pick<AppDeps, 'config' | 'db' | 'logger' | 'passwords'>;

/** The platform admin and the read-only demo admin named by the SEED_* settings. */
export async function seedPlatformAdmins(deps: SeedDeps): Promise<void> {
  const { config } = deps;
  const accounts: Array<{ email?: string; password?: string; role: PlatformRole; name: string }> = [
    { email: config.SEED_ADMIN_EMAIL, password: config.SEED_ADMIN_PASSWORD, role: 'ADMIN', name: 'Platform Admin' },
    {
      email: config.SEED_DEMO_ADMIN_EMAIL,
      password: config.SEED_DEMO_ADMIN_PASSWORD,
      role: 'DEMO_ADMIN',
      name: 'Demo Admin',
    },
  ];
  for (const account of accounts) {
    if (!account.email || !account.password) continue;
    const email = account.email.trim().toLowerCase();
    const exists = await deps.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst();
    if (exists) continue;
    const passwordHash = await deps.passwords.hash(account.password);
    const created = await deps.db.transaction().execute(async (trx) => {
      const user = await trx
        .insertInto('users')
        .values({
          email,
          name: account.name,
          password_hash: passwordHash,
          platform_role: account.role,
          email_verified_at: new Date(),
        })
        .onConflict((oc) => oc.column('email').doNothing())
        .returning(['id', 'name'])
        .executeTakeFirst();
      if (user) await createPersonalWorkspace(trx, user);
      return Boolean(user);
    });
    if (created) deps.logger.info({ email, role: account.role }, 'seeded platform account');
  }
}
