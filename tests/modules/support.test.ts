// Contact messages and support tickets (docs/decisions.md, "Contact messages and support tickets"):
// POST /contact/messages (public) and POST /support/tickets (signed in) are stored and announced by mail
// to SUPPORT_EMAIL (EMAIL_PROVIDER=MOCK: the email_logs table); invalid input is a 400 that stores and
// mails nothing; a ticket names only a workspace of the caller's; platform admins (and the read-only demo
// admin) read both at GET /admin/contact-messages and GET /admin/support-tickets.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, TEST_DEMO_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, login, registerAndLogin, uniqueEmail, type Session } from '../helpers/http.js';
import { mailsTo } from '../helpers/mail.js';
import { createWorkspace, inviteAndJoin } from '../workspaces/helpers.js';

const hex = () => crypto.randomBytes(4).toString('hex');
/** This file's own support inbox, so its mails are told apart from other files'. */
const SUPPORT_EMAIL = `support-${hex()}@tests.local`;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

let app: TestApp;
let user: Session;
let viewer: Session;
let outsider: Session;
let admin: Session;
let demoAdmin: Session;
let teamWorkspaceId: string;
const teamName = `Support team ${hex()}`;

beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false', SUPPORT_EMAIL });
  [user, outsider, admin, demoAdmin] = await Promise.all([
    registerAndLogin(app.api, { prefix: 'support-user', name: 'Ticket Writer' }),
    registerAndLogin(app.api, { prefix: 'support-outsider' }),
    login(app.api, TEST_ADMIN.email, TEST_ADMIN.password),
    login(app.api, TEST_DEMO_ADMIN.email, TEST_DEMO_ADMIN.password),
  ]);
  teamWorkspaceId = await createWorkspace(app, user.accessToken, teamName);
  viewer = await inviteAndJoin(app, user.accessToken, teamWorkspaceId, 'VIEWER', 'support-viewer');
});
afterAll(() => app?.close());

const contactRows = (message: string) =>
  app.deps.db.selectFrom('contact_messages').selectAll().where('message', '=', message).execute();
const ticketRows = (subject: string) =>
  app.deps.db.selectFrom('support_tickets').selectAll().where('subject', '=', subject).execute();
const supportMails = async (needle: string) =>
  (await mailsTo(app, SUPPORT_EMAIL)).filter((m) => m.text.includes(needle) || m.subject.includes(needle));

