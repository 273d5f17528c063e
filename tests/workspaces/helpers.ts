// Workspace fixtures shared by tests/workspaces, tests/admin and tests/audit: accounts at a chosen address,
// workspaces, and members who join through a real invitation (the mailed token, accepted over HTTP).
import crypto from 'node:crypto';
import type { TestApp } from '../helpers/app.js';
import { STRONG_PASSWORD, login, uniqueEmail, type Session } from '../helpers/http.js';
import { latestMailToken } from '../helpers/mail.js';

export type Role = 'OWNER' | 'ADMIN' | 'MEMBER' | 'VIEWER';

export const INVITATION_TEMPLATE = 'workspace-invitation';

/** Registers `email` and signs it in. */
export async function registerAs(app: TestApp, email: string, name = 'Test User'): Promise<Session> {
  const res = await app.api('POST', '/auth/register', { body: { email, password: STRONG_PASSWORD, name } });
  if (res.status !== 201) throw new Error(`register ${email} failed: ${res.status} ${res.text}`);
  return login(app.api, email, STRONG_PASSWORD);
}

/** POST /workspaces as `token`; answers the created workspace's id. */
export async function createWorkspace(app: TestApp, token: string, name: string): Promise<string> {
  const res = await app.api('POST', '/workspaces', { token, body: { name } });
  if (res.status !== 201) throw new Error(`create workspace failed: ${res.status} ${res.text}`);
  return res.body.id;
}

/**
 * Moves a workspace to a larger plan (MOCK checkout), for fixtures with more members than the Lite plan
 * allows (3).
 */
export async function upgradeWorkspace(app: TestApp, ownerToken: string, workspaceId: string, planCode = 'enterprise') {
  const res = await app.api('POST', '/billing/checkout', { token: ownerToken, body: { workspaceId, planCode } });
  if (res.status !== 200) throw new Error(`upgrade to ${planCode} failed: ${res.status} ${res.text}`);
}

/** Invites `email` with `role` as `inviterToken`; answers the invitation and the raw token from the mail. */
export async function invite(app: TestApp, inviterToken: string, workspaceId: string, email: string, role: Role) {
  const res = await app.api('POST', `/workspaces/${workspaceId}/invitations`, {
    token: inviterToken,
    body: { email, role },
  });
  if (res.status !== 201) throw new Error(`invite ${email} as ${role} failed: ${res.status} ${res.text}`);
  return {
    invitation: res.body as { id: string; email: string; role: Role },
    token: await latestMailToken(app, email, INVITATION_TEMPLATE),
  };
}

/** A new account that joins `workspaceId` with `role` through an invitation sent by `inviterToken`. */
export async function inviteAndJoin(
  app: TestApp,
  inviterToken: string,
  workspaceId: string,
  role: Role,
  prefix = role.toLowerCase(),
): Promise<Session> {
  const email = uniqueEmail(prefix);
  const session = await registerAs(app, email, `${role} person`);
  const { token } = await invite(app, inviterToken, workspaceId, email, role);
  const accepted = await app.api('POST', '/invitations/accept', { token: session.accessToken, body: { token } });
  if (accepted.status !== 200) throw new Error(`accept failed: ${accepted.status} ${accepted.text}`);
  return session;
}

/** The stored role of a user in a workspace, or undefined when not a member. */
export async function roleIn(app: TestApp, workspaceId: string, userId: string): Promise<Role | undefined> {
  const row = await app.deps.db
    .selectFrom('workspace_members')
    .select('role')
    .where('workspace_id', '=', workspaceId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row?.role;
}

/** A safe, unique X-Request-Id value. */
export const requestIdFor = (label: string) => `${label}-${crypto.randomUUID()}`;
