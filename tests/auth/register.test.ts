import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { STRONG_PASSWORD, expectError, uniqueEmail } from '../helpers/http.js';
import { mailsTo } from '../helpers/mail.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

describe('POST /auth/register', () => {
  it('creates the account, a personal workspace it owns (LITE) and a verification mail, answering 201', async () => {
    const email = uniqueEmail('reg');
    const res = await app.api('POST', '/auth/register', { body: { email, password: STRONG_PASSWORD, name: 'Ada' } });
    expect(res.status).toBe(201);
    expect(res.body.user).toMatchObject({
      email,
      name: 'Ada',
      status: 'ACTIVE',
      platformRole: 'USER',
      emailVerified: false,
    });
    expect(res.body.workspace).toMatchObject({ status: 'ACTIVE', edition: 'LITE', role: 'OWNER' });
    expect(res.text).not.toContain(STRONG_PASSWORD);
    expect(res.text).not.toMatch(/hash/i);
    const mails = await mailsTo(app, email);
    expect(mails.map((m) => m.template)).toEqual(['email-verification']);
    expect(mails[0].link).toMatch(/^http:\/\/app\.tests\.local\/verify-email\?token=/);
  });

  it('stores the address lower-cased, so a differently cased duplicate is 409 EMAIL_TAKEN', async () => {
    const email = uniqueEmail('case');
    expect(
      (
        await app.api('POST', '/auth/register', {
          body: { email: email.toUpperCase(), password: STRONG_PASSWORD, name: 'A' },
        })
      ).status,
    ).toBe(201);
    const dup = await app.api('POST', '/auth/register', { body: { email, password: STRONG_PASSWORD, name: 'B' } });
    expectError(dup, 409, 'EMAIL_TAKEN');
  });

  it('keeps the password hashed with bcrypt at the configured cost', async () => {
    const email = uniqueEmail('hash');
    await app.api('POST', '/auth/register', { body: { email, password: STRONG_PASSWORD, name: 'H' } });
    const row = await app.deps.db
      .selectFrom('users')
      .select('password_hash')
      .where('email', '=', email)
      .executeTakeFirstOrThrow();
    expect(row.password_hash).toMatch(/^\$2[aby]\$04\$/);
    expect(row.password_hash).not.toContain(STRONG_PASSWORD);
  });

  it.each([
    ['missing email', { password: STRONG_PASSWORD, name: 'X' }, 'email'],
    ['malformed email', { email: 'not-an-email', password: STRONG_PASSWORD, name: 'X' }, 'email'],
    ['numeric email', { email: 12345, password: STRONG_PASSWORD, name: 'X' }, 'email'],
    ['missing password', { email: 'x@tests.local', name: 'X' }, 'password'],
    ['numeric password', { email: 'x@tests.local', password: 12345678, name: 'X' }, 'password'],
    ['missing name', { email: 'x@tests.local', password: STRONG_PASSWORD }, 'name'],
    ['blank name', { email: 'x@tests.local', password: STRONG_PASSWORD, name: '   ' }, 'name'],
  ])('refuses %s with 400 BAD_REQUEST naming the field', async (_what, body, field) => {
    const res = await app.api('POST', '/auth/register', { body });
    const err = expectError(res, 400, 'BAD_REQUEST');
    expect(err.issues?.map((i) => i.path)).toContain(field);
  });

  const PW_72 = `Aa1-${'x'.repeat(68)}`;
  it.each([
    ['7 characters', 'short1x', /at least 8/],
    ['no number', 'allletters', /number/],
    ['no letter', '12345678', /letter/],
    ['73 bytes', `${PW_72}x`, /72 bytes/],
    ['21 characters but 78 UTF-8 bytes', `a1${'\u{1F600}'.repeat(19)}`, /72 bytes/],
  ])(
    'refuses a password with %s as 400 WEAK_PASSWORD saying why, and creates nothing',
    async (_what, password, why) => {
      const email = uniqueEmail('weak');
      const err = expectError(
        await app.api('POST', '/auth/register', { body: { email, password, name: 'W' } }),
        400,
        'WEAK_PASSWORD',
      );
      expect(err.message).toMatch(why);
      const row = await app.deps.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst();
      expect(row).toBeUndefined();
    },
  );

  it('accepts exactly 72 bytes and never truncates: the same 72 bytes plus one more do not sign in', async () => {
    const email = uniqueEmail('pw72');
    expect((await app.api('POST', '/auth/register', { body: { email, password: PW_72, name: 'L' } })).status).toBe(201);
    expect((await app.api('POST', '/auth/login', { body: { email, password: PW_72 } })).status).toBe(200);
    expectError(
      await app.api('POST', '/auth/login', { body: { email, password: `${PW_72}x` } }),
      401,
      'INVALID_CREDENTIALS',
    );
  });

  it('answers two simultaneous registrations of one address with one 201 and one 409', async () => {
    const email = uniqueEmail('race');
    const results = await Promise.all(
      [1, 2].map(() => app.api('POST', '/auth/register', { body: { email, password: STRONG_PASSWORD, name: 'R' } })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 409]);
    const workspaces = await app.deps.db
      .selectFrom('workspace_members as m')
      .innerJoin('users as u', 'u.id', 'm.user_id')
      .select('m.workspace_id')
      .where('u.email', '=', email)
      .execute();
    expect(workspaces).toHaveLength(1);
  });
});
