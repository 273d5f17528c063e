// The SAML sign-in as a browser goes through it: the start route (binding cookie, 302 to the identity
// provider), the identity provider's page (an HTML form posting SAMLResponse to the ACS), the ACS's 302 to
// the web app with a one-time code, and the exchange.
import { expect } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { landingOf, type Landing } from '../helpers/oauth.js';
import { readAuthnRequest, type AuthnRequest } from '../helpers/saml-idp.js';

export const SSO_COOKIE = 'sso_binding';

/** GET /auth/sso/start in `browser`: the identity provider's URL and the request it carries. */
export async function startSso(app: TestApp, email: string, browser = new Browser(), redirectTo = '/projects') {
  const stop = await browser.open(
    `${app.url}/auth/sso/start?email=${encodeURIComponent(email)}&redirectTo=${encodeURIComponent(redirectTo)}`,
    { until: () => true },
  );
  expect(stop.status, stop.body).toBe(302);
  const idpUrl = stop.location!;
  return { idpUrl, request: readAuthnRequest(idpUrl), browser };
}

/** Opens the identity provider's page and reads the form it would post: the ACS URL and the SAMLResponse. */
export async function idpForm(idpUrl: URL) {
  const html = await (await fetch(idpUrl)).text();
  const action = /action="([^"]+)"/.exec(html)?.[1];
  const samlResponse = /name="SAMLResponse" value="([^"]+)"/.exec(html)?.[1];
  if (!action || !samlResponse) throw new Error(`no SAML form in ${html.slice(0, 200)}`);
  return { acsUrl: action.replace(/&amp;/g, '&'), samlResponse };
}

/** The browser's cross-site POST to the ACS (with its cookies of the API's host): where it lands in the web app. */
export async function postToAcs(acsUrl: string, samlResponse: string, browser?: Browser): Promise<Landing> {
  const cookie = browser?.cookie('127.0.0.1', SSO_COOKIE);
  const res = await fetch(acsUrl, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      origin: 'http://idp.tests.local',
      ...(cookie ? { cookie: `${SSO_COOKIE}=${cookie}` } : {}),
    },
    body: new URLSearchParams({ SAMLResponse: samlResponse }).toString(),
  });
  expect(res.status, await res.clone().text()).toBe(302);
  return landingOf(new URL(res.headers.get('location')!));
}

/** The whole flow for `email`: where the browser lands in the web app. */
export async function signInWithSso(app: TestApp, email: string, browser = new Browser()) {
  const { idpUrl } = await startSso(app, email, browser);
  const { acsUrl, samlResponse } = await idpForm(idpUrl);
  return postToAcs(acsUrl, samlResponse, browser);
}

export type { AuthnRequest };
