// The built client (client/dist) against the running service: batching, the access token, one shared
// refresh on 401 and the end of a session, and every error path keeping its code, request id and issues.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { builtClient } from '../helpers/client-build.js';
import { clockAhead } from '../helpers/clock.js';
import { STRONG_PASSWORD, registerAndLogin, signedInOf, uniqueEmail, type Session } from '../helpers/http.js';
import { signAccessToken } from '../../server/platform/security/jwt.js';
import { enableMfa } from '../helpers/mfa.js';
import type * as ClientModule from '../../client/src/index.js';

type Client = typeof ClientModule;
type ApiClientOptions = ClientModule.ApiClientOptions;

let app: TestApp;
let c: Client;
beforeAll(async () => {
  const dist = await builtClient();
  c = (await import(path.join(dist, 'index.js'))) as Client;
  app = await startTestApp();
}, 240_000);
afterAll(() => app?.close());

interface Sent {
  /** The path and query, e.g. `/trpc/auth.me,demo.status?batch=1&input=...`. */
  path: string;
  procedures: string[];
  authorization: string | null;
  status: number;
  requestId: string | null;
}

/** A fetch that records every request the client sends, for counting them. */
function recordingFetch() {
  const sent: Sent[] = [];
  const recorded: typeof fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const res = await fetch(input, init);
    sent.push({
      path: url.pathname + url.search,
      procedures: decodeURIComponent(url.pathname.replace(/^\/trpc\//, '')).split(','),
      authorization: new Headers(init?.headers).get('authorization'),
      status: res.status,
      requestId: res.headers.get('x-request-id'),
    });
    return res;
  };
  const refreshes = () => sent.filter((s) => s.procedures.includes('auth.refresh')).length;
  return { fetch: recorded, sent, refreshes };
}

function clientOf(target: TestApp, options: Partial<ApiClientOptions> = {}) {
  const recorder = recordingFetch();
  const ended: ClientModule.ApiError[] = [];
  const api = c.createApiClient({
    baseUrl: target.url,
    fetch: recorder.fetch,
    onSessionEnd: (reason) => ended.push(reason),
    ...options,
  });
  return { api, ...recorder, ended };
}

/** An access token of `userId` that expired a minute ago, signed as the service signs them. */
const expiredToken = (target: TestApp, userId: string) =>
  signAccessToken({ ...target.config, JWT_ACCESS_TTL: -60 }, userId).token;

async function signedIn(target: TestApp, options: Partial<ApiClientOptions> = {}) {
  const account = await registerAndLogin(target.api, { prefix: 'client' });
  const client = clientOf(target, options);
  const login = signedInOf(await client.api.session.signIn(account.email, account.password));
  client.sent.length = 0;
  return { ...client, account, login };
}

/** The error a promise rejects with. */
async function rejection(promise: Promise<unknown>): Promise<ClientModule.ApiError> {
  const outcome = await promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!('error' in outcome)) throw new Error(`expected a rejection, got ${JSON.stringify(outcome.value)}`);
  expect(c.isApiError(outcome.error), String(outcome.error)).toBe(true);
  return outcome.error as ClientModule.ApiError;
}

describe('batching', () => {
  it('sends three calls made together in one request, and each alone with batch: false', async () => {
    const { api, sent, account } = await signedIn(app);
    const [me, demo, health] = await Promise.all([
      api.auth.me.query(),
      api.demo.status.query(),
      api.health.health.query(),
    ]);
    expect(me.user.email).toBe(account.email);
    expect(typeof demo.demoMode).toBe('boolean');
    expect(health.status).toBe('ok');
    expect(sent.map((s) => s.procedures)).toEqual([['auth.me', 'demo.status', 'health.health']]);
    expect(sent[0].path).toContain('batch=1');

    const single = await signedIn(app, { batch: false });
    await Promise.all([single.api.auth.me.query(), single.api.demo.status.query(), single.api.health.health.query()]);
    expect(single.sent.map((s) => s.procedures).sort()).toEqual([['auth.me'], ['demo.status'], ['health.health']]);
  });

  it('puts at most 100 calls (what the service accepts by default) in one request; maxItems sets another', async () => {
    const { api, sent } = clientOf(app);
    const answers = await Promise.all(Array.from({ length: 105 }, () => api.demo.status.query()));
    expect(answers).toHaveLength(105);
    expect(sent.map((s) => [s.procedures.length, s.status]).sort()).toEqual([
      [100, 200],
      [5, 200],
    ]);
    const fewer = clientOf(app, { batch: { maxItems: 4 } });
    await Promise.all(Array.from({ length: 6 }, () => fewer.api.demo.status.query()));
    expect(fewer.sent.map((s) => s.procedures.length).sort()).toEqual([2, 4]);
  });
});

