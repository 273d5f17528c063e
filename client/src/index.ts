// The typed client of the service's `/trpc` endpoint for TypeScript front ends: calls batched over
// @trpc/client, the access token attached, one refresh shared by every call that met an expired token, and
// every failure thrown as one typed error class, ApiError.
// (tRPC's declarations name Disposable: projects whose `lib` lacks it still compile them.)
/// <reference lib="esnext.disposable" preserve="true" />
import {
  TRPCClientError,
  createTRPCClient,
  httpBatchLink,
  httpBatchStreamLink,
  httpLink,
  splitLink,
  type TRPCClient,
  type TRPCLink,
} from '@trpc/client';
import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import { observable, type Unsubscribable } from '@trpc/server/observable';

// #region server-types: in dist, the declarations scripts/build.ts generates from the service's router
import type { ApiIssue, AppRouter, ErrorCode, ErrorShape } from './server-types.js';
export type { ApiIssue, AppRouter, ErrorCode, ErrorShape };
// #endregion server-types

/** The input of every procedure, by path: `RouterInputs['auth']['login']`. */
export type RouterInputs = inferRouterInputs<AppRouter>;
/** The output of every procedure, by path, as it arrives (JSON: dates are ISO strings). */
export type RouterOutputs = inferRouterOutputs<AppRouter>;

/** A sign-in's first step for an account with two-factor sign-in on: no tokens yet (`session.verifyMfa`). */
export type MfaChallenge = Extract<RouterOutputs['auth']['login'], { mfaRequired: true }>;
/** A completed sign-in: the tokens (kept by the client), the user and the workspace context. */
export type SignedIn = RouterOutputs['auth']['mfaVerify'];

/** Whether a sign-in answered the second step instead of a session: then call `session.verifyMfa`. */
export function isMfaChallenge(result: SignedIn | MfaChallenge): result is MfaChallenge {
  return (result as { mfaRequired?: unknown }).mfaRequired === true;
}

/**
 * The most calls one batched request carries by default: what the service accepts by default
 * (TRPC_MAX_BATCH_SIZE). `batch: { maxItems }` sets another, for a service configured otherwise.
 */
export const MAX_BATCH_ITEMS = 100;
/** Longer GET URLs are split into more requests: Node's servers refuse request heads over 16 KiB. */
const MAX_URL_LENGTH = 8_000;

// ---------------------------------------------------------------------------------------------------
// Errors

/** Codes of failures where no answer of the service came back: the network, or the call was aborted. */
export type ClientErrorCode = 'NETWORK_ERROR' | 'ABORTED';
/** Every code an ApiError can carry: the service's codes and the client's own two. */
export type ApiErrorCode = ErrorCode | ClientErrorCode;

export interface ApiErrorInit<C extends ApiErrorCode> {
  code: C;
  status: number;
  requestId?: string;
  issues?: ApiIssue[];
  /** The `/trpc` error as the service sent it. */
  shape?: ErrorShape;
  cause?: Error;
  meta?: Record<string, unknown>;
}

/**
 * Every failure of a call: the service's answer (`code`, `status`, `requestId`, `issues`), or a failure
 * to get one (`NETWORK_ERROR`, `ABORTED`, status 0). It is a TRPCClientError too, so tRPC's tooling
 * (React Query and the like) reads it as its own.
 */
export class ApiError<C extends ApiErrorCode = ApiErrorCode> extends TRPCClientError<AppRouter> {
  override name = 'ApiError';
  /** The service's error code (`error.data.code`), or NETWORK_ERROR / ABORTED when no answer came. */
  readonly code: C;
  /** The HTTP status of the answer; 0 when there was none. */
  readonly status: number;
  /** The answer's request id (X-Request-Id): the key to the service's logs of this call. */
  readonly requestId: string | undefined;
  /** What was wrong with the input, one entry per problem (validation errors); empty otherwise. */
  readonly issues: ApiIssue[];

  constructor(message: string, init: ApiErrorInit<C>) {
    super(message, { result: init.shape ? { error: init.shape } : undefined, cause: init.cause, meta: init.meta });
    // TRPCClientError sets its own prototype: this one is an ApiError all the same.
    Object.setPrototypeOf(this, new.target.prototype);
    this.code = init.code;
    this.status = init.status;
    this.requestId = init.requestId;
    this.issues = init.issues ?? [];
  }
}

/**
 * Whether `err` is an ApiError, of one of `codes` when given; narrows `err.code` to them.
 * @example if (isApiError(err, 'EMAIL_TAKEN')) form.setError('email', err.message);
 */
export function isApiError(err: unknown): err is ApiError;
export function isApiError<C extends ApiErrorCode>(err: unknown, code: C, ...more: C[]): err is ApiError<C>;
export function isApiError(err: unknown, ...codes: ApiErrorCode[]): boolean {
  return err instanceof ApiError && (codes.length === 0 || codes.includes((err as ApiError).code));
}

