// "A test reads every table after an account's deletion and finds the address and the name nowhere but in
// the tombstone rules the docs name." The person first touches as many tables as a real user would
// (verification, sign-ins, a failed one, 2FA, invitations both ways, a paid plan and an API key, AI text,
// a contact message, a name change, an export, idempotent requests), is seen by the scan everywhere, then
// deletes the account; afterwards every text, varchar, json(b) and array column of every table of the
// public schema is searched (case-insensitively) for the address, its local part and the name, and so are
// the sealed answers of idempotency keys and this instance's monitoring buffer. The tombstone
// (`deleted+<id>@invalid`, `Deleted user`) contains none of them, so no hit at all is allowed.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { STRONG_PASSWORD, expectError, login, registerAndLogin, type Session } from '../helpers/http.js';
import { latestMailToken, mailsTo } from '../helpers/mail.js';
import { codeAt, enableMfa, forgetUsedSteps } from '../helpers/mfa.js';
import { generateOk, uniquePrompt } from '../ai/helpers.js';
import { createKey } from '../developer/helpers.js';
import { createWorkspace, invite, inviteAndJoin, upgradeWorkspace } from '../workspaces/helpers.js';
import { DELETED_NAME, deleteMe, handOver, hex, tombstoneOf, userRow, waitFor } from './helpers.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ WEBHOOK_DELIVERY_ENABLED: 'false' });
});
afterAll(() => app?.close());

const db = () => app.deps.db;

const TEXT_TYPES = ['text', 'character varying', 'character', 'json', 'jsonb', 'ARRAY', 'USER-DEFINED'];

interface Hit {
  column: string;
  needle: string;
  rows: number;
  sample: string;
}

/** Every text-like column of every table of the public schema that holds one of `needles` (any case). */
async function findInEveryTable(needles: string[]): Promise<Hit[]> {
  const { rows: columns } = await sql<{ table_name: string; column_name: string }>`
    select c.table_name, c.column_name
      from information_schema.columns c
      join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
     where c.table_schema = 'public' and t.table_type = 'BASE TABLE' and c.data_type = any(${TEXT_TYPES})
     order by c.table_name, c.column_name`.execute(db());
  expect(columns.length).toBeGreaterThan(100);
  const tables = new Set(columns.map((c) => c.table_name));
  for (const table of ['users', 'email_logs', 'audit_logs', 'contact_messages', 'workspace_invitations'])
    expect(tables).toContain(table);
  const hits: Hit[] = [];
  for (const { table_name, column_name } of columns) {
    const text = sql`lower(${sql.ref(column_name)}::text)`;
    for (const needle of needles) {
      const { rows } = await sql<{ n: number; sample: string | null }>`
        select count(*)::int as n, min(left(${sql.ref(column_name)}::text, 300)) as sample
          from ${sql.table(table_name)}
         where strpos(${text}, ${needle.toLowerCase()}) > 0`.execute(db());
      if (rows[0].n > 0)
        hits.push({ column: `${table_name}.${column_name}`, needle, rows: rows[0].n, sample: rows[0].sample ?? '' });
    }
  }
  return hits;
}

/** The kept answers of idempotency keys (sealed in the table) that quote one of `needles`. */
async function findInIdempotentAnswers(needles: string[], since: Date): Promise<string[]> {
  const rows = await db()
    .selectFrom('idempotency_keys')
    .select(['scope', 'key', 'body'])
    .where('body', 'is not', null)
    .where('created_at', '>=', since)
    .execute();
  const opened = (body: string) => {
    try {
      return app.deps.secrets.open(body).toLowerCase();
    } catch {
      return ''; // Sealed by an app of another test file with another key.
    }
  };
  return rows
    .filter((r) => needles.some((n) => opened(r.body!).includes(n.toLowerCase())))
    .map((r) => `${r.scope} ${r.key}`);
}

const monitored = () => JSON.stringify(app.deps.monitor.errors.toArray()).toLowerCase();

