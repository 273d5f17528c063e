// The permission matrix: every workspace route x every role, a member of another workspace and an
// anonymous caller on one ACTIVE fixture workspace, plus the owner and a member of a SUSPENDED, of an
// ARCHIVED and of a PENDING_DELETION workspace. Each cell is its own test; the expected outcomes are written
// out by hand below (not derived from server/platform/permissions.ts), so a change of the role table shows
// up here as a failing cell. Cells that succeed on a destructive route (leave, hand-over, delete, restore)
// put the fixture back through the API in their `after`, so the later cells see the same workspaces.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, login, registerAndLogin, uniqueEmail, type ApiResponse, type Session } from '../helpers/http.js';
import { makeKeyPair } from '../helpers/saml-idp.js';
import { createWorkspace, upgradeWorkspace, inviteAndJoin, roleIn, type Role } from './helpers.js';
import { failedDelivery } from '../helpers/deliveries.js';

let app: TestApp;

interface Ws {
  id: string;
  name: string;
  owner: Session;
}

/** The ACTIVE fixture workspace and its four members, each joined through an accepted invitation. */
let fixture: Ws;
let sessions: Record<Role, Session>;
/** Owner of another workspace (their personal one), member of nothing here. */
let outsider: Session;
let suspended: Ws & { member: Session };
let archived: Ws & { member: Session };
/** Deleted by its owner (restorable): every route but restore is closed. */
let pendingDeletion: Ws & { member: Session };

beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
  const admin = await login(app.api, TEST_ADMIN.email, TEST_ADMIN.password);

  const owner = await registerAndLogin(app.api, { prefix: 'mx-owner' });
  const name = `Matrix fixture ${crypto.randomBytes(4).toString('hex')}`;
  fixture = { id: await createWorkspace(app, owner.accessToken, name), name, owner };
  // Four members and the throwaway targets of write cells: more than Lite's 3.
  await upgradeWorkspace(app, owner.accessToken, fixture.id);
  sessions = {
    OWNER: owner,
    ADMIN: await inviteAndJoin(app, owner.accessToken, fixture.id, 'ADMIN', 'mx-admin'),
    MEMBER: await inviteAndJoin(app, owner.accessToken, fixture.id, 'MEMBER', 'mx-member'),
    VIEWER: await inviteAndJoin(app, owner.accessToken, fixture.id, 'VIEWER', 'mx-viewer'),
  };
  outsider = await registerAndLogin(app.api, { prefix: 'mx-outsider' });

  /** A workspace created by the platform admin for a new owner, with a MEMBER, then moved by `move`. */
  async function unavailable(move: 'suspend' | 'archive', label: string) {
    const wsOwner = await registerAndLogin(app.api, { prefix: `mx-${label}-owner` });
    const wsName = `Matrix ${label} ${crypto.randomBytes(4).toString('hex')}`;
    const created = await app.api('POST', '/admin/workspaces', {
      token: admin.accessToken,
      body: { name: wsName, ownerUserId: wsOwner.userId },
    });
    if (created.status !== 201) throw new Error(`admin create failed: ${created.status} ${created.text}`);
    const id: string = created.body.id;
    const member = await inviteAndJoin(app, wsOwner.accessToken, id, 'MEMBER', `mx-${label}-member`);
    const moved = await app.api('POST', `/admin/workspaces/${id}/${move}`, { token: admin.accessToken });
    if (moved.status !== 200) throw new Error(`${move} failed: ${moved.status} ${moved.text}`);
    return { id, name: wsName, owner: wsOwner, member };
  }
  suspended = await unavailable('suspend', 'suspended');
  archived = await unavailable('archive', 'archived');

  const pdOwner = await registerAndLogin(app.api, { prefix: 'mx-pending-owner' });
  const pdName = `Matrix pending ${crypto.randomBytes(4).toString('hex')}`;
  const pdId = await createWorkspace(app, pdOwner.accessToken, pdName);
  const pdMember = await inviteAndJoin(app, pdOwner.accessToken, pdId, 'MEMBER', 'mx-pending-member');
  pendingDeletion = { id: pdId, name: pdName, owner: pdOwner, member: pdMember };
  await deleteAsOwner(pendingDeletion);
});
afterAll(() => app?.close());

// ------------------------------------------------------------------ routes

/** An OAuth grant of the workspace made just for one cell (straight in the database: any workspace state). */
async function disposableGrant(ws: Ws) {
  const id = `matrix-${crypto.randomBytes(8).toString('hex')}`;
  await app.deps.db
    .insertInto('oauth_grants')
    .values({
      id,
      workspace_id: ws.id,
      user_id: ws.owner.userId,
      client_id: 'matrix-client',
      scopes: JSON.stringify(['read']),
      resource: `${app.url}/mcp`,
    })
    .execute();
  return id;
}

