// Where webhooks may point: public http(s) addresses only. Checked at creation and update (the URL as
// written) and again at delivery (every address the host name resolves to; the connection then goes to
// the address that was checked, so a DNS answer cannot change between check and use). A host name's answer
// serves its deliveries for WEBHOOK_DNS_CACHE_SECONDS, and is checked again at each of them.
import type { LookupAddress } from 'node:dns';
import dns from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import { remember } from '../../server/platform/bounded-cache.js';
import { AppError } from '../../server/platform/errors.js';

export const MAX_WEBHOOK_URL_LENGTH = 2048;

const BLOCKED_HOSTS = /(^|\.)(localhost|local|internal|localdomain|home\.arpa)$/;
const METADATA_HOSTS = new Set(['metadata.google.internal', 'metadata', 'instance-data']);
/**
 * The host name as those rules judge it: lower case, without the one trailing dot that names the root
 * (`metadata.` resolves as `metadata`, so it must not pass as a name with a dot).
 */
const hostName = (host: string) => host.toLowerCase().replace(/\.$/, '');

export const urlNotAllowed = (why: string) =>
  new AppError('WEBHOOK_URL_NOT_ALLOWED', `This webhook URL is not allowed: ${why}.`);

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

/**
 * Only ordinary public unicast addresses. IPv4-mapped IPv6 is judged as the IPv4 it carries; any other
 * IPv6 address must be global unicast (2000::/3), which refuses the deprecated IPv4-compatible form
 * (`::127.0.0.1`) and every range ipaddr.js does not name.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv4') return parsed.range() === 'unicast';
  const v6 = parsed as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().range() === 'unicast';
  return v6.range() === 'unicast' && v6.match(GLOBAL_UNICAST_V6);
}

export interface CheckedUrl {
  url: URL;
  /** The host as an address when the URL names one directly. */
  literalAddress?: string;
}

/** The URL as written: scheme, credentials, port, length, host names and literal addresses. */
export function checkWebhookUrl(raw: string, opts: { allowPrivate: boolean }): CheckedUrl {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH)
    throw urlNotAllowed(`it is longer than ${MAX_WEBHOOK_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw urlNotAllowed('it is not a valid absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw urlNotAllowed('only http and https URLs can receive webhooks');
  if (url.username || url.password)
    throw urlNotAllowed('credentials in the URL are not accepted (use the signature to authenticate deliveries)');
  // Port 0 is no service's port: a connection to it fails, or goes wherever the system puts it. The parser
  // writes `:000` as `0` too.
  if (url.port === '0') throw urlNotAllowed('port 0 cannot receive webhooks');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!host) throw urlNotAllowed('it has no host');
  if (opts.allowPrivate) return { url, literalAddress: ipaddr.isValid(host) ? host : undefined };
  if (ipaddr.isValid(host)) {
    if (!isPublicAddress(host)) throw urlNotAllowed('it points at a private, loopback, link-local or reserved address');
    return { url, literalAddress: host };
  }
  const name = hostName(host);
  if (name.split('.').includes('')) throw urlNotAllowed('its host name has an empty label');
  if (BLOCKED_HOSTS.test(name) || METADATA_HOSTS.has(name) || !name.includes('.')) {
    throw urlNotAllowed('it names a local or internal host');
  }
  return { url };
}

/** A host name's DNS answer as kept: the lookup (shared by the deliveries that ask meanwhile) and its end of life. */
interface KeptAnswer {
  addresses: Promise<LookupAddress[]>;
  until: number;
}
/** DNS answers of webhook hosts, by host name, for the deliveries of the next `keepAnswersMs`. */
const keptAnswers = new Map<string, KeptAnswer>();

/**
 * Every address `host` resolves to. With `keepAnswersMs`, an answer serves the deliveries to that host for
 * that long, and the deliveries that ask while a lookup runs share it: a worker running a hundred
 * deliveries at once would otherwise queue a hundred lookups on the four threads that getaddrinfo shares
 * with bcrypt and file I/O. A failed or empty lookup is not kept. What is kept is the answer, not a
 * verdict: its addresses are checked at every delivery.
 */
async function lookUp(host: string, keepAnswersMs: number): Promise<LookupAddress[]> {
  if (keepAnswersMs <= 0) return dns.lookup(host, { all: true, verbatim: true });
  const now = Date.now();
  const kept = keptAnswers.get(host);
  if (kept && kept.until > now) return kept.addresses;
  const answer: KeptAnswer = { addresses: dns.lookup(host, { all: true, verbatim: true }), until: now + keepAnswersMs };
  remember(keptAnswers, host, answer);
  const forget = () => {
    if (keptAnswers.get(host) === answer) keptAnswers.delete(host);
  };
  const addresses = await answer.addresses.catch((err: unknown) => {
    forget();
    throw err;
  });
  if (addresses.length === 0) forget();
  return addresses;
}

/**
 * At delivery: the address to connect to. A literal address was checked with the URL; a host name is
 * resolved here (or its answer of the last `keepAnswersMs` reused) and every address it resolves to must
 * be public (a name with one private address is refused outright).
 */
export async function resolveDeliveryAddress(
  checked: CheckedUrl,
  opts: { allowPrivate: boolean; keepAnswersMs?: number },
): Promise<{ address: string; family: 4 | 6 }> {
  if (checked.literalAddress) {
    return { address: checked.literalAddress, family: ipaddr.parse(checked.literalAddress).kind() === 'ipv6' ? 6 : 4 };
  }
  let addresses: LookupAddress[];
  try {
    addresses = await lookUp(checked.url.hostname, opts.keepAnswersMs ?? 0);
  } catch {
    throw urlNotAllowed('its host name does not resolve');
  }
  if (addresses.length === 0) throw urlNotAllowed('its host name does not resolve');
  if (!opts.allowPrivate && addresses.some((a) => !isPublicAddress(a.address))) {
    throw urlNotAllowed('its host name resolves to a private, loopback, link-local or reserved address');
  }
  const first = addresses[0];
  return { address: first.address, family: first.family === 6 ? 6 : 4 };
}
