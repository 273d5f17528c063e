// The life of a workspace after it is made, end to end over HTTP: members leaving, an owner handing it
// over, an owner deleting it (PENDING_DELETION: members, API keys and webhooks shut out, the subscription
// canceled), restoring it before its purge, and the purge of its content once the grace period is over.
//
// The apps of this file run against a database of their own (tests/developer/helpers.ts, ownDatabase):
// every app dispatches the webhook deliveries of its whole database and runs the periodic purge on it,
// so the apps of other files would refuse this file's 127.0.0.1 receiver, and purge what they find due.
import crypto from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emitEvent } from '../../routers/events/emit.js';
import { purgeDeletedWorkspaces } from '../../routers/workspaces/lifecycle.js';
import type { TestApp } from '../helpers/app.js';
import { eventsOutsideTheCatalogue } from '../helpers/event-check.js';
import { STRONG_PASSWORD, expectError, login, registerAndLogin, uniqueEmail, type Session } from '../helpers/http.js';
import { WebhookReceiver, type ReceivedRequest } from '../helpers/webhook-receiver.js';
import {
  apiKeyHeader,
  createKey,
  createWebhook,
  ownDatabase,
  ownerOn,
  quiet,
  startAppOn,
  type OwnDatabase,
} from '../developer/helpers.js';
import { waitFor } from '../helpers/wait.js';
import { createWorkspace, invite, inviteAndJoin, registerAs, roleIn } from './helpers.js';

const DAY_MS = 86_400_000;
const PURGE_BATCH_SIZE = 10;

let db: OwnDatabase;
let app: TestApp;
const receivers: WebhookReceiver[] = [];

beforeAll(async () => {
  db = await ownDatabase('lifecycle');
  app = await startAppOn(db, { WEBHOOK_ALLOW_PRIVATE_URLS: 'true', PURGE_BATCH_SIZE: String(PURGE_BATCH_SIZE) });
});

afterAll(async () => {
  for (const r of receivers) await r.close().catch(() => undefined);
  try {
    // The global teardown checks the shared database's events only: this file's are checked here.
    if (app) expect((await eventsOutsideTheCatalogue(app.deps.db)).problems).toEqual([]);
  } finally {
    await app?.close();
    await db?.drop();
  }
});

// ------------------------------------------------------------------ helpers

const wsName = (label: string) => `${label} ${crypto.randomBytes(3).toString('hex')}`;

/** An owner with a fresh team workspace. */
async function team(label: string) {
  const owner = await registerAndLogin(app.api, { prefix: `${label}-owner` });
  const name = wsName(label);
  return { owner, name, id: await createWorkspace(app, owner.accessToken, name) };
}

const post = (token: string, path: string, body?: unknown) =>
  app.api('POST', path, { token, ...(body !== undefined ? { body } : {}) });
const workspaceRow = (id: string) =>
  app.deps.db.selectFrom('workspaces').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const eventsOf = (workspaceId: string, type: string) =>
  app.deps.db
    .selectFrom('domain_events')
    .select(['type', 'payload'])
    .where('workspace_id', '=', workspaceId)
    .where('type', '=', type)
    .execute();
const auditOf = (workspaceId: string, action: string) =>
  app.deps.db
    .selectFrom('audit_logs')
    .select(['action', 'actor_user_id', 'target_type', 'target_id', 'metadata'])
    .where('workspace_id', '=', workspaceId)
    .where('action', '=', action)
    .execute();
const rolesOf = async (workspaceId: string) =>
  Object.fromEntries(
    (
      await app.deps.db
        .selectFrom('workspace_members')
        .select(['user_id', 'role'])
        .where('workspace_id', '=', workspaceId)
        .execute()
    ).map((m) => [m.user_id, m.role]),
  );
/** Events of the workspace not yet turned into deliveries by the webhook runner. */
const undispatched = async (workspaceId: string) =>
  (
    await app.deps.db
      .selectFrom('domain_events')
      .select('id')
      .where('workspace_id', '=', workspaceId)
      .where('dispatched_at', 'is', null)
      .execute()
  ).length;
const defaultPlan = () =>
  app.deps.db.selectFrom('plans').select(['id', 'edition']).where('is_default', '=', true).executeTakeFirstOrThrow();

async function receiver() {
  const r = await WebhookReceiver.start();
  receivers.push(r);
  return r.reply({ status: 200 });
}

const envelopeOf = (req: ReceivedRequest) =>
  JSON.parse(req.body) as { event: string; workspaceId: string; data: Record<string, unknown> };