describe('tokens and refresh', () => {
  it('attaches the access token after signIn, and none before', async () => {
    const client = clientOf(app);
    const refused = await rejection(client.api.auth.me.query());
    expect(refused.code).toBe('UNAUTHORIZED');
    expect(client.sent[0].authorization).toBeNull();
    const account = await registerAndLogin(app.api, { prefix: 'client-attach' });
    await client.api.session.signIn(account.email, account.password);
    const tokens = await client.api.session.getTokens();
    expect((await client.api.auth.me.query()).user.id).toBe(account.userId);
    expect(client.sent.at(-1)!.authorization).toBe(`Bearer ${tokens!.accessToken}`);
  });

  it('on a 401 of an expired access token, refreshes once (auth.refresh) and retries the call', async () => {
    const { api, sent, account, login } = await signedIn(app);
    await api.session.setTokens({ accessToken: expiredToken(app, account.userId), refreshToken: login.refreshToken });
    const me = await api.auth.me.query();
    expect(me.user.id).toBe(account.userId);
    expect(sent.map((s) => [s.procedures.join(','), s.status])).toEqual([
      ['auth.me', 401],
      ['auth.refresh', 200],
      ['auth.me', 200],
    ]);
    const rotated = await api.session.getTokens();
    expect(rotated!.refreshToken).not.toBe(login.refreshToken);
    expect(sent[2].authorization).toBe(`Bearer ${rotated!.accessToken}`);
  });

  it('renews a token that expired by itself (JWT_ACCESS_TTL of two seconds)', async () => {
    const shortLived = await startTestApp({ JWT_ACCESS_TTL: '2' });
    try {
      const { api, refreshes, account } = await signedIn(shortLived);
      // Expiry is in whole seconds: past 3 s the first token has expired, and the new one lives 1 s at least.
      // 3.1 s later by the clock of the client and the app (both in this process: Date moved ahead).
      const me = await clockAhead(3_100, () => api.auth.me.query());
      expect(me.user.id).toBe(account.userId);
      expect(refreshes()).toBe(1);
    } finally {
      await shortLived.close();
    }
  });

  it.each([
    ['batched', true],
    ['each call alone', false],
  ] as const)(
    '20 concurrent calls with an expired access token (%s) cause exactly one refresh, and all succeed',
    async (_how, batch) => {
      const { api, sent, refreshes, account, login, ended } = await signedIn(app, { batch });
      await api.session.setTokens({ accessToken: expiredToken(app, account.userId), refreshToken: login.refreshToken });
      const answers = await Promise.all(Array.from({ length: 20 }, () => api.auth.me.query()));
      expect(answers.map((a) => a.user.id)).toEqual(Array(20).fill(account.userId));
      expect(refreshes()).toBe(1);
      expect(ended).toEqual([]);
      // The refresh token was presented once: the family is intact and the session goes on.
      // Batched: the 20 calls are one request (at most 100 a batch).
      expect(sent.filter((s) => s.status === 401).length).toBe(batch ? 1 : 20);
      expect((await api.auth.me.query()).user.id).toBe(account.userId);
    },
  );

  it('a refused refresh ends the session: onSessionEnd once, no tokens, the calls fail UNAUTHORIZED', async () => {
    const { api, refreshes, account, login, ended } = await signedIn(app);
    // The session is revoked elsewhere (signed out in another tab).
    expect((await app.api('POST', '/auth/logout', { body: { refreshToken: login.refreshToken } })).status).toBe(200);
    await api.session.setTokens({ accessToken: expiredToken(app, account.userId), refreshToken: login.refreshToken });
    const errors = await Promise.all(Array.from({ length: 5 }, () => rejection(api.auth.me.query())));
    expect(errors.map((e) => [e.code, e.status])).toEqual(Array(5).fill(['UNAUTHORIZED', 401]));
    expect(refreshes()).toBe(1);
    expect(ended).toHaveLength(1);
    expect(ended[0]).toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
    expect(await api.session.getTokens()).toBeNull();
    // Signed out: the next call goes without a token, and nothing is refreshed.
    expect((await rejection(api.auth.me.query())).code).toBe('UNAUTHORIZED');
    expect(refreshes()).toBe(1);
    expect(ended).toHaveLength(1);
  });

  it('signOut revokes the session at the service and clears the tokens', async () => {
    const { api, login } = await signedIn(app);
    await api.session.signOut();
    expect(await api.session.getTokens()).toBeNull();
    const again = await app.api('POST', '/auth/refresh', { body: { refreshToken: login.refreshToken } });
    expect(again.status).toBe(401);
  });

  it('keeps the tokens in a Web Storage with localStorageTokens: another client (a reload) is signed in', async () => {
    const items = new Map<string, string>();
    const store = {
      getItem: (k: string) => items.get(k) ?? null,
      setItem: (k: string, v: string) => void items.set(k, v),
      removeItem: (k: string) => void items.delete(k),
    };
    const account = await registerAndLogin(app.api, { prefix: 'client-storage' });
    await clientOf(app, { storage: c.localStorageTokens('session', store) }).api.session.signIn(
      account.email,
      account.password,
    );
    expect(JSON.parse(items.get('session')!)).toEqual({
      accessToken: expect.any(String),
      refreshToken: expect.any(String),
    });
    const reloaded = clientOf(app, { storage: c.localStorageTokens('session', store) });
    expect((await reloaded.api.auth.me.query()).user.id).toBe(account.userId);
    await reloaded.api.session.signOut();
    expect(items.has('session')).toBe(false);
  });
});

