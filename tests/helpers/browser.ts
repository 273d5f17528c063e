// A browser, as far as a sign-in through an identity provider needs one: it follows redirects and keeps
// cookies (per host, as browsers do: every port of 127.0.0.1 shares them, with their paths honoured). It
// stops where a redirect leaves the loopback address (the web app at APP_URL, never contacted by tests) or
// where an answer is not a redirect.
import { ledger } from './secret-ledger.js';

interface Cookie {
  value: string;
  path: string;
}

export interface Stop {
  /** The last request's answer (a redirect to `location` when that left the loopback address). */
  status: number;
  url: URL;
  /** Where the last redirect pointed, resolved. */
  location: URL | undefined;
  body: string;
}

const isLoopback = (url: URL) => url.hostname === '127.0.0.1' || url.hostname === 'localhost';

export class Browser {
  private readonly jar = new Map<string, Map<string, Cookie>>();

  /** The cookie `name` of `host` (e.g. 127.0.0.1), if any. */
  cookie(host: string, name: string): string | undefined {
    return this.jar.get(host)?.get(name)?.value;
  }

  /** Drops every cookie: what another browser would have. */
  clearCookies() {
    this.jar.clear();
  }

  /**
   * Opens `url` and follows redirects (at most 20) on the loopback address; with `until`, stops before a
   * redirect to a URL it accepts (that URL is the answer's `location`), so a test can look at it or change it.
   */
  async open(url: string | URL, opts: { until?: (next: URL) => boolean } = {}): Promise<Stop> {
    let current = new URL(url);
    for (let hop = 0; hop < 20; hop++) {
      const res = await fetch(current, { redirect: 'manual', headers: this.cookieHeader(current) });
      this.keep(current, res.headers.getSetCookie());
      const body = await res.text();
      const location = res.headers.get('location');
      if (res.status < 300 || res.status >= 400 || !location)
        return { status: res.status, url: current, location: undefined, body };
      const next = new URL(location, current);
      if (!isLoopback(next) || opts.until?.(next)) return { status: res.status, url: current, location: next, body };
      current = next;
    }
    throw new Error(`too many redirects, last at ${current.href}`);
  }

  private cookieHeader(url: URL): Record<string, string> {
    const cookies = [...(this.jar.get(url.hostname) ?? [])]
      .filter(([, c]) => url.pathname.startsWith(c.path))
      .map(([name, c]) => `${name}=${c.value}`);
    return cookies.length ? { cookie: cookies.join('; ') } : {};
  }

  private keep(url: URL, setCookies: string[]) {
    const cookies = this.jar.get(url.hostname) ?? new Map<string, Cookie>();
    this.jar.set(url.hostname, cookies);
    for (const line of setCookies) {
      const [pair, ...attributes] = line.split(';').map((p) => p.trim());
      const eq = pair.indexOf('=');
      const [name, value] = [pair.slice(0, eq), pair.slice(eq + 1)];
      const attribute = (key: string) =>
        attributes.find((a) => a.toLowerCase().startsWith(`${key}=`))?.slice(key.length + 1);
      const expired =
        attribute('max-age') === '0' || (attribute('expires') && Date.parse(attribute('expires')!) < Date.now());
      if (expired || value === '') cookies.delete(name);
      else cookies.set(name, { value, path: attribute('path') ?? '/' });
      // A cookie's value is a secret of this browser: it must not come back in an answer or a log line.
      if (value.length >= 16) ledger.sent(value, `the cookie ${name}`);
    }
  }
}
