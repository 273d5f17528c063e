// The built client in a real browser (Debian's Chromium, headless): a static page on one origin loads
// client/dist as an ES module (tRPC's own files through an import map, as a bundler would link them),
// signs in against the service on another origin, calls auth.me, shows an error's code, and streams a
// generation (ai.generateStream). CORS_ORIGINS admits the page's origin, and a page of another origin is
// refused.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { builtClient, REPO_DIR } from '../helpers/client-build.js';
import { registerAndLogin, type Session } from '../helpers/http.js';

const CHROMIUM = '/usr/bin/chromium';
/** The modules the built client and tRPC's files import, mapped to tRPC's ESM files. */
const BARE_SPECIFIERS = [
  '@trpc/client',
  '@trpc/server',
  '@trpc/server/observable',
  '@trpc/server/rpc',
  '@trpc/server/unstable-core-do-not-import',
];
const TRPC_DIR = path.join(REPO_DIR, 'node_modules/@trpc');

/** The ESM file of a package's export, as the package declares it, under /node_modules/. */
function esmUrl(specifier: string): string {
  const [scope, name, ...rest] = specifier.split('/');
  const pkg = `${scope}/${name}`;
  const manifest = JSON.parse(fs.readFileSync(path.join(REPO_DIR, 'node_modules', pkg, 'package.json'), 'utf8'));
  const entry = manifest.exports[rest.length ? `./${rest.join('/')}` : '.'];
  const file: string = entry.import?.default ?? entry.import;
  return `/node_modules/${pkg}/${file.replace(/^\.\//, '')}`;
}

function page(): string {
  const imports = Object.fromEntries([
    ['@workspace-saas/client', '/client/index.js'],
    ...BARE_SPECIFIERS.map((s) => [s, esmUrl(s)]),
  ]);
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>Client</title>
<script type="importmap">${JSON.stringify({ imports })}</script></head>
<body><h1>Client in a browser</h1><pre id="out"></pre>
<script type="module">
  import { createApiClient, isApiError, localStorageTokens } from '@workspace-saas/client';
  const out = document.getElementById('out');
  const show = (key, value) => { out.dataset[key] = value; out.textContent += key + ': ' + value + '\\n'; };
  const params = new URLSearchParams(location.hash.slice(1));
  const api = createApiClient({ baseUrl: params.get('api'), storage: localStorageTokens() });
  try {
    if (params.get('email')) await api.session.signIn(params.get('email'), params.get('password'));
    const me = await api.auth.me.query();
    show('me', me.user.email);
  } catch (err) {
    show('meError', isApiError(err) ? err.code : String(err));
  }
  try {
    await api.auth.login.mutate({ email: 'nobody@tests.local', password: 'Wrong-pass-999' });
  } catch (err) {
    show('errorCode', isApiError(err) ? err.code : String(err));
    show('requestId', err.requestId ?? '');
    show('narrowed', String(isApiError(err, 'INVALID_CREDENTIALS')));
  }
  if (params.get('stream')) {
    try {
      let deltas = 0;
      let text = '';
      let completed = '';
      for await (const event of await api.ai.generateStream.mutate({ prompt: params.get('stream') })) {
        if (event.type === 'delta') { deltas += 1; text += event.text; }
        if (event.type === 'completed') completed = event.generation.status + ' ' + String(event.generation.output === text);
      }
      show('streamDeltas', String(deltas));
      show('streamCompleted', completed);
    } catch (err) {
      show('streamError', isApiError(err) ? err.code : String(err));
    }
  }
  show('done', 'yes');
</script></body></html>`;
}

/** The page, the built client and tRPC's files; nothing else. */
function startPageServer(dist: string): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://page.local');
    const send = (status: number, type: string, body: string | Buffer) =>
      res.writeHead(status, { 'content-type': type }).end(body);
    if (url.pathname === '/') return send(200, 'text/html; charset=utf-8', page());
    if (url.pathname === '/client/index.js')
      return send(200, 'text/javascript', fs.readFileSync(path.join(dist, 'index.js')));
    const file = path.resolve(REPO_DIR, `.${decodeURIComponent(url.pathname)}`);
    if (
      url.pathname.startsWith('/node_modules/@trpc/') &&
      file.startsWith(TRPC_DIR + path.sep) &&
      file.endsWith('.mjs') &&
      fs.existsSync(file)
    ) {
      return send(200, 'text/javascript', fs.readFileSync(file));
    }
    send(404, 'text/plain', 'not found');
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const originOf = (server: http.Server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

let app: TestApp;
let allowed: http.Server;
let other: http.Server;
let browser: Browser;
let account: Session;
/** The service, on another origin than the pages: `localhost` rather than 127.0.0.1. */
let apiUrl: string;

beforeAll(async () => {
  expect(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium`).toBe(true);
  const dist = await builtClient();
  [allowed, other] = await Promise.all([startPageServer(dist), startPageServer(dist)]);
  app = await startTestApp({ CORS_ORIGINS: originOf(allowed) });
  apiUrl = app.url.replace('127.0.0.1', 'localhost');
  account = await registerAndLogin(app.api, { prefix: 'browser' });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
  for (const server of [allowed, other]) if (server) await new Promise((resolve) => server.close(resolve));
});