describe('POST /contact/messages', () => {
  it('stores the message (201) and answers it', async () => {
    const message = `I would like a quote for 40 seats. ${hex()}`;
    const email = uniqueEmail('contact');
    const res = await app.api('POST', '/contact/messages', {
      body: { name: 'Grace Hopper', email, subject: 'Pricing', message, topic: 'sales' },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID_RE),
      name: 'Grace Hopper',
      email,
      subject: 'Pricing',
      message,
      topic: 'sales',
      createdAt: expect.any(String),
    });
    expect(Math.abs(Date.parse(res.body.createdAt) - Date.now())).toBeLessThan(60_000);
    const rows = await contactRows(message);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id: res.body.id, name: 'Grace Hopper', email, subject: 'Pricing', topic: 'sales' });
  });

  it('announces it by mail to SUPPORT_EMAIL, with the sender, the topic and the message', async () => {
    const message = `Do you offer an on-premise edition? ${hex()}`;
    const email = uniqueEmail('contact-mail');
    const res = await app.api('POST', '/contact/messages', {
      body: { name: 'Alan Turing', email, subject: 'On-premise', message, topic: 'enterprise' },
    });
    expect(res.status, res.text).toBe(201);
    const mails = await supportMails(message);
    expect(mails).toHaveLength(1);
    expect(mails[0]).toMatchObject({ to: SUPPORT_EMAIL, template: 'contact-message' });
    expect(mails[0].subject).toContain('On-premise');
    expect(mails[0].text).toContain('Alan Turing');
    expect(mails[0].text).toContain(email);
    expect(mails[0].text).toContain('enterprise');
  });

  it('needs no account, keeps tier as the topic when no topic is given, and works without a subject', async () => {
    const message = `Which tier fits a team of five? ${hex()}`;
    const res = await app.api('POST', '/contact/messages', {
      body: { name: 'Ada', email: uniqueEmail('contact-tier'), message, tier: 'pro' },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ subject: '', topic: 'pro' });
    expect((await contactRows(message))[0]).toMatchObject({ topic: 'pro', subject: '' });
    expect(await supportMails(message)).toHaveLength(1);
  });

  it('stores the address in lower case and the name and message trimmed', async () => {
    const tail = hex();
    const res = await app.api('POST', '/contact/messages', {
      body: {
        name: '  Katherine Johnson  ',
        email: `Katherine.${tail}@Tests.Local`,
        message: `  Orbit question ${tail}  `,
      },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      name: 'Katherine Johnson',
      email: `katherine.${tail}@tests.local`,
      message: `Orbit question ${tail}`,
    });
  });

  it.each([
    ['an invalid e-mail address', { email: 'not-an-address' }, 'email'],
    ['a missing e-mail address', { email: undefined }, 'email'],
    ['an empty message', { message: '' }, 'message'],
    ['a blank message', { message: '    ' }, 'message'],
    ['a message over 5000 characters', { message: 'm'.repeat(5001) }, 'message'],
    ['an empty name', { name: '' }, 'name'],
  ])('refuses %s with 400 BAD_REQUEST, storing and mailing nothing', async (_label, change, field) => {
    const marker = hex();
    const body: Record<string, unknown> = {
      name: `Refused ${marker}`,
      email: uniqueEmail('contact-bad'),
      message: `Refused message ${marker}`,
      ...change,
    };
    const res = await app.api('POST', '/contact/messages', { body });
    const err = expectError(res, 400, 'BAD_REQUEST');
    expect(err.issues?.map((i) => i.path)).toContain(field);
    const stored = await app.deps.db
      .selectFrom('contact_messages')
      .select('id')
      .where((eb) => eb.or([eb('name', 'like', `%${marker}%`), eb('message', 'like', `%${marker}%`)]))
      .execute();
    expect(stored).toEqual([]);
    expect(await supportMails(marker)).toEqual([]);
  });
});

