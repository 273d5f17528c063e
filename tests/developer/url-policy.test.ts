// The webhook URL policy as functions (routers/webhooks/url-policy.ts): the check of the URL as written,
// and the delivery-time resolution, with the machine's real resolver (/etc/hosts): a host name that
// resolves to a private address is refused at delivery even though it passed as a name. The answers kept
// for WEBHOOK_DNS_CACHE_SECONDS are tested with a resolver the tests control (names under .example).
import dns from 'node:dns/promises';
import crypto from 'node:crypto';
import os from 'node:os';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { clockAhead } from '../helpers/clock.js';
import { waitFor } from '../helpers/wait.js';
import { AppError } from '../../server/platform/errors.js';
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
  it.each(['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8'])(
    'accepts the public address %s',
    (a) => {
      expect(isPublicAddress(a)).toBe(true);
    },
  );

  it.each([
    '127.0.0.1',
    '127.255.255.254',
    '10.0.0.1',
    '172.16.5.4',
    '192.168.0.1',
    '169.254.169.254',
    '100.64.0.1',
    '224.0.0.1',
    '0.0.0.0',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd00::2',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
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
    for (const url of [
      'file:///etc/passwd',
      'ftp://example.com/',
      'https://a:b@example.com/',
      `https://example.com/${'a'.repeat(2029)}`,
    ]) {
      expect(refusal(() => checkWebhookUrl(url, lenient)).code).toBe('WEBHOOK_URL_NOT_ALLOWED');
    }
  });

  // Port 0 is nobody's port: a connection to it fails, or reaches what the system chose for it.
  const portZero = ['https://example.com:0/hook', 'http://example.com:000/hook', 'http://8.8.8.8:0/'];
  portZero.push('http://[2606:4700::1111]:0/');
  it.each(portZero)('refuses port 0 in %s, with allowPrivate too', (url) => {
    for (const opts of [strict, lenient]) {
      const err = refusal(() => checkWebhookUrl(url, opts));
      expect(err.code).toBe('WEBHOOK_URL_NOT_ALLOWED');
      expect(err.message).toMatch(/port 0/);
    }
  });

  it('accepts an explicit ordinary port, and the lowest and highest ones', () => {
    for (const port of [1, 8443, 65535]) {
      expect(checkWebhookUrl(`https://example.com:${port}/hook`, strict).url.port).toBe(String(port));
    }
  });

  it('refuses the machine name as a single-label host', () => {
    expect(refusal(() => checkWebhookUrl(`http://${HOSTNAME}/hook`, strict)).code).toBe('WEBHOOK_URL_NOT_ALLOWED');
  });

  // The root's trailing dot resolves as the name without it: `metadata.` is `metadata`.
  it.each([
    'http://metadata./',
    'http://METADATA./',
    'http://intranet./',
    'http://instance-data./',
    'http://metadata.google.internal./',
    'http://printer.local./',
    'http://localhost./',
    `http://${HOSTNAME}./hook`,
    'http://./',
    'http://../',
    'http://metadata../',
    'http://example.com../',
    'http://.example.com/',
    'http://hooks..example.com/',
  ])('refuses the host of %s: a single label, a local name or an empty label, however dotted', (url) => {
    expect(refusal(() => checkWebhookUrl(url, strict)).code).toBe('WEBHOOK_URL_NOT_ALLOWED');
  });

  it('accepts a public name written with the trailing dot of the root', () => {
    expect(checkWebhookUrl('https://example.com./hook', strict).url.hostname).toBe('example.com.');
  });
});