/** Opens the page of `origin` with `hash`, and answers what it showed. */
async function visit(origin: string, hash: Record<string, string>, context: { newPage(): Promise<Page> } = browser) {
  const tab = await context.newPage();
  const problems: string[] = [];
  tab.on('pageerror', (err) => problems.push(err.message));
  await tab.goto(`${origin}/#${new URLSearchParams(hash).toString()}`);
  await tab.waitForSelector('#out[data-done]', { timeout: 20_000 }).catch(() => undefined);
  const shown = await tab
    .locator('#out')
    .evaluate((el) => ({ ...(el as { dataset: Record<string, string> }).dataset }));
  return { tab, shown, problems };
}

describe('the built client in Chromium, from another origin than the service', () => {
  it('signs in, calls auth.me and shows the code of an error; a reload keeps the session (localStorage)', async () => {
    const context = await browser.newContext();
    try {
      const first = await visit(
        originOf(allowed),
        { api: apiUrl, email: account.email, password: account.password },
        context,
      );
      expect(first.problems).toEqual([]);
      expect(first.shown).toMatchObject({
        me: account.email,
        errorCode: 'INVALID_CREDENTIALS',
        narrowed: 'true',
        done: 'yes',
      });
      expect(first.shown.requestId).toMatch(/^[\w-]{20,}$/);

      // A reload: the tokens come back from localStorage, no sign-in.
      const again = await visit(originOf(allowed), { api: apiUrl }, context);
      expect(again.shown).toMatchObject({ me: account.email, errorCode: 'INVALID_CREDENTIALS', done: 'yes' });
    } finally {
      await context.close();
    }
    // The calls were cross-origin: the browser asked first (OPTIONS preflight, for the Authorization and
    // Content-Type headers) and the service allowed the page's origin.
    const preflights = app.logs
      .map((l) => JSON.parse(l))
      .filter((l) => l.method === 'OPTIONS' && String(l.url).startsWith('/trpc/'));
    expect(preflights.length).toBeGreaterThan(0);
    expect(preflights.every((l) => l.status === 204)).toBe(true);
  });

  it('streams a generation (ai.generateStream) into the page as it is written', async () => {
    const streamed = await visit(originOf(allowed), {
      api: apiUrl,
      email: account.email,
      password: account.password,
      stream: 'A browser streams this',
    });
    expect(streamed.problems).toEqual([]);
    expect(streamed.shown).toMatchObject({ me: account.email, streamCompleted: 'SUCCEEDED true', done: 'yes' });
    expect(Number(streamed.shown.streamDeltas)).toBeGreaterThan(5);
    await streamed.tab.close();
  });

  it('a page of an origin CORS_ORIGINS does not list cannot read the service: NETWORK_ERROR', async () => {
    const refused = await visit(originOf(other), { api: apiUrl, email: account.email, password: account.password });
    expect(refused.problems).toEqual([]);
    expect(refused.shown).toMatchObject({ meError: 'NETWORK_ERROR', errorCode: 'NETWORK_ERROR', done: 'yes' });
    await refused.tab.close();
  });
});