/** An API key of the workspace made just for one cell (straight in the database: any workspace state). */
async function disposableKey(workspaceId: string) {
  const row = await app.deps.db
    .insertInto('api_keys')
    .values({
      workspace_id: workspaceId,
      name: 'matrix',
      prefix: 'wsk_matrix00',
      key_hash: crypto.randomBytes(32).toString('hex'),
      scopes: JSON.stringify(['read']),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

/** A SAML connection of the workspace made just for one cell (no certificate: it is never signed in with). */
async function disposableConnection(workspaceId: string) {
  return app.deps.db
    .insertInto('sso_connections')
    .values({
      workspace_id: workspaceId,
      type: 'SAML',
      name: 'matrix',
      idp_entity_id: 'e',
      idp_sso_url: 'https://idp.example/sso',
    })
    .returning('id')
    .executeTakeFirstOrThrow();
}
const connectionExists = async (id: string) =>
  Boolean(await app.deps.db.selectFrom('sso_connections').select('id').where('id', '=', id).executeTakeFirst());
let idpCertificate: string | undefined;

/** A webhook of the workspace made just for one cell, with a failed delivery to retry. */
const disposableWebhook = (workspaceId: string) =>
  failedDelivery(app, workspaceId, { url: 'https://example.com/hook', name: 'matrix' });

function logoForm() {
  const png = Buffer.from(
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
    'base64',
  );
  const form = new FormData();
  form.append('logo', new Blob([png], { type: 'image/png' }), 'logo.png');
  return form;
}

/** A member row for a user created just for one cell, so 2xx role changes and removals touch nobody else. */
async function disposableMember(workspaceId: string, role: Role = 'MEMBER') {
  return (await disposableMemberSession(workspaceId, role)).userId;
}

/** disposableMember, signed in: a hand-over to them is undone by them. */
async function disposableMemberSession(workspaceId: string, role: Role = 'MEMBER') {
  const target = await registerAndLogin(app.api, { prefix: 'mx-target' });
  await app.deps.db
    .insertInto('workspace_members')
    .values({ workspace_id: workspaceId, user_id: target.userId, role })
    .execute();
  return target;
}

/** An invitation of the workspace made just for one cell (straight in the database: any workspace state). */
async function disposableInvitation(ws: Ws) {
  const row = await app.deps.db
    .insertInto('workspace_invitations')
    .values({
      workspace_id: ws.id,
      email: uniqueEmail('mx-pending-invitee'),
      role: 'VIEWER',
      token_hash: crypto.randomBytes(32).toString('hex'),
      invited_by: ws.owner.userId,
      expires_at: new Date(Date.now() + 86_400_000),
    })
    .returning(['id', 'token_hash'])
    .executeTakeFirstOrThrow();
  return row;
}

const invitationRow = (id: string) =>
  app.deps.db
    .selectFrom('workspace_invitations')
    .select(['token_hash', 'revoked_at'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
const statusOf = async (workspaceId: string) =>
  (await app.deps.db.selectFrom('workspaces').select('status').where('id', '=', workspaceId).executeTakeFirstOrThrow())
    .status;

/** POST .../delete as the workspace's owner, with its name typed back. */
async function deleteAsOwner(ws: Ws) {
  const res = await app.api('POST', `/workspaces/${ws.id}/delete`, {
    token: ws.owner.accessToken,
    body: { confirmName: ws.name },
  });
  if (res.status !== 200) throw new Error(`delete failed: ${res.status} ${res.text}`);
}

/** POST .../restore as the workspace's owner. */
async function restoreAsOwner(ws: Ws) {
  const res = await app.api('POST', `/workspaces/${ws.id}/restore`, { token: ws.owner.accessToken });
  if (res.status !== 200) throw new Error(`restore failed: ${res.status} ${res.text}`);
}

/** A domain of the workspace made just for one cell (straight in the database: any workspace state). */
async function disposableDomain(workspaceId: string, status: 'PENDING' | 'VERIFIED' = 'PENDING') {
  const row = await app.deps.db
    .insertInto('workspace_domains')
    .values({
      workspace_id: workspaceId,
      domain: `mx-${crypto.randomBytes(5).toString('hex')}.example`,
      status,
      verification_token: crypto.randomBytes(12).toString('hex'),
      ...(status === 'VERIFIED' ? { verified_at: new Date() } : {}),
    })
    .returning(['id', 'domain'])
    .executeTakeFirstOrThrow();
  return row;
}

const domainsOf = async (workspaceId: string) =>
  (
    await app.deps.db.selectFrom('workspace_domains').select('domain').where('workspace_id', '=', workspaceId).execute()
  ).map((d) => d.domain);

interface Call {
  path: string;
  body?: unknown;
  form?: FormData;
  /** Checks after the answer: what a success must have changed, or that a refusal changed nothing. */
  after?: (res: ApiResponse) => Promise<void>;
}

interface Route {
  label: string;
  method: 'GET' | 'PATCH' | 'PUT' | 'POST' | 'DELETE';
  /** As it appears in /openapi.json. */
  openapi: string;
  /** The request of one cell on `ws`, made by `caller` (undefined: anonymous). */
  call(ws: Ws, caller: Session | undefined): Promise<Call>;
  /** What a 2xx answer must contain. */
  check(res: ApiResponse, ws: Ws): void;
}

const is2xx = (status: number) => status >= 200 && status < 300;

const ROUTES: Route[] = [
  {
    label: 'GET /workspaces/{id}',
    method: 'GET',
    openapi: '/workspaces/{workspaceId}',
    call: async (ws) => ({ path: `/workspaces/${ws.id}` }),
    check: (res, ws) => expect(res.body).toMatchObject({ id: ws.id, name: ws.name, status: 'ACTIVE' }),
  },
  {
    label: 'PATCH /workspaces/{id}',
    method: 'PATCH',
    openapi: '/workspaces/{workspaceId}',
    // Renames to the same name: the fixture keeps its name for the later cells.
    call: async (ws) => ({ path: `/workspaces/${ws.id}`, body: { name: ws.name } }),
    check: (res, ws) => expect(res.body).toMatchObject({ id: ws.id, name: ws.name }),
  },
  {
    label: 'GET /workspaces/{id}/members',
    method: 'GET',
    openapi: '/workspaces/{workspaceId}/members',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/members` }),
    check: (res, ws) =>
      expect(res.body.items).toEqual(
        expect.arrayContaining([expect.objectContaining({ userId: ws.owner.userId, role: 'OWNER' })]),
      ),
  },
  {
    label: 'POST /workspaces/{id}/invitations',
    method: 'POST',
    openapi: '/workspaces/{workspaceId}/invitations',
    call: async (ws) => {
      const email = uniqueEmail('mx-invitee');
      return {
        path: `/workspaces/${ws.id}/invitations`,
        body: { email, role: 'VIEWER' },
        after: async (res) => {
          const rows = await app.deps.db
            .selectFrom('workspace_invitations')
            .select('workspace_id')
            .where('email', '=', email)
            .execute();
          expect(rows).toEqual(is2xx(res.status) ? [{ workspace_id: ws.id }] : []);
        },
      };
    },
    check: (res, ws) => expect(res.body).toMatchObject({ workspaceId: ws.id, role: 'VIEWER' }),
  },
  {
    label: 'PATCH /workspaces/{id}/members/{userId}',
    method: 'PATCH',
    openapi: '/workspaces/{workspaceId}/members/{userId}',
    call: async (ws) => {
      const target = await disposableMember(ws.id);
      return {
        path: `/workspaces/${ws.id}/members/${target}`,
        body: { role: 'VIEWER' },
        after: async (res) => expect(await roleIn(app, ws.id, target)).toBe(is2xx(res.status) ? 'VIEWER' : 'MEMBER'),
      };
    },
    check: (res) => expect(res.body).toMatchObject({ role: 'VIEWER' }),
  },
  {
    label: 'DELETE /workspaces/{id}/members/{userId}',
    method: 'DELETE',
    openapi: '/workspaces/{workspaceId}/members/{userId}',
    call: async (ws) => {
      const target = await disposableMember(ws.id);
      return {
        path: `/workspaces/${ws.id}/members/${target}`,
        after: async (res) => expect(await roleIn(app, ws.id, target)).toBe(is2xx(res.status) ? undefined : 'MEMBER'),
      };
    },
    check: (res) => expect(res.body).toEqual({ message: expect.any(String) }),
  },
  {
    label: 'POST /workspaces/{id}/ai/generate',
    method: 'POST',
    openapi: '/workspaces/{workspaceId}/ai/generate',
    call: async (ws) => ({
      path: `/workspaces/${ws.id}/ai/generate`,
      body: { prompt: 'A line for the permission matrix' },
    }),
    check: (res, ws) => expect(res.body).toMatchObject({ workspaceId: ws.id, status: 'SUCCEEDED' }),
  },
  {
    label: 'GET /workspaces/{id}/ai/generations',
    method: 'GET',
    openapi: '/workspaces/{workspaceId}/ai/generations',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/ai/generations` }),
    check: (res, ws) => {
      for (const item of res.body.items) expect(item.workspaceId).toBe(ws.id);
    },
  },
  {
    label: 'GET /workspaces/{id}/ai/usage',
    method: 'GET',
    openapi: '/workspaces/{workspaceId}/ai/usage',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/ai/usage` }),
    check: (res, ws) => expect(res.body).toMatchObject({ workspaceId: ws.id }),
  },
  {
    label: 'GET /workspaces/{id}/billing',
    method: 'GET',
    openapi: '/workspaces/{workspaceId}/billing',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/billing` }),
    check: (res, ws) => expect(res.body).toMatchObject({ workspaceId: ws.id, edition: 'ENTERPRISE' }),
  },
  {
    label: 'GET /workspaces/{id}/billing/payments',
    method: 'GET',
    openapi: '/workspaces/{workspaceId}/billing/payments',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/billing/payments` }),
    check: (res) => expect(Array.isArray(res.body.items)).toBe(true),
  },
  {
    label: 'POST /workspaces/{id}/billing/mock-checkout',
    method: 'POST',
    openapi: '/workspaces/{workspaceId}/billing/mock-checkout',
    // Buys the plan the fixture is already on, so later cells see the same workspace.
    call: async (ws) => ({ path: `/workspaces/${ws.id}/billing/mock-checkout`, body: { planCode: 'enterprise' } }),
    check: (res) => expect(res.body.current).toMatchObject({ edition: 'ENTERPRISE', status: 'ACTIVE' }),
  },
  {
    label: 'POST /workspaces/{id}/billing/cancel',
    method: 'POST',
    openapi: '/workspaces/{workspaceId}/billing/cancel',
    call: async (ws) => ({
      path: `/workspaces/${ws.id}/billing/cancel`,
      // A successful cancel drops the fixture to Lite: buy Enterprise again for the later cells.
      after: async (res) => {
        if (is2xx(res.status)) await upgradeWorkspace(app, ws.owner.accessToken, ws.id);
      },
    }),
    check: (res) => expect(res.body).toMatchObject({ status: 'FREE', edition: 'LITE' }),
  },
  {
    label: 'GET /workspaces/{id}/oauth-grants',
    method: 'GET',
    openapi: '/workspaces/{workspaceId}/oauth-grants',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/oauth-grants` }),
    check: (res) => expect(Array.isArray(res.body.items)).toBe(true),
  },
  {
    label: 'DELETE /workspaces/{id}/oauth-grants/{grantId}',
    method: 'DELETE',
    openapi: '/workspaces/{workspaceId}/oauth-grants/{grantId}',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/oauth-grants/${await disposableGrant(ws)}` }),
    check: (res) => expect(res.body).toMatchObject({ message: expect.any(String) }),
  },
  {
    label: 'GET /workspaces/{id}/api-keys',
    method: 'GET',
    openapi: '/workspaces/{workspaceId}/api-keys',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/api-keys` }),
    check: (res) => expect(Array.isArray(res.body.items)).toBe(true),
  },
  {
    label: 'POST /workspaces/{id}/api-keys',
    method: 'POST',
    openapi: '/workspaces/{workspaceId}/api-keys',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/api-keys`, body: { name: 'matrix key', scopes: ['read'] } }),
    check: (res, ws) => expect(res.body).toMatchObject({ workspaceId: ws.id, rawKey: expect.stringMatching(/^wsk_/) }),
  },
  {
    label: 'PATCH /workspaces/{id}/api-keys/{apiKeyId}',
    method: 'PATCH',
    openapi: '/workspaces/{workspaceId}/api-keys/{apiKeyId}',
    call: async (ws) => ({
      path: `/workspaces/${ws.id}/api-keys/${await disposableKey(ws.id)}`,
      body: { name: 'renamed' },
    }),
    check: (res) => expect(res.body).toMatchObject({ name: 'renamed' }),
  },
  {
    label: 'DELETE /workspaces/{id}/api-keys/{apiKeyId}',
    method: 'DELETE',
    openapi: '/workspaces/{workspaceId}/api-keys/{apiKeyId}',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/api-keys/${await disposableKey(ws.id)}` }),
    check: (res) => expect(res.body).toEqual({ message: expect.any(String) }),
  },
  {
    label: 'POST /workspaces/{id}/api-keys/{apiKeyId}/rotate',
    method: 'POST',
    openapi: '/workspaces/{workspaceId}/api-keys/{apiKeyId}/rotate',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/api-keys/${await disposableKey(ws.id)}/rotate`, body: {} }),
    check: (res) => expect(res.body.rawKey).toMatch(/^wsk_/),
  },
  {
    label: 'GET /workspaces/{id}/webhooks',
    method: 'GET',
    openapi: '/workspaces/{workspaceId}/webhooks',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/webhooks` }),
    check: (res) => expect(Array.isArray(res.body.items)).toBe(true),
  },
  {
    label: 'POST /workspaces/{id}/webhooks',
    method: 'POST',
    openapi: '/workspaces/{workspaceId}/webhooks',
    call: async (ws) => ({
      path: `/workspaces/${ws.id}/webhooks`,
      body: { name: 'matrix hook', url: 'https://example.com/hook', events: ['billing.updated'] },
    }),
    check: (res, ws) =>
      expect(res.body).toMatchObject({ workspaceId: ws.id, secret: expect.stringMatching(/^whsec_/) }),
  },
  {
    label: 'PATCH /workspaces/{id}/webhooks/{webhookId}',
    method: 'PATCH',
    openapi: '/workspaces/{workspaceId}/webhooks/{webhookId}',
    call: async (ws) => ({
      path: `/workspaces/${ws.id}/webhooks/${(await disposableWebhook(ws.id)).webhookId}`,
      body: { name: 'renamed hook' },
    }),
    check: (res) => expect(res.body).toMatchObject({ name: 'renamed hook' }),
  },
  {
    label: 'DELETE /workspaces/{id}/webhooks/{webhookId}',
    method: 'DELETE',
    openapi: '/workspaces/{workspaceId}/webhooks/{webhookId}',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/webhooks/${(await disposableWebhook(ws.id)).webhookId}` }),
    check: (res) => expect(res.body).toEqual({ message: expect.any(String) }),
  },
  {
    label: 'POST /workspaces/{id}/webhooks/{webhookId}/test',
    method: 'POST',
    openapi: '/workspaces/{workspaceId}/webhooks/{webhookId}/test',
    call: async (ws) => ({
      path: `/workspaces/${ws.id}/webhooks/${(await disposableWebhook(ws.id)).webhookId}/test`,
      body: {},
    }),
    check: (res) => expect(res.body).toMatchObject({ event: 'webhook.test' }),
  },
  {
    label: 'POST /workspaces/{id}/webhooks/{webhookId}/rotate-secret',
    method: 'POST',
    openapi: '/workspaces/{workspaceId}/webhooks/{webhookId}/rotate-secret',
    call: async (ws) => ({
      path: `/workspaces/${ws.id}/webhooks/${(await disposableWebhook(ws.id)).webhookId}/rotate-secret`,
      body: {},
    }),
    check: (res) => expect(res.body.secret).toMatch(/^whsec_/),
  },
  {
    label: 'GET /workspaces/{id}/webhook-deliveries',
    method: 'GET',
    openapi: '/workspaces/{workspaceId}/webhook-deliveries',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/webhook-deliveries` }),
    check: (res) => expect(Array.isArray(res.body.items)).toBe(true),
  },
  {
    label: 'POST /workspaces/{id}/webhook-deliveries/{deliveryId}/retry',
    method: 'POST',
    openapi: '/workspaces/{workspaceId}/webhook-deliveries/{deliveryId}/retry',
    call: async (ws) => ({
      path: `/workspaces/${ws.id}/webhook-deliveries/${(await disposableWebhook(ws.id)).deliveryId}/retry`,
      body: {},
    }),
    check: (res) => expect(res.body.attempts).toBeGreaterThanOrEqual(2),
  },
  {
    label: 'GET /workspaces/{id}/branding',
    method: 'GET',
    openapi: '/workspaces/{workspaceId}/branding',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/branding` }),
    check: (res, ws) => expect(res.body).toMatchObject({ workspaceId: ws.id }),
  },
  {
    label: 'PATCH /workspaces/{id}/branding',
    method: 'PATCH',
    openapi: '/workspaces/{workspaceId}/branding',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/branding`, body: { primaryColor: '#123456' } }),
    check: (res) => expect(res.body).toMatchObject({ primaryColor: '#123456' }),
  },
  {
    label: 'POST /workspaces/{id}/branding/logo',
    method: 'POST',
    openapi: '/workspaces/{workspaceId}/branding/logo',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/branding/logo`, form: logoForm() }),
    check: (res) => expect(res.body.logoUrl).toMatch(/^\/storage\/files\//),
  },
  {
    label: 'GET /workspaces/{id}/audit-logs',
    method: 'GET',
    openapi: '/workspaces/{workspaceId}/audit-logs',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/audit-logs` }),
    check: (res, ws) => {
      expect(res.body.items.length).toBeGreaterThan(0);
      for (const item of res.body.items) expect(item.workspaceId).toBe(ws.id);
    },
  },
  {
    label: 'GET /workspaces/{id}/invitations',
    method: 'GET',
    openapi: '/workspaces/{workspaceId}/invitations',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/invitations` }),
    check: (res, ws) => {
      expect(Array.isArray(res.body.items)).toBe(true);
      for (const item of res.body.items) expect(item.workspaceId).toBe(ws.id);
    },
  },
  {
    label: 'DELETE /workspaces/{id}/invitations/{invitationId}',
    method: 'DELETE',
    openapi: '/workspaces/{workspaceId}/invitations/{invitationId}',
    call: async (ws) => {
      const invitation = await disposableInvitation(ws);
      return {
        path: `/workspaces/${ws.id}/invitations/${invitation.id}`,
        after: async (res) => expect((await invitationRow(invitation.id)).revoked_at !== null).toBe(is2xx(res.status)),
      };
    },
    check: (res) => expect(res.body).toEqual({ message: expect.any(String) }),
  },
  {
    label: 'POST /workspaces/{id}/invitations/{invitationId}/resend',
    method: 'POST',
    openapi: '/workspaces/{workspaceId}/invitations/{invitationId}/resend',
    call: async (ws) => {
      const invitation = await disposableInvitation(ws);
      return {
        path: `/workspaces/${ws.id}/invitations/${invitation.id}/resend`,
        body: {},
        after: async (res) =>
          expect((await invitationRow(invitation.id)).token_hash !== invitation.token_hash).toBe(is2xx(res.status)),
      };
    },
    check: (res, ws) => expect(res.body).toMatchObject({ workspaceId: ws.id, role: 'VIEWER' }),
  },
  {
    label: 'POST /workspaces/{id}/leave',
    method: 'POST',
    openapi: '/workspaces/{workspaceId}/leave',
    call: async (ws, caller) => {
      const role = caller && (await roleIn(app, ws.id, caller.userId));
      return {
        path: `/workspaces/${ws.id}/leave`,
        body: {},
        after: async (res) => {
          if (!caller) return;
          expect(await roleIn(app, ws.id, caller.userId)).toBe(is2xx(res.status) ? undefined : role);
          // The member who left is put back as they were, for the later cells.
          if (is2xx(res.status) && role)
            await app.deps.db
              .insertInto('workspace_members')
              .values({ workspace_id: ws.id, user_id: caller.userId, role })
              .execute();
        },
      };
    },
    check: (res) => expect(res.body).toEqual({ message: expect.any(String) }),
  },
  {
    label: 'POST /workspaces/{id}/transfer-ownership',
    method: 'POST',
    openapi: '/workspaces/{workspaceId}/transfer-ownership',
    call: async (ws) => {
      const target = await disposableMemberSession(ws.id);
      return {
        path: `/workspaces/${ws.id}/transfer-ownership`,
        body: { newOwnerUserId: target.userId },
        after: async (res) => {
          if (!is2xx(res.status)) {
            expect(await roleIn(app, ws.id, target.userId)).toBe('MEMBER');
            expect(await roleIn(app, ws.id, ws.owner.userId)).toBe('OWNER');
            return;
          }
          expect(await roleIn(app, ws.id, target.userId)).toBe('OWNER');
          expect(await roleIn(app, ws.id, ws.owner.userId)).toBe('ADMIN');
          // Handed back by the new owner, who is then removed.
          const back = await app.api('POST', `/workspaces/${ws.id}/transfer-ownership`, {
            token: target.accessToken,
            body: { newOwnerUserId: ws.owner.userId },
          });
          expect(back.status, back.text).toBe(200);
          const removed = await app.api('DELETE', `/workspaces/${ws.id}/members/${target.userId}`, {
            token: ws.owner.accessToken,
          });
          expect(removed.status, removed.text).toBe(200);
        },
      };
    },
    check: (res) =>
      expect(res.body.items).toEqual(expect.arrayContaining([expect.objectContaining({ role: 'OWNER' })])),
  },
  {
    label: 'POST /workspaces/{id}/delete',
    method: 'POST',
    openapi: '/workspaces/{workspaceId}/delete',
    call: async (ws) => {
      const before = await statusOf(ws.id);
      return {
        path: `/workspaces/${ws.id}/delete`,
        body: { confirmName: ws.name },
        after: async (res) => {
          expect(await statusOf(ws.id)).toBe(is2xx(res.status) ? 'PENDING_DELETION' : before);
          // Restored, and on Enterprise again (the deletion canceled its subscription), for the later cells.
          if (is2xx(res.status)) {
            await restoreAsOwner(ws);
            await upgradeWorkspace(app, ws.owner.accessToken, ws.id);
          }
        },
      };
    },
    check: (res) =>
      expect(res.body).toEqual({
        message: expect.any(String),
        status: 'PENDING_DELETION',
        purgeAt: expect.any(String),
      }),
  },
  {
    label: 'POST /workspaces/{id}/restore',
    method: 'POST',
    openapi: '/workspaces/{workspaceId}/restore',
    call: async (ws) => {
      const before = await statusOf(ws.id);
      return {
        path: `/workspaces/${ws.id}/restore`,
        body: {},
        after: async (res) => {
          expect(await statusOf(ws.id)).toBe(is2xx(res.status) ? 'ACTIVE' : before);
          // Deleted again, for the later cells.
          if (is2xx(res.status)) await deleteAsOwner(ws);
        },
      };
    },
    check: (res, ws) => expect(res.body).toMatchObject({ id: ws.id, status: 'ACTIVE' }),
  },
  {
    label: 'GET /workspaces/{id}/domains',
    method: 'GET',
    openapi: '/workspaces/{workspaceId}/domains',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/domains` }),
    check: (res) => expect(res.body).toEqual({ items: expect.any(Array) }),
  },
  {
    label: 'POST /workspaces/{id}/domains',
    method: 'POST',
    openapi: '/workspaces/{workspaceId}/domains',
    call: async (ws) => {
      const domain = `mx-claim-${crypto.randomBytes(5).toString('hex')}.example`;
      return {
        path: `/workspaces/${ws.id}/domains`,
        body: { domain },
        after: async (res) => expect((await domainsOf(ws.id)).includes(domain)).toBe(is2xx(res.status)),
      };
    },
    check: (res) => expect(res.body).toMatchObject({ status: 'PENDING', verifiedAt: null }),
  },
  {
    label: 'POST /workspaces/{id}/domains/{domainId}/verify',
    method: 'POST',
    openapi: '/workspaces/{workspaceId}/domains/{domainId}/verify',
    // Already VERIFIED: the owner's 200 needs no DNS look-up (tests/sso/domains.test.ts covers the look-up).
    call: async (ws) => {
      const d = await disposableDomain(ws.id, 'VERIFIED');
      return { path: `/workspaces/${ws.id}/domains/${d.id}/verify`, body: {} };
    },
    check: (res) => expect(res.body).toMatchObject({ status: 'VERIFIED' }),
  },
  {
    label: 'DELETE /workspaces/{id}/domains/{domainId}',
    method: 'DELETE',
    openapi: '/workspaces/{workspaceId}/domains/{domainId}',
    call: async (ws) => {
      const d = await disposableDomain(ws.id);
      return {
        path: `/workspaces/${ws.id}/domains/${d.id}`,
        after: async (res) => expect((await domainsOf(ws.id)).includes(d.domain)).toBe(!is2xx(res.status)),
      };
    },
    check: (res) => expect(res.body).toEqual({ message: expect.any(String) }),
  },
  {
    label: 'GET /workspaces/{id}/scim/tokens',
    method: 'GET',
    openapi: '/workspaces/{workspaceId}/scim/tokens',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/scim/tokens` }),
    check: (res) => expect(Array.isArray(res.body.items)).toBe(true),
  },
  {
    label: 'POST /workspaces/{id}/scim/tokens',
    method: 'POST',
    openapi: '/workspaces/{workspaceId}/scim/tokens',
    call: async (ws) => {
      const name = `matrix ${crypto.randomBytes(4).toString('hex')}`;
      return {
        path: `/workspaces/${ws.id}/scim/tokens`,
        body: { name },
        after: async (res) => {
          const rows = await app.deps.db
            .selectFrom('scim_tokens')
            .select('workspace_id')
            .where('name', '=', name)
            .execute();
          expect(rows).toEqual(is2xx(res.status) ? [{ workspace_id: ws.id }] : []);
        },
      };
    },
    check: (res) => expect(res.body.rawToken).toMatch(/^scim_/),
  },
  {
    label: 'DELETE /workspaces/{id}/scim/tokens/{tokenId}',
    method: 'DELETE',
    openapi: '/workspaces/{workspaceId}/scim/tokens/{tokenId}',
    call: async (ws) => {
      const token = await disposableScimToken(ws.id);
      return {
        path: `/workspaces/${ws.id}/scim/tokens/${token}`,
        after: async (res) => {
          const row = await app.deps.db
            .selectFrom('scim_tokens')
            .select('revoked_at')
            .where('id', '=', token)
            .executeTakeFirstOrThrow();
          expect(row.revoked_at !== null).toBe(is2xx(res.status));
        },
      };
    },
    check: (res) => expect(res.body).toEqual({ message: expect.any(String) }),
  },
  {
    label: 'GET /workspaces/{id}/scim/role-mappings',
    method: 'GET',
    openapi: '/workspaces/{workspaceId}/scim/role-mappings',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/scim/role-mappings` }),
    check: (res) => expect(Array.isArray(res.body.mappings)).toBe(true),
  },
  {
    label: 'PUT /workspaces/{id}/scim/role-mappings',
    method: 'PUT',
    openapi: '/workspaces/{workspaceId}/scim/role-mappings',
    // The same (empty) mappings every time: later cells see the same workspace.
    call: async (ws) => ({ path: `/workspaces/${ws.id}/scim/role-mappings`, body: { mappings: [] } }),
    check: (res) => expect(res.body).toEqual({ mappings: [] }),
  },
  {
    label: 'GET /workspaces/{id}/sso/connections',
    method: 'GET',
    openapi: '/workspaces/{workspaceId}/sso/connections',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/sso/connections` }),
    check: (res) => expect(Array.isArray(res.body.items)).toBe(true),
  },
  {
    label: 'POST /workspaces/{id}/sso/connections',
    method: 'POST',
    openapi: '/workspaces/{workspaceId}/sso/connections',
    call: async (ws) => {
      idpCertificate ??= makeKeyPair('matrix-idp').certificate;
      const name = `matrix-${crypto.randomBytes(4).toString('hex')}`;
      return {
        path: `/workspaces/${ws.id}/sso/connections`,
        body: { type: 'SAML', name, idpEntityId: 'e', idpSsoUrl: 'https://idp.example/sso', idpCertificate },
        after: async (res) => {
          const rows = await app.deps.db.selectFrom('sso_connections').select('id').where('name', '=', name).execute();
          expect(rows.length).toBe(is2xx(res.status) ? 1 : 0);
        },
      };
    },
    check: (res) => expect(res.body).toMatchObject({ type: 'SAML', status: 'ACTIVE' }),
  },
  {
    label: 'GET /workspaces/{id}/sso/connections/{connectionId}',
    method: 'GET',
    openapi: '/workspaces/{workspaceId}/sso/connections/{connectionId}',
    call: async (ws) => ({ path: `/workspaces/${ws.id}/sso/connections/${(await disposableConnection(ws.id)).id}` }),
    check: (res) => expect(res.body).toMatchObject({ type: 'SAML', name: 'matrix' }),
  },
  {
    label: 'PATCH /workspaces/{id}/sso/connections/{connectionId}',
    method: 'PATCH',
    openapi: '/workspaces/{workspaceId}/sso/connections/{connectionId}',
    call: async (ws) => {
      const { id } = await disposableConnection(ws.id);
      return {
        path: `/workspaces/${ws.id}/sso/connections/${id}`,
        body: { status: 'INACTIVE' },
        after: async (res) => {
          const row = await app.deps.db
            .selectFrom('sso_connections')
            .select('status')
            .where('id', '=', id)
            .executeTakeFirstOrThrow();
          expect(row.status).toBe(is2xx(res.status) ? 'INACTIVE' : 'ACTIVE');
        },
      };
    },
    check: (res) => expect(res.body).toMatchObject({ status: 'INACTIVE' }),
  },
  {
    label: 'DELETE /workspaces/{id}/sso/connections/{connectionId}',
    method: 'DELETE',
    openapi: '/workspaces/{workspaceId}/sso/connections/{connectionId}',
    call: async (ws) => {
      const { id } = await disposableConnection(ws.id);
      return {
        path: `/workspaces/${ws.id}/sso/connections/${id}`,
        after: async (res) => expect(await connectionExists(id)).toBe(!is2xx(res.status)),
      };
    },
    check: (res) => expect(res.body).toEqual({ message: expect.any(String) }),
  },
];

/** A SCIM token of the workspace made just for one cell (straight in the database: any workspace state). */
async function disposableScimToken(workspaceId: string) {
  const row = await app.deps.db
    .insertInto('scim_tokens')
    .values({
      workspace_id: workspaceId,
      name: 'matrix',
      prefix: 'scim_matrix0',
      token_hash: crypto.randomBytes(32).toString('hex'),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

// ------------------------------------------------------------------ expectations, written out

type Principal = Role | 'outsider' | 'anonymous';
const PRINCIPALS: Principal[] = ['OWNER', 'ADMIN', 'MEMBER', 'VIEWER', 'outsider', 'anonymous'];

const DENIED = '403 PERMISSION_DENIED';
const HIDDEN = '404 NOT_FOUND';
const ANON = '401 UNAUTHORIZED';

/** Route label -> expected outcome per principal, in PRINCIPALS order. */
const ACTIVE_TABLE: Record<string, [string, string, string, string, string, string]> = {
  //                                           OWNER  ADMIN  MEMBER  VIEWER  outsider anonymous
  'GET /workspaces/{id}': ['200', '200', '200', '200', HIDDEN, ANON],
  'PATCH /workspaces/{id}': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  'GET /workspaces/{id}/members': ['200', '200', '200', '200', HIDDEN, ANON],
  'POST /workspaces/{id}/invitations': ['201', '201', DENIED, DENIED, HIDDEN, ANON],
  'PATCH /workspaces/{id}/members/{userId}': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  'DELETE /workspaces/{id}/members/{userId}': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  'POST /workspaces/{id}/ai/generate': ['200', '200', '200', DENIED, HIDDEN, ANON],
  'GET /workspaces/{id}/ai/generations': ['200', '200', '200', '200', HIDDEN, ANON],
  'GET /workspaces/{id}/ai/usage': ['200', '200', '200', DENIED, HIDDEN, ANON],
  'GET /workspaces/{id}/billing': ['200', '200', '200', DENIED, HIDDEN, ANON],
  'GET /workspaces/{id}/billing/payments': ['200', '200', '200', DENIED, HIDDEN, ANON],
  'POST /workspaces/{id}/billing/mock-checkout': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  'POST /workspaces/{id}/billing/cancel': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  'GET /workspaces/{id}/oauth-grants': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  'DELETE /workspaces/{id}/oauth-grants/{grantId}': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  'GET /workspaces/{id}/api-keys': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  'POST /workspaces/{id}/api-keys': ['201', '201', DENIED, DENIED, HIDDEN, ANON],
  'PATCH /workspaces/{id}/api-keys/{apiKeyId}': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  'DELETE /workspaces/{id}/api-keys/{apiKeyId}': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  'POST /workspaces/{id}/api-keys/{apiKeyId}/rotate': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  'GET /workspaces/{id}/webhooks': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  'POST /workspaces/{id}/webhooks': ['201', '201', DENIED, DENIED, HIDDEN, ANON],
  'PATCH /workspaces/{id}/webhooks/{webhookId}': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  'DELETE /workspaces/{id}/webhooks/{webhookId}': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  'POST /workspaces/{id}/webhooks/{webhookId}/test': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  'POST /workspaces/{id}/webhooks/{webhookId}/rotate-secret': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  'GET /workspaces/{id}/webhook-deliveries': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  'POST /workspaces/{id}/webhook-deliveries/{deliveryId}/retry': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  'GET /workspaces/{id}/branding': ['200', '200', '200', '200', HIDDEN, ANON],
  'PATCH /workspaces/{id}/branding': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  'POST /workspaces/{id}/branding/logo': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  'GET /workspaces/{id}/audit-logs': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  'GET /workspaces/{id}/invitations': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  'DELETE /workspaces/{id}/invitations/{invitationId}': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  'POST /workspaces/{id}/invitations/{invitationId}/resend': ['200', '200', DENIED, DENIED, HIDDEN, ANON],
  // Any member may leave, but not the fixture's only OWNER.
  'POST /workspaces/{id}/leave': ['409 CONFLICT', '200', '200', '200', HIDDEN, ANON],
  'POST /workspaces/{id}/transfer-ownership': ['200', DENIED, DENIED, DENIED, HIDDEN, ANON],
  'POST /workspaces/{id}/delete': ['200', DENIED, DENIED, DENIED, HIDDEN, ANON],
  // Open only while the workspace waits for its purge: an ACTIVE one has no deletion to undo.
  'POST /workspaces/{id}/restore': ['409 INVALID_STATE', DENIED, DENIED, DENIED, HIDDEN, ANON],
  // Owners only, reads included: a workspace's domains decide whose sign-in its connections may assert.
  'GET /workspaces/{id}/domains': ['200', DENIED, DENIED, DENIED, HIDDEN, ANON],
  'POST /workspaces/{id}/domains': ['201', DENIED, DENIED, DENIED, HIDDEN, ANON],
  'POST /workspaces/{id}/domains/{domainId}/verify': ['200', DENIED, DENIED, DENIED, HIDDEN, ANON],
  'DELETE /workspaces/{id}/domains/{domainId}': ['200', DENIED, DENIED, DENIED, HIDDEN, ANON],
  // Directory sync: OWNER only, reads included.
  'GET /workspaces/{id}/scim/tokens': ['200', DENIED, DENIED, DENIED, HIDDEN, ANON],
  'POST /workspaces/{id}/scim/tokens': ['201', DENIED, DENIED, DENIED, HIDDEN, ANON],
  'DELETE /workspaces/{id}/scim/tokens/{tokenId}': ['200', DENIED, DENIED, DENIED, HIDDEN, ANON],
  'GET /workspaces/{id}/scim/role-mappings': ['200', DENIED, DENIED, DENIED, HIDDEN, ANON],
  'PUT /workspaces/{id}/scim/role-mappings': ['200', DENIED, DENIED, DENIED, HIDDEN, ANON],
  // Single sign-on: owners only, reads included (a connection can sign in any address of the domains).
  'GET /workspaces/{id}/sso/connections': ['200', DENIED, DENIED, DENIED, HIDDEN, ANON],
  'POST /workspaces/{id}/sso/connections': ['201', DENIED, DENIED, DENIED, HIDDEN, ANON],
  'GET /workspaces/{id}/sso/connections/{connectionId}': ['200', DENIED, DENIED, DENIED, HIDDEN, ANON],
  'PATCH /workspaces/{id}/sso/connections/{connectionId}': ['200', DENIED, DENIED, DENIED, HIDDEN, ANON],
  'DELETE /workspaces/{id}/sso/connections/{connectionId}': ['200', DENIED, DENIED, DENIED, HIDDEN, ANON],
};

type Unavailable =
  | 'OWNER of a SUSPENDED workspace'
  | 'MEMBER of a SUSPENDED workspace'
  | 'OWNER of an ARCHIVED workspace'
  | 'MEMBER of an ARCHIVED workspace'
  | 'OWNER of a PENDING_DELETION workspace'
  | 'MEMBER of a PENDING_DELETION workspace';
const UNAVAILABLE_PRINCIPALS: Unavailable[] = [
  'OWNER of a SUSPENDED workspace',
  'MEMBER of a SUSPENDED workspace',
  'OWNER of an ARCHIVED workspace',
  'MEMBER of an ARCHIVED workspace',
  'OWNER of a PENDING_DELETION workspace',
  'MEMBER of a PENDING_DELETION workspace',
];
const UNAVAILABLE = '403 WORKSPACE_UNAVAILABLE';
/** The cells of a workspace that is not ACTIVE that answer otherwise than 403 WORKSPACE_UNAVAILABLE. */
const UNAVAILABLE_EXCEPTIONS: Record<string, Partial<Record<Unavailable, string>>> = {
  // The one route open while a deletion waits for the purge, and only to an owner.
  'POST /workspaces/{id}/restore': {
    'OWNER of a PENDING_DELETION workspace': '200',
    'MEMBER of a PENDING_DELETION workspace': DENIED,
  },
};

interface Cell {
  label: string;
  route: Route;
  principal: Principal | Unavailable;
  expected: string;
}

const cells: Cell[] = [
  ...ROUTES.flatMap((route) =>
    PRINCIPALS.map((principal, i) => {
      const expected = ACTIVE_TABLE[route.label][i];
      return { label: `${principal} on ${route.label} → ${expected}`, route, principal, expected };
    }),
  ),
  ...ROUTES.flatMap((route) =>
    UNAVAILABLE_PRINCIPALS.map((principal) => {
      const expected = UNAVAILABLE_EXCEPTIONS[route.label]?.[principal] ?? UNAVAILABLE;
      return { label: `${principal} on ${route.label} → ${expected}`, route, principal, expected };
    }),
  ),
];

/** The workspace a principal is tested against, and their session (none for anonymous). */
function subject(principal: Cell['principal']): { ws: Ws; caller?: Session } {
  switch (principal) {
    case 'outsider':
      return { ws: fixture, caller: outsider };
    case 'anonymous':
      return { ws: fixture };
    case 'OWNER of a SUSPENDED workspace':
      return { ws: suspended, caller: suspended.owner };
    case 'MEMBER of a SUSPENDED workspace':
      return { ws: suspended, caller: suspended.member };
    case 'OWNER of an ARCHIVED workspace':
      return { ws: archived, caller: archived.owner };
    case 'MEMBER of an ARCHIVED workspace':
      return { ws: archived, caller: archived.member };
    case 'OWNER of a PENDING_DELETION workspace':
      return { ws: pendingDeletion, caller: pendingDeletion.owner };
    case 'MEMBER of a PENDING_DELETION workspace':
      return { ws: pendingDeletion, caller: pendingDeletion.member };
    default:
      return { ws: fixture, caller: sessions[principal] };
  }
}

// ------------------------------------------------------------------ the cells

describe('permission matrix', () => {
  it.each(cells.map((cell) => [cell.label, cell] as const))('%s', async (_label, { route, principal, expected }) => {
    const { ws, caller } = subject(principal);
    const token = caller?.accessToken;
    const call = await route.call(ws, caller);
    const res = await app.api(route.method, call.path, {
      ...(token ? { token } : {}),
      ...(call.body !== undefined ? { body: call.body } : {}),
      ...(call.form ? { form: call.form } : {}),
    });

    if (principal === 'outsider')
      expect(is2xx(res.status), `outsider got ${res.status} ${res.text.slice(0, 200)}`).toBe(false);

    const [status, code] = expected.split(' ') as [string, string | undefined];
    if (code) {
      expectError(res, Number(status), code);
      expect(res.text, 'a refusal names the workspace').not.toContain(ws.name);
    } else {
      expect(res.status, res.text.slice(0, 300)).toBe(Number(status));
      route.check(res, ws);
    }
    await call.after?.(res);
  });

  it(`covers ${ROUTES.length * 12} cells: ${ROUTES.length} routes x (OWNER, ADMIN, MEMBER, VIEWER, outsider, anonymous) + ${ROUTES.length} routes x 6 members of SUSPENDED/ARCHIVED/PENDING_DELETION workspaces`, () => {
    expect(cells).toHaveLength(ROUTES.length * 12);
    expect(new Set(cells.map((c) => c.label)).size).toBe(ROUTES.length * 12);
    expect(new Set(ROUTES.map((r) => `${r.method} ${r.openapi}`)).size).toBe(ROUTES.length);
    expect(Object.keys(ACTIVE_TABLE).sort()).toEqual(ROUTES.map((r) => r.label).sort());
    for (const label of Object.keys(UNAVAILABLE_EXCEPTIONS)) expect(ACTIVE_TABLE).toHaveProperty([label]);
  });

  it('lists every /workspaces/{workspaceId} route of /openapi.json (a new workspace route needs its row here)', async () => {
    const doc = await app.api('GET', '/openapi.json');
    expect(doc.status).toBe(200);
    const documented = Object.entries(doc.body.paths as Record<string, Record<string, unknown>>)
      .filter(([path]) => path.startsWith('/workspaces/{workspaceId}'))
      .flatMap(([path, ops]) =>
        Object.keys(ops)
          .filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m))
          .map((m) => `${m.toUpperCase()} ${path}`),
      );
    expect(documented.sort()).toEqual(ROUTES.map((r) => `${r.method} ${r.openapi}`).sort());
  });

  it('leaves the fixture intact: the four members keep their roles and the workspace its name', async () => {
    for (const role of ['OWNER', 'ADMIN', 'MEMBER', 'VIEWER'] as const) {
      expect(await roleIn(app, fixture.id, sessions[role].userId)).toBe(role);
    }
    const ws = await app.deps.db
      .selectFrom('workspaces')
      .select(['name', 'status'])
      .where('id', '=', fixture.id)
      .executeTakeFirstOrThrow();
    expect(ws).toEqual({ name: fixture.name, status: 'ACTIVE' });
  });

  it('leaves the other workspaces as they were: their states and their owner and member', async () => {
    for (const [w, status] of [
      [suspended, 'SUSPENDED'],
      [archived, 'ARCHIVED'],
      [pendingDeletion, 'PENDING_DELETION'],
    ] as const) {
      expect(await statusOf(w.id)).toBe(status);
      expect(await roleIn(app, w.id, w.owner.userId)).toBe('OWNER');
      expect(await roleIn(app, w.id, w.member.userId)).toBe('MEMBER');
    }
  });
});
