// Product updates (spec: Versioning, "Product update routes"): the update status of the installed version
// (SERVICE_VERSION) against the static catalog, the catalog itself newest first with every Release field,
// /latest declared before /{version}, a friendly 404 for an unlisted version, the download placeholder
// (503 DOWNLOADS_DISABLED for any version), the admin view, and the license foundation: messaging and
// update access by LICENSE_ENFORCEMENT_ENABLED and LICENSE_KEY, the key never shown, nothing ever blocked.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, TEST_DEMO_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, login, registerAndLogin, type Session } from '../helpers/http.js';
import { ledger } from '../helpers/secret-ledger.js';

/** The fields of a release, as documented. */
const RELEASE_FIELDS = [
  'version',
  'title',
  'date',
  'summary',
  'highlights',
  'fixes',
  'breakingChanges',
  'upgradeNotes',
  'docsUrl',
  'downloadAvailable',
  'download',
].sort();
const STATUS_FIELDS = [
  'installedVersion',
  'latestVersion',
  'updateAvailable',
  'channel',
  'checkEnabled',
  'provider',
  'licenseEnforcementEnabled',
  'licenseStatus',
  'updateAccess',
  'message',
  'supportEmail',
].sort();

const LICENSE_KEY = `lic-${crypto.randomBytes(16).toString('hex')}`;
const UPDATE_SUPPORT_EMAIL = `updates-${crypto.randomBytes(4).toString('hex')}@tests.local`;

/** SERVICE_VERSION 1.2.0 (the latest), everything else default. */
let current: TestApp;
/** SERVICE_VERSION 1.0.0, a custom channel label and support contact. */
let old: TestApp;
/** UPDATE_CHECK_ENABLED=false on an old version. */
let noCheck: TestApp;
/** LICENSE_ENFORCEMENT_ENABLED=true without a license key. */
let enforced: TestApp;
/** LICENSE_ENFORCEMENT_ENABLED=true with LICENSE_KEY set. */
let licensedEnforced: TestApp;
/** LICENSE_ENFORCEMENT_ENABLED=false with LICENSE_KEY set. */
let licensedOptional: TestApp;
/** SERVICE_VERSION newer than anything in the catalog. */
let ahead: TestApp;

let user: Session;
let admin: Session;
let demoAdmin: Session;

beforeAll(async () => {
  // The key is a secret from the start: no answer or log line of any app may ever carry it.
  ledger.sent(LICENSE_KEY, 'LICENSE_KEY');
  [current, old, noCheck, enforced, licensedEnforced, licensedOptional, ahead] = await Promise.all([
    startTestApp({ SERVICE_VERSION: '1.2.0' }),
    startTestApp({ SERVICE_VERSION: '1.0.0', UPDATE_CHANNEL: 'early-access', UPDATE_SUPPORT_EMAIL }),
    startTestApp({ SERVICE_VERSION: '1.0.0', UPDATE_CHECK_ENABLED: 'false' }),
    startTestApp({ SERVICE_VERSION: '1.2.0', LICENSE_ENFORCEMENT_ENABLED: 'true' }),
    startTestApp({ SERVICE_VERSION: '1.2.0', LICENSE_ENFORCEMENT_ENABLED: 'true', LICENSE_KEY }),
    startTestApp({ SERVICE_VERSION: '1.1.0', LICENSE_ENFORCEMENT_ENABLED: 'false', LICENSE_KEY }),
    startTestApp({ SERVICE_VERSION: '1.3.0' }),
  ]);
  // One database and one set of JWT secrets: a session works on every app.
  user = await registerAndLogin(current.api, { prefix: 'updates' });
  admin = await login(current.api, TEST_ADMIN.email, TEST_ADMIN.password);
  demoAdmin = await login(current.api, TEST_DEMO_ADMIN.email, TEST_DEMO_ADMIN.password);
});
afterAll(async () => {
  await Promise.all(
    [current, old, noCheck, enforced, licensedEnforced, licensedOptional, ahead].map((a) => a?.close()),
  );
});

async function statusOf(app: TestApp, token = user.accessToken) {
  const res = await app.api('GET', '/updates/status', { token });
  expect(res.status, res.text).toBe(200);
  return res.body as Record<string, any>;
}

