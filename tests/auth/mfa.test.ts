// Two-factor sign-in end to end: setup and confirmation, the second sign-in step with TOTP codes and
// backup codes (clock drift, replay, single use under concurrency), the step token's expiry and attempt
// limit, turning it off, new backup codes, the admin reset, and that no secret ever comes back.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, TEST_DEMO_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, login, registerAndLogin, type Session } from '../helpers/http.js';
import { clockAhead } from '../helpers/clock.js';
import { mailsTo } from '../helpers/mail.js';
import { codeAt, enableMfa, forgetUsedSteps, freshStep, loginWithMfa } from '../helpers/mfa.js';

let app: TestApp;
let admin: Session;
beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
  admin = await login(app.api, TEST_ADMIN.email, TEST_ADMIN.password);
});
afterAll(() => app.close());

const signIn = (s: Pick<Session, 'email' | 'password'>) =>
  app.api('POST', '/auth/login', { body: { email: s.email, password: s.password } });
const verify = (body: Record<string, unknown>) => app.api('POST', '/auth/mfa/verify', { body });
const me = (token: string) => app.api('GET', '/auth/me', { token });

/** A new account with 2FA on. */
async function withMfa(prefix = 'mfa') {
  const s = await registerAndLogin(app.api, { prefix });
  return { ...s, ...(await enableMfa(app.api, s.accessToken)) };
}

/** The first step of a sign-in of `s`: its mfaToken. */
async function mfaToken(s: Pick<Session, 'email' | 'password'>): Promise<string> {
  const res = await signIn(s);
  expect(res.status, res.text).toBe(200);
  return res.body.mfaToken;
}

describe('setting up an authenticator', () => {
  it('answers the secret, its otpauth URI and a QR code, and leaves 2FA off until confirmed', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'mfa-setup' });
    const res = await app.api('POST', '/auth/mfa/totp/setup', { token: s.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(res.body.secret).toMatch(/^[A-Z2-7]{32}$/);
    const uri = new URL(res.body.otpauthUrl);
    expect(uri.protocol).toBe('otpauth:');
    expect(uri.host).toBe('totp');
    expect(Object.fromEntries(uri.searchParams)).toMatchObject({
      secret: res.body.secret,
      algorithm: 'SHA1',
      digits: '6',
      period: '30',
      issuer: 'Workspace SaaS',
    });
    expect(decodeURIComponent(uri.pathname)).toContain(s.email);
    expect(res.body.qrCodeDataUrl).toMatch(/^data:image\/png;base64,[A-Za-z0-9+/]+=*$/);

    // Pending: the account signs in with its password alone, and says 2FA is off.
    expect((await me(s.accessToken)).body.user.mfaEnabled).toBe(false);
    const plain = await signIn(s);
    expect(plain.body.accessToken).toEqual(expect.any(String));
    expect(plain.body.mfaRequired).toBeUndefined();
    const stored = await app.deps.db
      .selectFrom('user_totp')
      .select(['secret_encrypted', 'confirmed_at'])
      .where('user_id', '=', s.userId)
      .executeTakeFirstOrThrow();
    expect(stored.confirmed_at).toBeNull();
    expect(stored.secret_encrypted).not.toContain(res.body.secret);
    expect(app.deps.secrets.open(stored.secret_encrypted)).toBe(res.body.secret);
  });

  it('confirms with a code: 2FA on, ten distinct backup codes shown once, a mail; setup again is 409', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'mfa-confirm' });
    expectError(
      await app.api('POST', '/auth/mfa/totp/confirm', { token: s.accessToken, body: { code: '123456' } }),
      409,
      'MFA_NOT_ENABLED',
    );
    const setup = await app.api('POST', '/auth/mfa/totp/setup', { token: s.accessToken });
    await freshStep(3_000);
    const wrong = codeAt(setup.body.secret) === '000000' ? '111111' : '000000';
    expectError(
      await app.api('POST', '/auth/mfa/totp/confirm', { token: s.accessToken, body: { code: wrong } }),
      400,
      'INVALID_MFA_CODE',
    );
    const res = await app.api('POST', '/auth/mfa/totp/confirm', {
      token: s.accessToken,
      body: { code: codeAt(setup.body.secret) },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.backupCodes).toHaveLength(10);
    expect(new Set(res.body.backupCodes).size).toBe(10);
    for (const code of res.body.backupCodes) expect(code).toMatch(/^[a-z2-9]{5}-[a-z2-9]{5}$/);
    const hashes = await app.deps.db
      .selectFrom('mfa_backup_codes')
      .select('code_hash')
      .where('user_id', '=', s.userId)
      .execute();
    expect(hashes).toHaveLength(10);
    for (const { code_hash } of hashes) expect(res.body.backupCodes).not.toContain(code_hash);

    expect((await me(s.accessToken)).body.user.mfaEnabled).toBe(true);
    expect((await mailsTo(app, s.email)).map((m) => m.template)).toContain('mfa-enabled');
    expectError(await app.api('POST', '/auth/mfa/totp/setup', { token: s.accessToken }), 409, 'MFA_ALREADY_ENABLED');
    expectError(
      await app.api('POST', '/auth/mfa/totp/confirm', { token: s.accessToken, body: { code: '123456' } }),
      409,
      'MFA_ALREADY_ENABLED',
    );
  });

  it('refuses setup and confirmation without a token (401)', async () => {
    expectError(await app.api('POST', '/auth/mfa/totp/setup'), 401, 'UNAUTHORIZED');
    expectError(await app.api('POST', '/auth/mfa/totp/confirm', { body: { code: '123456' } }), 401, 'UNAUTHORIZED');
  });
});

