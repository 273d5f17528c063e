// One delivery attempt of a webhook: the spec's headers and envelope, the signature over
// `timestamp + "." + body`, the URL checked again against the resolved address (and the connection made
// to that address), no redirects, a timeout, and every attempt recorded. The same function serves the
// direct path, the sweeper and the BullMQ worker; callers decide when to try again from the outcome.
import crypto from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import { sql } from 'kysely';
import { Agent } from 'undici';
import { batched } from '../../db/batched.js';
import { compiledOnce } from '../../db/compiled.js';
import type { Config } from '../../server/platform/config.js';
import type { AppDeps } from '../../server/platform/context.js';
import { demoAccountEmails } from '../../server/platform/accounts.js';
import { remember } from '../../server/platform/bounded-cache.js';
import { storableText } from '../../server/platform/unstorable-text.js';
import { AppError } from '../../server/platform/errors.js';
import type { SecretBox } from '../../server/platform/security/secret-box.js';
import { recordAudit } from '../audit/service.js';
import { checkWebhookUrl, resolveDeliveryAddress, type CheckedUrl } from './url-policy.js';
import type { Actor } from '../../server/platform/actor.js';

export type DeliveryDeps = Pick<AppDeps, 'db' | 'config' | 'logger' | 'secrets' | 'mailer'>;

export const RESPONSE_PREVIEW_CHARS = 1024;
/** An endpoint failing this many deliveries in a row, over at least this long, is switched off. */
export const AUTO_DISABLE_AFTER_FAILURES = 15;
export const AUTO_DISABLE_AFTER_MS = 3 * 86_400_000;

export type AttemptOutcome =
  | { status: 'success' | 'disabled' }
  | { status: 'retrying'; retryAt: Date }
  | { status: 'failed'; permanent: boolean }
  // The gate did not let the attempt start: nothing was sent or recorded (the caller runs it elsewhere).
  | { status: 'turned-away' };

/** How an attempt's request ended, for a gate: an HTTP answer, no answer within the timeout, or neither. */
export type RequestEnd = 'answered' | 'timed-out' | 'failed';

/**
 * Lets an attempt's request start, once the delivery is read: answers the call to make when the request
 * has ended, or undefined to turn the attempt away (nothing is sent or recorded). The queue's lanes
 * (jobs/lanes.ts) keep an endpoint that does not answer from taking the whole worker.
 */
export interface DeliveryGate {
  enter(webhookId: string): ((end: RequestEnd) => void) | undefined;
}

/** No answer (no connection, no headers, or a body that stopped) within WEBHOOK_TIMEOUT_MS. */
class DeliveryTimeout extends Error {}

export const sign = (secret: string, timestamp: number, body: string) =>
  crypto.createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');