describe('GET /updates/status', () => {
  it('answers every documented field; on the latest version no update is available', async () => {
    const s = await statusOf(current);
    expect(Object.keys(s).sort()).toEqual(STATUS_FIELDS);
    expect(s).toMatchObject({
      installedVersion: '1.2.0',
      latestVersion: '1.2.0',
      updateAvailable: false,
      channel: 'stable',
      checkEnabled: true,
      provider: 'MOCK',
      supportEmail: 'support@localhost',
    });
    expect(s.message).toMatch(/latest version/i);
    expect(s.message).toContain('1.2.0');
  });

  it('on 1.0.0 says 1.2.0 is available, with the channel and support contact of the settings', async () => {
    const s = await statusOf(old);
    expect(s).toMatchObject({
      installedVersion: '1.0.0',
      latestVersion: '1.2.0',
      updateAvailable: true,
      checkEnabled: true,
      channel: 'early-access',
      provider: 'MOCK',
      supportEmail: UPDATE_SUPPORT_EMAIL,
    });
    expect(s.message).toMatch(/1\.2\.0 is available/);
    expect(s.message).toContain('1.0.0');
  });

  it('on 1.1.0 an update is available too (versions compare as numbers)', async () => {
    const s = await statusOf(licensedOptional);
    expect(s).toMatchObject({ installedVersion: '1.1.0', latestVersion: '1.2.0', updateAvailable: true });
  });

  it('on a version newer than the catalog, no update is offered', async () => {
    const s = await statusOf(ahead);
    expect(s).toMatchObject({ installedVersion: '1.3.0', latestVersion: '1.2.0', updateAvailable: false });
  });

  it('with UPDATE_CHECK_ENABLED=false says checks are disabled and offers no update, even on an old version', async () => {
    const s = await statusOf(noCheck);
    expect(s).toMatchObject({
      installedVersion: '1.0.0',
      latestVersion: '1.2.0',
      checkEnabled: false,
      updateAvailable: false,
    });
    expect(s.message).toMatch(/update checks are disabled/i);
    expect(s.message).not.toMatch(/is available/);
  });

  it('reports the installed version that /health reports', async () => {
    for (const app of [current, old]) {
      const health = await app.api('GET', '/health');
      expect(health.status).toBe(200);
      expect((await statusOf(app)).installedVersion).toBe(health.body.version);
    }
  });

  it('needs a bearer token', async () => {
    expectError(await current.api('GET', '/updates/status'), 401, 'UNAUTHORIZED');
    expectError(await current.api('GET', '/updates/status', { token: 'not-a-jwt-at-all' }), 401, 'UNAUTHORIZED');
  });
});

describe('license foundation', () => {
  it('LICENSE_ENFORCEMENT_ENABLED=false and no key: licenses are optional, update access active', async () => {
    const s = await statusOf(current);
    expect(s).toMatchObject({
      licenseEnforcementEnabled: false,
      licenseStatus: 'NOT_REQUIRED',
      updateAccess: 'ACTIVE',
    });
    expect(s.message).toMatch(/licen[cs]es are optional/i);
    expect(s.message).not.toMatch(/required/i);
  });

  it('LICENSE_ENFORCEMENT_ENABLED=false with an active license (LICENSE_KEY): license active, update access active', async () => {
    const s = await statusOf(licensedOptional);
    expect(s).toMatchObject({ licenseEnforcementEnabled: false, licenseStatus: 'ACTIVE', updateAccess: 'ACTIVE' });
    expect(s.message).not.toMatch(/required/i);
  });

  it('LICENSE_ENFORCEMENT_ENABLED=true without a license: license required, and it says the application keeps working', async () => {
    const s = await statusOf(enforced);
    expect(s).toMatchObject({
      licenseEnforcementEnabled: true,
      licenseStatus: 'REQUIRED',
      updateAccess: 'LICENSE_REQUIRED',
    });
    expect(s.message).toMatch(/license is required/i);
    expect(s.message).toMatch(/keeps working/i);
  });

  it('LICENSE_ENFORCEMENT_ENABLED=true with LICENSE_KEY: license active, update access active', async () => {
    const s = await statusOf(licensedEnforced);
    expect(s).toMatchObject({ licenseEnforcementEnabled: true, licenseStatus: 'ACTIVE', updateAccess: 'ACTIVE' });
    expect(s.message).not.toMatch(/required/i);
  });

  it('a missing license blocks nothing: catalog, account, workspaces and AI all still work', async () => {
    const token = user.accessToken;
    expect((await enforced.api('GET', '/updates/releases', { token })).status).toBe(200);
    expect((await enforced.api('GET', '/updates/releases/latest', { token })).body.version).toBe('1.2.0');
    expect((await enforced.api('GET', '/auth/me', { token })).status).toBe(200);
    const ws = await enforced.api('POST', '/workspaces', {
      token,
      body: { name: `Unlicensed ${crypto.randomBytes(3).toString('hex')}` },
    });
    expect(ws.status, ws.text).toBe(201);
    const gen = await enforced.api('POST', '/ai/generate', {
      token,
      body: { prompt: 'Write one line about lighthouses', workspaceId: ws.body.id },
    });
    expect(gen.status, gen.text).toBe(200);
    expect((await enforced.api('GET', '/health')).status).toBe(200);
    // The download placeholder answers what it answers everywhere, not a license error.
    expectError(await enforced.api('GET', '/updates/releases/1.2.0/download', { token }), 503, 'DOWNLOADS_DISABLED');
  });

  it('never shows LICENSE_KEY: not in the status, the catalog, the admin catalog, /health or /openapi.json', async () => {
    for (const app of [licensedEnforced, licensedOptional]) {
      const answers = await Promise.all([
        app.api('GET', '/updates/status', { token: user.accessToken }),
        app.api('GET', '/updates/releases', { token: user.accessToken }),
        app.api('GET', '/updates/releases/latest', { token: user.accessToken }),
        app.api('GET', '/updates/releases/1.2.0/download', { token: user.accessToken }),
        app.api('GET', '/admin/releases', { token: admin.accessToken }),
        app.api('GET', '/admin/releases/latest', { token: admin.accessToken }),
        app.api('GET', '/health'),
        app.api('GET', '/openapi.json'),
        app.api('GET', '/security/status'),
      ]);
      for (const res of answers) {
        expect(res.status).toBeLessThan(600);
        expect(res.text).not.toContain(LICENSE_KEY);
      }
      expect(app.logs.join('\n')).not.toContain(LICENSE_KEY);
    }
  });
});

