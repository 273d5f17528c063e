// Outbound webhooks of a workspace: endpoints (the `whsec_` signing secret is shown once and kept
// encrypted), secret rotation, test deliveries, the delivery log and retries. Deliveries themselves are
// made by runner.ts (directly or through BullMQ) with routers/webhooks/delivery.ts.
import crypto from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import type { Database, DeliveryStatus, WebhookDeliveriesTable, WebhooksTable } from '../../db/schema.js';
import { isEventName, type EventName } from '../events/catalog.js';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import { mapItems, paginate, type ListRequest } from '../../server/platform/pagination.js';
import type { Actor } from '../../server/platform/actor.js';
import { recordAudit } from '../audit/service.js';
import { checkWebhookUrl } from './url-policy.js';

type Db = Kysely<Database>;

type WebhookDeps = Pick<AppDeps, 'db' | 'config' | 'secrets'>;

/** Starts the first attempt of new deliveries (runner.ts). */
export interface DeliveryStarter {
  start(deliveryIds: string[], opts?: { wait?: boolean }): Promise<void>;
}

/** What a use case that starts deliveries needs: the database, and the runner (AppDeps.webhooks). */
type StarterDeps = Pick<AppDeps, 'db'> & { webhooks: DeliveryStarter };

/**
 * How long a delivery taken for an attempt is reserved to it: a new one to its first attempt, one retried
 * by hand to that attempt, one the sweep claims to the sweep's. The direct-mode sweep skips rows reserved
 * until later (next_retry_at); recording the attempt ends the reservation. Longer than an attempt takes
 * with the default WEBHOOK_TIMEOUT_MS (which bounds its connection, its answer's headers and each pause in
 * its body).
 */
const DELIVERY_LEASE_MS = 60_000;
export const leaseEnd = (from = Date.now()) => new Date(from + DELIVERY_LEASE_MS);

/**
 * A signing secret: `whsec_` and 32 random bytes in standard base64, the format of Standard Webhooks
 * (whose signature is keyed by the decoded bytes; the spec's X-Service-Signature by the whole string).
 */
export const newSecret = () => `whsec_${crypto.randomBytes(32).toString('base64')}`;
const notFound = () => new AppError('NOT_FOUND', 'Webhook not found.');

export function toWebhook(h: Selectable<WebhooksTable>) {
  return {
    id: h.id,
    workspaceId: h.workspace_id,
    name: h.name,
    url: h.url,
    // A name dropped from the catalogue since the webhook subscribed is no longer answered.
    events: h.events.filter(isEventName),
    isActive: h.is_active,
    disabledReason: h.disabled_reason,
    consecutiveFailures: h.consecutive_failures,
    secretRotationEndsAt:
      h.previous_secret_expires_at && h.previous_secret_expires_at > new Date()
        ? h.previous_secret_expires_at.toISOString()
        : null,
    createdAt: h.created_at.toISOString(),
    updatedAt: h.updated_at.toISOString(),
  };
}

export function toDelivery(d: Selectable<WebhookDeliveriesTable>) {
  return {
    id: d.id,
    webhookId: d.webhook_id,
    event: d.event,
    status: d.status,
    attempts: d.attempts,
    requestHeaders: d.request_headers,
    payload: d.payload,
    responseStatus: d.response_status,
    responsePreview: d.response_preview,
    durationMs: d.duration_ms,
    // Only a retry waiting has a next retry time: on other rows the column holds a lease (leaseEnd).
    nextRetryAt: d.status === 'retrying' ? (d.next_retry_at?.toISOString() ?? null) : null,
    error: d.last_error,
    createdAt: d.created_at.toISOString(),
    updatedAt: d.updated_at.toISOString(),
  };
}

function checkUrl(deps: Pick<WebhookDeps, 'config'>, url: string) {
  checkWebhookUrl(url, { allowPrivate: deps.config.WEBHOOK_ALLOW_PRIVATE_URLS });
}

export async function listWebhooks({ db }: Pick<AppDeps, 'db'>, { workspaceId }: { workspaceId: string }) {
  const rows = await db
    .selectFrom('webhooks')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  return { items: rows.map(toWebhook) };
}