function onePng() {
  return Buffer.from(
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
    'base64',
  );
}
function pngForm(field: string) {
  const form = new FormData();
  form.append(field, new Blob([onePng()], { type: 'image/png' }), `${field}.png`);
  return form;
}

// ------------------------------------------------------------------ leaving

describe('POST /workspaces/{workspaceId}/leave', () => {
  it('lets a member leave: 200 { message }, a member.left event and an audit row; the workspace is then hidden', async () => {
    const t = await team('leave');
    const member = await inviteAndJoin(app, t.owner.accessToken, t.id, 'MEMBER', 'leave-member');

    const res = await post(member.accessToken, `/workspaces/${t.id}/leave`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ message: expect.any(String) });
    expect(await roleIn(app, t.id, member.userId)).toBeUndefined();
    expect(await eventsOf(t.id, 'member.left')).toEqual([
      { type: 'member.left', payload: { userId: member.userId, role: 'MEMBER' } },
    ]);
    expect(await eventsOf(t.id, 'member.removed')).toEqual([]);
    expect(await auditOf(t.id, 'member.left')).toEqual([
      {
        action: 'member.left',
        actor_user_id: member.userId,
        target_type: 'member',
        target_id: member.userId,
        metadata: { role: 'MEMBER' },
      },
    ]);

    expectError(await app.api('GET', `/workspaces/${t.id}`, { token: member.accessToken }), 404, 'NOT_FOUND');
    expectError(await post(member.accessToken, `/workspaces/${t.id}/leave`), 404, 'NOT_FOUND');
    const mine = await app.api('GET', '/workspaces', { token: member.accessToken });
    expect(mine.body.items.map((w: { id: string }) => w.id)).not.toContain(t.id);
    const left = await app.api('GET', `/workspaces/${t.id}/members`, { token: t.owner.accessToken });
    expect(left.body.items.map((m: { userId: string }) => m.userId)).toEqual([t.owner.userId]);
  });

  it('refuses the last OWNER with 409 CONFLICT: still the owner, no event', async () => {
    const t = await team('leave-last');
    await inviteAndJoin(app, t.owner.accessToken, t.id, 'ADMIN', 'leave-last-admin');
    expectError(await post(t.owner.accessToken, `/workspaces/${t.id}/leave`), 409, 'CONFLICT');
    expect(await roleIn(app, t.id, t.owner.userId)).toBe('OWNER');
    expect(await eventsOf(t.id, 'member.left')).toEqual([]);
    expect(await auditOf(t.id, 'member.left')).toEqual([]);
    const still = await app.api('GET', `/workspaces/${t.id}`, { token: t.owner.accessToken });
    expect(still.status).toBe(200);
  });

  it('lets an OWNER leave while another owner stays', async () => {
    const t = await team('leave-coowner');
    const coOwner = await inviteAndJoin(app, t.owner.accessToken, t.id, 'OWNER', 'leave-coowner');
    const res = await post(t.owner.accessToken, `/workspaces/${t.id}/leave`);
    expect(res.status, res.text).toBe(200);
    expect(await rolesOf(t.id)).toEqual({ [coOwner.userId]: 'OWNER' });
    expect(await eventsOf(t.id, 'member.left')).toEqual([
      { type: 'member.left', payload: { userId: t.owner.userId, role: 'OWNER' } },
    ]);
    // Now the last owner, the co-owner cannot leave in turn.
    expectError(await post(coOwner.accessToken, `/workspaces/${t.id}/leave`), 409, 'CONFLICT');
  });
});

// ------------------------------------------------------------------ handing over