describe('GET /updates/releases', () => {
  it('lists 1.2.0, 1.1.0 and 1.0.0, newest first, each with every Release field', async () => {
    const res = await current.api('GET', '/updates/releases', { token: user.accessToken });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['items']);
    const items = res.body.items as Array<Record<string, any>>;
    expect(items.map((r) => r.version)).toEqual(['1.2.0', '1.1.0', '1.0.0']);
    const dates = items.map((r) => r.date);
    expect([...dates].sort().reverse()).toEqual(dates);
    for (const r of items) {
      expect(Object.keys(r).sort(), r.version).toEqual(RELEASE_FIELDS);
      expect(r.date, r.version).toMatch(/^\d{4}-\d{2}-\d{2}/);
      for (const f of ['title', 'summary'] as const) {
        expect(typeof r[f]).toBe('string');
        expect(r[f].length, `${r.version}.${f}`).toBeGreaterThan(0);
      }
      for (const f of ['highlights', 'fixes', 'breakingChanges', 'upgradeNotes'] as const) {
        expect(Array.isArray(r[f]), `${r.version}.${f}`).toBe(true);
        for (const line of r[f]) expect(typeof line).toBe('string');
      }
      expect(r.highlights.length, `${r.version} has highlights`).toBeGreaterThan(0);
      expect(r.docsUrl === null || typeof r.docsUrl === 'string').toBe(true);
      expect(r.downloadAvailable).toBe(false);
      expect(r.download).toMatchObject({ available: false, url: null });
      expect(r.download.message).toMatch(/secure downloads are not enabled in the demo/i);
    }
  });

  it('is the same catalog whatever version is installed', async () => {
    const a = await current.api('GET', '/updates/releases', { token: user.accessToken });
    const b = await old.api('GET', '/updates/releases', { token: user.accessToken });
    expect(b.body).toEqual(a.body);
  });

  it('needs a bearer token', async () => {
    expectError(await current.api('GET', '/updates/releases'), 401, 'UNAUTHORIZED');
  });
});

