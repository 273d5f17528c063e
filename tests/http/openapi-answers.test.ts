// The answers, not only the requests, checked against /openapi.json as a fuzzer or a validating proxy
// checks them: every answer this file's calls get (tests/helpers/answers.ts records them) must have a
// status its operation declares and, when JSON, a body its schema accepts (ajv, JSON Schema 2020-12).
// The calls: sign-up and sign-in with names of every length a name may have, every GET operation as a
// member, an admin and a stranger, and the writes of a workspace's common life.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { answers, answersAgainst } from '../helpers/answers.js';
import { login, registerAndLogin, uniqueEmail, STRONG_PASSWORD, type Session } from '../helpers/http.js';
import { ledger } from '../helpers/secret-ledger.js';

let app: TestApp;
let doc: any;
let checker: ReturnType<typeof answersAgainst>;
let admin: Session;

beforeAll(async () => {
  app = await startTestApp({ BILLING_PROVIDER: 'MOCK' });
  doc = (await app.api('GET', '/openapi.json')).body;
  checker = answersAgainst(doc);
  admin = await login(app.api, TEST_ADMIN.email, TEST_ADMIN.password);
});
afterAll(() => app?.close());

/** What is wrong with the answers recorded from `from` on (an index into `answers`). */
const mismatches = (from = 0) =>
  answers
    .slice(from)
    .map((a) => checker.check(a))
    .filter(Boolean);

/** A call through the test client, which records its answer. */
async function call(method: string, path: string, opts: { token?: string; body?: unknown } = {}) {
  return app.api(method, path, opts);
}

describe('answers against /openapi.json', () => {
  it('the checker finds a mismatch when there is one', () => {
    const bad = { method: 'GET', path: '/health', status: 200, contentType: 'application/json', text: '{"x":1}' };
    expect(checker.check(bad)).toMatch(/^GET \/health 200: /);
    const undeclared = { ...bad, path: '/auth/me', status: 418, text: '{}' };
    expect(checker.check(undeclared)).toBe('GET /auth/me 418: the status is not declared');
  });

  it('of register, login, me, refresh and GET /admin/users/{userId}, for a name of any length up to 100', async () => {
    const from = answers.length;
    const names = [
      'A',
      'n'.repeat(88),
      'n'.repeat(89),
      `Jane ${'x'.repeat(95)}`,
      'é'.repeat(100),
      // 50 characters of two UTF-16 units each: 100 units, the most a name may have.
      '😀'.repeat(50),
    ];
    for (const name of names) {
      const email = uniqueEmail('answers-name');
      const reg = await call('POST', '/auth/register', { body: { email, password: STRONG_PASSWORD, name } });
      expect(reg.status, reg.text).toBe(201);
      const signedIn = await call('POST', '/auth/login', { body: { email, password: STRONG_PASSWORD } });
      expect(signedIn.status).toBe(200);
      const workspace: string = signedIn.body.activeWorkspace.name;
      expect([...workspace].length, workspace).toBeLessThanOrEqual(100);
      expect(workspace.length, workspace).toBeLessThanOrEqual(100);
      expect(workspace).toMatch(/'s workspace$/);
      if (name.length <= 88) expect(workspace).toBe(`${name}'s workspace`);
      else expect(workspace.startsWith(name.slice(0, 80))).toBe(true);
      await call('GET', '/auth/me', { token: signedIn.body.accessToken });
      await call('GET', '/workspaces', { token: signedIn.body.accessToken });
      const refreshed = await call('POST', '/auth/refresh', { body: { refreshToken: signedIn.body.refreshToken } });
      expect(refreshed.status).toBe(200);
      await call('GET', `/admin/users/${signedIn.body.user.id}`, { token: admin.accessToken });
    }
    expect(answers.length - from).toBe(names.length * 6);
    expect(mismatches(from)).toEqual([]);
  });

  it('of every GET operation, as a member, as an admin and without a token', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'answers-get' });
    const key = await call('POST', `/workspaces/${owner.workspaceId}/api-keys`, {
      token: owner.accessToken,
      body: { name: 'answers', scopes: ['read'] },
    });
    const sessions = await call('GET', '/auth/sessions', { token: owner.accessToken });
    const known: Record<string, string> = {
      workspaceId: owner.workspaceId,
      userId: owner.userId,
      apiKeyId: key.status === 201 ? key.body.id : crypto.randomUUID(),
      sessionId: sessions.body?.items?.[0]?.id ?? crypto.randomUUID(),
      provider: 'github',
      version: '1.0.0',
    };
    if (key.status === 201) ledger.sent(key.body.rawKey, 'an API key');
    const from = answers.length;
    const gets = Object.entries<any>(doc.paths)
      .filter(([path, item]) => item.get && !path.startsWith('/auth/oauth/'))
      .map(([path]) => path);
    expect(gets.length).toBeGreaterThan(50);
    for (const template of gets) {
      const path = template.replace(/\{(\w+)\}/g, (_m, name: string) => known[name] ?? crypto.randomUUID());
      for (const token of [owner.accessToken, admin.accessToken, undefined]) await call('GET', path, { token });
    }
    expect(answers.length - from).toBe(gets.length * 3);
    expect(mismatches(from)).toEqual([]);
  });

  it('of the writes of a workspace: create, rename, members, API keys, a mock checkout, sign-out', async () => {
    const from = answers.length;
    const owner = await registerAndLogin(app.api, { prefix: 'answers-write', name: 'w'.repeat(100) });
    const token = owner.accessToken;
    const created = await call('POST', '/workspaces', { token, body: { name: 'q'.repeat(100) } });
    expect(created.status, created.text).toBe(201);
    const id: string = created.body.id;
    await call('PATCH', `/workspaces/${id}`, { token, body: { name: 'Renamed' } });
    await call('PATCH', `/workspaces/${id}`, { token, body: {} });
    await call('GET', `/workspaces/${id}/members`, { token });
    await call('POST', `/workspaces/${id}/invitations`, { token, body: { email: uniqueEmail('inv'), role: 'MEMBER' } });
    await call('POST', `/workspaces/${id}/billing/mock-checkout`, { token, body: { planCode: 'pro' } });
    const key = await call('POST', `/workspaces/${id}/api-keys`, { token, body: { name: 'k', scopes: ['read'] } });
    if (key.status === 201) {
      ledger.sent(key.body.rawKey, 'an API key');
      await call('PATCH', `/workspaces/${id}/api-keys/${key.body.id}`, { token, body: { name: 'k2' } });
      const rotated = await call('POST', `/workspaces/${id}/api-keys/${key.body.id}/rotate`, { token });
      if (rotated.status === 200) ledger.sent(rotated.body.rawKey, 'an API key');
      await call('DELETE', `/workspaces/${id}/api-keys/${key.body.id}`, { token });
    }
    await call('POST', '/workspaces', { token, body: {} });
    await call('POST', '/auth/login', { body: { email: owner.email, password: 'Wrong-pass-123' } });
    await call('POST', '/auth/logout', { token, body: { refreshToken: owner.refreshToken } });
    expect(answers.length - from).toBeGreaterThan(10);
    expect(mismatches(from)).toEqual([]);
  });

  it('every answer this file received matches', () => {
    expect(answers.filter((a) => checker.templateOf(a)).length).toBeGreaterThan(200);
    expect(mismatches()).toEqual([]);
  });
});