describe('POST /workspaces/{workspaceId}/transfer-ownership', () => {
  const transfer = (token: string, workspaceId: string, newOwnerUserId: unknown) =>
    post(token, `/workspaces/${workspaceId}/transfer-ownership`, { newOwnerUserId });

  it('makes a member the OWNER and every other owner, the caller included, an ADMIN; audited', async () => {
    const t = await team('handover');
    await app.deps.db
      .updateTable('workspaces')
      .set({ limits: JSON.stringify({ members: 10 }) })
      .where('id', '=', t.id)
      .execute();
    const coOwner = await inviteAndJoin(app, t.owner.accessToken, t.id, 'OWNER', 'handover-coowner');
    const member = await inviteAndJoin(app, t.owner.accessToken, t.id, 'MEMBER', 'handover-member');
    const viewer = await inviteAndJoin(app, t.owner.accessToken, t.id, 'VIEWER', 'handover-viewer');

    const res = await transfer(t.owner.accessToken, t.id, member.userId);
    expect(res.status, res.text).toBe(200);
    const answered = Object.fromEntries(
      (res.body.items as Array<{ userId: string; role: string }>).map((m) => [m.userId, m.role]),
    );
    const expected = {
      [member.userId]: 'OWNER',
      [t.owner.userId]: 'ADMIN',
      [coOwner.userId]: 'ADMIN',
      [viewer.userId]: 'VIEWER',
    };
    expect(answered).toEqual(expected);
    expect(await rolesOf(t.id)).toEqual(expected);
    expect(await auditOf(t.id, 'workspace.owner_transferred')).toEqual([
      {
        action: 'workspace.owner_transferred',
        actor_user_id: t.owner.userId,
        target_type: 'workspace',
        target_id: t.id,
        metadata: {
          newOwnerUserId: member.userId,
          previousOwnerUserIds: expect.arrayContaining([t.owner.userId, coOwner.userId]),
        },
      },
    ]);

    // The former owner is an ADMIN now: another hand-over is not theirs to make.
    expectError(await transfer(t.owner.accessToken, t.id, t.owner.userId), 403, 'PERMISSION_DENIED');
    const back = await transfer(member.accessToken, t.id, t.owner.userId);
    expect(back.status, back.text).toBe(200);
    expect(await roleIn(app, t.id, t.owner.userId)).toBe('OWNER');
    expect(await roleIn(app, t.id, member.userId)).toBe('ADMIN');
  });

  it('answers 404 NOT_FOUND for someone who is not a member, and changes nothing', async () => {
    const t = await team('handover-404');
    const admin = await inviteAndJoin(app, t.owner.accessToken, t.id, 'ADMIN', 'handover-404-admin');
    const stranger = await registerAndLogin(app.api, { prefix: 'handover-stranger' });
    const before = await rolesOf(t.id);
    expectError(await transfer(t.owner.accessToken, t.id, stranger.userId), 404, 'NOT_FOUND');
    expectError(await transfer(t.owner.accessToken, t.id, crypto.randomUUID()), 404, 'NOT_FOUND');
    expect(await rolesOf(t.id)).toEqual(before);
    expect(await rolesOf(t.id)).toEqual({ [t.owner.userId]: 'OWNER', [admin.userId]: 'ADMIN' });
    expect(await auditOf(t.id, 'workspace.owner_transferred')).toEqual([]);
    const err = expectError(await transfer(t.owner.accessToken, t.id, 'not-a-uuid'), 400, 'BAD_REQUEST');
    expect(err.issues?.map((i) => i.path)).toContain('newOwnerUserId');
  });

  it('is refused to an ADMIN (403 PERMISSION_DENIED), even towards themselves', async () => {
    const t = await team('handover-admin');
    const admin = await inviteAndJoin(app, t.owner.accessToken, t.id, 'ADMIN', 'handover-admin');
    const member = await inviteAndJoin(app, t.owner.accessToken, t.id, 'MEMBER', 'handover-admin-member');
    expectError(await transfer(admin.accessToken, t.id, member.userId), 403, 'PERMISSION_DENIED');
    expectError(await transfer(admin.accessToken, t.id, admin.userId), 403, 'PERMISSION_DENIED');
    expectError(await transfer(member.accessToken, t.id, member.userId), 403, 'PERMISSION_DENIED');
    expect(await rolesOf(t.id)).toEqual({
      [t.owner.userId]: 'OWNER',
      [admin.userId]: 'ADMIN',
      [member.userId]: 'MEMBER',
    });
  });
});

// ------------------------------------------------------------------ deleting and restoring

