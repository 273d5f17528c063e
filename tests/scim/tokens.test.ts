// SCIM set-up routes: tokens shown once, stored hashed, listed without the secret, revoked (refused at
// once), audited, announced to webhooks and mailed to the owners; role mappings replaced as a whole and
// validated.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/http.js';
import { mailsTo } from '../helpers/mail.js';
import { scimWorkspace, type ScimWorkspace } from './helpers.js';

let app: TestApp;
let ws: ScimWorkspace;

beforeAll(async () => {
  app = await startTestApp();
  ws = await scimWorkspace(app);
});
afterAll(() => app?.close());

const tokensPath = () => `/workspaces/${ws.workspaceId}/scim/tokens`;

describe('SCIM tokens', () => {
  it('shows the token once, stores only its hash and lists it without the secret', async () => {
    const created = await app.api('POST', tokensPath(), { token: ws.owner.accessToken, body: { name: 'Okta' } });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      name: 'Okta',
      prefix: created.body.rawToken.slice(0, 12),
      rawToken: expect.stringMatching(/^scim_[A-Za-z0-9]{40}$/),
      createdAt: expect.any(String),
      lastUsedAt: null,
    });
    const row = await app.deps.db
      .selectFrom('scim_tokens')
      .selectAll()
      .where('id', '=', created.body.id)
      .executeTakeFirstOrThrow();
    expect(row.token_hash).toBe(crypto.createHash('sha256').update(created.body.rawToken).digest('hex'));
    expect(JSON.stringify(row)).not.toContain(created.body.rawToken);

    const list = await app.api('GET', tokensPath(), { token: ws.owner.accessToken });
    expect(list.status).toBe(200);
    expect(list.text).not.toContain(created.body.rawToken);
    expect(list.body.items.map((t: { name: string }) => t.name)).toEqual(expect.arrayContaining(['Okta', 'Directory']));
    expect(list.body.items[0]).not.toHaveProperty('rawToken');
  });

  it('records the creation in the audit log, the event outbox and the owners\u2019 mail', async () => {
    const audit = await app.deps.db
      .selectFrom('audit_logs')
      .select(['action', 'actor_user_id'])
      .where('workspace_id', '=', ws.workspaceId)
      .where('action', '=', 'scim.token_created')
      .execute();
    expect(audit.length).toBeGreaterThanOrEqual(1);
    expect(audit[0].actor_user_id).toBe(ws.owner.userId);
    const events = await app.deps.db
      .selectFrom('domain_events')
      .select('type')
      .where('workspace_id', '=', ws.workspaceId)
      .where('type', '=', 'scim_token.created')
      .execute();
    expect(events.length).toBeGreaterThanOrEqual(1);
    const mails = await mailsTo(app, ws.owner.email);
    expect(mails.some((m) => /SCIM/.test(m.text))).toBe(true);
  });

  it('revokes a token: the directory is refused from its next call; a second revoke is 404', async () => {
    const created = await app.api('POST', tokensPath(), { token: ws.owner.accessToken, body: { name: 'Temp' } });
    const raw: string = created.body.rawToken;
    expect((await app.api('GET', '/scim/v2/Users', { token: raw })).status).toBe(200);
    const revoked = await app.api('DELETE', `${tokensPath()}/${created.body.id}`, { token: ws.owner.accessToken });
    expect(revoked.status).toBe(200);
    const after = await app.api('GET', '/scim/v2/Users', { token: raw });
    expect(after.status).toBe(401);
    expect(after.body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '401' });
    const again = await app.api('DELETE', `${tokensPath()}/${created.body.id}`, { token: ws.owner.accessToken });
    expectError(again, 404, 'NOT_FOUND');
    const list = await app.api('GET', tokensPath(), { token: ws.owner.accessToken });
    expect(list.body.items.map((t: { id: string }) => t.id)).not.toContain(created.body.id);
  });

  it('refuses a name with control characters and an empty name', async () => {
    for (const name of ['', 'bad\u202Ename']) {
      const res = await app.api('POST', tokensPath(), { token: ws.owner.accessToken, body: { name } });
      expectError(res, 400, 'BAD_REQUEST');
    }
  });

  it('never writes the token into a log line', async () => {
    const lines = app.logs.filter((l) => l.includes(ws.token));
    expect(lines).toEqual([]);
  });
});