describe('GET /updates/releases/latest and /updates/releases/{version}', () => {
  it("/latest answers 1.2.0 ('latest' is not taken for a version)", async () => {
    const res = await current.api('GET', '/updates/releases/latest', { token: user.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(res.body.version).toBe('1.2.0');
    expect(Object.keys(res.body).sort()).toEqual(RELEASE_FIELDS);
    const listed = await current.api('GET', '/updates/releases', { token: user.accessToken });
    expect(res.body).toEqual(listed.body.items[0]);
  });

  it('/latest is the latest of the catalog even when an older version is installed', async () => {
    const res = await old.api('GET', '/updates/releases/latest', { token: user.accessToken });
    expect(res.body.version).toBe('1.2.0');
  });

  it('/1.1.0 answers that release, as listed', async () => {
    const res = await current.api('GET', '/updates/releases/1.1.0', { token: user.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(res.body.version).toBe('1.1.0');
    const listed = await current.api('GET', '/updates/releases', { token: user.accessToken });
    expect(res.body).toEqual(listed.body.items.find((r: { version: string }) => r.version === '1.1.0'));
  });

  it('/1.0.0 answers the initial release', async () => {
    const res = await current.api('GET', '/updates/releases/1.0.0', { token: user.accessToken });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ version: '1.0.0', downloadAvailable: false });
  });

  it.each([['9.9.9'], ['1.3.0'], ['1.2'], ['v1.2.0'], ['nightly']])(
    'an unlisted version %s is a friendly 404 naming it',
    async (version) => {
      const err = expectError(
        await current.api('GET', `/updates/releases/${version}`, { token: user.accessToken }),
        404,
        'NOT_FOUND',
      );
      expect(err.message).toContain(version);
      expect(err.message).toMatch(/no release/i);
    },
  );

  it('needs a bearer token', async () => {
    expectError(await current.api('GET', '/updates/releases/latest'), 401, 'UNAUTHORIZED');
    expectError(await current.api('GET', '/updates/releases/1.1.0'), 401, 'UNAUTHORIZED');
    expectError(await current.api('GET', '/updates/releases/9.9.9'), 401, 'UNAUTHORIZED');
  });
});

describe('GET /updates/releases/{version}/download', () => {
  it.each([['1.2.0'], ['1.1.0'], ['1.0.0'], ['latest'], ['9.9.9']])(
    '%s: 503 DOWNLOADS_DISABLED, saying secure downloads are not enabled in the demo',
    async (version) => {
      const res = await current.api('GET', `/updates/releases/${version}/download`, { token: user.accessToken });
      const err = expectError(res, 503, 'DOWNLOADS_DISABLED');
      expect(err.message).toMatch(/secure downloads are not enabled in the demo/i);
      expect(res.headers.get('content-type')).toMatch(/application\/json/);
    },
  );

  it('is 503 also with a license key set (downloads are a placeholder, not a license question)', async () => {
    expectError(
      await licensedEnforced.api('GET', '/updates/releases/1.2.0/download', { token: user.accessToken }),
      503,
      'DOWNLOADS_DISABLED',
    );
  });

  it('needs a bearer token', async () => {
    expectError(await current.api('GET', '/updates/releases/1.2.0/download'), 401, 'UNAUTHORIZED');
  });
});

describe('GET /admin/releases and /admin/releases/latest', () => {
  it('give a platform admin the same catalog and latest release as the user routes', async () => {
    const list = await current.api('GET', '/admin/releases', { token: admin.accessToken });
    expect(list.status, list.text).toBe(200);
    const userList = await current.api('GET', '/updates/releases', { token: user.accessToken });
    expect(list.body).toEqual(userList.body);
    expect(list.body.items.map((r: { version: string }) => r.version)).toEqual(['1.2.0', '1.1.0', '1.0.0']);

    const latest = await current.api('GET', '/admin/releases/latest', { token: admin.accessToken });
    expect(latest.status, latest.text).toBe(200);
    expect(latest.body.version).toBe('1.2.0');
    expect(Object.keys(latest.body).sort()).toEqual(RELEASE_FIELDS);
  });

  it('are readable by the demo admin (read-only routes)', async () => {
    expect((await current.api('GET', '/admin/releases', { token: demoAdmin.accessToken })).status).toBe(200);
    expect((await current.api('GET', '/admin/releases/latest', { token: demoAdmin.accessToken })).body.version).toBe(
      '1.2.0',
    );
  });

  it('refuse an ordinary user with 403 FORBIDDEN', async () => {
    expectError(await current.api('GET', '/admin/releases', { token: user.accessToken }), 403, 'FORBIDDEN');
    expectError(await current.api('GET', '/admin/releases/latest', { token: user.accessToken }), 403, 'FORBIDDEN');
  });

  it('refuse an anonymous caller with 401 UNAUTHORIZED', async () => {
    expectError(await current.api('GET', '/admin/releases'), 401, 'UNAUTHORIZED');
    expectError(await current.api('GET', '/admin/releases/latest'), 401, 'UNAUTHORIZED');
  });
});