describe('deleting an account erases the person from every table', () => {
  it('finds the address and the name nowhere afterwards, though they were everywhere before', async () => {
    const started = new Date(Date.now() - 1_000);
    const local = `erase-${hex(6)}`;
    const email = `${local}@tests.local`;
    const stem = `Zyx-${hex(6)}`;
    const firstName = `${stem} First`;
    const needles = [email, local, stem];

    // Registration (with an idempotency key, as a careful client sends it), and the verification link.
    const reg = await app.api('POST', '/auth/register', {
      body: { email, password: STRONG_PASSWORD, name: firstName },
      headers: { 'Idempotency-Key': `register-${hex()}` },
    });
    expect(reg.status, reg.text).toBe(201);
    const verified = await app.api('POST', '/auth/verify-email', {
      body: { token: await latestMailToken(app, email, 'email-verification') },
    });
    expect(verified.status, verified.text).toBe(200);

    // Two sign-ins, and a failed one (the address typed as the person typed it).
    const p: Session = await login(app.api, email, STRONG_PASSWORD);
    await login(app.api, email, STRONG_PASSWORD);
    for (const typed of [email, email.toUpperCase()])
      expectError(
        await app.api('POST', '/auth/login', { body: { email: typed, password: 'Wrong-pass-1234' } }),
        401,
        'INVALID_CREDENTIALS',
      );

    // Invited by someone (and invited again while a member: the refusal quotes the address), joined.
    const other = await registerAndLogin(app.api, { prefix: 'erase-other' });
    const theirs = await createWorkspace(app, other.accessToken, `Their team ${hex()}`);
    const { token: invitation } = await invite(app, other.accessToken, theirs, email, 'MEMBER');
    const accepted = await app.api('POST', '/invitations/accept', {
      token: p.accessToken,
      body: { token: invitation },
    });
    expect(accepted.status, accepted.text).toBe(200);
    const again = await app.api('POST', `/workspaces/${theirs}/invitations`, {
      token: other.accessToken,
      body: { email, role: 'MEMBER' },
    });
    expect(again.status, again.text).toBe(409);
    expect(monitored()).toContain(email);

    // Inviting others: one who joins a team it then hands over, one who inherits the personal workspace
    // (named after the person), one who never answers (the invitation is resent after a rename below).
    const team = await createWorkspace(app, p.accessToken, `Team ${hex()}`);
    const joiner = await inviteAndJoin(app, p.accessToken, team, 'ADMIN', 'erase-joiner');
    const { invitation: unanswered } = await invite(
      app,
      p.accessToken,
      p.workspaceId,
      `erase-invitee-${hex()}@tests.local`,
      'MEMBER',
    );

    // A paid plan (MOCK checkout) and an API key; AI text here and in the team of the other person.
    await upgradeWorkspace(app, p.accessToken, p.workspaceId, 'pro');
    await createKey(app, p);
    await generateOk(app, p.accessToken, { prompt: uniquePrompt(), workspaceId: p.workspaceId });
    await generateOk(app, p.accessToken, { prompt: uniquePrompt(), workspaceId: theirs });

    // A contact message from the address, under the first name; a support ticket that quotes both.
    const contact = await app.api('POST', '/contact/messages', {
      body: { name: firstName, email, subject: 'A question', message: `Hello, this is ${firstName}.` },
    });
    expect(contact.status, contact.text).toBe(201);
    const ticket = await app.api('POST', '/support/tickets', {
      token: p.accessToken,
      body: { subject: `Help for ${firstName}`, message: `Please write to ${email}. ${firstName}` },
    });
    expect(ticket.status, ticket.text).toBe(201);
    // The platform admin sets a name (the audit entry quotes it).
    const admin = await login(app.api, TEST_ADMIN.email, TEST_ADMIN.password);
    const adminSet = await app.api('PATCH', `/admin/users/${p.userId}`, {
      token: admin.accessToken,
      body: { name: `${stem} Admin` },
    });
    expect(adminSet.status, adminSet.text).toBe(200);

    // 2FA on; a new name (idempotently); an export of the data.
    const { secret } = await enableMfa(app.api, p.accessToken);
    const secondName = `${stem} Second`;
    const renamed = await app.api('PATCH', '/auth/me', {
      token: p.accessToken,
      body: { name: secondName },
      headers: { 'Idempotency-Key': `rename-${hex()}` },
    });
    expect(renamed.status, renamed.text).toBe(200);
    const resent = await app.api('POST', `/workspaces/${p.workspaceId}/invitations/${unanswered.id}/resend`, {
      token: p.accessToken,
    });
    expect(resent.status, resent.text).toBe(200);
    const exported = await app.api('POST', '/auth/me/exports', { token: p.accessToken });
    expect(exported.status, exported.text).toBe(201);
    await waitFor(
      async () => {
        const r = await app.api('GET', `/auth/me/exports/${exported.body.id}`, { token: p.accessToken });
        return r.body.status === 'READY';
      },
      { message: 'the export READY' },
    );
    const { storage_key: archiveKey } = await db()
      .selectFrom('user_exports')
      .select('storage_key')
      .where('id', '=', exported.body.id)
      .executeTakeFirstOrThrow();
    await waitFor(async () => (await mailsTo(app, email)).some((m) => m.template === 'data-export-ready'), {
      message: 'the export mail',
    });

    // A new address (confirmed): the earlier one stays in the mails, the audit and the invitation.
    const movedTo = `${local}-moved@tests.local`;
    const change = await app.api('POST', '/auth/change-email', {
      token: p.accessToken,
      body: { newEmail: movedTo, password: STRONG_PASSWORD },
    });
    expect(change.status, change.text).toBe(200);
    const confirmed = await app.api('POST', '/auth/confirm-email-change', {
      body: { token: await latestMailToken(app, movedTo, 'email-change-confirmation') },
    });
    expect(confirmed.status, confirmed.text).toBe(200);

    // The scan sees the person in many places before the deletion: it would see a leftover.
    const before = new Set((await findInEveryTable(needles)).map((h) => h.column));
    for (const column of [
      'users.email',
      'users.name',
      'email_logs.to',
      'email_logs.text',
      'email_logs.html',
      'email_logs.subject',
      'audit_logs.actor_email',
      'contact_messages.email',
      'contact_messages.name',
      'contact_messages.message',
      'workspace_invitations.email',
      'workspaces.name',
      'support_tickets.subject',
      'support_tickets.message',
    ])
      expect(before, column).toContain(column);
    expect(await findInIdempotentAnswers(needles, started)).toHaveLength(2);

    // The team and the personal workspace are handed over first (their only owner cannot leave them
    // otherwise), then the account goes.
    const heir = await inviteAndJoin(app, p.accessToken, p.workspaceId, 'ADMIN', 'erase-heir');
    await handOver(app, p, team, joiner.userId);
    await handOver(app, p, p.workspaceId, heir.userId);
    await forgetUsedSteps(app, p.userId);
    const deleted = await deleteMe(app, p, { password: STRONG_PASSWORD, code: codeAt(secret) });
    expect(deleted.status, deleted.text).toBe(200);
    expect(await userRow(app, p.userId)).toMatchObject({ email: tombstoneOf(p.userId), name: DELETED_NAME });

    // Nowhere, in any table, any column, any case.
    expect(await findInEveryTable(needles)).toEqual([]);
    expect(await findInIdempotentAnswers(needles, started)).toEqual([]);
    // Nor in this instance's record of errors, read directly and as an admin reads it.
    const text = monitored();
    for (const needle of needles) expect(text).not.toContain(needle.toLowerCase());
    const errors = await app.api('GET', '/admin/monitoring/errors?limit=100', { token: admin.accessToken });
    expect(errors.status, errors.text).toBe(200);
    for (const needle of needles) expect(errors.text.toLowerCase()).not.toContain(needle.toLowerCase());
    // Nor in storage: the export's archive is gone.
    expect(await app.deps.storage.get(archiveKey!)).toBeUndefined();
  });
});