const STANDARD_SECRET = /^whsec_((?:[A-Za-z0-9+/]{4})+(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)$/;

/**
 * The key of a Standard Webhooks signature: the bytes of a `whsec_` + standard base64 secret (every secret
 * made since they are signed so). Undefined for a secret that does not decode that way exactly (older
 * secrets were base64url): its deliveries carry only X-Service-Signature.
 */
export function standardWebhooksKey(secret: string): Buffer | undefined {
  const encoded = STANDARD_SECRET.exec(secret)?.[1];
  if (!encoded) return undefined;
  const key = Buffer.from(encoded, 'base64');
  return key.toString('base64') === encoded ? key : undefined;
}

/** `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` (Standard Webhooks' `webhook-signature`). */
export const signStandard = (key: Buffer, id: string, timestamp: number, body: string) =>
  `v1,${crypto.createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;

interface HttpAnswer {
  status: number;
  preview: string;
}

/**
 * Outbound HTTP (undici): a request goes to the checked address itself (the origin is that address and
 * port), so no later DNS answer can move it. The Host header and, over https, the TLS server name that the
 * certificate is verified against are the URL's own host. Connections are kept alive per address and port,
 * at most 50 at once; an https connection is reused only for the same server name. Redirects are never
 * followed. One dispatcher per timeout (in practice one per process): its connect timeout is the delivery's.
 */
const dispatchers = new Map<number, Agent>();
const dispatcherFor = (timeoutMs: number) => {
  let agent = dispatchers.get(timeoutMs);
  if (!agent)
    dispatchers.set(
      timeoutMs,
      (agent = new Agent({ connections: 50, keepAliveTimeout: 30_000, connect: { timeout: timeoutMs } })),
    );
  return agent;
};

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** Ends the reading of an answer once its preview is complete. */
class PreviewComplete extends Error {}

/**
 * POSTs `body` to the checked address of `url`; reads at most the preview of the answer. Through undici's
 * handler interface rather than `request()`: no stream or promise per answer, which is most of the
 * client's cost for the short answers webhooks get. An answer cut short after its status (the preview is
 * complete, the connection broke, the body timed out) still counts with what arrived of it.
 */
function post(
  url: URL,
  address: { address: string; family: 4 | 6 },
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
): Promise<HttpAnswer> {
  const host = address.family === 6 ? `[${address.address}]` : address.address;
  return new Promise((resolve, reject) => {
    let status = 0;
    let preview = '';
    // Made with the first chunk of an answer: many have no body.
    let text: StringDecoder | undefined;
    // Made storable (a NUL would fail the statement recording it, and every delivery batched with it).
    const answered = () =>
      resolve({ status, preview: text ? storableText((preview + text.end()).slice(0, RESPONSE_PREVIEW_CHARS)) : '' });
    dispatcherFor(timeoutMs).dispatch(
      {
        origin: `${url.protocol}//${host}${url.port ? `:${url.port}` : ''}`,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        headers: { ...headers, host: url.host },
        body,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      },
      {
        // undici tells its handler interfaces apart by this method.
        onRequestStart: () => undefined,
        onResponseStart: (_controller, statusCode) => void (status = statusCode),
        onResponseData: (controller, chunk) => {
          preview += (text ??= new StringDecoder('utf8')).write(chunk);
          if (preview.length >= RESPONSE_PREVIEW_CHARS) controller.abort(new PreviewComplete());
        },
        onResponseEnd: answered,
        onResponseError: (_controller, err) => {
          if (status) answered();
          else
            reject(
              TIMEOUT_CODES.has((err as { code?: string }).code ?? '')
                ? new DeliveryTimeout(`no answer within ${timeoutMs} ms`)
                : err,
            );
        },
      },
    );
  });
}

/**
 * Signing secrets, decrypted once per sealed value instead of once per delivery. A sealed value stands for
 * one secret forever (a rotation seals a new one under a new IV), so an entry never goes stale. The
 * plaintexts stay in this process's memory, beside the key that decrypts them all.
 */
const openedSecrets = new WeakMap<SecretBox, Map<string, string>>();
function openSecret(box: SecretBox, sealed: string): string {
  let opened = openedSecrets.get(box);
  if (!opened) openedSecrets.set(box, (opened = new Map<string, string>()));
  return opened.get(sealed) ?? remember(opened, sealed, box.open(sealed));
}

/**
 * Webhook URLs as checked for delivery, once per URL and setting: the check of a URL as written depends on
 * nothing else. Every address a host name resolves to is still checked at every delivery
 * (resolveDeliveryAddress). A URL that fails its check is not kept: it is refused again next time.
 */
const checkedUrls = new Map<string, CheckedUrl>();
function checkedUrlOf(url: string, allowPrivate: boolean): CheckedUrl {
  const key = `${allowPrivate} ${url}`;
  return checkedUrls.get(key) ?? remember(checkedUrls, key, checkWebhookUrl(url, { allowPrivate }));
}

function retryDelayMs(config: Config, attempts: number) {
  return config.WEBHOOK_RETRY_BACKOFF_SECONDS * 1000 * 2 ** Math.max(0, attempts - 1);
}

interface AttemptRecord {
  id: string;
  status: AttemptOutcome['status'];
  attempts: number;
  request_headers: Record<string, string>;
  response_status: number | null;
  response_preview: string | null;
  duration_ms: number;
  next_retry_at: string | null;
  last_error: string | null;
}

