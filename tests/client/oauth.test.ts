// The built client (client/dist) signing in through an identity provider, as a web app does: the sign-in
// URL, the browser through the provider (the fake GitHub of tests/helpers/fake-github.ts), then the code of
// the web app's callback page exchanged and the tokens kept.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { builtClient } from '../helpers/client-build.js';
import { githubAccount, startFakeGitHub, type FakeGitHub } from '../helpers/fake-github.js';
import { STRONG_PASSWORD, signedInOf, uniqueEmail } from '../helpers/http.js';
import { landingOf } from '../helpers/oauth.js';
import { ledger } from '../helpers/secret-ledger.js';
import type * as ClientModule from '../../client/src/index.js';

let c: typeof ClientModule;
let github: FakeGitHub;
let app: TestApp;
beforeAll(async () => {
  const dist = await builtClient();
  c = (await import(path.join(dist, 'index.js'))) as typeof ClientModule;
  github = await startFakeGitHub();
  ledger.sent(github.clientSecret, 'GITHUB_CLIENT_SECRET');
  app = await startTestApp({
    GITHUB_CLIENT_ID: github.clientId,
    GITHUB_CLIENT_SECRET: github.clientSecret,
    GITHUB_BASE_URL: github.url,
    GITHUB_API_URL: github.url,
  });
}, 240_000);
afterAll(async () => {
  await app?.close();
  await github?.close();
});

describe('sign-in with an identity provider through the client', () => {
  it('lists the providers, builds the sign-in URL, exchanges the code and keeps the tokens', async () => {
    const api = c.createApiClient({ baseUrl: `${app.url}/` });
    expect(await api.oauth.providers.query()).toEqual({ items: [{ id: 'github', name: 'GitHub' }] });
    const href = api.session.providerSignInUrl('github', '/projects?tab=1');
    expect(href).toBe(`${app.url}/auth/oauth/github/start?redirectTo=%2Fprojects%3Ftab%3D1`);

    const email = uniqueEmail('client-oauth');
    github.signInAs(githubAccount(github, email).login);
    const landing = landingOf((await new Browser().open(href)).location);
    expect(landing.redirectTo).toBe('/projects?tab=1');
    ledger.sent(landing.code, 'an exchange code');

    const result = signedInOf(await api.session.signInWithCode(landing.code!));
    expect(result.user.email).toBe(email);
    expect(await api.session.getTokens()).toEqual({
      accessToken: result.accessToken,
      refreshToken: result.refreshToken,
    });
    expect((await api.auth.me.query()).user.email).toBe(email);

    const replay = await api.session.signInWithCode(landing.code!).catch((err: unknown) => err);
    expect(c.isApiError(replay, 'INVALID_TOKEN')).toBe(true);
    expect(replay).toMatchObject({ status: 400 });
  });

  it('finishes a link started from the settings: the code goes with the current session', async () => {
    const api = c.createApiClient({ baseUrl: app.url });
    const email = uniqueEmail('client-link');
    await api.auth.register.mutate({ email, password: STRONG_PASSWORD, name: 'Linker' });
    const signedIn = signedInOf(await api.session.signIn(email, STRONG_PASSWORD));

    const { url } = await api.oauth.linkStart.mutate({ provider: 'github', redirectTo: '/settings' });
    github.signInAs(githubAccount(github, uniqueEmail('client-link-gh')).login);
    const landing = landingOf((await new Browser().open(url)).location);
    ledger.sent(landing.code, 'an exchange code');

    const linked = signedInOf(await api.session.signInWithCode(landing.code!));
    expect(linked.user.id).toBe(signedIn.user.id);
    const { items } = await api.oauth.identities.query();
    expect(items.map((i) => i.provider)).toEqual(['github']);
  });
});
