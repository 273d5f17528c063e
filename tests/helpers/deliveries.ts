// A webhook with one failed delivery, made straight in the database: what a retry (REST, /trpc or the MCP
// tool webhooks_retry) needs, without sending anything first.
import type { TestApp } from './app.js';

/** A webhook of `workspaceId` to `url` (a closed loopback port unless told), with one failed delivery. */
export async function failedDelivery(
  app: TestApp,
  workspaceId: string,
  { url = 'http://127.0.0.1:9/hook', name = 'failed delivery' }: { url?: string; name?: string } = {},
) {
  const hook = await app.deps.db
    .insertInto('webhooks')
    .values({
      workspace_id: workspaceId,
      name,
      url,
      events: JSON.stringify(['billing.updated']),
      secret_encrypted: app.deps.secrets.seal('whsec_failed_delivery'),
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
