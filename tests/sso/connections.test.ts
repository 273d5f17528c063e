// Single sign-on connections of a workspace: SAML by metadata or by its three settings, OIDC with a secret
// that is sealed and never answered, certificate roll-over, the service provider's metadata, owners only,
// and every change audited, emitted as an event and mailed to the owners.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/http.js';
import { mailsTo } from '../helpers/mail.js';
import { makeKeyPair, startSamlIdp, type TestSamlIdp } from '../helpers/saml-idp.js';
import { ledger } from '../helpers/secret-ledger.js';
import { inviteAndJoin } from '../workspaces/helpers.js';
import { samlConnection, ssoWorkspace, type SsoWorkspace } from './fixtures.js';

let app: TestApp;
let idp: TestSamlIdp;
let ws: SsoWorkspace;

beforeAll(async () => {
  [app, idp] = await Promise.all([startTestApp(), startSamlIdp()]);
  ws = await ssoWorkspace(app, 'conn');
});
afterAll(async () => {
  await app?.close();
  await idp?.close();
});

const path = (w: SsoWorkspace, suffix = '') => `/workspaces/${w.id}/sso/connections${suffix}`;
const auditOf = (targetId: string) =>
  app.deps.db.selectFrom('audit_logs').select(['action', 'workspace_id']).where('target_id', '=', targetId).execute();
const eventsOf = (workspaceId: string) =>
  app.deps.db.selectFrom('domain_events').select(['type', 'payload']).where('workspace_id', '=', workspaceId).execute();