describe('POST /workspaces/{workspaceId}/delete', () => {
  it('refuses a wrong confirmName with 400 BAD_REQUEST and an ADMIN with 403: nothing changes', async () => {
    const t = await team('delete-wrong');
    const admin = await inviteAndJoin(app, t.owner.accessToken, t.id, 'ADMIN', 'delete-wrong-admin');
    const del = (token: string, body: unknown) => post(token, `/workspaces/${t.id}/delete`, body);

    for (const confirmName of [t.name.toUpperCase(), `${t.name} `, '', 'something else']) {
      const err = expectError(await del(t.owner.accessToken, { confirmName }), 400, 'BAD_REQUEST');
      expect(err.issues?.map((i) => i.path)).toEqual(['confirmName']);
    }
    const missing = expectError(await del(t.owner.accessToken, {}), 400, 'BAD_REQUEST');
    expect(missing.issues?.map((i) => i.path)).toContain('confirmName');
    expectError(await del(admin.accessToken, { confirmName: t.name }), 403, 'PERMISSION_DENIED');

    const row = await workspaceRow(t.id);
    expect(row).toMatchObject({ status: 'ACTIVE', purge_at: null, deletion_requested_at: null, deleted_at: null });
    expect(await eventsOf(t.id, 'workspace.deleted')).toEqual([]);
    expect(await auditOf(t.id, 'workspace.deletion_requested')).toEqual([]);
    expect((await app.api('GET', `/workspaces/${t.id}`, { token: admin.accessToken })).status).toBe(200);
  });

  describe('with the right name, then restored', () => {
    /** An owner whose personal (only) workspace is on Pro, with a member, an admin, an API key and a webhook. */
    let owner: Session;
    let member: Session;
    let admin: Session;
    let rawKey: string;
    let hookId: string;
    let r: WebhookReceiver;
    let workspaceName: string;
    let purgeAt: string;
    const ws = () => owner.workspaceId;

    beforeAll(async () => {
      owner = await ownerOn(app, 'pro', 'del-owner');
      member = await inviteAndJoin(app, owner.accessToken, ws(), 'MEMBER', 'del-member');
      admin = await inviteAndJoin(app, owner.accessToken, ws(), 'ADMIN', 'del-admin');
      rawKey = (await createKey(app, owner, { scopes: ['read'] })).rawKey;
      // The events of the checkout and the joins dispatched first: the webhook hears only what follows.
      await waitFor(async () => (await undispatched(ws())) === 0, {
        message: 'the fixture\u2019s events to be dispatched',
      });
      r = await receiver();
      hookId = (
        await createWebhook(app, owner, {
          url: r.url(),
          events: [
            'workspace.deleted',
            'workspace.restored',
            'member.removed',
            'subscription.canceled',
            'billing.updated',
          ],
        })
      ).id;
      workspaceName = (await workspaceRow(ws())).name;
      const key = await app.api('GET', '/public-api/workspace', { headers: apiKeyHeader(rawKey) });
      expect(key.status, key.text).toBe(200);
    });

    const deliveriesOf = () =>
      app.deps.db
        .selectFrom('webhook_deliveries')
        .select(['id', 'event', 'status', 'last_error'])
        .where('webhook_id', '=', hookId)
        .orderBy('created_at')
        .execute();

    it('answers 200 { message, status: PENDING_DELETION, purgeAt } about 30 days ahead; audited', async () => {
      const res = await post(owner.accessToken, `/workspaces/${ws()}/delete`, { confirmName: workspaceName });
      expect(res.status, res.text).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['message', 'purgeAt', 'status']);
      expect(res.body.status).toBe('PENDING_DELETION');
      purgeAt = res.body.purgeAt;
      expect(new Date(purgeAt).toISOString()).toBe(purgeAt);
      expect(Math.abs(new Date(purgeAt).getTime() - (Date.now() + 30 * DAY_MS))).toBeLessThan(60_000);

      const row = await workspaceRow(ws());
      expect(row.status).toBe('PENDING_DELETION');
      expect(row.purge_at?.toISOString()).toBe(purgeAt);
      expect(row.deletion_requested_at).toBeInstanceOf(Date);
      expect(row).toMatchObject({ purged_at: null, deleted_at: null });
      expect(await eventsOf(ws(), 'workspace.deleted')).toEqual([{ type: 'workspace.deleted', payload: { purgeAt } }]);
      expect(await auditOf(ws(), 'workspace.deletion_requested')).toEqual([
        expect.objectContaining({ actor_user_id: owner.userId, target_id: ws(), metadata: { purgeAt } }),
      ]);
    });

    it('cancels the subscription at the processor (MOCK: CANCELED at once)', async () => {
      const subs = await app.deps.db
        .selectFrom('subscriptions')
        .select(['status', 'provider'])
        .where('workspace_id', '=', ws())
        .execute();
      expect(subs).toEqual([{ status: 'CANCELED', provider: 'MOCK' }]);
    });

    it('shuts its members out with 403 WORKSPACE_UNAVAILABLE, restore aside', async () => {
      for (const s of [owner, admin, member]) {
        for (const [method, path] of [
          ['GET', `/workspaces/${ws()}`],
          ['GET', `/workspaces/${ws()}/members`],
          ['GET', `/workspaces/${ws()}/invitations`],
          ['GET', `/workspaces/${ws()}/api-keys`],
          ['GET', `/workspaces/${ws()}/billing`],
          ['POST', `/workspaces/${ws()}/leave`],
        ] as const) {
          expectError(await app.api(method, path, { token: s.accessToken }), 403, 'WORKSPACE_UNAVAILABLE');
        }
      }
      // Deleting again, inviting, handing over: closed too.
      expectError(
        await post(owner.accessToken, `/workspaces/${ws()}/delete`, { confirmName: workspaceName }),
        403,
        'WORKSPACE_UNAVAILABLE',
      );
      expectError(
        await post(owner.accessToken, `/workspaces/${ws()}/transfer-ownership`, { newOwnerUserId: admin.userId }),
        403,
        'WORKSPACE_UNAVAILABLE',
      );
      // Restoring is an owner's: the others get the answer of their role.
      expectError(await post(admin.accessToken, `/workspaces/${ws()}/restore`), 403, 'PERMISSION_DENIED');
      expectError(await post(member.accessToken, `/workspaces/${ws()}/restore`), 403, 'PERMISSION_DENIED');
      // The list still shows it, so that an owner can find it to restore it.
      const mine = await app.api('GET', '/workspaces', { token: owner.accessToken });
      expect(mine.body.items).toEqual([expect.objectContaining({ id: ws(), status: 'PENDING_DELETION' })]);
    });

    it('answers login and /auth/me of an owner whose only workspace it was with WORKSPACE_PENDING_DELETION', async () => {
      const res = await app.api('POST', '/auth/login', { body: { email: owner.email, password: STRONG_PASSWORD } });
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({
        hasActiveWorkspace: false,
        activeWorkspace: null,
        workspaceUnavailableReason: 'WORKSPACE_PENDING_DELETION',
      });
      const me = await app.api('GET', '/auth/me', { token: res.body.accessToken });
      expect(me.status, me.text).toBe(200);
      expect(me.body).toMatchObject({
        hasActiveWorkspace: false,
        activeWorkspace: null,
        workspaceUnavailableReason: 'WORKSPACE_PENDING_DELETION',
      });
      // The member still has their personal workspace: it is their active one, nothing is unavailable.
      const theirs = await app.api('GET', '/auth/me', { token: member.accessToken });
      expect(theirs.body).toMatchObject({ hasActiveWorkspace: true, activeWorkspace: { id: member.workspaceId } });
      expect(theirs.body.workspaceUnavailableReason).toBeUndefined();
    });

    it('refuses its API keys (403 WORKSPACE_UNAVAILABLE) and an invitation into it', async () => {
      expectError(
        await app.api('GET', '/public-api/workspace', { headers: apiKeyHeader(rawKey) }),
        403,
        'WORKSPACE_UNAVAILABLE',
      );
      // An invitation sent before the deletion cannot be used meanwhile.
      const row = await app.deps.db
        .insertInto('workspace_invitations')
        .values({
          workspace_id: ws(),
          email: uniqueEmail('del-invitee'),
          role: 'VIEWER',
          token_hash: crypto.createHash('sha256').update('del-invitation-token').digest('hex'),
          invited_by: owner.userId,
          expires_at: new Date(Date.now() + DAY_MS),
        })
        .returning('email')
        .executeTakeFirstOrThrow();
      const invitee = await registerAs(app, row.email);
      expectError(
        await post(invitee.accessToken, '/invitations/accept', { token: 'del-invitation-token' }),
        403,
        'WORKSPACE_UNAVAILABLE',
      );
      expect(await roleIn(app, ws(), invitee.userId)).toBeUndefined();
    });

    it('delivers workspace.deleted to its webhooks, and nothing after: later deliveries are recorded disabled', async () => {
      const [req] = await r.waitForRequests(1);
      expect(req.headers['x-service-event']).toBe('workspace.deleted');
      expect(envelopeOf(req)).toMatchObject({ event: 'workspace.deleted', workspaceId: ws(), data: { purgeAt } });

      // A later event of the workspace (as a removal would write it): recorded, never sent.
      await emitEvent(app.deps.db, ws(), 'member.removed', { userId: member.userId, role: 'MEMBER' });
      // Until every event of the workspace is dispatched (those of the subscription's cancellation too),
      // so that none is left to reach the receiver after the restore below.
      const settled = await waitFor(
        async () => {
          if ((await undispatched(ws())) > 0) return undefined;
          const rows = await deliveriesOf();
          const later = rows.filter((d) => d.event !== 'workspace.deleted');
          const events = later.map((d) => d.event);
          return rows.some((d) => d.event === 'workspace.deleted' && d.status === 'success') &&
            events.includes('member.removed') &&
            events.includes('subscription.canceled') &&
            later.every((d) => d.status === 'disabled')
            ? rows
            : undefined;
        },
        { message: 'the deliveries to be recorded (the later ones disabled)' },
      );
      for (const d of settled.filter((x) => x.event !== 'workspace.deleted'))
        expect(d.last_error).toBe('The workspace is deleted.');
      expect(settled.filter((d) => d.event === 'workspace.deleted').map((d) => d.status)).toEqual(['success']);
      expect(r.requests).toHaveLength(1);
    });

    it('restore: ACTIVE again on the default plan, routes work again, workspace.restored told and audited', async () => {
      const plan = await defaultPlan();
      const res = await post(owner.accessToken, `/workspaces/${ws()}/restore`);
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({
        id: ws(),
        name: workspaceName,
        status: 'ACTIVE',
        edition: plan.edition,
        role: 'OWNER',
      });

      const row = await workspaceRow(ws());
      expect(row).toMatchObject({
        status: 'ACTIVE',
        plan_id: plan.id,
        purge_at: null,
        deletion_requested_at: null,
        purged_at: null,
        deleted_at: null,
      });
      expect(await eventsOf(ws(), 'workspace.restored')).toEqual([
        { type: 'workspace.restored', payload: { planId: plan.id } },
      ]);
      expect(await auditOf(ws(), 'workspace.restored')).toEqual([
        expect.objectContaining({ actor_user_id: owner.userId, target_id: ws() }),
      ]);

      for (const s of [owner, admin, member]) {
        const again = await app.api('GET', `/workspaces/${ws()}`, { token: s.accessToken });
        expect(again.status, again.text).toBe(200);
        expect(again.body).toMatchObject({ status: 'ACTIVE', edition: plan.edition });
      }
      const me = await app.api('GET', '/auth/me', { token: owner.accessToken });
      expect(me.body).toMatchObject({ hasActiveWorkspace: true, activeWorkspace: { id: ws(), status: 'ACTIVE' } });

      const [, told] = await r.waitForRequests(2);
      expect(told.headers['x-service-event']).toBe('workspace.restored');
      expect(envelopeOf(told)).toMatchObject({ workspaceId: ws(), data: { planId: plan.id } });

      // Its keys survived: back on a plan with API access, they work again.
      expect((await app.api('GET', '/public-api/workspace', { headers: apiKeyHeader(rawKey) })).status).not.toBe(200);
      const upgrade = await post(owner.accessToken, '/billing/checkout', { workspaceId: ws(), planCode: 'pro' });
      expect(upgrade.status, upgrade.text).toBe(200);
      const key = await app.api('GET', '/public-api/workspace', { headers: apiKeyHeader(rawKey) });
      expect(key.status, key.text).toBe(200);
    });

    it('restore of an ACTIVE workspace answers 409 INVALID_STATE', async () => {
      expectError(await post(owner.accessToken, `/workspaces/${ws()}/restore`), 409, 'INVALID_STATE');
      expect((await workspaceRow(ws())).status).toBe('ACTIVE');
      expect(await eventsOf(ws(), 'workspace.restored')).toHaveLength(1);
    });
  });

  it('after the grace period (WORKSPACE_DELETION_GRACE_DAYS=0), restore answers 409 INVALID_STATE', async () => {
    // A second app on this database, its deliveries stopped so that it leaves this file's webhooks alone.
    const noGrace = await quiet(
      await startAppOn(db, { WORKSPACE_DELETION_GRACE_DAYS: '0', WEBHOOK_ALLOW_PRIVATE_URLS: 'true' }),
    );
    try {
      const t = await team('grace0');
      const res = await noGrace.api('POST', `/workspaces/${t.id}/delete`, {
        token: t.owner.accessToken,
        body: { confirmName: t.name },
      });
      expect(res.status, res.text).toBe(200);
      expect(Math.abs(new Date(res.body.purgeAt).getTime() - Date.now())).toBeLessThan(60_000);
      const refused = expectError(await post(t.owner.accessToken, `/workspaces/${t.id}/restore`), 409, 'INVALID_STATE');
      expect(refused.message).toMatch(/grace/i);
      expect((await workspaceRow(t.id)).status).toBe('PENDING_DELETION');
      expect(await eventsOf(t.id, 'workspace.restored')).toEqual([]);
    } finally {
      await noGrace.close();
    }
  });

  it('after purge_at has passed (moved into the past), restore answers 409 INVALID_STATE', async () => {
    const t = await team('grace-past');
    const res = await post(t.owner.accessToken, `/workspaces/${t.id}/delete`, { confirmName: t.name });
    expect(res.status, res.text).toBe(200);
    expect((await post(t.owner.accessToken, `/workspaces/${t.id}/restore`)).status).toBe(200);
    expect((await post(t.owner.accessToken, `/workspaces/${t.id}/delete`, { confirmName: t.name })).status).toBe(200);
    await app.deps.db
      .updateTable('workspaces')
      .set({ purge_at: new Date(Date.now() - 1000) })
      .where('id', '=', t.id)
      .execute();
    expectError(await post(t.owner.accessToken, `/workspaces/${t.id}/restore`), 409, 'INVALID_STATE');
    expect((await workspaceRow(t.id)).status).toBe('PENDING_DELETION');
  });
});

