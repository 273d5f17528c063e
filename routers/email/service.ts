// The mails EMAIL_PROVIDER=MOCK wrote instead of sending, newest first.
import type { PlatformRole } from '../../db/schema.js';
import { mapItems, paginate, type ListRequest } from '../../server/platform/pagination.js';
import type { AppDeps } from '../../server/platform/context.js';
import { platformRoleHas } from '../../server/platform/permissions.js';

/** What the read-only demo admin sees in place of a mail's link. */
export const HIDDEN_LINK = '[link hidden from the read-only demo admin]';

/**
 * A mail's link carries a single-use token (a password reset, a verification, an invitation): whoever
 * reads it can act as the recipient. The demo admin reads what an admin reads but must not be able to take
 * over an account (a reset link of the real admin would make it one), so it gets the mails without their
 * links, in `link` and in the text alike.
 */
function withoutLink<M extends { text: string; link: string | null }>(mail: M): M {
  return mail.link ? { ...mail, text: mail.text.split(mail.link).join(HIDDEN_LINK), link: null } : mail;
}

/** The mails, to one address or all; with their links only for a caller whose platform role holds admin.write. */
export async function listEmailLogs(
  deps: Pick<AppDeps, 'db' | 'config'>,
  input: ListRequest & { to?: string; callerPlatformRole: PlatformRole },
) {
  const { to, callerPlatformRole, ...request } = input;
  const filters = { to };
  let query = deps.db.selectFrom('email_logs');
  if (filters.to) query = query.where('to', '=', filters.to.trim().toLowerCase());
  const page = await paginate(deps, query.select(['id', 'to', 'subject', 'template', 'text', 'link', 'created_at']), {
    list: 'admin.email-logs',
    request,
    counters: filters.to ? undefined : { scope: 'email_logs' },
  });
  const readOnly = !platformRoleHas(callerPlatformRole, 'admin.write');
  return mapItems(page, (r) => {
    const mail = {
      id: r.id,
      to: r.to,
      subject: r.subject,
      template: r.template,
      text: r.text,
      link: r.link,
      createdAt: r.created_at.toISOString(),
    };
    return readOnly ? withoutLink(mail) : mail;
  });
}