describe('SAML connections', () => {
  it('an owner adds one by metadata XML: 201 with what to register at the identity provider', async () => {
    const res = await app.api('POST', path(ws), {
      token: ws.owner.accessToken,
      body: { type: 'SAML', name: 'Okta', metadataXml: idp.metadataXml },
    });
    expect(res.status, res.text).toBe(201);
    const id: string = res.body.id;
    expect(res.body).toMatchObject({
      type: 'SAML',
      name: 'Okta',
      status: 'ACTIVE',
      defaultRole: 'MEMBER',
      allowIdpInitiated: false,
      sp: {
        entityId: `${app.url}/auth/sso/saml/${id}/metadata`,
        acsUrl: `${app.url}/auth/sso/saml/${id}/acs`,
        metadataUrl: `${app.url}/auth/sso/saml/${id}/metadata`,
      },
      saml: { idpEntityId: idp.entityId, idpSsoUrl: idp.ssoUrl },
      oidc: null,
    });
    expect(res.body.saml.certificates).toHaveLength(1);
    const list = await app.api('GET', path(ws), { token: ws.owner.accessToken });
    expect(list.body.items.map((c: { id: string }) => c.id)).toContain(id);
    const one = await app.api('GET', path(ws, `/${id}`), { token: ws.owner.accessToken });
    expect(one.body).toEqual(res.body);
    // Audited, emitted, mailed to the owners.
    expect(await auditOf(id)).toEqual([{ action: 'sso.connection_created', workspace_id: ws.id }]);
    expect(await eventsOf(ws.id)).toEqual(
      expect.arrayContaining([
        { type: 'sso_connection.created', payload: { connectionId: id, type: 'SAML', name: 'Okta', status: 'ACTIVE' } },
      ]),
    );
    const mails = (await mailsTo(app, ws.owner.email)).filter((m) => m.template === 'sign-in-setup-changed');
    expect(mails.at(-1)?.text).toContain('"Okta" was added');
  });

  it('an owner adds one by entity id, SSO URL and certificate', async () => {
    const res = await app.api('POST', path(ws), {
      token: ws.owner.accessToken,
      body: {
        type: 'SAML',
        name: 'Entra',
        idpEntityId: 'https://sts.windows.net/tenant/',
        idpSsoUrl: 'https://login.microsoftonline.com/tenant/saml2',
        idpCertificate: idp.key.certificate,
      },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.saml).toMatchObject({ idpEntityId: 'https://sts.windows.net/tenant/' });
  });

  it('refuses what is not a SAML connection: missing settings, a bad certificate, metadata with a DOCTYPE', async () => {
    const missing = await app.api('POST', path(ws), { token: ws.owner.accessToken, body: { type: 'SAML', name: 'x' } });
    expect(expectError(missing, 400, 'BAD_REQUEST').issues?.map((i) => i.path)).toEqual(
      expect.arrayContaining(['idpEntityId', 'idpSsoUrl', 'idpCertificate']),
    );
    const badCert = await app.api('POST', path(ws), {
      token: ws.owner.accessToken,
      body: {
        type: 'SAML',
        name: 'x',
        idpEntityId: 'e',
        idpSsoUrl: 'https://idp.example/sso',
        idpCertificate: 'A'.repeat(200),
      },
    });
    expectError(badCert, 400, 'BAD_REQUEST');
    const doctype = await app.api('POST', path(ws), {
      token: ws.owner.accessToken,
      body: { type: 'SAML', name: 'x', metadataXml: `<!DOCTYPE x [<!ENTITY e "e">]>${idp.metadataXml}` },
    });
    expectError(doctype, 400, 'BAD_REQUEST');
    const notXml = await app.api('POST', path(ws), {
      token: ws.owner.accessToken,
      body: { type: 'SAML', name: 'x', metadataXml: '<md:EntityDescriptor' },
    });
    expectError(notXml, 400, 'BAD_REQUEST');
  });

  it('rolls a certificate over: a second one beside the first, then removed', async () => {
    const { id } = await samlConnection(app, ws, idp);
    const next = makeKeyPair('next-idp');
    const added = await app.api('PATCH', path(ws, `/${id}`), {
      token: ws.owner.accessToken,
      body: { nextIdpCertificate: next.certificate, defaultRole: 'VIEWER', allowIdpInitiated: true },
    });
    expect(added.status, added.text).toBe(200);
    expect(added.body).toMatchObject({ defaultRole: 'VIEWER', allowIdpInitiated: true });
    expect(added.body.saml.certificates).toHaveLength(2);
    const removed = await app.api('PATCH', path(ws, `/${id}`), {
      token: ws.owner.accessToken,
      body: { nextIdpCertificate: null },
    });
    expect(removed.body.saml.certificates).toEqual([added.body.saml.certificates[0]]);
    expect((await auditOf(id)).map((a) => a.action)).toEqual([
      'sso.connection_created',
      'sso.connection_updated',
      'sso.connection_updated',
    ]);
  });

  it('never gives OWNER as the default role', async () => {
    const { id } = await samlConnection(app, ws, idp);
    const res = await app.api('PATCH', path(ws, `/${id}`), {
      token: ws.owner.accessToken,
      body: { defaultRole: 'OWNER' },
    });
    expectError(res, 400, 'BAD_REQUEST');
  });

  it('serves the service provider metadata of a connection, publicly', async () => {
    const { id, sp } = await samlConnection(app, ws, idp);
    const res = await fetch(`${app.url}/auth/sso/saml/${id}/metadata`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/samlmetadata+xml');
    const xml = await res.text();
    expect(xml).toContain(`entityID="${sp.entityId}"`);
    expect(xml).toContain(`Location="${sp.acsUrl}"`);
    const unknown = await app.api('GET', `/auth/sso/saml/00000000-0000-4000-8000-000000000000/metadata`);
    expectError(unknown, 404, 'NOT_FOUND');
    expectError(await app.api('GET', '/auth/sso/saml/not-an-id/metadata'), 404, 'NOT_FOUND');
  });

  it('deletes a connection: audited, emitted, gone', async () => {
    const { id } = await samlConnection(app, ws, idp);
    const res = await app.api('DELETE', path(ws, `/${id}`), { token: ws.owner.accessToken });
    expect(res.status, res.text).toBe(200);
    expectError(await app.api('GET', path(ws, `/${id}`), { token: ws.owner.accessToken }), 404, 'NOT_FOUND');
    expect((await auditOf(id)).map((a) => a.action)).toContain('sso.connection_deleted');
    expect((await eventsOf(ws.id)).map((e) => e.type)).toContain('sso_connection.deleted');
  });
});

describe('OIDC connections', () => {
  it('keeps the client secret sealed and never answers it', async () => {
    const secret = `oidc-secret-${Date.now()}-abcdefghijklmnop`;
    ledger.sent(secret, 'an SSO client secret');
    const res = await app.api('POST', path(ws), {
      token: ws.owner.accessToken,
      body: {
        type: 'OIDC',
        name: 'Google',
        issuer: 'https://accounts.google.com',
        clientId: 'client-1',
        clientSecret: secret,
      },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      type: 'OIDC',
      oidc: { issuer: 'https://accounts.google.com', clientId: 'client-1' },
      saml: null,
      sp: { redirectUri: `${app.url}/auth/sso/oidc/${res.body.id}/callback` },
    });
    expect(res.text).not.toContain(secret);
    const row = await app.deps.db
      .selectFrom('sso_connections')
      .select('client_secret_encrypted')
      .where('id', '=', res.body.id)
      .executeTakeFirstOrThrow();
    expect(row.client_secret_encrypted).not.toContain(secret);
    expect(app.deps.secrets.open(row.client_secret_encrypted!)).toBe(secret);
    const missing = await app.api('POST', path(ws), {
      token: ws.owner.accessToken,
      body: { type: 'OIDC', name: 'x', issuer: 'https://accounts.google.com' },
    });
    expect(expectError(missing, 400, 'BAD_REQUEST').issues?.map((i) => i.path)).toEqual(['clientId', 'clientSecret']);
  });
});

describe('who may manage connections', () => {
  it('an ADMIN or a MEMBER creating or reading a connection is refused with 403: only owners may', async () => {
    const admin = await inviteAndJoin(app, ws.owner.accessToken, ws.id, 'ADMIN', 'conn-admin');
    const member = await inviteAndJoin(app, ws.owner.accessToken, ws.id, 'MEMBER', 'conn-member');
    const before = await app.deps.db
      .selectFrom('sso_connections')
      .select('id')
      .where('workspace_id', '=', ws.id)
      .execute();
    for (const who of [admin, member]) {
      const create = await app.api('POST', path(ws), {
        token: who.accessToken,
        body: { type: 'SAML', name: 'Rogue', metadataXml: idp.metadataXml },
      });
      expectError(create, 403, 'PERMISSION_DENIED');
      expectError(await app.api('GET', path(ws), { token: who.accessToken }), 403, 'PERMISSION_DENIED');
      const domain = await app.api('POST', `/workspaces/${ws.id}/domains`, {
        token: who.accessToken,
        body: { domain: 'rogue-domain.example' },
      });
      expectError(domain, 403, 'PERMISSION_DENIED');
    }
    const after = await app.deps.db
      .selectFrom('sso_connections')
      .select('id')
      .where('workspace_id', '=', ws.id)
      .execute();
    expect(after).toHaveLength(before.length);
  });

  it("another workspace's owner does not see or change this workspace's connections", async () => {
    const other = await ssoWorkspace(app, 'conn-other');
    const { id } = await samlConnection(app, ws, idp);
    expectError(await app.api('GET', path(other, `/${id}`), { token: other.owner.accessToken }), 404, 'NOT_FOUND');
    expectError(
      await app.api('PATCH', path(other, `/${id}`), { token: other.owner.accessToken, body: { status: 'INACTIVE' } }),
      404,
      'NOT_FOUND',
    );
    expectError(await app.api('GET', path(ws, `/${id}`), { token: other.owner.accessToken }), 404, 'NOT_FOUND');
  });
});