describe('errors: one typed ApiError with the code, status, request id and issues of the answer', () => {
  let s: Session;
  beforeAll(async () => {
    s = await registerAndLogin(app.api, { prefix: 'client-errors' });
  });

  it('a validation error: BAD_REQUEST 400 with its issues and the request id of the answer', async () => {
    const { api, sent } = clientOf(app);
    const err = await rejection(
      api.auth.register.mutate({ email: 'not-an-email', password: STRONG_PASSWORD, name: 'Val' }),
    );
    expect(err).toBeInstanceOf(c.ApiError);
    expect(err).toBeInstanceOf(Error);
    expect(err).toMatchObject({ name: 'ApiError', code: 'BAD_REQUEST', status: 400, requestId: sent[0].requestId });
    expect(err.requestId).toMatch(/^[\w-]{20,}$/);
    expect(err.issues).toEqual([{ path: 'email', message: expect.any(String), code: expect.any(String) }]);
    expect(err.data?.code).toBe('BAD_REQUEST');
    expect(c.isApiError(err, 'BAD_REQUEST')).toBe(true);
    expect(c.isApiError(err, 'EMAIL_TAKEN', 'WEAK_PASSWORD')).toBe(false);
  });

  it('EMAIL_TAKEN 409, INVALID_CREDENTIALS 401 (no refresh), UNAUTHORIZED 401, PERMISSION_DENIED 403', async () => {
    const { api, sent, refreshes } = await signedIn(app);
    const taken = await rejection(
      api.auth.register.mutate({ email: s.email, password: STRONG_PASSWORD, name: 'Again' }),
    );
    expect(taken).toMatchObject({ code: 'EMAIL_TAKEN', status: 409, requestId: sent.at(-1)!.requestId, issues: [] });
    expect(c.isApiError(taken, 'EMAIL_TAKEN')).toBe(true);

    const wrong = await rejection(api.auth.login.mutate({ email: s.email, password: 'Wrong-pass-999' }));
    expect(wrong).toMatchObject({ code: 'INVALID_CREDENTIALS', status: 401, requestId: sent.at(-1)!.requestId });
    expect(refreshes()).toBe(0);

    const anonymous = clientOf(app);
    const unauthorized = await rejection(anonymous.api.auth.me.query());
    expect(unauthorized).toMatchObject({ code: 'UNAUTHORIZED', status: 401, requestId: anonymous.sent[0].requestId });
    expect(anonymous.refreshes()).toBe(0);

    const member = await signedIn(app);
    await app.deps.db
      .insertInto('workspace_members')
      .values({ workspace_id: s.workspaceId, user_id: member.account.userId, role: 'MEMBER' })
      .execute();
    const denied = await rejection(
      member.api.workspaces.update.mutate({ workspaceId: s.workspaceId, name: 'Not yours' }),
    );
    expect(denied).toMatchObject({ code: 'PERMISSION_DENIED', status: 403, requestId: member.sent.at(-1)!.requestId });
  });

  it('calls of one batch fail each with its own code, under the request id of their request', async () => {
    const { api, sent } = clientOf(app);
    const [a, b] = await Promise.all([
      rejection(api.auth.me.query()),
      rejection(api.auth.login.mutate({ email: s.email, password: 'Wrong-pass-999' })),
    ]);
    expect(sent.length).toBeLessThanOrEqual(2);
    expect([a.code, b.code]).toEqual(['UNAUTHORIZED', 'INVALID_CREDENTIALS']);
    expect(sent.map((x) => x.requestId)).toEqual(expect.arrayContaining([a.requestId, b.requestId]));
  });

  it('RATE_LIMITED 429 once the limiter refuses, with the request id', async () => {
    const limited = await startTestApp({ RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_AUTH_MAX_REQUESTS: '2' });
    try {
      const { api, sent } = clientOf(limited);
      const wrong = () =>
        rejection(api.auth.login.mutate({ email: uniqueEmail('limited'), password: 'Wrong-pass-999' }));
      expect((await wrong()).code).toBe('INVALID_CREDENTIALS');
      expect((await wrong()).code).toBe('INVALID_CREDENTIALS');
      const err = await wrong();
      expect(err).toMatchObject({ code: 'RATE_LIMITED', status: 429, requestId: sent.at(-1)!.requestId });
      expect(err.message.length).toBeGreaterThan(0);
    } finally {
      await limited.close();
    }
  });

  it('NETWORK_ERROR with status 0 when the service cannot be reached', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const api = c.createApiClient({ baseUrl: `http://127.0.0.1:${port}` });
    const err = await rejection(api.demo.status.query());
    expect(err).toMatchObject({ code: 'NETWORK_ERROR', status: 0, requestId: undefined, issues: [] });
    expect(c.isApiError(err, 'NETWORK_ERROR')).toBe(true);
  });
});