export async function createWebhook(
  deps: WebhookDeps,
  actor: Actor,
  input: { workspaceId: string; name: string; url: string; events: EventName[] },
) {
  const { workspaceId } = input;
  checkUrl(deps, input.url);
  const secret = newSecret();
  const row = await deps.db.transaction().execute(async (trx) => {
    const row = await trx
      .insertInto('webhooks')
      .values({
        workspace_id: workspaceId,
        name: input.name,
        url: input.url,
        events: JSON.stringify(input.events),
        secret_encrypted: deps.secrets.seal(secret),
        created_by: actor.userId,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordAudit(trx, actor, {
      action: 'webhook.created',
      targetType: 'webhook',
      targetId: row.id,
      workspaceId,
      metadata: { name: row.name, url: row.url, events: row.events },
    });
    return row;
  });
  return { ...toWebhook(row), secret };
}

async function lockWebhook(db: Db, workspaceId: string, webhookId: string) {
  const row = await db
    .selectFrom('webhooks')
    .selectAll()
    .where('id', '=', webhookId)
    .where('workspace_id', '=', workspaceId)
    .forUpdate()
    .executeTakeFirst();
  if (!row) throw notFound();
  return row;
}

export async function updateWebhook(
  deps: Pick<WebhookDeps, 'db' | 'config'>,
  actor: Actor,
  input: {
    workspaceId: string;
    webhookId: string;
    name?: string;
    url?: string;
    events?: EventName[];
    isActive?: boolean;
  },
) {
  const { workspaceId, webhookId, ...changes } = input;
  if (changes.url !== undefined) checkUrl(deps, changes.url);
  return deps.db.transaction().execute(async (trx) => {
    const before = await lockWebhook(trx, workspaceId, webhookId);
    const reactivated = changes.isActive === true && !before.is_active;
    const row = await trx
      .updateTable('webhooks')
      .set({
        ...(changes.name !== undefined && { name: changes.name }),
        ...(changes.url !== undefined && { url: changes.url }),
        ...(changes.events !== undefined && { events: JSON.stringify(changes.events) }),
        ...(changes.isActive !== undefined && {
          is_active: changes.isActive,
          disabled_reason: changes.isActive ? null : 'Disabled by a member.',
        }),
        // Turned on again: a fresh start for the failure streak.
        ...(reactivated && { consecutive_failures: 0, failing_since: null }),
        updated_at: new Date(),
      })
      .where('id', '=', webhookId)
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordAudit(trx, actor, {
      action: 'webhook.updated',
      targetType: 'webhook',
      targetId: webhookId,
      workspaceId,
      metadata: { fields: Object.keys(changes) },
    });
    return toWebhook(row);
  });
}

export async function deleteWebhook(
  { db }: Pick<AppDeps, 'db'>,
  actor: Actor,
  { workspaceId, webhookId }: { workspaceId: string; webhookId: string },
) {
  await db.transaction().execute(async (trx) => {
    const row = await lockWebhook(trx, workspaceId, webhookId);
    await trx.deleteFrom('webhooks').where('id', '=', webhookId).execute();
    await recordAudit(trx, actor, {
      action: 'webhook.deleted',
      targetType: 'webhook',
      targetId: webhookId,
      workspaceId,
      metadata: { name: row.name, url: row.url },
    });
  });
  return { message: 'Webhook deleted.' };
}

/**
 * A new signing secret, shown once. For `gracePeriodSeconds` the old secret signs too (deliveries carry
 * both signatures, comma-separated), so receivers can switch without missing a delivery.
 */
export async function rotateSecret(
  deps: Pick<WebhookDeps, 'db' | 'secrets'>,
  actor: Actor,
  input: { workspaceId: string; webhookId: string; gracePeriodSeconds: number },
) {
  const { workspaceId, webhookId, gracePeriodSeconds } = input;
  const secret = newSecret();
  const row = await deps.db.transaction().execute(async (trx) => {
    const before = await lockWebhook(trx, workspaceId, webhookId);
    const row = await trx
      .updateTable('webhooks')
      .set({
        secret_encrypted: deps.secrets.seal(secret),
        previous_secret_encrypted: gracePeriodSeconds > 0 ? before.secret_encrypted : null,
        previous_secret_expires_at: gracePeriodSeconds > 0 ? new Date(Date.now() + gracePeriodSeconds * 1000) : null,
        updated_at: new Date(),
      })
      .where('id', '=', webhookId)
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordAudit(trx, actor, {
      action: 'webhook.secret_rotated',
      targetType: 'webhook',
      targetId: webhookId,
      workspaceId,
      metadata: { gracePeriodSeconds },
    });
    return row;
  });
  return { ...toWebhook(row), secret };
}

/** The body of every delivery: the spec's envelope. */
export const envelope = (
  event: string,
  workspaceId: string,
  data: Record<string, unknown>,
  createdAt = new Date(),
) => ({
  event,
  createdAt: createdAt.toISOString(),
  workspaceId,
  data,
});

/** Sends a webhook.test delivery now (the runner awaits its attempt) and answers it with its outcome. */
export async function sendTest(
  deps: StarterDeps,
  { workspaceId, webhookId }: { workspaceId: string; webhookId: string },
) {
  const hook = await deps.db
    .selectFrom('webhooks')
    .select(['id', 'name'])
    .where('id', '=', webhookId)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
  if (!hook) throw notFound();
  const delivery = await deps.db
    .insertInto('webhook_deliveries')
    .values({
      webhook_id: hook.id,
      workspace_id: workspaceId,
      event: 'webhook.test',
      payload: JSON.stringify(
        envelope('webhook.test', workspaceId, {
          message: `This is a test delivery of the webhook "${hook.name}".`,
          webhookId: hook.id,
        }),
      ),
      status: 'pending',
      next_retry_at: leaseEnd(),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  await deps.webhooks.start([delivery.id], { wait: true });
  return getDelivery(deps, { workspaceId, deliveryId: delivery.id });
}

export async function getDelivery(
  { db }: Pick<AppDeps, 'db'>,
  { workspaceId, deliveryId }: { workspaceId: string; deliveryId: string },
) {
  const row = await db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('id', '=', deliveryId)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
  if (!row) throw new AppError('NOT_FOUND', 'Delivery not found.');
  return toDelivery(row);
}

/** The delivery log, newest first, by page or cursor; the total is exact without filters. */
export async function listDeliveries(
  deps: Pick<AppDeps, 'db' | 'config'>,
  input: ListRequest & { workspaceId: string; webhookId?: string; status?: DeliveryStatus },
) {
  const { workspaceId, webhookId, status, ...request } = input;
  const filters = { webhookId, status };
  let query = deps.db.selectFrom('webhook_deliveries').where('workspace_id', '=', workspaceId);
  if (filters.webhookId) query = query.where('webhook_id', '=', filters.webhookId);
  if (filters.status) query = query.where('status', '=', filters.status);
  const page = await paginate(deps, query.selectAll(), {
    list: 'webhook-deliveries',
    request,
    counters: filters.webhookId || filters.status ? undefined : { scope: 'webhook_deliveries', id: workspaceId },
  });
  return mapItems(page, toDelivery);
}

/**
 * Sends a failed (or waiting) delivery again now, with the same X-Service-Delivery. The reset leases the
 * row to this attempt: pending and older than 30 s, it would otherwise be the sweep's too, and be sent
 * twice while a slow endpoint holds this attempt.
 */
export async function retryDelivery(
  deps: StarterDeps,
  actor: Actor,
  { workspaceId, deliveryId }: { workspaceId: string; deliveryId: string },
) {
  const reset = await deps.db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable('webhook_deliveries')
      .set({ status: 'pending', next_retry_at: leaseEnd(), updated_at: new Date() })
      .where('id', '=', deliveryId)
      .where('workspace_id', '=', workspaceId)
      .where('status', 'in', ['failed', 'retrying'])
      .returning(['id', 'webhook_id', 'event'])
      .executeTakeFirst();
    if (row) {
      await recordAudit(trx, actor, {
        action: 'webhook.delivery_retried',
        targetType: 'webhook',
        targetId: row.webhook_id,
        workspaceId,
        metadata: { deliveryId, event: row.event },
      });
    }
    return row;
  });
  if (!reset) {
    const existing = await getDelivery(deps, { workspaceId, deliveryId });
    throw new AppError(
      'INVALID_STATE',
      `The delivery is ${existing.status}; only a failed or retrying delivery can be retried.`,
    );
  }
  await deps.webhooks.start([deliveryId], { wait: true });
  return getDelivery(deps, { workspaceId, deliveryId });
}