/**
 * The delivery path's one statement: it records the attempts of `records` (a JSON array of AttemptRecord)
 * and reads the deliveries `ids` with their webhook, and whether their workspace is a demo workspace (one
 * of its owners is a demo account of `demoEmails`; a demo workspace's deliveries may be switched off).
 * The demo workspaces are looked up once per statement. A delivery is never read and recorded by the same
 * statement: its attempt reads it, then records it.
 */
const deliveryRoundTrip = compiledOnce((db, ids: string[], demoEmails: string[], records: string) =>
  db
    .with(
      'recorded',
      () =>
        // A raw statement is not put in parentheses by Kysely: they are part of it.
        sql`(update webhook_deliveries d set status = v.status, attempts = v.attempts, request_headers = v.request_headers,
        response_status = v.response_status, response_preview = v.response_preview, duration_ms = v.duration_ms,
        next_retry_at = v.next_retry_at, last_error = v.last_error, updated_at = now()
      from jsonb_to_recordset(${records}::jsonb) as v(id uuid, status text, attempts int, request_headers jsonb,
        response_status int, response_preview text, duration_ms int, next_retry_at timestamptz, last_error text)
      where d.id = v.id)`,
    )
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhooks as h', 'h.id', 'd.webhook_id')
    .select([
      'd.id',
      'd.workspace_id',
      'd.event',
      'd.status',
      'd.attempts',
      // The envelope as the request body: jsonb's own text, not parsed here only to be serialised again.
      sql<string>`d.payload::text`.as('body'),
      'h.id as webhook_id',
      'h.url',
      'h.is_active',
      'h.secret_encrypted',
      'h.previous_secret_encrypted',
      'h.previous_secret_expires_at',
      'h.consecutive_failures',
      sql<boolean>`d.workspace_id = any(array(select m.workspace_id from users u join workspace_members m on m.user_id = u.id
        where u.email = any(${demoEmails}) and m.role = 'OWNER'))`.as('demo_workspace'),
      // A workspace waiting for its purge hears only of its deletion (routers/workspaces/lifecycle.ts).
      sql<boolean>`exists (select 1 from workspaces w where w.id = d.workspace_id and w.status = 'PENDING_DELETION')
        and d.event <> 'workspace.deleted'`.as('workspace_deleted'),
    ])
    .where(sql<boolean>`d.id = any(${ids})`),
);
type DeliveryRow = Awaited<ReturnType<typeof deliveryRoundTrip>>[number];

type RoundTripInput = { read: string } | { record: AttemptRecord };

/**
 * Reads and records of every attempt running, batched (db/batched.ts) per set of delivery dependencies
 * (one per process): the attempts that start and those that end while the previous statement runs share
 * the next one. One statement at a time: a delivery is background work, and most of a statement's cost
 * in Postgres is fixed (about 500 µs, half of it planning; about 34 µs a delivery besides), so the larger
 * batches cost Postgres 15 to 20 % less a delivery in the bench than two statements at a time, at the
 * same rate.
 */
const roundTrip = batched<RoundTripInput, DeliveryRow | undefined, DeliveryDeps>(
  async ({ db, config }, inputs) => {
    const reads = inputs.flatMap((i) => ('read' in i ? [i.read] : []));
    const records = inputs.flatMap((i) => ('record' in i ? [i.record] : []));
    const demoEmails = config.WEBHOOK_DEMO_DELIVERY_DISABLED ? demoAccountEmails(config) : [];
    const rows = await deliveryRoundTrip(db, [...new Set(reads)], demoEmails, JSON.stringify(records));
    const byId = new Map(rows.map((row) => [row.id, row]));
    return inputs.map((i) => ('read' in i ? byId.get(i.read) : undefined));
  },
  { inFlight: 1 },
);

/**
 * Makes one attempt of the delivery (unless it is already final) and records it. Safe to call twice for
 * the same delivery: a delivery already `success`, `failed` or `disabled` is left as it is.
 * `attemptAtLeast`: the number this attempt has at least, when the caller knows of attempts that started
 * but could not be recorded (the queue: a worker killed in the middle of one). `gate`: asked before the
 * request starts (the queue's lanes); an attempt it turns away is `turned-away`, with nothing recorded.
 * `actor` (SYSTEM_ACTOR: deliveries are nobody's request) is audited when the endpoint is switched off.
 */
