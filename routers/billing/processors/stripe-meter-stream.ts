// Stripe's meter events on the v2 meter event stream, for the Stripe adapter (stripe.ts): batches of up to
// USAGE_BATCH_MAX events, each request authenticated with a meter event session's short-lived token.
import type Stripe from 'stripe';
import { AppError } from '../../../server/platform/errors.js';
import { type UsageEvent, USAGE_BATCH_MAX } from './types.js';

/** A meter event session is renewed this long before its `expires_at` (sessions last 15 minutes). */
const SESSION_RENEW_MARGIN_MS = 60_000;

/**
 * Meter events through Stripe's v2 meter event stream (the high-throughput API, on its own host,
 * meter-events.stripe.com; the SDK sends it to PROCESSOR_A_BASE_URL's host when that is set): up to 100
 * events a request, authenticated with the short-lived token of a meter event session (created with the
 * secret key, reused until shortly before it expires; one creation at a time). A request refused for an
 * expired session (401) is sent once more with a new session. Each event carries our identifier, so a
 * resent batch is not counted twice. Stripe validates the events of a batch asynchronously: a 2xx is its
 * acknowledgement of the batch, and an event it later finds invalid (an unknown customer or meter) is
 * reported by Stripe's meter error reports, not here. Any other failure is `unavailable()`.
 */
export function createMeterStream(client: () => Stripe, unavailable: () => AppError) {
  let session: { token: string; renewAt: number } | null = null;
  let creating: Promise<string> | null = null;

  const token = async (): Promise<string> => {
    if (session && Date.now() < session.renewAt) return session.token;
    creating ??= (async () => {
      try {
        const created = await client().v2.billing.meterEventSession.create();
        const expiresAt = Date.parse(created.expires_at);
        const lifetime = Number.isFinite(expiresAt) ? expiresAt - Date.now() : 0;
        // A session about to expire (or of a lifetime shorter than the margin) is used for half of what is
        // left, never longer.
        const renewAt = Date.now() + Math.max(0, Math.min(lifetime - SESSION_RENEW_MARGIN_MS, lifetime / 2));
        session = { token: created.authentication_token, renewAt };
        return created.authentication_token;
      } finally {
        creating = null;
      }
    })();
    return creating;
  };

  const expired = (err: unknown) =>
    (err as { statusCode?: number }).statusCode === 401 ||
    (err as { type?: string }).type === 'TemporarySessionExpiredError';

  return {
    async send(events: UsageEvent[]): Promise<void> {
      if (events.length === 0) return;
      if (events.length > USAGE_BATCH_MAX) throw new Error(`at most ${USAGE_BATCH_MAX} meter events a request`);
      const body = {
        events: events.map((e) => ({
          event_name: e.meterEventName,
          // Stripe counts one event per identifier: a batch resent after a lost answer is not counted twice.
          identifier: e.identifier,
          timestamp: e.occurredAt.toISOString(),
          payload: { stripe_customer_id: e.customerId, value: '1' },
        })),
      };
      for (let attempt = 0; ; attempt++) {
        let used: string | undefined;
        try {
          used = await token();
          await client().v2.billing.meterEventStream.create(body, { apiKey: used });
          return;
        } catch (err) {
          if (err instanceof AppError) throw err;
          if (used !== undefined && expired(err)) {
            // Expired (or revoked) before our margin: dropped, unless another request renewed it already.
            if (session?.token === used) session = null;
            if (attempt === 0) continue;
          }
          throw unavailable();
        }
      }
    },
  };
}