describe('POST /support/tickets', () => {
  it('opens a ticket of the signed-in user in their workspace (201), stored as OPEN', async () => {
    const subject = `Cannot export invoices ${hex()}`;
    const res = await app.api('POST', '/support/tickets', {
      token: user.accessToken,
      body: { subject, message: 'The export button does nothing.', priority: 'HIGH', workspaceId: teamWorkspaceId },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID_RE),
      userId: user.userId,
      workspaceId: teamWorkspaceId,
      subject,
      message: 'The export button does nothing.',
      priority: 'HIGH',
      status: 'OPEN',
      createdAt: expect.any(String),
    });
    const rows = await ticketRows(subject);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      id: res.body.id,
      user_id: user.userId,
      workspace_id: teamWorkspaceId,
      priority: 'HIGH',
      status: 'OPEN',
    });
  });

  it('announces the ticket by mail to SUPPORT_EMAIL, with priority, subject, sender and workspace', async () => {
    const subject = `Webhook stopped ${hex()}`;
    const res = await app.api('POST', '/support/tickets', {
      token: user.accessToken,
      body: { subject, message: 'No deliveries since noon.', priority: 'URGENT', workspaceId: teamWorkspaceId },
    });
    expect(res.status, res.text).toBe(201);
    const mails = await supportMails(subject);
    expect(mails).toHaveLength(1);
    expect(mails[0]).toMatchObject({ to: SUPPORT_EMAIL, template: 'support-ticket' });
    expect(mails[0].subject).toContain('URGENT');
    expect(mails[0].subject).toContain(subject);
    expect(mails[0].text).toContain(user.email);
    expect(mails[0].text).toContain(teamName);
    expect(mails[0].text).toContain('No deliveries since noon.');
  });

  it('defaults the priority to NORMAL and needs no workspace', async () => {
    const subject = `General question ${hex()}`;
    const res = await app.api('POST', '/support/tickets', {
      token: user.accessToken,
      body: { subject, message: 'How do I rename my account?' },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ priority: 'NORMAL', workspaceId: null, userId: user.userId });
  });

  it('is from the signed-in account, whatever name and email the form sends', async () => {
    const subject = `Spoofed sender ${hex()}`;
    const res = await app.api('POST', '/support/tickets', {
      token: user.accessToken,
      body: { subject, message: 'Hello', name: 'Someone Else', email: 'ceo@example.com' },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.userId).toBe(user.userId);
    const mail = (await supportMails(subject))[0];
    expect(mail.text).toContain(user.email);
    expect(mail.text).not.toContain('ceo@example.com');
  });

  it('lets a VIEWER open a ticket for their workspace', async () => {
    const subject = `Viewer question ${hex()}`;
    const res = await app.api('POST', '/support/tickets', {
      token: viewer.accessToken,
      body: { subject, message: 'Where are the reports?', workspaceId: teamWorkspaceId },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ userId: viewer.userId, workspaceId: teamWorkspaceId });
  });

  it('refuses a workspace the caller is not a member of (404 NOT_FOUND), storing and mailing nothing', async () => {
    const subject = `Not my workspace ${hex()}`;
    const res = await app.api('POST', '/support/tickets', {
      token: outsider.accessToken,
      body: { subject, message: 'Let me in.', workspaceId: teamWorkspaceId },
    });
    expectError(res, 404, 'NOT_FOUND');
    expect(res.text).not.toContain(teamName);
    expect(await ticketRows(subject)).toEqual([]);
    expect(await supportMails(subject)).toEqual([]);
  });

  it('lets a member of a suspended workspace open a ticket about it (the refusal tells them to contact support)', async () => {
    const s = await registerAndLogin(app.api, { prefix: 'support-suspended' });
    const moved = await app.api('POST', `/admin/workspaces/${s.workspaceId}/suspend`, { token: admin.accessToken });
    expect(moved.status, moved.text).toBe(200);
    // What the member sees on their workspace's routes, and what it tells them to do.
    const refusal = expectError(
      await app.api('GET', `/workspaces/${s.workspaceId}`, { token: s.accessToken }),
      403,
      'WORKSPACE_UNAVAILABLE',
    );
    expect(refusal.message).toMatch(/contact support/i);
    const subject = `Please restore my workspace ${hex()}`;
    const res = await app.api('POST', '/support/tickets', {
      token: s.accessToken,
      body: { subject, message: 'It says suspended.', priority: 'HIGH', workspaceId: s.workspaceId },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ userId: s.userId, workspaceId: s.workspaceId, subject });
    expect(await supportMails(subject)).toHaveLength(1);
  });

  it('refuses an unknown workspace id the same way', async () => {
    const subject = `Unknown workspace ${hex()}`;
    expectError(
      await app.api('POST', '/support/tickets', {
        token: user.accessToken,
        body: { subject, message: 'Hi', workspaceId: crypto.randomUUID() },
      }),
      404,
      'NOT_FOUND',
    );
    expect(await ticketRows(subject)).toEqual([]);
  });

  it.each([
    ['an empty subject', { subject: '' }, 'subject'],
    ['a blank message', { message: '   ' }, 'message'],
    ['an unknown priority', { priority: 'CRITICAL' }, 'priority'],
    ['a workspaceId that is not a UUID', { workspaceId: 'team' }, 'workspaceId'],
  ])('refuses %s with 400 BAD_REQUEST, storing nothing', async (_label, change, field) => {
    const subject = `Bad ticket ${hex()}`;
    const res = await app.api('POST', '/support/tickets', {
      token: user.accessToken,
      body: { subject, message: 'Body', ...change },
    });
    const err = expectError(res, 400, 'BAD_REQUEST');
    expect(err.issues?.map((i) => i.path)).toContain(field);
    expect(await ticketRows(subject)).toEqual([]);
    expect(await supportMails(subject)).toEqual([]);
  });

  it('needs a bearer token (401), storing nothing', async () => {
    const subject = `Anonymous ticket ${hex()}`;
    expectError(await app.api('POST', '/support/tickets', { body: { subject, message: 'Hi' } }), 401, 'UNAUTHORIZED');
    expect(await ticketRows(subject)).toEqual([]);
  });
});