// ------------------------------------------------------------------ the purge

describe('purgeDeletedWorkspaces', () => {
  /** Rows of a workspace per table the purge empties (and files). */
  const PURGED = [
    'webhook_deliveries',
    'domain_events',
    'ai_generations',
    'ai_usage_counters',
    'webhooks',
    'api_keys',
    'workspace_invitations',
    'analytics_events',
    'workspace_members',
    'files',
  ] as const;
  const KEPT = ['subscriptions', 'payments', 'audit_logs'] as const;
  const count = async (table: string, workspaceId: string) =>
    Number(
      (
        await sql<{
          n: string;
        }>`select count(*) as n from ${sql.table(table)} where workspace_id = ${workspaceId}`.execute(app.deps.db)
      ).rows[0].n,
    );
  const counts = async (tables: readonly string[], workspaceId: string) =>
    Object.fromEntries(await Promise.all(tables.map(async (t) => [t, await count(t, workspaceId)] as const)));

  it('purges a deleted workspace past its grace in batches: rows and files gone, the row and the books kept; a second run does nothing', async () => {
    // A Pro workspace with a bit of everything.
    const owner = await ownerOn(app, 'pro', 'purge-owner');
    const wsId = owner.workspaceId;
    const member = await inviteAndJoin(app, owner.accessToken, wsId, 'MEMBER', 'purge-member');
    await invite(app, owner.accessToken, wsId, uniqueEmail('purge-invitee'), 'VIEWER');
    const key = await createKey(app, owner, { scopes: ['read'] });
    const r = await receiver();
    const hook = await createWebhook(app, owner, { url: r.url(), events: ['webhook.test'] });
    const sent = await post(owner.accessToken, `/workspaces/${wsId}/webhooks/${hook.id}/test`, {});
    expect(sent.status, sent.text).toBe(200);
    const generated = await post(owner.accessToken, `/workspaces/${wsId}/ai/generate`, { prompt: 'A line to purge' });
    expect(generated.status, generated.text).toBe(200);
    // More generations than several batches of PURGE_BATCH_SIZE, written directly.
    await sql`insert into ai_generations (workspace_id, user_id, provider, model, prompt, output, status)
      select ${wsId}, ${owner.userId}, 'MOCK', 'mock-1', 'seeded ' || i, 'out', 'SUCCEEDED'
      from generate_series(1, 45) as i`.execute(app.deps.db);
    await app.deps.db
      .insertInto('analytics_events')
      .values({ name: 'purge.seeded', properties: JSON.stringify({}), user_id: owner.userId, workspace_id: wsId })
      .execute();
    const logo = await app.api('POST', `/workspaces/${wsId}/branding/logo`, {
      token: owner.accessToken,
      form: pngForm('logo'),
    });
    expect(logo.status, logo.text).toBe(200);
    const upload = await app.api('POST', `/storage/upload?workspaceId=${wsId}`, {
      token: owner.accessToken,
      form: pngForm('file'),
    });
    expect(upload.status, upload.text).toBe(201);
    const files = await app.deps.db
      .selectFrom('files')
      .select(['id', 'storage_key'])
      .where('workspace_id', '=', wsId)
      .execute();
    expect(files).toHaveLength(2);
    for (const f of files) expect(await app.deps.storage.get(f.storage_key)).toBeInstanceOf(Buffer);

    const before = await counts(PURGED, wsId);
    expect(before.ai_generations).toBeGreaterThan(4 * PURGE_BATCH_SIZE);
    for (const table of PURGED) expect(before[table], table).toBeGreaterThan(0);

    // Deleted, then its grace period over.
    const del = await post(owner.accessToken, `/workspaces/${wsId}/delete`, {
      confirmName: (await workspaceRow(wsId)).name,
    });
    expect(del.status, del.text).toBe(200);
    const kept = await counts(KEPT, wsId);
    expect(kept.payments).toBeGreaterThan(0);
    await app.deps.db
      .updateTable('workspaces')
      .set({ purge_at: new Date(Date.now() - 1000) })
      .where('id', '=', wsId)
      .execute();

    // This app's periodic timers may run the same purge meanwhile (the two share the deletes): the
    // report's counts are checked loosely, what is left in the database exactly.
    const report = await purgeDeletedWorkspaces(app.deps);
    expect(report.workspaces).toBeGreaterThanOrEqual(1);

    expect(await counts(PURGED, wsId)).toEqual(Object.fromEntries(PURGED.map((t) => [t, 0])));
    for (const f of files) expect(await app.deps.storage.get(f.storage_key)).toBeUndefined();
    const row = await workspaceRow(wsId);
    expect(row.status).toBe('PENDING_DELETION');
    expect(row.purged_at).toBeInstanceOf(Date);
    expect(row.deleted_at).toBeInstanceOf(Date);
    expect(row.logo_file_id).toBeNull();
    expect(await counts(KEPT, wsId)).toEqual(kept);

    // Nobody is a member any more; the key is gone; the owner has no workspace left.
    expectError(await app.api('GET', `/workspaces/${wsId}`, { token: member.accessToken }), 404, 'NOT_FOUND');
    expectError(await post(owner.accessToken, `/workspaces/${wsId}/restore`), 404, 'NOT_FOUND');
    expectError(
      await app.api('GET', '/public-api/workspace', { headers: apiKeyHeader(key.rawKey) }),
      401,
      'UNAUTHORIZED',
    );
    const relogin = await login(app.api, owner.email, STRONG_PASSWORD);
    expect(relogin.workspaceId).toBeUndefined();
    const me = await app.api('GET', '/auth/me', { token: relogin.accessToken });
    expect(me.body).toMatchObject({ hasActiveWorkspace: false, workspaceUnavailableReason: 'NO_WORKSPACE' });

    // Nothing is left to do.
    expect(await purgeDeletedWorkspaces(app.deps)).toEqual({ workspaces: 0, rows: 0, files: 0 });
    expect((await workspaceRow(wsId)).purged_at).toEqual(row.purged_at);
  });

  it('purges a row updated while its batch waits for it (a new row version), before setting purged_at', async () => {
    const owner = await registerAndLogin(app.api, { prefix: 'purge-race' });
    const wsId = owner.workspaceId;
    // Fewer than one batch: the batch that skips the updated row is also the last one seen.
    await sql`insert into ai_generations (workspace_id, provider, model, prompt, output, status)
      select ${wsId}, 'MOCK', 'mock-1', 'seeded ' || i, 'out', 'SUCCEEDED' from generate_series(1, 5) as i`.execute(
      app.deps.db,
    );
    const del = await post(owner.accessToken, `/workspaces/${wsId}/delete`, {
      confirmName: (await workspaceRow(wsId)).name,
    });
    expect(del.status, del.text).toBe(200);
    await app.deps.db
      .updateTable('workspaces')
      .set({ purge_at: new Date(Date.now() - 1000) })
      .where('id', '=', wsId)
      .execute();

    // A transaction updates one of the rows and holds its lock while the purge's delete waits for it.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let updated!: () => void;
    const rowLocked = new Promise<void>((resolve) => (updated = resolve));
    const holder = app.deps.db.transaction().execute(async (trx) => {
      await sql`update ai_generations set output = 'changed meanwhile'
        where id = (select id from ai_generations where workspace_id = ${wsId} limit 1)`.execute(trx);
      updated();
      await released;
    });
    await rowLocked;
    const purge = purgeDeletedWorkspaces(app.deps);
    try {
      await waitFor(
        async () => {
          const waiting = await sql<{ n: string }>`select count(*) as n from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock'
          and query like 'delete from "ai_generations"%'`.execute(app.deps.db);
          return Number(waiting.rows[0].n) > 0;
        },
        { message: 'the purge to wait for the locked row' },
      );
    } finally {
      release();
      await holder;
    }
    await purge;

    expect(await count('ai_generations', wsId)).toBe(0);
    expect((await workspaceRow(wsId)).purged_at).toBeInstanceOf(Date);
  });

  it('leaves a workspace alone until its purge_at, and an ACTIVE one always', async () => {
    const t = await team('purge-not-yet');
    const active = await team('purge-active');
    expect((await post(t.owner.accessToken, `/workspaces/${t.id}/delete`, { confirmName: t.name })).status).toBe(200);
    await purgeDeletedWorkspaces(app.deps);
    for (const id of [t.id, active.id]) {
      expect(await workspaceRow(id)).toMatchObject({ purged_at: null, deleted_at: null });
      expect(await count('workspace_members', id)).toBe(1);
    }
  });
});
