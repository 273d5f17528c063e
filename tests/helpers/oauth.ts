// Sign-in through an identity provider as a web app's user does it: the browser opens the start route,
// the provider (a real peer on loopback) approves, the callback sends the browser to the web app with a
// one-time code, and the web app posts the code to POST /auth/oauth/exchange.
import { expect } from 'vitest';
import type { TestApp } from './app.js';
import { Browser } from './browser.js';
import { ledger } from './secret-ledger.js';

/** APP_URL of the test apps (tests/helpers/app.ts): never contacted, only compared. */
export const APP_URL = 'http://app.tests.local';

/** Where the callback sent the browser in the web app: `APP_URL/auth/callback?code=...` or `?error=`. */
export interface Landing {
  url: URL;
  code: string | undefined;
  error: string | undefined;
  redirectTo: string | undefined;
}

export function landingOf(url: URL | undefined): Landing {
  expect(url && `${url.origin}${url.pathname}`).toBe(`${APP_URL}/auth/callback`);
  const params = url!.searchParams;
  return {
    url: url!,
    code: params.get('code') ?? undefined,
    error: params.get('error') ?? undefined,
    redirectTo: params.get('redirectTo') ?? undefined,
  };
}

export const startUrl = (app: TestApp, provider: string, redirectTo?: string) => {
  const query = redirectTo === undefined ? '' : `?redirectTo=${encodeURIComponent(redirectTo)}`;
  return `${app.url}/auth/oauth/${provider}/start${query}`;
};

const isCallback = (url: URL) => /^\/auth\/oauth\/[^/]+\/callback$/.test(url.pathname);

/** The whole flow in `browser`, from the start route to the web app. */
export async function signInWith(app: TestApp, provider: string, browser = new Browser(), redirectTo?: string) {
  const stop = await browser.open(startUrl(app, provider, redirectTo));
  expect(stop.status, stop.body).toBe(302);
  return landingOf(stop.location);
}

/** The flow up to the provider's redirect back to the callback, which is answered but not followed. */
export async function untilCallback(app: TestApp, provider: string, browser: Browser, redirectTo?: string) {
  return followToCallback(browser, startUrl(app, provider, redirectTo));
}

/** Follows `url` (the start route, or a provider's authorization URL) up to the callback, not opened. */
export async function followToCallback(browser: Browser, url: string | URL) {
  const stop = await browser.open(url, { until: isCallback });
  expect(stop.location && isCallback(stop.location), `stopped at ${stop.url.href} (${stop.status})`).toBe(true);
  return stop.location!;
}

/** The start route's redirect to the provider (its authorization URL), not followed. */
export async function authorizationUrl(app: TestApp, provider: string, browser: Browser) {
  const stop = await browser.open(startUrl(app, provider), { until: () => true });
  expect(stop.status, stop.body).toBe(302);
  return stop.location!;
}

/** Opens a callback URL (as the provider sent it, or changed by the test) in `browser`. */
export async function openCallback(browser: Browser, callback: URL | string) {
  return browser.open(callback);
}

/** POST /auth/oauth/exchange, the way the web app does it; the code must never come back anywhere. */
export function exchange(app: TestApp, code: string | undefined, token?: string) {
  ledger.sent(code, 'an exchange code');
  return app.api('POST', '/auth/oauth/exchange', { body: { code }, token });
}

/** A sign-in through to the session: the exchange's answer (200, the session result). */
export async function sessionThrough(app: TestApp, provider: string, browser = new Browser()) {
  const landing = await signInWith(app, provider, browser);
  expect(landing.error).toBeUndefined();
  const res = await exchange(app, landing.code);
  expect(res.status, res.text).toBe(200);
  return res.body as { accessToken: string; refreshToken: string; user: { id: string; email: string } };
}