describe('admin reads', () => {
  let contactId: string;
  let ticketId: string;
  const contactMessage = `Admin-visible contact ${hex()}`;
  const ticketSubject = `Admin-visible ticket ${hex()}`;

  beforeAll(async () => {
    const c = await app.api('POST', '/contact/messages', {
      body: { name: 'Listed Person', email: uniqueEmail('listed'), message: contactMessage },
    });
    expect(c.status, c.text).toBe(201);
    contactId = c.body.id;
    const t = await app.api('POST', '/support/tickets', {
      token: user.accessToken,
      body: { subject: ticketSubject, message: 'Listed', priority: 'LOW', workspaceId: teamWorkspaceId },
    });
    expect(t.status, t.text).toBe(201);
    ticketId = t.body.id;
  });

  it('GET /admin/contact-messages lists contact messages, newest first, paginated, with ours among them', async () => {
    const res = await app.api('GET', '/admin/contact-messages?limit=100', { token: admin.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ page: 1, limit: 100 });
    expect(res.body.total).toBeGreaterThanOrEqual(1);
    const ours = res.body.items.find((m: { id: string }) => m.id === contactId);
    expect(ours).toMatchObject({ id: contactId, name: 'Listed Person', message: contactMessage });
    const times = res.body.items.map((m: { createdAt: string }) => Date.parse(m.createdAt));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
  });

  it('GET /admin/support-tickets lists tickets, newest first, paginated, with ours among them', async () => {
    const res = await app.api('GET', '/admin/support-tickets?limit=100', { token: admin.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ page: 1, limit: 100 });
    const ours = res.body.items.find((t: { id: string }) => t.id === ticketId);
    expect(ours).toMatchObject({
      id: ticketId,
      userId: user.userId,
      workspaceId: teamWorkspaceId,
      subject: ticketSubject,
      priority: 'LOW',
      status: 'OPEN',
    });
    const times = res.body.items.map((t: { createdAt: string }) => Date.parse(t.createdAt));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
  });

  it('refuses out-of-range pagination with 400', async () => {
    expectError(
      await app.api('GET', '/admin/support-tickets?limit=101', { token: admin.accessToken }),
      400,
      'BAD_REQUEST',
    );
    expectError(
      await app.api('GET', '/admin/contact-messages?page=0', { token: admin.accessToken }),
      400,
      'BAD_REQUEST',
    );
  });

  it('the read-only demo admin can read both', async () => {
    const contacts = await app.api('GET', '/admin/contact-messages?limit=100', { token: demoAdmin.accessToken });
    expect(contacts.status, contacts.text).toBe(200);
    expect(contacts.body.items.map((m: { id: string }) => m.id)).toContain(contactId);
    const tickets = await app.api('GET', '/admin/support-tickets?limit=100', { token: demoAdmin.accessToken });
    expect(tickets.status, tickets.text).toBe(200);
    expect(tickets.body.items.map((t: { id: string }) => t.id)).toContain(ticketId);
  });

  it('refuse an ordinary user with 403 FORBIDDEN, even the one who wrote the ticket', async () => {
    expectError(await app.api('GET', '/admin/contact-messages', { token: user.accessToken }), 403, 'FORBIDDEN');
    expectError(await app.api('GET', '/admin/support-tickets', { token: user.accessToken }), 403, 'FORBIDDEN');
  });

  it('refuse an anonymous caller with 401 UNAUTHORIZED', async () => {
    expectError(await app.api('GET', '/admin/contact-messages'), 401, 'UNAUTHORIZED');
    expectError(await app.api('GET', '/admin/support-tickets'), 401, 'UNAUTHORIZED');
  });
});
