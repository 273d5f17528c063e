// Invoices and dunning. A processor's invoice events are kept as invoices (GET /billing/invoices) and move
// the subscription they bill: a failed one makes it PAST_DUE (the grace period counts from the first
// failure) and mails the owners; a paid one makes it ACTIVE again. The end of the grace period is in
// lifecycle.ts.
import type { Kysely, Transaction } from 'kysely';
import type { BillingProvider, Database } from '../../db/schema.js';
import type { AppDeps } from '../../server/platform/context.js';
import { listRequestOf, mapItems, paginate, type ListRequest } from '../../server/platform/pagination.js';
import { paymentFailedMail } from '../../server/platform/email/templates.js';
import { sendAfterCommit } from '../../server/platform/email/mailer.js';
import { emitEvent } from '../events/emit.js';
import type { InvoiceChange } from './processors/types.js';

type Trx = Transaction<Database>;

/** What is done once the event's transaction has committed (mails). */
export type AfterCommit = Array<(deps: Pick<AppDeps, 'db' | 'mailer' | 'logger' | 'config'>) => Promise<void>>;

/** The owners of a workspace, to mail about its billing. */
export async function ownersOf(db: Kysely<Database>, workspaceId: string) {
  return db
    .selectFrom('workspace_members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .innerJoin('workspaces as w', 'w.id', 'm.workspace_id')
    .select(['u.email', 'u.name', 'w.name as workspaceName'])
    .where('m.workspace_id', '=', workspaceId)
    .where('m.role', '=', 'OWNER')
    .where('u.status', '=', 'ACTIVE')
    .execute();
}

/** The order in which an invoice's status may move: a paid or voided invoice never goes back. */
const INVOICE_RANK = { OPEN: 0, FAILED: 1, PAID: 2, VOID: 2 } as const;

export async function applyInvoice(
  trx: Trx,
  provider: BillingProvider,
  change: InvoiceChange,
  occurredAt: Date,
  afterCommit: AfterCommit,
): Promise<'applied' | 'unmatched' | 'ignored'> {
  const sub = change.providerSubscriptionId
    ? await trx
        .selectFrom('subscriptions')
        .selectAll()
        .where('provider', '=', provider)
        .where('provider_subscription_id', '=', change.providerSubscriptionId)
        .executeTakeFirst()
    : undefined;
  const workspaceId = sub?.workspace_id ?? change.workspaceId;
  if (!workspaceId) return 'unmatched';
  const workspace = await trx
    .selectFrom('workspaces')
    .select('id')
    .where('id', '=', workspaceId)
    .forUpdate()
    .executeTakeFirst();
  if (!workspace) return 'unmatched';

  const existing = await trx
    .selectFrom('invoices')
    .select(['id', 'status'])
    .where('provider', '=', provider)
    .where('provider_invoice_id', '=', change.providerInvoiceId)
    .executeTakeFirst();
  if (existing && INVOICE_RANK[existing.status] > INVOICE_RANK[change.status]) return 'ignored';
  const values = {
    number: change.number ?? null,
    amount_cents: change.amountCents,
    currency: change.currency || 'USD',
    status: change.status,
    period_start: change.periodStart ?? null,
    period_end: change.periodEnd ?? null,
    hosted_url: change.hostedUrl ?? null,
  };
  const invoice = existing
    ? await trx
        .updateTable('invoices')
        .set({ ...values, updated_at: new Date() })
        .where('id', '=', existing.id)
        .returning('id')
        .executeTakeFirstOrThrow()
    : await trx
        .insertInto('invoices')
        .values({ ...values, workspace_id: workspaceId, provider, provider_invoice_id: change.providerInvoiceId })
        .returning('id')
        .executeTakeFirstOrThrow();

  if (change.status === 'FAILED' || change.status === 'PAID') {
    await emitEvent(trx, workspaceId, change.status === 'PAID' ? 'invoice.paid' : 'invoice.payment_failed', {
      invoiceId: invoice.id,
      amountCents: change.amountCents,
      currency: values.currency,
      provider,
    });
  }
  if (!sub) return 'applied';
  if (change.status === 'FAILED' && (sub.status === 'ACTIVE' || sub.status === 'PAST_DUE')) {
    await trx
      .updateTable('subscriptions')
      .set({ status: 'PAST_DUE', past_due_since: sub.past_due_since ?? occurredAt, updated_at: new Date() })
      .where('id', '=', sub.id)
      .execute();
    afterCommit.push(async (deps) => {
      for (const owner of await ownersOf(deps.db, workspaceId)) {
        await sendAfterCommit(
          deps,
          paymentFailedMail({
            to: owner.email,
            name: owner.name,
            workspaceName: owner.workspaceName,
            graceDays: deps.config.BILLING_GRACE_DAYS,
            appUrl: deps.config.APP_URL,
          }),
        );
      }
    });
  } else if (change.status === 'PAID' && sub.status === 'PAST_DUE') {
    await trx
      .updateTable('subscriptions')
      .set({ status: 'ACTIVE', past_due_since: null, updated_at: new Date() })
      .where('id', '=', sub.id)
      .execute();
  }
  return 'applied';
}

/** A workspace's invoices, newest first, by page or cursor. */
export async function listInvoices(deps: Pick<AppDeps, 'db' | 'config'>, input: ListRequest & { workspaceId: string }) {
  const { workspaceId, ...request } = input;
  const query = deps.db.selectFrom('invoices').where('workspace_id', '=', workspaceId).selectAll();
  const page = await paginate(deps, query, {
    list: 'billing.invoices',
    // Few rows per workspace: counted (capped) rather than kept in list_counters.
    request: listRequestOf(request),
  });
  return mapItems(page, (i) => ({
    id: i.id,
    number: i.number,
    amountCents: i.amount_cents,
    currency: i.currency,
    status: i.status,
    periodStart: i.period_start?.toISOString() ?? null,
    periodEnd: i.period_end?.toISOString() ?? null,
    hostedUrl: i.hosted_url,
    createdAt: i.created_at.toISOString(),
  }));
}