describe('two-factor sign-in and sessions through the client', () => {
  it('signIn answers the second step (no tokens kept); verifyMfa keeps the tokens; sessions are listed', async () => {
    const account = await registerAndLogin(app.api, { prefix: 'client-mfa' });
    const { backupCodes } = await enableMfa(app.api, account.accessToken);
    const { api, ended } = clientOf(app);

    const first = await api.session.signIn(account.email, account.password);
    expect(c.isMfaChallenge(first)).toBe(true);
    if (!c.isMfaChallenge(first)) return;
    expect(first.methods).toEqual(['totp', 'backup_code']);
    expect(await api.session.getTokens()).toBeNull();

    const wrong = await rejection(api.session.verifyMfa(first.mfaToken, { backupCode: 'wrong-code' }));
    expect(c.isApiError(wrong, 'INVALID_MFA_CODE')).toBe(true);
    expect(wrong.status).toBe(400);

    const signedIn = await api.session.verifyMfa(first.mfaToken, { backupCode: backupCodes[0] });
    expect(signedIn.user).toMatchObject({ id: account.userId, mfaEnabled: true });
    expect(await api.session.getTokens()).toEqual({
      accessToken: signedIn.accessToken,
      refreshToken: signedIn.refreshToken,
    });
    const { items } = await api.auth.sessions.query();
    expect(items.filter((s) => s.current)).toHaveLength(1);

    // A spent token is UNAUTHORIZED, the answer of verify itself: no refresh, the session goes on.
    const spent = await rejection(api.session.verifyMfa(first.mfaToken, { backupCode: backupCodes[1] }));
    expect(spent.code).toBe('UNAUTHORIZED');
    expect(ended).toEqual([]);
    expect((await api.auth.me.query()).user.id).toBe(account.userId);
  });
});