interface ResponseLike {
  status?: unknown;
  headers?: { get?(name: string): string | null };
}

/** Any failure of a call as an ApiError. */
function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err as ApiError;
  const e =
    err instanceof TRPCClientError
      ? (err as TRPCClientError<AppRouter>)
      : TRPCClientError.from<AppRouter>(err instanceof Error ? err : new Error(String(err)));
  const shape = e.shape;
  if (shape?.data && typeof shape.data.code === 'string') {
    const { code, httpStatus, requestId, issues } = shape.data;
    return new ApiError(shape.message, {
      code,
      status: httpStatus,
      requestId,
      issues,
      shape,
      cause: e.cause,
      meta: e.meta,
    });
  }
  // No answer in tRPC's envelope: the request failed, was aborted, or something else answered (a proxy).
  const response = e.meta?.response as ResponseLike | undefined;
  const status = typeof response?.status === 'number' ? response.status : 0;
  const requestId = response?.headers?.get?.('x-request-id') ?? undefined;
  const aborted = e.cause?.name === 'AbortError' || (err instanceof Error && err.name === 'AbortError');
  const code = aborted ? 'ABORTED' : 'NETWORK_ERROR';
  const message = aborted
    ? 'The call was aborted.'
    : status
      ? `The service answered HTTP ${status} without an error body.`
      : `The service could not be reached: ${e.message}`;
  return new ApiError(message, { code, status, requestId, cause: e, meta: e.meta });
}

// ---------------------------------------------------------------------------------------------------
// Tokens

/** The tokens of a session. */
export interface Tokens {
  accessToken: string;
  refreshToken: string;
}

/** Where the client keeps the session's tokens; either method may be async (a secure store). */
export interface TokenStorage {
  get(): Tokens | null | Promise<Tokens | null>;
  set(tokens: Tokens | null): void | Promise<void>;
}

/** Tokens kept in memory: the session lasts as long as the page (the default). */
export function memoryStorage(initial: Tokens | null = null): TokenStorage {
  let tokens = initial;
  return {
    get: () => tokens,
    set: (next) => {
      tokens = next;
    },
  };
}