describe('signing in with two factors', () => {
  it('login answers { mfaRequired, mfaToken, methods } and no tokens; verify with a code answers the session', async () => {
    const u = await withMfa('mfa-login');
    const first = await signIn(u);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      mfaRequired: true,
      mfaToken: expect.stringMatching(/^mfa_[A-Za-z0-9_-]{43}$/),
      methods: ['totp', 'backup_code'],
    });
    expect(first.text).not.toMatch(/accessToken|refreshToken/);

    // The confirmation used the current step: the next step's code is the one left to use.
    const res = await verify({ mfaToken: first.body.mfaToken, code: codeAt(u.secret, 1) });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      tokenType: 'Bearer',
      user: { id: u.userId, mfaEnabled: true },
      activeWorkspace: { id: u.workspaceId },
    });
    expect((await me(res.body.accessToken)).body.user.id).toBe(u.userId);
    // Single use: the same token again is 401, even with a good code.
    expectError(await verify({ mfaToken: first.body.mfaToken, code: codeAt(u.secret, 1) }), 401, 'UNAUTHORIZED');
  });

  it('accepts the previous and the next step, refuses two steps away, and never the same code twice', async () => {
    const u = await withMfa('mfa-drift');
    await freshStep();
    await forgetUsedSteps(app, u.userId);
    for (const steps of [-2, 2]) {
      expectError(
        await verify({ mfaToken: await mfaToken(u), code: codeAt(u.secret, steps) }),
        400,
        'INVALID_MFA_CODE',
      );
    }
    const previous = await verify({ mfaToken: await mfaToken(u), code: codeAt(u.secret, -1) });
    expect(previous.status, previous.text).toBe(200);
    const next = await verify({ mfaToken: await mfaToken(u), code: codeAt(u.secret, 1) });
    expect(next.status, next.text).toBe(200);
    // Replay: the code just used, and any code of an earlier step, are refused.
    expectError(await verify({ mfaToken: await mfaToken(u), code: codeAt(u.secret, 1) }), 400, 'INVALID_MFA_CODE');
    expectError(await verify({ mfaToken: await mfaToken(u), code: codeAt(u.secret, 0) }), 400, 'INVALID_MFA_CODE');
  });

  it('accepts the same code once when two sign-ins send it at the same time', async () => {
    const u = await withMfa('mfa-replay-race');
    await freshStep();
    const tokens = await Promise.all([mfaToken(u), mfaToken(u)]);
    const code = codeAt(u.secret, 1);
    const answers = await Promise.all(tokens.map((t) => verify({ mfaToken: t, code })));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 400]);
  });

  it('accepts a backup code once (as shown, or typed in capitals without the dash)', async () => {
    const u = await withMfa('mfa-backup');
    const res = await verify({ mfaToken: await mfaToken(u), backupCode: u.backupCodes[0] });
    expect(res.status, res.text).toBe(200);
    expect(res.body.user.id).toBe(u.userId);
    expectError(await verify({ mfaToken: await mfaToken(u), backupCode: u.backupCodes[0] }), 400, 'INVALID_MFA_CODE');
    const typed = u.backupCodes[1].replace('-', '').toUpperCase();
    expect((await verify({ mfaToken: await mfaToken(u), backupCode: typed })).status).toBe(200);
  });

  it('lets exactly one of 10 concurrent sign-ins use one backup code', async () => {
    const u = await withMfa('mfa-backup-race');
    const tokens = await Promise.all(Array.from({ length: 10 }, () => mfaToken(u)));
    const answers = await Promise.all(tokens.map((t) => verify({ mfaToken: t, backupCode: u.backupCodes[2] })));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 400)).toHaveLength(9);
    for (const a of answers.filter((x) => x.status === 400)) expectError(a, 400, 'INVALID_MFA_CODE');
    const used = await app.deps.db
      .selectFrom('mfa_backup_codes')
      .select('id')
      .where('user_id', '=', u.userId)
      .where('used_at', 'is not', null)
      .execute();
    expect(used).toHaveLength(1);
  });

  it('allows 5 codes per token: the 6th is 401 even when right, and the failures are audited', async () => {
    const u = await withMfa('mfa-attempts');
    const token = await mfaToken(u);
    for (let i = 0; i < 5; i++)
      expectError(await verify({ mfaToken: token, backupCode: 'wrong-code' }), 400, 'INVALID_MFA_CODE');
    expectError(await verify({ mfaToken: token, backupCode: u.backupCodes[0] }), 401, 'UNAUTHORIZED');
    // The right code was not spent by the refused try.
    expect((await verify({ mfaToken: await mfaToken(u), backupCode: u.backupCodes[0] })).status).toBe(200);

    const audit = await app.api('GET', `/admin/audit-logs?action=auth.mfa_failed&limit=100`, {
      token: admin.accessToken,
    });
    expect(audit.status, audit.text).toBe(200);
    const mine = audit.body.items.filter((i: { targetId: string }) => i.targetId === u.userId);
    expect(mine).toHaveLength(5);
    expect(mine[0]).toMatchObject({ action: 'auth.mfa_failed', metadata: { method: 'backup_code' } });
  });

  it('refuses unknown tokens and bad input', async () => {
    expectError(await verify({ mfaToken: 'mfa_unknown', code: '123456' }), 401, 'UNAUTHORIZED');
    expectError(await verify({ mfaToken: 'mfa_unknown' }), 400, 'BAD_REQUEST');
    expectError(
      await verify({ mfaToken: 'mfa_unknown', code: '123456', backupCode: 'abcde-fghij' }),
      400,
      'BAD_REQUEST',
    );
    expectError(await verify({ mfaToken: 'x'.repeat(300), code: '123456' }), 400, 'BAD_REQUEST');
  });

  it('refuses a suspended user at both steps', async () => {
    const u = await withMfa('mfa-suspended');
    const token = await mfaToken(u);
    const suspend = await app.api('POST', `/admin/users/${u.userId}/suspend`, { token: admin.accessToken });
    expect(suspend.status).toBe(200);
    expectError(await verify({ mfaToken: token, backupCode: u.backupCodes[0] }), 403, 'USER_SUSPENDED');
    expectError(await signIn(u), 403, 'USER_SUSPENDED');
    await app.api('POST', `/admin/users/${u.userId}/activate`, { token: admin.accessToken });
  });

  it('voids a step under way when the password is reset', async () => {
    const u = await withMfa('mfa-reset');
    const token = await mfaToken(u);
    await app.api('POST', '/auth/forgot-password', { body: { email: u.email } });
    const mail = (await mailsTo(app, u.email)).filter((m) => m.template === 'password-reset').at(-1)!;
    const resetToken = new URL(mail.link!).searchParams.get('token');
    const reset = await app.api('POST', '/auth/reset-password', {
      body: { token: resetToken, newPassword: 'Another-pass-456' },
    });
    expect(reset.status).toBe(200);
    expectError(await verify({ mfaToken: token, backupCode: u.backupCodes[0] }), 401, 'UNAUTHORIZED');
  });
});

