// A small fetch client for the REST contract. It feeds the secret ledger: what it sends (passwords,
// tokens, keys) and everything it receives; and it records every answer (answers.ts).
import crypto from 'node:crypto';
import { ledger, trackBody, trackIssued } from './secret-ledger.js';
import { recordAnswer } from './answers.js';

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  headers?: Record<string, string>;
  /** A raw body, sent as is (Content-Type from `headers`). */
  raw?: string | Buffer;
  /** A multipart form (fetch sets the Content-Type with its boundary). */
  form?: FormData;
}

export type Api = <T = any>(method: string, path: string, opts?: RequestOptions) => Promise<ApiResponse<T>>;

export function apiClient(baseUrl: string): Api {
  return async (method, path, opts = {}) => {
    const headers: Record<string, string> = { ...opts.headers };
    let payload: string | Buffer | FormData | undefined = opts.form ?? opts.raw;
    if (opts.body !== undefined) {
      payload = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
      trackBody(opts.body);
    }
    if (opts.token !== undefined) {
      headers.authorization = `Bearer ${opts.token}`;
      ledger.sent(opts.token, 'a bearer token');
    }
    const res = await fetch(baseUrl + path, { method, headers, body: payload, redirect: 'manual' });
    const text = await res.text();
    ledger.observe(`${method} ${path.split('?')[0]}`, text);
    // The one header that echoes what a client sent: a secret sent as X-Request-Id must not come back.
    ledger.observe(`${method} ${path.split('?')[0]} (X-Request-Id)`, res.headers.get('x-request-id') ?? '');
    recordAnswer({ method, path, status: res.status, contentType: res.headers.get('content-type'), text });
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON */
    }
    trackIssued(body);
    return { status: res.status, headers: res.headers, body: body as never, text };
  };
}

export const uniqueEmail = (prefix = 'user') => `${prefix}-${crypto.randomBytes(5).toString('hex')}@tests.local`;

export const STRONG_PASSWORD = 'Strong-pass-123';

/** The keys of a list's answer in page mode, sorted: what every growing list answers. */
export const PAGE_KEYS = ['items', 'limit', 'nextCursor', 'page', 'total', 'totalCapped', 'totalPages'];

export interface Session {
  email: string;
  password: string;
  userId: string;
  workspaceId: string;
  accessToken: string;
  refreshToken: string;
}

/** Registers a fresh account and signs it in. */
export async function registerAndLogin(
  api: Api,
  opts: { prefix?: string; password?: string; name?: string } = {},
): Promise<Session> {
  const email = uniqueEmail(opts.prefix);
  const password = opts.password ?? STRONG_PASSWORD;
  const reg = await api('POST', '/auth/register', { body: { email, password, name: opts.name ?? 'Test User' } });
  if (reg.status !== 201) throw new Error(`register failed: ${reg.status} ${reg.text}`);
  return login(api, email, password);
}

export async function login(api: Api, email: string, password: string): Promise<Session> {
  const res = await api('POST', '/auth/login', { body: { email, password } });
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`);
  return {
    email,
    password,
    userId: res.body.user.id,
    workspaceId: res.body.activeWorkspace?.id,
    accessToken: res.body.accessToken,
    refreshToken: res.body.refreshToken,
  };
}

/** Asserts the error body `{ code, message, requestId, issues? }` and returns it. */
export function expectError(res: ApiResponse, status: number, code: string) {
  const ctx = `${res.status} ${res.text.slice(0, 300)}`;
  if (res.status !== status) throw new Error(`expected ${status} ${code}, got ${ctx}`);
  const b = res.body as { code?: unknown; message?: unknown; requestId?: unknown };
  if (b?.code !== code) throw new Error(`expected code ${code}, got ${ctx}`);
  if (typeof b.message !== 'string' || !b.message) throw new Error(`error without a message: ${ctx}`);
  if (b.requestId !== res.headers.get('x-request-id')) throw new Error(`requestId differs from X-Request-Id: ${ctx}`);
  if (/\bat .+:\d+:\d+|node_modules/.test(res.text)) throw new Error(`stack trace in error body: ${ctx}`);
  return b as {
    code: string;
    message: string;
    requestId: string;
    issues?: Array<{ path: string; message: string; code: string }>;
  };
}

/** The session of a sign-in's answer; throws on the second-factor step (an account with 2FA on). */
export function signedInOf<T extends object>(result: T): Exclude<T, { mfaRequired: true }> {
  if ('mfaRequired' in result) throw new Error('expected a session, got the second sign-in step');
  return result as Exclude<T, { mfaRequired: true }>;
}