export async function attemptDelivery(
  deps: DeliveryDeps,
  actor: Actor,
  input: { deliveryId: string; attemptAtLeast?: number; gate?: DeliveryGate },
): Promise<AttemptOutcome> {
  const { db, config } = deps;
  const { deliveryId, ...opts } = input;
  const row = await roundTrip(deps, { read: deliveryId });
  if (!row) return { status: 'failed', permanent: true };
  if (row.status === 'success' || row.status === 'failed' || row.status === 'disabled') {
    return row.status === 'failed' ? { status: 'failed', permanent: true } : { status: row.status };
  }

  const reasonDisabled = !config.WEBHOOK_DELIVERY_ENABLED
    ? 'Delivery is switched off (WEBHOOK_DELIVERY_ENABLED=false).'
    : !row.is_active
      ? 'The webhook is disabled.'
      : row.demo_workspace
        ? 'Deliveries of demo workspaces are disabled (WEBHOOK_DEMO_DELIVERY_DISABLED).'
        : row.workspace_deleted
          ? 'The workspace is deleted.'
          : undefined;
  if (reasonDisabled) {
    await db
      .updateTable('webhook_deliveries')
      .set({ status: 'disabled', last_error: reasonDisabled, next_retry_at: null, updated_at: new Date() })
      .where('id', '=', deliveryId)
      .execute();
    return { status: 'disabled' };
  }

  const leave = opts.gate?.enter(row.webhook_id);
  if (opts.gate && !leave) return { status: 'turned-away' };

  const body = row.body;
  const timestamp = Math.floor(Date.now() / 1000);
  const secrets = [openSecret(deps.secrets, row.secret_encrypted)];
  if (row.previous_secret_encrypted && row.previous_secret_expires_at && row.previous_secret_expires_at > new Date()) {
    secrets.push(openSecret(deps.secrets, row.previous_secret_encrypted));
  }
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'User-Agent': config.WEBHOOK_USER_AGENT,
    'X-Service-Event': row.event,
    'X-Service-Delivery': row.id,
    'X-Service-Timestamp': String(timestamp),
    // Standard Webhooks (standardwebhooks.com) beside the spec's headers.
    'webhook-id': row.id,
    'webhook-timestamp': String(timestamp),
  };
  const signature = secrets.map((s) => sign(s, timestamp, body)).join(',');
  // Signed by each secret that has the Standard Webhooks format, the current one first.
  const standard = secrets
    .map(standardWebhooksKey)
    .filter((key) => key !== undefined)
    .map((key) => signStandard(key, row.id, timestamp, body));
  // The signatures are sent, never recorded with the delivery's headers.
  const signatures: Record<string, string> = { 'X-Service-Signature': signature };
  if (standard.length) signatures['webhook-signature'] = standard.join(' ');

  const attempts = Math.max(row.attempts + 1, opts.attemptAtLeast ?? 0);
  const started = performance.now();
  let answer: HttpAnswer | undefined;
  let error: string | undefined;
  let permanent = false;
  let timedOut = false;
  try {
    const allowPrivate = config.WEBHOOK_ALLOW_PRIVATE_URLS;
    const checked = checkedUrlOf(row.url, allowPrivate);
    const address = await resolveDeliveryAddress(checked, {
      allowPrivate,
      keepAnswersMs: config.WEBHOOK_DNS_CACHE_SECONDS * 1000,
    });
    answer = await post(checked.url, address, { ...headers, ...signatures }, body, config.WEBHOOK_TIMEOUT_MS);
  } catch (err) {
    permanent = err instanceof AppError && err.code === 'WEBHOOK_URL_NOT_ALLOWED';
    error = err instanceof Error ? err.message : 'delivery failed';
    timedOut = err instanceof DeliveryTimeout;
  }
  leave?.(answer ? 'answered' : timedOut ? 'timed-out' : 'failed');
  const durationMs = Math.round(performance.now() - started);

  let outcome: AttemptOutcome;
  if (answer && answer.status >= 200 && answer.status < 300) outcome = { status: 'success' };
  else {
    if (answer) {
      // Redirects are not followed: a 3xx is a failure like any other non-2xx.
      error = `The endpoint answered HTTP ${answer.status}.`;
      permanent = answer.status === 410;
    }
    outcome =
      !permanent && attempts <= config.WEBHOOK_MAX_RETRIES
        ? { status: 'retrying', retryAt: new Date(Date.now() + retryDelayMs(config, attempts)) }
        : { status: 'failed', permanent };
  }

  await roundTrip(deps, {
    record: {
      id: deliveryId,
      status: outcome.status,
      attempts,
      request_headers: headers,
      response_status: answer?.status ?? null,
      response_preview: answer ? answer.preview : null,
      duration_ms: durationMs,
      next_retry_at: outcome.status === 'retrying' ? outcome.retryAt.toISOString() : null,
      last_error: outcome.status === 'success' || error === undefined ? null : storableText(error),
    },
  });
  // A success of a healthy endpoint changes nothing: no query.
  if (!(outcome.status === 'success' && row.consecutive_failures === 0))
    await trackEndpointHealth(deps, actor, row.webhook_id, row.workspace_id, outcome);
  return outcome;
}