/** The part of the Web Storage API the adapter uses (`localStorage`, `sessionStorage`). */
export interface WebStorageLike {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/**
 * Tokens kept in the browser's localStorage under `key` (or another Web Storage), so a reload or another
 * tab keeps the session. Every script of the page can read them: use it only on pages that run no script
 * you do not trust.
 */
export function localStorageTokens(key = 'workspace-saas.session', store?: WebStorageLike): TokenStorage {
  const web = () => {
    const found = store ?? (globalThis as { localStorage?: WebStorageLike }).localStorage;
    if (!found) throw new Error('localStorageTokens: there is no localStorage here (pass a store)');
    return found;
  };
  return {
    get() {
      try {
        const value: unknown = JSON.parse(web().getItem(key) ?? 'null');
        const t = value as Partial<Tokens> | null;
        return t && typeof t.accessToken === 'string' && typeof t.refreshToken === 'string'
          ? { accessToken: t.accessToken, refreshToken: t.refreshToken }
          : null;
      } catch {
        return null;
      }
    },
    set(tokens) {
      if (tokens)
        web().setItem(key, JSON.stringify({ accessToken: tokens.accessToken, refreshToken: tokens.refreshToken }));
      else web().removeItem(key);
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// The client

export interface ApiClientOptions {
  /** Where the service is, e.g. `https://api.example.com`: calls go to `<baseUrl>/trpc`. */
  baseUrl: string;
  /** The fetch to send requests with (default: the global one). */
  fetch?: typeof fetch;
  /** Where the tokens are kept: memoryStorage() by default; localStorageTokens() keeps them across reloads. */
  storage?: TokenStorage;
  /**
   * Called once when the service refuses to renew the session (the refresh token was revoked or expired,
   * the account suspended): the tokens are already cleared. Show the sign-in page here.
   */
  onSessionEnd?: (reason: ApiError) => void;
  /**
   * Calls made together go in one request (httpBatchLink, at most `maxItems` calls: MAX_BATCH_ITEMS, 100,
   * unless set; keep it at or under the service's TRPC_MAX_BATCH_SIZE); `false` sends each call alone
   * (httpLink).
   */
  batch?: boolean | { maxItems?: number };
}

/** Signing in and out; the client attaches and renews the tokens by itself. */
export interface Session {
  /**
   * Signs in (auth.login) and keeps the tokens; answers the user and workspace context. For an account with
   * two-factor sign-in on it answers the second step instead (`isMfaChallenge`): then `verifyMfa`.
   */
  signIn(email: string, password: string): Promise<RouterOutputs['auth']['login']>;
  /**
   * The second step of a sign-in (auth.mfaVerify): the challenge's `mfaToken` and a code of the
   * authenticator app (`{ code }`) or a backup code (`{ backupCode }`); keeps the tokens like `signIn`.
   */
  verifyMfa(mfaToken: string, factor: { code: string } | { backupCode: string }): Promise<SignedIn>;
  /**
   * Where to send the browser to sign in with an identity provider (an id of `oauth.providers`):
   * `location.assign(api.session.providerSignInUrl('github', '/dashboard'))`. A navigation, not a call.
   */
  providerSignInUrl(provider: string, redirectTo?: string): string;
  /**
   * On the web app's page `/auth/callback?code=...`: exchanges the code (oauth.exchange) and keeps the
   * tokens, as signIn does. A code of a link started from the settings is sent with the current session.
   */
  signInWithCode(code: string): Promise<RouterOutputs['oauth']['exchange']>;
  /** Revokes the session (auth.logout) and clears the tokens; they are cleared even if the service is away. */
  signOut(): Promise<void>;
  /** Renews the tokens now (auth.refresh): false without a session, or when the service refused (the session ended). */
  refresh(): Promise<boolean>;
  /** Keeps tokens obtained otherwise (`null` clears them). */
  setTokens(tokens: Tokens | null): Promise<void>;
  getTokens(): Promise<Tokens | null>;
}

/** Every procedure (`api.auth.me.query()`, `api.auth.login.mutate({...})`) and `session`. */
export type ApiClient = TRPCClient<AppRouter> & { readonly session: Session };

/** Procedures whose UNAUTHORIZED is their answer, not an expired access token. */
const SESSION_PROCEDURES = new Set(['auth.login', 'auth.register', 'auth.refresh', 'auth.logout', 'auth.mfaVerify']);
/** Procedures whose answer is an async iterable, read as it arrives (httpBatchStreamLink). */
const STREAMED_PROCEDURES = new Set(['ai.generateStream']);
/** The operation context entry carrying the access token a call is sent with. */
const ACCESS_TOKEN = 'workspaceSaas.accessToken';

export function createApiClient(options: ApiClientOptions): ApiClient {
  const base = options.baseUrl.replace(/\/+$/, '');
  const url = `${base}/trpc`;
  const fetchFn: typeof fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const storage = options.storage ?? memoryStorage();
  const bearer = (token: unknown): Record<string, string> =>
    typeof token === 'string' ? { authorization: `Bearer ${token}` } : {};

  // Sign-in, refresh and sign-out go through a client of their own: no token, no retry.
  const plain = createTRPCClient<AppRouter>({ links: [httpLink({ url, fetch: fetchFn })] });
  const renewal = new Renewal(
    storage,
    async (refreshToken) => {
      try {
        return await plain.auth.refresh.mutate({ refreshToken });
      } catch (err) {
        throw toApiError(err);
      }
    },
    options.onSessionEnd,
  );

  const batch = options.batch ?? true;
  const maxItems = Math.max(1, Math.floor((typeof batch === 'object' && batch.maxItems) || MAX_BATCH_ITEMS));
  const transport =
    batch === false
      ? httpLink({ url, fetch: fetchFn, headers: ({ op }) => bearer(op.context[ACCESS_TOKEN]) })
      : httpBatchLink({
          url,
          fetch: fetchFn,
          maxItems,
          maxURLLength: MAX_URL_LENGTH,
          headers: ({ opList }) => bearer(opList[0].context[ACCESS_TOKEN]),
        });
  // Procedures that answer as they go (ai.generateStream) are read with httpBatchStreamLink: a POST whose
  // answer arrives in pieces, each piece an event of the procedure's async iterable.
  const streaming = httpBatchStreamLink({
    url,
    fetch: fetchFn,
    maxItems: 1,
    headers: ({ opList }) => bearer(opList[0].context[ACCESS_TOKEN]),
  });
  const trpc = createTRPCClient<AppRouter>({
    links: [
      sessionLink(renewal),
      splitLink({ condition: (op) => STREAMED_PROCEDURES.has(op.path), true: streaming, false: transport }),
    ],
  });

  const session: Session = {
    async signIn(email, password) {
      const result = await trpc.auth.login.mutate({ email, password });
      if ('accessToken' in result && 'refreshToken' in result) {
        await storage.set({ accessToken: result.accessToken, refreshToken: result.refreshToken });
      }
      return result;
    },
    async verifyMfa(mfaToken, factor) {
      const result = await trpc.auth.mfaVerify.mutate({ mfaToken, ...factor });
      await storage.set({ accessToken: result.accessToken, refreshToken: result.refreshToken });
      return result;
    },
    providerSignInUrl(provider, redirectTo) {
      const query = redirectTo === undefined ? '' : `?${new URLSearchParams({ redirectTo }).toString()}`;
      return `${base}/auth/oauth/${encodeURIComponent(provider)}/start${query}`;
    },
    async signInWithCode(code) {
      const result = await trpc.oauth.exchange.mutate({ code });
      if ('accessToken' in result && 'refreshToken' in result) {
        await storage.set({ accessToken: result.accessToken, refreshToken: result.refreshToken });
      }
      return result;
    },
    async signOut() {
      const tokens = await storage.get();
      await storage.set(null);
      if (tokens) await plain.auth.logout.mutate({ refreshToken: tokens.refreshToken }).catch(() => undefined);
    },
    async refresh() {
      const tokens = await storage.get();
      return tokens ? renewal.renew(tokens.accessToken) : false;
    },
    setTokens: async (tokens) => storage.set(tokens),
    getTokens: async () => storage.get(),
  };
  return new Proxy(trpc, {
    get: (target, key, receiver) => (key === 'session' ? session : (Reflect.get(target, key, receiver) as unknown)),
  }) as ApiClient;
}

/**
 * The one refresh in flight: every call that met an expired access token waits for the same one, so
 * concurrent calls present the refresh token once (presenting a superseded one revokes the session).
 */
class Renewal {
  private inFlight: Promise<boolean> | undefined;

  constructor(
    private readonly storage: TokenStorage,
    private readonly refresh: (refreshToken: string) => Promise<Tokens>,
    private readonly onSessionEnd: ((reason: ApiError) => void) | undefined,
  ) {}

  /** The tokens to send a call with, once a refresh in flight is done. */
  async current(): Promise<Tokens | null> {
    if (this.inFlight) await this.inFlight;
    return this.storage.get();
  }

  /** After a call sent with `stale` met UNAUTHORIZED: true when there is a newer access token to retry with. */
  renew(stale: string): Promise<boolean> {
    this.inFlight ??= this.rotate(stale).finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async rotate(stale: string): Promise<boolean> {
    const tokens = await this.storage.get();
    if (!tokens) return false;
    // Renewed meanwhile (an earlier refresh, another tab): retry with the new token.
    if (tokens.accessToken !== stale) return true;
    try {
      const next = await this.refresh(tokens.refreshToken);
      await this.storage.set({ accessToken: next.accessToken, refreshToken: next.refreshToken });
      return true;
    } catch (err) {
      const refusal = toApiError(err);
      // Refused (401 UNAUTHORIZED, 403 USER_SUSPENDED): the session is over. Anything else (the service
      // away, rate limited) leaves it for a later call.
      if (refusal.status === 401 || refusal.status === 403) {
        await this.storage.set(null);
        this.onSessionEnd?.(refusal);
      }
      return false;
    }
  }
}

/** A streamed answer (an async iterable) whose failures, once it has begun, are thrown as ApiErrors too. */
function withApiErrors<V extends { result: { data?: unknown } }>(value: V): V {
  const data = value.result.data;
  if (typeof data !== 'object' || data === null || !(Symbol.asyncIterator in data)) return value;
  const iterable = data as AsyncIterable<unknown>;
  const wrapped = {
    async *[Symbol.asyncIterator]() {
      try {
        yield* iterable;
      } catch (err) {
        throw toApiError(err);
      }
    },
  };
  return { ...value, result: { ...value.result, data: wrapped } };
}

const isUnauthorized = (err: unknown) =>
  err instanceof TRPCClientError && (err as TRPCClientError<AppRouter>).data?.code === 'UNAUTHORIZED';

/** Attaches the access token to each call, retries a call once after a refresh, and throws ApiErrors. */
function sessionLink(renewal: Renewal): TRPCLink<AppRouter> {
  return () =>
    ({ op, next }) =>
      observable((observer) => {
        let current: Unsubscribable | undefined;
        let stopped = false;
        const fail = (err: unknown) => observer.error(toApiError(err));
        const send = async (isRetry: boolean) => {
          const tokens = await renewal.current();
          if (stopped) return;
          const sent = tokens?.accessToken;
          current = next({ ...op, context: { ...op.context, [ACCESS_TOKEN]: sent } }).subscribe({
            next: (value) => observer.next(withApiErrors(value)),
            complete: () => observer.complete(),
            error: (err) => {
              if (isRetry || sent === undefined || SESSION_PROCEDURES.has(op.path) || !isUnauthorized(err))
                return fail(err);
              renewal
                .renew(sent)
                .then((renewed) => (stopped ? undefined : renewed ? send(true) : fail(err)))
                .catch(fail);
            },
          });
        };
        send(false).catch(fail);
        return () => {
          stopped = true;
          current?.unsubscribe();
        };
      });
}
