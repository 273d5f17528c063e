// PATCH /auth/me: the signed-in user changes their display name (the rules of every display name:
// server/platform/validation.ts). The change is seen by GET /auth/me and audited without the value.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, registerAndLogin } from '../helpers/http.js';
import { auditOn, hex, me, userRow } from './helpers.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.close());

const rename = (token: string | undefined, body: unknown) => app.api('PATCH', '/auth/me', { token, body });

describe('PATCH /auth/me', () => {
  it('changes the name: answers the user, GET /auth/me shows it, audited without the value', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'profile', name: 'Before Name' });
    const name = `Zoë Ångström ${hex()}`;
    const res = await rename(s.accessToken, { name: `  ${name}  ` });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: s.userId, email: s.email, name });
    expect(Object.keys(res.body).sort()).toEqual(
      [
        'createdAt',
        'email',
        'emailVerified',
        'emailVerifiedAt',
        'id',
        'mfaEnabled',
        'name',
        'platformRole',
        'status',
      ].sort(),
    );
    const after = await me(app, s.accessToken);
    expect(after.status).toBe(200);
    expect(after.body.user.name).toBe(name);
    const audit = await auditOn(app, s.userId, 'auth.profile_updated');
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ actor_user_id: s.userId, metadata: { fields: 'name' } });
    expect(JSON.stringify(audit[0].metadata)).not.toContain(name);
  });

  // `issues`: the field is named, except for NUL, which no stored text may hold: the body is refused
  // before any route reads it (server/platform/unstorable-text.ts).
  it.each([
    ['a right-to-left override', 'Evil\u202Egnp.exe', ['name']],
    ['a bidi isolate', 'Name\u2066x', ['name']],
    ['a zero-width space', 'Ad\u200Bmin', ['name']],
    ['a newline', 'Line\nbreak', ['name']],
    ['a NUL', 'Nul\u0000byte', undefined],
    ['a C1 control', 'C1\u0085x', ['name']],
    ['a leading BOM', '\uFEFFBom', ['name']],
  ])('refuses a name with %s: 400 BAD_REQUEST, nothing changed', async (_label, bad, paths) => {
    const s = await registerAndLogin(app.api, { prefix: 'profile-bad', name: 'Kept Name' });
    const before = await userRow(app, s.userId);
    const err = expectError(await rename(s.accessToken, { name: bad }), 400, 'BAD_REQUEST');
    expect(err.issues?.map((i) => i.path)).toEqual(paths);
    const row = await userRow(app, s.userId);
    expect(row.name).toBe('Kept Name');
    expect(row.updated_at).toEqual(before.updated_at);
    expect((await me(app, s.accessToken)).body.user.name).toBe('Kept Name');
    expect(await auditOn(app, s.userId, 'auth.profile_updated')).toEqual([]);
  });

  it('refuses an empty (or blank) and an over-long name: 400', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'profile-len', name: 'Kept Name' });
    expectError(await rename(s.accessToken, { name: '   ' }), 400, 'BAD_REQUEST');
    expectError(await rename(s.accessToken, { name: 'x'.repeat(101) }), 400, 'BAD_REQUEST');
    expectError(await rename(s.accessToken, {}), 400, 'BAD_REQUEST');
    expect((await userRow(app, s.userId)).name).toBe('Kept Name');
  });

  it('without a bearer token (or with a forged one): 401 UNAUTHORIZED, nothing changed', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'profile-anon', name: 'Kept Name' });
    expectError(await rename(undefined, { name: 'Someone Else' }), 401, 'UNAUTHORIZED');
    expectError(await rename('not-a-token', { name: 'Someone Else' }), 401, 'UNAUTHORIZED');
    expect((await userRow(app, s.userId)).name).toBe('Kept Name');
  });
});