describe('resolveDeliveryAddress', () => {
  it('answers a literal address as it was checked, without DNS', async () => {
    await expect(resolveDeliveryAddress(checkWebhookUrl('http://8.8.8.8/', strict), strict)).resolves.toEqual({
      address: '8.8.8.8',
      family: 4,
    });
    await expect(
      resolveDeliveryAddress(checkWebhookUrl('http://[2606:4700:4700::1111]/', strict), strict),
    ).resolves.toEqual({ address: '2606:4700:4700::1111', family: 6 });
  });

  it('refuses a host name that does not resolve', async () => {
    const err = await asyncRefusal(
      resolveDeliveryAddress({ url: new URL('https://no-such-host.invalid/hook') }, strict),
    );
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

  it.skipIf(!hostnameIsPrivate)(
    'answers the resolved private address when private URLs are allowed (local development)',
    async () => {
      const resolved = await resolveDeliveryAddress({ url: new URL(`http://${HOSTNAME}:8080/hook`) }, lenient);
      expect(hostnameAddresses.map((a) => a.address)).toContain(resolved.address);
    },
  );

  it('refuses "localhost" resolved through /etc/hosts at delivery time too', async () => {
    const err = await asyncRefusal(resolveDeliveryAddress({ url: new URL('http://localhost:8080/hook') }, strict));
    expect(err.code).toBe('WEBHOOK_URL_NOT_ALLOWED');
  });
});

describe('resolveDeliveryAddress keeps DNS answers (WEBHOOK_DNS_CACHE_SECONDS)', () => {
  // A resolver this test controls: it answers `answer` for the names of this block (once `gate` is open,
  // when there is one), and counts its lookups per name. Every test uses names of its own: kept answers
  // outlive a test.
  let gate: Promise<void> | undefined;
  let answer: () => Array<{ address: string; family: number }> = () => [{ address: '93.184.216.34', family: 4 }];
  const realLookup = dns.lookup.bind(dns);
  const named = () => `kept-${crypto.randomBytes(4).toString('hex')}.example`;
  const control = () =>
    vi.spyOn(dns, 'lookup').mockImplementation((async (host: string, opts: never) => {
      if (!host.endsWith('.example')) return realLookup(host, opts);
      await gate;
      return answer();
    }) as unknown as typeof dns.lookup);
  const lookupsOf = (spy: ReturnType<typeof control>, host: string) =>
    spy.mock.calls.filter(([h]) => h === host).length;
  const at = (host: string) => ({ url: new URL(`https://${host}/hook`) });

  afterEach(() => {
    vi.restoreAllMocks();
    gate = undefined;
    answer = () => [{ address: '93.184.216.34', family: 4 }];
  });

  it('answers the next deliveries to a host from its kept answer, and looks the name up again once it has expired', async () => {
    const spy = control();
    const host = named();
    const keep = { allowPrivate: false, keepAnswersMs: 300 };
    for (let i = 0; i < 3; i++)
      await expect(resolveDeliveryAddress(at(host), keep)).resolves.toEqual({ address: '93.184.216.34', family: 4 });
    expect(lookupsOf(spy, host)).toBe(1);

    answer = () => [{ address: '93.184.216.35', family: 4 }];
    // 350 ms later by the clock the kept answers are timed with (Date, moved ahead).
    await clockAhead(350, () =>
      expect(resolveDeliveryAddress(at(host), keep)).resolves.toEqual({ address: '93.184.216.35', family: 4 }),
    );
    expect(lookupsOf(spy, host)).toBe(2);
  });

  it('lets the deliveries that ask while a lookup runs share it', async () => {
    const spy = control();
    let open!: () => void;
    gate = new Promise((resolve) => (open = resolve));
    const host = named();
    const asked = Promise.all(
      Array.from({ length: 20 }, () =>
        resolveDeliveryAddress(at(host), { allowPrivate: false, keepAnswersMs: 30_000 }),
      ),
    );
    // The lookup runs (held by the gate) while the 20 deliveries ask; then it answers.
    await waitFor(() => lookupsOf(spy, host) > 0, { message: 'the lookup to start' });
    open();
    const answers = await asked;
    expect(new Set(answers.map((a) => a.address))).toEqual(new Set(['93.184.216.34']));
    expect(lookupsOf(spy, host)).toBe(1);
  });

  it('does not keep a failed or empty lookup: the next delivery asks again', async () => {
    const spy = control();
    const host = named();
    const keep = { allowPrivate: false, keepAnswersMs: 30_000 };
    answer = () => {
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    };
    expect((await asyncRefusal(resolveDeliveryAddress(at(host), keep))).message).toMatch(/does not resolve/);
    answer = () => [];
    expect((await asyncRefusal(resolveDeliveryAddress(at(host), keep))).message).toMatch(/does not resolve/);
    answer = () => [{ address: '93.184.216.34', family: 4 }];
    await expect(resolveDeliveryAddress(at(host), keep)).resolves.toEqual({ address: '93.184.216.34', family: 4 });
    expect(lookupsOf(spy, host)).toBe(3);
  });

  it('checks a kept answer again at every delivery: one kept while private addresses were allowed is refused where they are not', async () => {
    const spy = control();
    const host = named();
    answer = () => [
      { address: '93.184.216.34', family: 4 },
      { address: '10.0.0.7', family: 4 },
    ];
    await expect(resolveDeliveryAddress(at(host), { allowPrivate: true, keepAnswersMs: 30_000 })).resolves.toEqual({
      address: '93.184.216.34',
      family: 4,
    });
    for (let i = 0; i < 2; i++) {
      const err = await asyncRefusal(resolveDeliveryAddress(at(host), { allowPrivate: false, keepAnswersMs: 30_000 }));
      expect(err.code).toBe('WEBHOOK_URL_NOT_ALLOWED');
      expect(err.message).toMatch(/resolves to a private/);
    }
    expect(lookupsOf(spy, host)).toBe(1);
  });

  it('looks the name up at every delivery when answers are not kept (0 seconds)', async () => {
    const spy = control();
    const host = named();
    for (let i = 0; i < 3; i++) await resolveDeliveryAddress(at(host), { allowPrivate: false, keepAnswersMs: 0 });
    expect(lookupsOf(spy, host)).toBe(3);
  });
});