describe('SCIM role mappings', () => {
  const path = () => `/workspaces/${ws.workspaceId}/scim/role-mappings`;

  it('replaces the mappings as a whole and answers them sorted', async () => {
    const put = await app.api('PUT', path(), {
      token: ws.owner.accessToken,
      body: {
        mappings: [
          { group: 'Engineering', role: 'MEMBER' },
          { group: 'Admins', role: 'ADMIN' },
        ],
      },
    });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({
      mappings: [
        { group: 'Admins', role: 'ADMIN' },
        { group: 'Engineering', role: 'MEMBER' },
      ],
    });
    const replaced = await app.api('PUT', path(), {
      token: ws.owner.accessToken,
      body: { mappings: [{ group: 'Readers', role: 'VIEWER' }] },
    });
    expect(replaced.body).toEqual({ mappings: [{ group: 'Readers', role: 'VIEWER' }] });
    const get = await app.api('GET', path(), { token: ws.owner.accessToken });
    expect(get.body).toEqual(replaced.body);
    const events = await app.deps.db
      .selectFrom('domain_events')
      .select('type')
      .where('workspace_id', '=', ws.workspaceId)
      .where('type', '=', 'scim.role_mappings_updated')
      .execute();
    expect(events).toHaveLength(2);
  });

  it('refuses OWNER, an unknown role and a group named twice (400), and changes nothing', async () => {
    for (const mappings of [
      [{ group: 'Bosses', role: 'OWNER' }],
      [{ group: 'X', role: 'KING' }],
      [
        { group: 'Dup', role: 'ADMIN' },
        { group: 'Dup', role: 'VIEWER' },
      ],
    ]) {
      const res = await app.api('PUT', path(), { token: ws.owner.accessToken, body: { mappings } });
      expectError(res, 400, 'BAD_REQUEST');
    }
    const get = await app.api('GET', path(), { token: ws.owner.accessToken });
    expect(get.body).toEqual({ mappings: [{ group: 'Readers', role: 'VIEWER' }] });
  });
});

describe('the SCIM rate-limit tier', () => {
  it('counts /scim/v2 in its own tier and answers past it in the SCIM error shape', async () => {
    const limited = await startTestApp({
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_SCIM_MAX_REQUESTS: '3',
      RATE_LIMIT_MAX_REQUESTS: '1000',
      RATE_LIMIT_AUTH_MAX_REQUESTS: '1000',
    });
    try {
      const own = await scimWorkspace(limited);
      const answers = [];
      for (let i = 0; i < 4; i++) answers.push(await own.scim('GET', '/ServiceProviderConfig'));
      expect(answers.slice(0, 3).map((a) => a.status)).toEqual([200, 200, 200]);
      expect(answers[0].headers.get('ratelimit-policy')).toBe('3;w=60');
      const refused = answers[3];
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(refused.headers.get('content-type')).toContain('application/scim+json');
      expect(refused.body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '429' });
      // The default tier is not spent by directory calls.
      expect((await limited.api('GET', '/auth/me', { token: own.owner.accessToken })).status).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it('counts each token on its own, whatever the address, and made-up tokens by address', async () => {
    const limited = await startTestApp({
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_SCIM_MAX_REQUESTS: '3',
      RATE_LIMIT_MAX_REQUESTS: '1000',
      RATE_LIMIT_AUTH_MAX_REQUESTS: '1000',
      TRUST_PROXY: 'true',
    });
    try {
      const [a, b] = [await scimWorkspace(limited), await scimWorkspace(limited)];
      const from = (address: string) => ({ headers: { 'x-forwarded-for': address, accept: 'application/scim+json' } });
      const call = (token: string, address: string) =>
        limited.api('GET', '/scim/v2/ServiceProviderConfig', { token, ...from(address) });
      // One directory's token spends its own budget, from whichever address it calls...
      const statuses = [];
      for (const address of ['203.0.113.1', '203.0.113.2', '203.0.113.3', '203.0.113.4'])
        statuses.push((await call(a.token, address)).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
      // ...and not another's behind the same address.
      const other = await call(b.token, '203.0.113.1');
      expect(other.status).toBe(200);
      expect(other.headers.get('ratelimit')).toContain('remaining=2');

      // A token nobody made is counted by address: refused past the tier, with the SCIM 401 before.
      const fake = `scim_${'Z'.repeat(40)}`;
      const guesses = [];
      for (let i = 0; i < 4; i++) guesses.push((await call(fake, '198.51.100.7')).status);
      expect(guesses).toEqual([401, 401, 401, 429]);
      expect((await call(b.token, '198.51.100.7')).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});