describe('the step token lifetime (MFA_TOKEN_TTL)', () => {
  let quick: TestApp;
  beforeAll(async () => {
    quick = await startTestApp({ RATE_LIMIT_ENABLED: 'false', MFA_TOKEN_TTL: '1s' });
  });
  afterAll(() => quick.close());

  it('refuses a token past its lifetime with 401, and the right code is not spent', async () => {
    const s = await registerAndLogin(quick.api, { prefix: 'mfa-ttl' });
    const { backupCodes } = await enableMfa(quick.api, s.accessToken);
    const first = await quick.api('POST', '/auth/login', { body: { email: s.email, password: s.password } });
    // 1.3 s later by the app's clock (this process's Date, moved ahead): past the token's 1 s.
    const late = await clockAhead(1_300, () =>
      quick.api('POST', '/auth/mfa/verify', { body: { mfaToken: first.body.mfaToken, backupCode: backupCodes[0] } }),
    );
    expectError(late, 401, 'UNAUTHORIZED');
    const again = await loginWithMfa(quick.api, s.email, s.password, { backupCode: backupCodes[0] });
    expect(again.status, again.text).toBe(200);
  });
});

describe('wrong codes are rate limited in the auth tier', () => {
  let limited: TestApp;
  beforeAll(async () => {
    limited = await startTestApp({ RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_AUTH_MAX_REQUESTS: '8' });
  });
  afterAll(() => limited.close());

  it('answers 429 RATE_LIMITED once the account has failed too often, even with fresh tokens', async () => {
    const s = await registerAndLogin(limited.api, { prefix: 'mfa-limit' });
    const { backupCodes } = await enableMfa(limited.api, s.accessToken);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const first = await limited.api('POST', '/auth/login', { body: { email: s.email, password: s.password } });
      if (first.status !== 200) {
        statuses.push(first.status);
        continue;
      }
      const res = await limited.api('POST', '/auth/mfa/verify', {
        body: { mfaToken: first.body.mfaToken, backupCode: 'wrong-code' },
      });
      statuses.push(res.status);
    }
    expect(statuses).toContain(429);
    const last = await limited.api('POST', '/auth/mfa/verify', {
      body: { mfaToken: 'mfa_x', backupCode: backupCodes[0] },
    });
    expectError(last, 429, 'RATE_LIMITED');
  });
});

