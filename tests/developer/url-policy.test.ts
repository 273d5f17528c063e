// The webhook URL policy as functions (routers/webhooks/url-policy.ts): the check of the URL as written,
// and the delivery-time resolution, with the machine's real resolver (/etc/hosts): a host name that
// resolves to a private address is refused at delivery even though it passed as a name.
import dns from 'node:dns/promises';
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../server/errors.js';
import { checkWebhookUrl, isPublicAddress, resolveDeliveryAddress } from '../../routers/webhooks/url-policy.js';

const strict = { allowPrivate: false };
const lenient = { allowPrivate: true };

function refusal(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

async function asyncRefusal(p: Promise<unknown>): Promise<AppError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

// The machine's own name: resolved through /etc/hosts, usually to 127.0.0.1 or 127.0.1.1.
const HOSTNAME = os.hostname();
const hostnameAddresses = await dns.lookup(HOSTNAME, { all: true, verbatim: true }).catch(() => []);
const hostnameIsPrivate = hostnameAddresses.length > 0 && hostnameAddresses.some((a) => !isPublicAddress(a.address));

describe('isPublicAddress', () => {
  it.each(['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('accepts the public address %s', (a) => {
    expect(isPublicAddress(a)).toBe(true);
  });

  it.each([
    '127.0.0.1', '127.255.255.254', '10.0.0.1', '172.16.5.4', '192.168.0.1', '169.254.169.254', '100.64.0.1', '224.0.0.1', '0.0.0.0',
    '255.255.255.255', '::1', '::', 'fe80::1', 'fc00::1', 'fd00::2', '::ffff:127.0.0.1', '::ffff:10.0.0.1',
    // IPv4-compatible ::127.0.0.1, as the URL parser writes it
    '::7f00:1',
    'not an address',
  ])('refuses %s', (a) => {
    expect(isPublicAddress(a)).toBe(false);
  });
});

describe('checkWebhookUrl', () => {
  it('answers the parsed URL, and the literal address when the host is one', () => {
    expect(checkWebhookUrl('https://example.com/hook?x=1', strict).literalAddress).toBeUndefined();
    expect(checkWebhookUrl('https://example.com/hook?x=1', strict).url.href).toBe('https://example.com/hook?x=1');
    expect(checkWebhookUrl('http://8.8.8.8:8080/', strict).literalAddress).toBe('8.8.8.8');
  });

  it('lets private addresses through only with allowPrivate', () => {
    expect(refusal(() => checkWebhookUrl('http://127.0.0.1:3000/', strict)).code).toBe('WEBHOOK_URL_NOT_ALLOWED');
    expect(checkWebhookUrl('http://127.0.0.1:3000/', lenient).literalAddress).toBe('127.0.0.1');
  });

  it('refuses schemes, credentials and lengths even with allowPrivate', () => {
    for (const url of ['file:///etc/passwd', 'ftp://example.com/', 'https://a:b@example.com/', `https://example.com/${'a'.repeat(2029)}`]) {
      expect(refusal(() => checkWebhookUrl(url, lenient)).code).toBe('WEBHOOK_URL_NOT_ALLOWED');
    }
  });

  it('refuses the machine name as a single-label host', () => {
    expect(refusal(() => checkWebhookUrl(`http://${HOSTNAME}/hook`, strict)).code).toBe('WEBHOOK_URL_NOT_ALLOWED');
  });
});

describe('resolveDeliveryAddress', () => {
  it('answers a literal address as it was checked, without DNS', async () => {
    await expect(resolveDeliveryAddress(checkWebhookUrl('http://8.8.8.8/', strict), strict)).resolves.toEqual({ address: '8.8.8.8', family: 4 });
    await expect(resolveDeliveryAddress(checkWebhookUrl('http://[2606:4700:4700::1111]/', strict), strict)).resolves.toEqual({ address: '2606:4700:4700::1111', family: 6 });
  });

  it('refuses a host name that does not resolve', async () => {
    const err = await asyncRefusal(resolveDeliveryAddress({ url: new URL('https://no-such-host.invalid/hook') }, strict));
    expect(err.code).toBe('WEBHOOK_URL_NOT_ALLOWED');
  });

  it.skipIf(!hostnameIsPrivate)(
    `refuses a host name that resolves to a private address at delivery time (${HOSTNAME} -> ${hostnameAddresses.map((a) => a.address).join(', ') || 'unresolved'})`,
    async () => {
      // Passed to the resolver directly: as written, a single-label name is already refused by checkWebhookUrl.
      const err = await asyncRefusal(resolveDeliveryAddress({ url: new URL(`http://${HOSTNAME}:8080/hook`) }, strict));
      expect(err.code).toBe('WEBHOOK_URL_NOT_ALLOWED');
      expect(err.message).toMatch(/resolves to a private/);
    },
  );

  it.skipIf(!hostnameIsPrivate)('answers the resolved private address when private URLs are allowed (local development)', async () => {
    const resolved = await resolveDeliveryAddress({ url: new URL(`http://${HOSTNAME}:8080/hook`) }, lenient);
    expect(hostnameAddresses.map((a) => a.address)).toContain(resolved.address);
  });

  it('refuses "localhost" resolved through /etc/hosts at delivery time too', async () => {
    const err = await asyncRefusal(resolveDeliveryAddress({ url: new URL('http://localhost:8080/hook') }, strict));
    expect(err.code).toBe('WEBHOOK_URL_NOT_ALLOWED');
  });
});
