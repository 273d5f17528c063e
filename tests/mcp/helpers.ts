// Shared by the MCP tests: the audit entry a retry of a failed delivery (the write tool webhooks_retry)
// leaves; the delivery itself comes from tests/helpers/deliveries.ts.
import { sql } from 'kysely';
import type { TestApp } from '../helpers/app.js';
export { failedDelivery } from '../helpers/deliveries.js';

/** The audit entries of the retries of `deliveryId`. */
export const retryAudits = (app: TestApp, deliveryId: string) =>
  app.deps.db
    .selectFrom('audit_logs')
    .selectAll()
    .where('action', '=', 'webhook.delivery_retried')
    .where(sql<string>`metadata->>'deliveryId'`, '=', deliveryId)
    .execute();
