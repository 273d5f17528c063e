// /docs in a real browser (Debian's Chromium, headless), opened over plain HTTP by a host name that is not
// localhost: docs.example.test, which the browser resolves to 127.0.0.2, where the app listens (loopback
// only). Chromium does not upgrade requests to a loopback address, but it does for a name: with helmet's
// default CSP, `upgrade-insecure-requests` sent the page's scripts to https:// and the page stayed blank.
// Now the operations render, and "Try it out" on POST /auth/register with the document's own example
// creates the account (201). The groups start closed (docExpansion 'none'): opened all at once, Swagger UI
// 5 stopped drawing a document of this size part-way (two groups shown) until the window was resized.
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

const CHROMIUM = '/usr/bin/chromium';
/** The name the browser opens the docs by; it resolves to the app's loopback address, and nothing else does. */
const HOST = 'docs.example.test';

let app: TestApp;
const docsOrigin = () => `http://${HOST}:${new URL(app.url).port}`;
let browser: Browser;
let page: Page;
/** What the page's Content-Security-Policy refused, as the browser reports it. */
const violations: string[] = [];

beforeAll(async () => {
  app = await startTestApp({ HOST: '127.0.0.2' });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      `--host-resolver-rules=MAP ${HOST} 127.0.0.2, MAP * ~NOTFOUND`,
    ],
  });
  page = await browser.newPage();
  page.on('console', (message) => {
    if (/Content Security Policy|upgrade/i.test(message.text())) violations.push(message.text());
  });
  // Loopback only: a request for any other origin (https:// included) is refused before it leaves the browser.
  await page.route('**/*', (route) =>
    new URL(route.request().url()).origin === docsOrigin() ? route.continue() : route.abort(),
  );
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
});

describe('/docs over plain HTTP from a host other than localhost', () => {
  it('is served with a strict CSP that does not upgrade its requests to https', async () => {
    expect(new URL(app.url).hostname).toBe('127.0.0.2');
    const res = await fetch(`${app.url}/docs/`);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("object-src 'none'");
    expect(csp).not.toContain('upgrade-insecure-requests');
    // Behind a TLS proxy (X-Forwarded-Proto: https, trusted), the upgrade stays.
    const proxied = await startTestApp({ HOST: '127.0.0.2', TRUST_PROXY: 'true' });
    try {
      const secure = await fetch(`${proxied.url}/docs/`, { headers: { 'x-forwarded-proto': 'https' } });
      expect(secure.headers.get('content-security-policy')).toContain('upgrade-insecure-requests');
    } finally {
      await proxied.close();
    }
  });

  it('lists every group of the document, opens each with all its operations, and "Try it out" on POST /auth/register with the shipped example answers 201', async () => {
    const document = (await app.api('GET', '/openapi.json')).body as {
      tags: Array<{ name: string }>;
      paths: Record<string, Record<string, { tags?: string[] }>>;
    };
    const operationsOf = (tag: string) =>
      Object.values(document.paths)
        .flatMap((item) => Object.values(item))
        .filter((op) => op.tags?.includes(tag)).length;
    await page.goto(`${docsOrigin()}/docs/`);
    // Groups start closed (docExpansion 'none'): every group of the document is listed.
    const groups = page.locator('.opblock-tag-section');
    await page.locator('h3.opblock-tag').first().waitFor({ timeout: 30_000 });
    const used = document.tags.map((t) => t.name).filter((name) => operationsOf(name) > 0);
    expect(await page.locator('h3.opblock-tag').allTextContents()).toEqual(
      expect.arrayContaining(used.map((name) => expect.stringContaining(name))),
    );
    // Opening a group shows all of its operations.
    for (const name of used) {
      const section = groups.filter({ has: page.locator(`h3.opblock-tag[data-tag="${name}"]`) });
      await section.locator('h3.opblock-tag').click();
      await expect.poll(() => section.locator('.opblock').count(), { timeout: 10_000 }).toBe(operationsOf(name));
      await section.locator('h3.opblock-tag').click(); // closed again, as a reader would
    }
    await page.locator('h3.opblock-tag[data-tag="Auth"]').click();
    expect(violations).toEqual([]);

    const register = page.locator('#operations-Auth-auth-register');
    await register.locator('.opblock-summary').click();
    await register.locator('.try-out__btn').click();
    const body = register.locator('textarea.body-param__text');
    expect(JSON.parse(await body.inputValue())).toMatchObject({ email: 'jane@example.com', name: 'Jane Doe' });
    await register.locator('button.execute').click();
    const status = register.locator('.live-responses-table .response .response-col_status').first();
    await status.waitFor({ timeout: 30_000 });
    expect((await status.textContent())?.trim()).toBe('201');

    // The account exists: its example password signs in.
    const password = JSON.parse(await body.inputValue()).password as string;
    const login = await app.api('POST', '/auth/login', { body: { email: 'jane@example.com', password } });
    expect(login.status).toBe(200);
  }, 90_000);
});
