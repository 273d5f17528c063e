// Shared by the MCP tests: a failed webhook delivery to retry (the write tool webhooks_retry), and the
// audit entry a retry leaves.
import { sql } from 'kysely';
import type { TestApp } from '../helpers/app.js';

/** A webhook of `workspaceId` to a closed loopback port, with one failed delivery. */
export async function failedDelivery(app: TestApp, workspaceId: string) {
  const hook = await app.deps.db
    .insertInto('webhooks')
    .values({
      workspace_id: workspaceId,
      name: 'mcp audit',
      url: 'http://127.0.0.1:9/hook',
      events: JSON.stringify(['billing.updated']),
      secret_encrypted: app.deps.secrets.seal('whsec_mcp_audit'),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const delivery = await app.deps.db
    .insertInto('webhook_deliveries')
    .values({
      webhook_id: hook.id,
      workspace_id: workspaceId,
      event: 'billing.updated',
      payload: JSON.stringify({ event: 'billing.updated' }),
      status: 'failed',
      attempts: 1,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { webhookId: hook.id, deliveryId: delivery.id };
}

/** The audit entries of the retries of `deliveryId`. */
export const retryAudits = (app: TestApp, deliveryId: string) =>
  app.deps.db
    .selectFrom('audit_logs')
    .selectAll()
    .where('action', '=', 'webhook.delivery_retried')
    .where(sql<string>`metadata->>'deliveryId'`, '=', deliveryId)
    .execute();
