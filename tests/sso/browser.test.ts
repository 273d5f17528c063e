// SAML single sign-on in a real browser (Debian's Chromium, headless), everything on loopback. The API is
// reached over https (https://localhost:<port>, a TLS proxy of the test in front of the app, which sends
// X-Forwarded-Proto: https), the identity provider is another site (http://127.0.0.1:<port>), and the web
// app (APP_URL) is a small page of the test. It proves that in a browser as it really behaves:
//   - /auth/sso/start sets the `sso_binding` cookie SameSite=None; Secure over https and 302s to the IdP,
//   - the person clicks the IdP's login button, and the IdP's auto-submitting form makes a CROSS-SITE POST
//     to the ACS on which the binding cookie rides (a Lax cookie would not),
//   - the ACS 302s to APP_URL/auth/callback?code=..., the code is exchanged for a session that answers
//     GET /auth/me, and the session row is method 'sso' with the connection's id.
import crypto from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { exchange } from '../helpers/oauth.js';
import { makeKeyPair, startSamlIdp, type TestSamlIdp } from '../helpers/saml-idp.js';
import { upgradeWorkspace } from '../workspaces/helpers.js';
import { samlConnection, ssoWorkspace, type SsoWorkspace } from './fixtures.js';
import { SSO_COOKIE } from './flow.js';

const CHROMIUM = '/usr/bin/chromium';

/** A TLS-terminating proxy on 127.0.0.1 in front of `target`, as a load balancer would be. */
async function startTlsProxy(target: string) {
  const key = makeKeyPair('localhost');
  const upstream = new URL(target);
  const server = https.createServer({ key: key.privateKey, cert: key.certificate }, (req, res) => {
    const forward = http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: {
          ...req.headers,
          'x-forwarded-proto': 'https',
          'x-forwarded-for': req.socket.remoteAddress ?? '127.0.0.1',
        },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.writeHead(502).end());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    /** By name: a secure context for the browser, and another site than the IdP's 127.0.0.1. */
    url: `https://localhost:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The web app of APP_URL: its /auth/callback is a page the browser lands on. */
async function startWebApp() {
  const server = http.createServer((req, res) => {
    const ok = new URL(req.url ?? '/', 'http://127.0.0.1').pathname === '/auth/callback';
    res
      .writeHead(ok ? 200 : 404, { 'content-type': 'text/html' })
      .end(ok ? '<html><body><h1>Signing you in</h1></body></html>' : '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let webApp: Awaited<ReturnType<typeof startWebApp>>;
let app: TestApp;
let proxy: Awaited<ReturnType<typeof startTlsProxy>>;
let idp: TestSamlIdp;
let ws: SsoWorkspace;
let connectionId: string;
let browser: Browser;
let context: BrowserContext;

const isLoopback = (url: URL) => ['localhost', '127.0.0.1'].includes(url.hostname);

beforeAll(async () => {
  webApp = await startWebApp();
  [app, idp] = await Promise.all([startTestApp({ APP_URL: webApp.url }), startSamlIdp()]);
  proxy = await startTlsProxy(app.url);
  idp.mode.loginPage = true;
  ws = await ssoWorkspace(app, 'saml-browser');
  await upgradeWorkspace(app, ws.owner.accessToken, ws.id);
  connectionId = (await samlConnection(app, ws, idp)).id;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
  // The proxy's certificate is self-signed, made at test time.
  context = await browser.newContext({ ignoreHTTPSErrors: true });
  // Loopback only: any other request is refused before it leaves the browser.
  await context.route('**/*', (route) =>
    isLoopback(new URL(route.request().url())) ? route.continue() : route.abort(),
  );
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await proxy?.close();
  await app?.close();
  await idp?.close();
  await webApp?.close();
});

describe('SAML sign-in in Chromium, the API over https and the IdP on another site', () => {
  it('signs the person in through the IdP login page and the cross-site POST to the ACS', async () => {
    const email = `browser-${crypto.randomBytes(4).toString('hex')}@${ws.domain}`;
    idp.signInAs(email);
    const page = await context.newPage();

    // The start route: the binding cookie, then the IdP's login page.
    await page.goto(`${proxy.url}/auth/sso/start?email=${encodeURIComponent(email)}&redirectTo=%2Fprojects`);
    await page.waitForURL((url) => url.origin === idp.url && url.pathname === '/sso');
    const [binding] = (await context.cookies(`${proxy.url}/auth/sso/`)).filter((c) => c.name === SSO_COOKIE);
    expect(binding).toMatchObject({ sameSite: 'None', secure: true, httpOnly: true, path: '/auth/sso/' });

    // The person clicks "Sign in"; the IdP's form posts the answer across sites to the ACS.
    const acsPost = page.waitForRequest(
      (request) => request.method() === 'POST' && new URL(request.url()).pathname.endsWith('/acs'),
    );
    await page.getByRole('button', { name: 'Sign in' }).click();
    const acs = await acsPost;
    expect(acs.url()).toBe(`${proxy.url}/auth/sso/saml/${connectionId}/acs`);
    const sent = await acs.allHeaders();
    expect(sent.origin).toBe(idp.url);
    expect(sent.cookie).toContain(`${SSO_COOKIE}=${binding.value}`);

    // The ACS's 302 to the web app with a one-time code.
    await page.waitForURL((url) => url.origin === webApp.url && url.pathname === '/auth/callback');
    const landing = new URL(page.url());
    expect(landing.searchParams.get('error')).toBeNull();
    expect(landing.searchParams.get('redirectTo')).toBe('/projects');
    const code = landing.searchParams.get('code');
    expect(code).toEqual(expect.any(String));
    expect(await page.locator('h1').textContent()).toBe('Signing you in');

    const res = await exchange(app, code!);
    expect(res.status, res.text).toBe(200);
    const me = await app.api('GET', '/auth/me', { token: res.body.accessToken });
    expect(me.status, me.text).toBe(200);
    expect(me.body.user).toMatchObject({ email });
    const session = await app.deps.db
      .selectFrom('sessions')
      .select(['method', 'sso_connection_id'])
      .where('user_id', '=', me.body.user.id)
      .executeTakeFirstOrThrow();
    expect(session).toEqual({ method: 'sso', sso_connection_id: connectionId });
    await page.close();
  }, 60_000);
});