describe('the cap on wrong second-factor codes (RATE_LIMIT_ENABLED=false here)', () => {
  let other: TestApp;
  beforeAll(async () => {
    // A second instance on the same database: the count is shared.
    other = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
  });
  afterAll(() => other?.close());

  const verifyOn = (instance: TestApp, body: Record<string, unknown>) =>
    instance.api('POST', '/auth/mfa/verify', { body });
  const tokenOn = async (instance: TestApp, s: Pick<Session, 'email' | 'password'>) => {
    const res = await instance.api('POST', '/auth/login', { body: { email: s.email, password: s.password } });
    expect(res.status, res.text).toBe(200);
    return res.body.mfaToken as string;
  };
  /** 429 RATE_LIMITED with a Retry-After within the rest of the 10-minute window. */
  const expectLocked = (res: Awaited<ReturnType<typeof verify>>) => {
    expectError(res, 429, 'RATE_LIMITED');
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(600);
  };
  /** Ends the account's window, as 10 minutes would. */
  const endWindow = (userId: string) =>
    app.deps.db
      .updateTable('second_factor_failures')
      .set({ window_started_at: new Date(Date.now() - 11 * 60_000) })
      .where('user_id', '=', userId)
      .execute();

  it('10 wrong codes through fresh mfaTokens on two instances lock the second step: 429 with Retry-After, a mail', async () => {
    const u = await withMfa('mfa-cap');
    for (let i = 0; i < 10; i++) {
      const instance = i % 2 ? other : app;
      const res = await verifyOn(instance, { mfaToken: await tokenOn(instance, u), backupCode: `wrong-${i}` });
      expectError(res, 400, 'INVALID_MFA_CODE');
    }
    // Locked for the account, whatever the token, the instance or the code: the right ones too.
    expectLocked(await verifyOn(app, { mfaToken: await tokenOn(app, u), backupCode: u.backupCodes[0] }));
    await forgetUsedSteps(app, u.userId);
    expectLocked(await verifyOn(other, { mfaToken: await tokenOn(other, u), code: codeAt(u.secret) }));
    const trpc = await other.api('POST', '/trpc/auth.mfaVerify', {
      body: { mfaToken: await tokenOn(other, u), backupCode: u.backupCodes[0] },
    });
    expect(trpc.status).toBe(429);
    expect(trpc.body.error.data).toMatchObject({ code: 'RATE_LIMITED', httpStatus: 429 });
    expect(Number(trpc.headers.get('retry-after'))).toBeGreaterThan(0);
    // And the other checks of a second factor, for a signed-in session.
    const token = u.accessToken;
    expectLocked(
      await app.api('POST', '/auth/mfa/disable', { token, body: { password: u.password, code: u.backupCodes[0] } }),
    );
    expectLocked(await other.api('POST', '/auth/mfa/backup-codes', { token, body: { code: u.backupCodes[0] } }));
    // The owner is told once; the lock is audited.
    expect((await mailsTo(app, u.email)).filter((m) => m.template === 'mfa-locked')).toHaveLength(1);
    const audit = await app.deps.db
      .selectFrom('audit_logs')
      .select('action')
      .where('target_id', '=', u.userId)
      .where('action', '=', 'auth.mfa_locked')
      .execute();
    expect(audit).toHaveLength(1);

    // The window over, the right code (never spent by the refusals) signs in.
    await endWindow(u.userId);
    const res = await verifyOn(other, { mfaToken: await tokenOn(other, u), backupCode: u.backupCodes[0] });
    expect(res.status, res.text).toBe(200);
  });

  it('counts concurrent guesses one at a time: of 20 at once, 10 are judged and 10 refused', async () => {
    const u = await withMfa('mfa-cap-burst');
    const tokens = await Promise.all(Array.from({ length: 20 }, (_, i) => tokenOn(i % 2 ? other : app, u)));
    const answers = await Promise.all(
      tokens.map((mfaToken, i) => verifyOn(i % 2 ? app : other, { mfaToken, backupCode: `wrong-${i}` })),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([...Array(10).fill(400), ...Array(10).fill(429)]);
    expect((await mailsTo(app, u.email)).filter((m) => m.template === 'mfa-locked')).toHaveLength(1);
  });

  it('counts wrong codes at turning 2FA off and at new backup codes too, in one window from the first', async () => {
    const u = await withMfa('mfa-cap-signed-in');
    const token = u.accessToken;
    for (let i = 0; i < 5; i++) {
      const off = await app.api('POST', '/auth/mfa/disable', {
        token,
        body: { password: u.password, code: `nope-${i}` },
      });
      expectError(off, 400, 'INVALID_MFA_CODE');
      expectError(
        await other.api('POST', '/auth/mfa/backup-codes', { token, body: { code: `nope-${i}` } }),
        400,
        'INVALID_MFA_CODE',
      );
    }
    expectLocked(await verifyOn(app, { mfaToken: await tokenOn(app, u), backupCode: u.backupCodes[0] }));
    // A wrong password is not a second-factor check: it is refused as before, and counts nothing.
    const wrongPassword = await app.api('POST', '/auth/mfa/disable', {
      token,
      body: { password: 'Wrong-pass-999', code: u.backupCodes[0] },
    });
    expectError(wrongPassword, 401, 'INVALID_CREDENTIALS');
  });

  it('forgets failures of an ended window: 9, then the window ends, then 1 more leaves the account open', async () => {
    const u = await withMfa('mfa-cap-window');
    for (let i = 0; i < 9; i++)
      expectError(await verify({ mfaToken: await mfaToken(u), backupCode: `wrong-${i}` }), 400, 'INVALID_MFA_CODE');
    await endWindow(u.userId);
    expectError(await verify({ mfaToken: await mfaToken(u), backupCode: 'wrong-9' }), 400, 'INVALID_MFA_CODE');
    const res = await verify({ mfaToken: await mfaToken(u), backupCode: u.backupCodes[0] });
    expect(res.status, res.text).toBe(200);
    expect((await mailsTo(app, u.email)).filter((m) => m.template === 'mfa-locked')).toEqual([]);
  });
});

describe('turning 2FA off, new backup codes', () => {
  it('disable needs the password and a code; then login asks for the password alone, and a mail says so', async () => {
    const u = await withMfa('mfa-disable');
    const token = u.accessToken;
    const disable = (body: Record<string, unknown>) => app.api('POST', '/auth/mfa/disable', { token, body });
    expectError(await disable({ password: 'Wrong-pass-999', code: u.backupCodes[0] }), 401, 'INVALID_CREDENTIALS');
    expectError(await disable({ password: u.password, code: 'nope-nope' }), 400, 'INVALID_MFA_CODE');
    expectError(await disable({ password: u.password }), 400, 'BAD_REQUEST');
    await forgetUsedSteps(app, u.userId);
    await freshStep(3_000);
    const res = await disable({ password: u.password, code: codeAt(u.secret) });
    expect(res.status, res.text).toBe(200);
    expect((await me(token)).body.user.mfaEnabled).toBe(false);
    const plain = await signIn(u);
    expect(plain.body.accessToken).toEqual(expect.any(String));
    expect((await mailsTo(app, u.email)).map((m) => m.template)).toContain('mfa-disabled');
    const left = await app.deps.db
      .selectFrom('mfa_backup_codes')
      .select('id')
      .where('user_id', '=', u.userId)
      .execute();
    expect(left).toEqual([]);
    expectError(await disable({ password: u.password, code: '123456' }), 409, 'MFA_NOT_ENABLED');
  });

  it('new backup codes replace the old ones', async () => {
    const u = await withMfa('mfa-regen');
    const regen = (code: string) => app.api('POST', '/auth/mfa/backup-codes', { token: u.accessToken, body: { code } });
    expectError(await regen('000-000x'), 400, 'INVALID_MFA_CODE');
    const res = await regen(u.backupCodes[0]);
    expect(res.status, res.text).toBe(200);
    expect(res.body.backupCodes).toHaveLength(10);
    expect(res.body.backupCodes).not.toContain(u.backupCodes[1]);
    expectError(await verify({ mfaToken: await mfaToken(u), backupCode: u.backupCodes[1] }), 400, 'INVALID_MFA_CODE');
    expect((await verify({ mfaToken: await mfaToken(u), backupCode: res.body.backupCodes[0] })).status).toBe(200);

    const plain = await registerAndLogin(app.api, { prefix: 'mfa-none' });
    expectError(
      await app.api('POST', '/auth/mfa/backup-codes', { token: plain.accessToken, body: { code: '123456' } }),
      409,
      'MFA_NOT_ENABLED',
    );
  });
});

describe('POST /admin/users/{userId}/mfa/reset', () => {
  it('turns a user 2FA off (audited, mailed); the demo admin and users are refused', async () => {
    const u = await withMfa('mfa-admin-reset');
    const demo = await login(app.api, TEST_DEMO_ADMIN.email, TEST_DEMO_ADMIN.password);
    const path = `/admin/users/${u.userId}/mfa/reset`;
    expectError(await app.api('POST', path, { token: demo.accessToken }), 403, 'DEMO_READ_ONLY');
    expectError(await app.api('POST', path, { token: u.accessToken }), 403, 'FORBIDDEN');

    const res = await app.api('POST', path, { token: admin.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: u.userId, mfaEnabled: false });
    expect((await signIn(u)).body.accessToken).toEqual(expect.any(String));
    expectError(await app.api('POST', path, { token: admin.accessToken }), 409, 'MFA_NOT_ENABLED');
    expectError(
      await app.api('POST', `/admin/users/${crypto.randomUUID()}/mfa/reset`, { token: admin.accessToken }),
      404,
      'NOT_FOUND',
    );

    const audit = await app.api('GET', `/admin/audit-logs?action=user.mfa_reset&limit=100`, {
      token: admin.accessToken,
    });
    expect(audit.body.items.some((i: { targetId: string }) => i.targetId === u.userId)).toBe(true);
    const mails = (await mailsTo(app, u.email)).filter((m) => m.template === 'mfa-disabled');
    expect(mails.at(-1)?.text).toMatch(/administrator/);
  });
});

describe('no 2FA secret comes back', () => {
  it('keeps TOTP secrets, backup codes and mfaTokens out of answers, logs, audit rows and monitoring', async () => {
    const u = await withMfa('mfa-ledger');
    const token = await mfaToken(u);
    await verify({ mfaToken: token, backupCode: 'wrong-code' });
    await verify({ mfaToken: token, backupCode: u.backupCodes[0] });
    // Everything an admin or the user can read after the fact: each answer goes through the secret ledger
    // too (tests/helpers/secret-ledger.ts), which fails this file if one carries a secret.
    const reads = await Promise.all([
      app.api('GET', '/admin/audit-logs?limit=100', { token: admin.accessToken }),
      app.api('GET', '/admin/monitoring/requests', { token: admin.accessToken }),
      app.api('GET', '/admin/monitoring/errors', { token: admin.accessToken }),
      app.api('GET', `/admin/users/${u.userId}`, { token: admin.accessToken }),
      me(u.accessToken),
    ]);
    for (const r of reads) expect(r.status, r.text).toBe(200);
    const audit = await app.deps.db.selectFrom('audit_logs').select('metadata').execute();
    const haystacks = [...reads.map((r) => r.text), ...app.logs, JSON.stringify(audit)];
    const needles = [u.secret, token, ...u.backupCodes, ...u.backupCodes.map((c) => c.replace('-', ''))];
    for (const needle of needles) for (const hay of haystacks) expect(hay).not.toContain(needle);
  });
});