/**
 * A success resets the endpoint's failure streak; a final failure extends it. After
 * AUTO_DISABLE_AFTER_FAILURES failures in a row spread over AUTO_DISABLE_AFTER_MS, the webhook is switched
 * off and the workspace's owners are mailed.
 */
async function trackEndpointHealth(
  deps: DeliveryDeps,
  actor: Actor,
  webhookId: string,
  workspaceId: string,
  outcome: AttemptOutcome,
) {
  const { db } = deps;
  if (outcome.status === 'success') {
    await db
      .updateTable('webhooks')
      .set({ consecutive_failures: 0, failing_since: null })
      .where('id', '=', webhookId)
      .where('consecutive_failures', '>', 0)
      .execute();
    return;
  }
  if (outcome.status !== 'failed') return;
  const hook = await db
    .updateTable('webhooks')
    .set((eb) => ({
      consecutive_failures: eb('consecutive_failures', '+', 1),
      failing_since: eb.fn.coalesce('failing_since', eb.val(new Date())),
    }))
    .where('id', '=', webhookId)
    .returning(['name', 'url', 'is_active', 'consecutive_failures', 'failing_since'])
    .executeTakeFirst();
  if (!hook?.is_active || hook.consecutive_failures < AUTO_DISABLE_AFTER_FAILURES) return;
  if (!hook.failing_since || Date.now() - hook.failing_since.getTime() < AUTO_DISABLE_AFTER_MS) return;
  const reason = `Disabled after ${hook.consecutive_failures} failed deliveries in a row since ${hook.failing_since.toISOString()}.`;
  await db.transaction().execute(async (trx) => {
    await trx
      .updateTable('webhooks')
      .set({ is_active: false, disabled_reason: reason, updated_at: new Date() })
      .where('id', '=', webhookId)
      .execute();
    await recordAudit(trx, actor, {
      action: 'webhook.disabled',
      targetType: 'webhook',
      targetId: webhookId,
      workspaceId,
      metadata: { consecutiveFailures: hook.consecutive_failures },
    });
  });
  const owners = await db
    .selectFrom('workspace_members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(['u.email', 'u.name'])
    .where('m.workspace_id', '=', workspaceId)
    .where('m.role', '=', 'OWNER')
    .execute();
  for (const owner of owners) {
    await deps.mailer
      .send({
        to: owner.email,
        subject: `Webhook "${hook.name}" was disabled`,
        template: 'webhook-disabled',
        text: `Hi ${owner.name},\n\nThe webhook "${hook.name}" (${hook.url}) failed ${hook.consecutive_failures} deliveries in a row, so it was switched off. Fix the endpoint, then turn the webhook on again (PATCH with isActive: true).`,
      })
      .catch((err: unknown) => deps.logger.error({ err, template: 'webhook-disabled' }, 'sending mail failed'));
  }
  deps.logger.warn({ webhookId, workspaceId }, 'webhook disabled after repeated failures');
}
