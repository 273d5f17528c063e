// Secrets a client puts in a URL (by mistake, or a misconfigured client) never reach a log line or the
// monitoring record: path segments shaped like this service's secrets (API keys `wsk_`, refresh tokens
// `rt_`, webhook secrets `whsec_`, JWTs) are masked, on unknown and known routes alike, and so are query
// values whose names look secret (`pw`, `pass*`, `secret`, `token`, `key`, `code`, `signature`, ...) or
// whose values have one of those shapes.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { login, registerAndLogin, type Session } from '../helpers/http.js';
import { ledger } from '../helpers/secret-ledger.js';
import { everyMonitoringAnswer } from '../monitoring/helpers.js';

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const base62 = (n: number) => Array.from({ length: n }, () => BASE62[crypto.randomInt(BASE62.length)]).join('');
const base64url = (bytes = 32) => crypto.randomBytes(bytes).toString('base64url');
const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');

let app: TestApp;
let admin: Session;
let user: Session;
/** Every secret sent below, by label. */
const sent: Record<string, string> = {};
const trpcPathKey = `wsk_${base62(40)}`;
/** The request ids of the requests sent below. */
const requestIds: string[] = [];

/** Sends `path` (as written: no URL normalisation) with a request id of its own, and remembers both. */
async function get(path: string, token?: string) {
  const requestId = `url-secret-${crypto.randomBytes(4).toString('hex')}`;
  requestIds.push(requestId);
  const res = await app.api('GET', path, { token, headers: { 'x-request-id': requestId } });
  expect(res.status, `${path}: ${res.text.slice(0, 200)}`).toBeLessThan(500);
  return res;
}

beforeAll(async () => {
  app = await startTestApp();
  admin = await login(app.api, TEST_ADMIN.email, TEST_ADMIN.password);
  user = await registerAndLogin(app.api, { prefix: 'url-secrets' });
  Object.assign(sent, {
    apiKey: `wsk_${base62(40)}`,
    apiKeyOnKnownRoute: `wsk_${base62(40)}`,
    jwt: `${part({ alg: 'HS256', typ: 'JWT' })}.${part({ sub: crypto.randomUUID(), typ: 'access' })}.${base64url()}`,
    realAccessToken: user.accessToken,
    refreshToken: `rt_${base64url()}`,
    realRefreshToken: user.refreshToken,
    webhookSecret: `whsec_${base64url()}`,
    shortRefreshToken: `rt_${base62(10)}`,
    encodedRefreshToken: `rt_${base64url()}`,
    pw: `pw-${base62(16)}`,
    Password: `Pass-${base62(16)}`,
    apiKeyQuery: `key-${base62(16)}`,
    code: `code-${base62(16)}`,
    signature: `sig-${base62(16)}`,
    secretShapedValue: `wsk_${base62(40)}`,
    jwtInQuery: `${part({ alg: 'HS256', typ: 'JWT' })}.${part({ sub: crypto.randomUUID() })}.${base64url()}`,
  });
  for (const [label, value] of Object.entries(sent)) ledger.sent(value, `URL canary ${label}`);

  const inPath = ['apiKey', 'jwt', 'realAccessToken', 'refreshToken', 'realRefreshToken', 'webhookSecret'];
  inPath.push('shortRefreshToken');
  for (const label of inPath) await get(`/x/${sent[label]}`);
  await get(`/x/y/${sent.refreshToken}/z`);
  // tRPC's envelope names the path called back to its caller (`error.data.path`), so this one is kept
  // out of the ledger (which would count that echo) and checked by secretsIn() alone.
  await get(`/trpc/${trpcPathKey}`);
  // A secret in the parameter of a known route: the route template is logged, and the raw URL masked.
  await get(`/workspaces/${sent.apiKeyOnKnownRoute}`, user.accessToken);
  // Percent-encoded: `r` as %72.
  await get(`/x/%72${sent.encodedRefreshToken.slice(1)}`);
  const query = [
    `pw=${sent.pw}`,
    `Password=${sent.Password}`,
    `api_key=${sent.apiKeyQuery}`,
    `code=${sent.code}`,
    `signature=${sent.signature}`,
  ].join('&');
  await get(`/x?${query}`);
  await get(`/auth/me?${query}`, user.accessToken);
  await get(`/health?next=${sent.secretShapedValue}&state=${sent.jwtInQuery}`);
});
afterAll(() => app?.close());

/** The secrets of `sent` found in `texts`, with the random part of each (past its prefix) checked too. */
function secretsIn(texts: string[]): string[] {
  const found: string[] = [];
  for (const [label, secret] of Object.entries({ ...sent, trpcPathKey })) {
    const body = secret.replace(/^(wsk_|rt_|whsec_)/, '');
    const hit = texts.find((t) => t.includes(secret) || t.includes(body));
    if (hit) found.push(`${label}: ${hit.slice(0, 400)}`);
  }
  return found;
}

describe('secrets in URLs', () => {
  it('reach no log line: the request lines show the masked path and query', () => {
    const lines = app.logs.map((l) => JSON.parse(l) as { requestId?: string; url?: string });
    const requestLines = lines.filter((l) => l.requestId && requestIds.includes(l.requestId) && l.url);
    expect(requestLines.length).toBe(requestIds.length);
    expect(secretsIn(app.logs)).toEqual([]);
    const urls = requestLines.map((l) => l.url);
    expect(urls).toContain('/x/[REDACTED]');
    expect(urls).toContain('/x/y/[REDACTED]/z');
    expect(urls).toContain('/workspaces/[REDACTED]');
    const masked = ['pw', 'Password', 'api_key', 'code', 'signature'].map((name) => `${name}=[REDACTED]`).join('&');
    expect(urls).toContain(`/x?${masked}`);
    expect(urls).toContain(`/auth/me?${masked}`);
    expect(urls).toContain('/health?next=[REDACTED]&state=[REDACTED]');
  });

  it('reach no monitoring answer (requests, errors, status, summary; REST and /trpc)', async () => {
    const texts = await everyMonitoringAnswer(app, admin.accessToken);
    // The requests above are in the record (so the check looks at real entries).
    const recorded = requestIds.filter((id) => texts.some((t) => t.includes(id)));
    expect(recorded).toEqual(requestIds);
    expect(secretsIn(texts)).toEqual([]);
  });

  it('leaves paths and queries without secrets as they are', async () => {
    const plain = await get('/x/plain-segment/2024?page=2&q=hello');
    expect(plain.status).toBe(404);
    const lines = app.logs.map((l) => JSON.parse(l) as { requestId?: string; url?: string });
    const line = lines.find((l) => l.requestId === requestIds.at(-1) && l.url);
    expect(line?.url).toBe('/x/plain-segment/2024?page=2&q=hello');
  });
});
