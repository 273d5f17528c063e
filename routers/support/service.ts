// Contact messages and support tickets: stored, announced to SUPPORT_EMAIL, and listed for platform admins.
import type { Selectable } from 'kysely';
import type { ContactMessagesTable, SupportTicketsTable } from '../../db/schema.js';
import type { AppDeps } from '../../server/platform/context.js';
import { sendAfterCommit } from '../../server/platform/email/mailer.js';
import { signedInUser, type Actor } from '../../server/platform/actor.js';
import { AppError } from '../../server/platform/errors.js';
import { listRequestOf, mapItems, paginate, type ListRequest } from '../../server/platform/pagination.js';
import type { WorkspaceAccess } from '../workspaces/access.js';
import type { ContactInput, TicketInput } from './schemas.js';

type Deps = Pick<AppDeps, 'db' | 'config' | 'mailer' | 'logger'>;

const toContact = (r: Selectable<ContactMessagesTable>) => ({
  id: r.id,
  name: r.name,
  email: r.email,
  subject: r.subject,
  message: r.message,
  topic: r.topic,
  createdAt: r.created_at.toISOString(),
});

const toTicket = (r: Selectable<SupportTicketsTable>) => ({
  id: r.id,
  userId: r.user_id,
  workspaceId: r.workspace_id,
  subject: r.subject,
  message: r.message,
  priority: r.priority,
  status: r.status,
  createdAt: r.created_at.toISOString(),
});

export async function sendContactMessage(deps: Deps, input: ContactInput) {
  const row = await deps.db
    .insertInto('contact_messages')
    .values({
      name: input.name,
      email: input.email.toLowerCase(),
      subject: input.subject ?? '',
      message: input.message,
      topic: input.topic ?? input.tier ?? null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  await sendAfterCommit(deps, {
    to: deps.config.SUPPORT_EMAIL,
    subject: `Contact: ${input.subject || 'new message'}`,
    template: 'contact-message',
    text: `From ${input.name} <${row.email}>${row.topic ? ` (${row.topic})` : ''}:\n\n${input.message}`,
  });
  return toContact(row);
}

/**
 * Opens a ticket from the signed-in user (the actor; `callerName` is theirs). A named workspace must be one
 * of their `memberships` (404 otherwise), whatever its state: a suspended workspace is exactly what one
 * writes to support about.
 */
export async function openTicket(
  deps: Deps,
  actor: Actor,
  input: TicketInput & { callerName: string; memberships: WorkspaceAccess[] },
) {
  const user = { ...signedInUser(actor), name: input.callerName };
  const { memberships } = input;
  const workspace = input.workspaceId ? memberships.find((m) => m.id === input.workspaceId) : undefined;
  if (input.workspaceId && !workspace) throw new AppError('NOT_FOUND', 'Workspace not found.');
  const row = await deps.db
    .insertInto('support_tickets')
    .values({
      user_id: user.id,
      workspace_id: workspace?.id ?? null,
      subject: input.subject,
      message: input.message,
      priority: input.priority,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  await sendAfterCommit(deps, {
    to: deps.config.SUPPORT_EMAIL,
    subject: `[${row.priority}] Ticket: ${row.subject}`,
    template: 'support-ticket',
    text: `From ${user.name} <${user.email}>${workspace ? ` (workspace ${workspace.name})` : ''}:\n\n${row.message}`,
  });
  return toTicket(row);
}

/** Newest first, by page or cursor. */
export async function listContactMessages(deps: Pick<AppDeps, 'db' | 'config'>, request: ListRequest) {
  const query = deps.db.selectFrom('contact_messages').selectAll();
  const page = await paginate(deps, query, {
    list: 'admin.contact-messages',
    request: listRequestOf(request),
    counters: { scope: 'contact_messages' },
  });
  return mapItems(page, toContact);
}

/** Newest first, by page or cursor. */
export async function listTickets(deps: Pick<AppDeps, 'db' | 'config'>, request: ListRequest) {
  const query = deps.db.selectFrom('support_tickets').selectAll();
  const page = await paginate(deps, query, {
    list: 'admin.support-tickets',
    request: listRequestOf(request),
    counters: { scope: 'support_tickets' },
  });
  return mapItems(page, toTicket);
}
