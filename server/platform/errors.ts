// The one place where errors become HTTP answers. Services throw AppError with a stable domain code;
// toApiError() maps anything thrown (AppError, TRPCError, Zod validation, body-parser failures, bugs) to
// { status, code, message, issues } for REST, /trpc and plain Express routes alike.
import { TRPCError } from '@trpc/server';
import { TRPC_ERROR_CODES_BY_KEY, type TRPC_ERROR_CODE_KEY, type TRPC_ERROR_CODE_NUMBER } from '@trpc/server/rpc';
import { ZodError } from 'zod';
import { UnstorableText } from './unstorable-text.js';
import { isDatabaseUnavailable } from '../../db/errors.js';

/** Every code a client can see, with its HTTP status (docs/api.md, "Errors"). */
export const ERROR_STATUS = {
  // HTTP-class codes
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  REQUEST_TIMEOUT: 408,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  REQUEST_HEADER_FIELDS_TOO_LARGE: 431,
  TOO_MANY_REQUESTS: 429,
  INTERNAL_SERVER_ERROR: 500,
  BAD_GATEWAY: 502,
  SERVICE_UNAVAILABLE: 503,
  // domain codes
  INVALID_CREDENTIALS: 401,
  USER_SUSPENDED: 403,
  INVALID_TOKEN: 400,
  EMAIL_TAKEN: 409,
  WEAK_PASSWORD: 400,
  WORKSPACE_UNAVAILABLE: 403,
  PERMISSION_DENIED: 403,
  DEMO_READ_ONLY: 403,
  DEMO_GENERATION_DISABLED: 403,
  TEST_ACCOUNT_LIMIT_REACHED: 403,
  AI_MONTHLY_LIMIT_REACHED: 403,
  AI_PROVIDER_NOT_CONFIGURED: 503,
  AI_PROVIDER_ERROR: 502,
  BILLING_NOT_CONFIGURED: 503,
  PLAN_NOT_FOUND: 404,
  PLAN_HAS_SUBSCRIPTIONS: 409,
  API_KEYS_NOT_IN_PLAN: 403,
  API_KEY_LIMIT_REACHED: 403,
  WEBHOOK_URL_NOT_ALLOWED: 400,
  INVALID_SIGNATURE: 400,
  DOWNLOADS_DISABLED: 503,
  STORAGE_NOT_CONFIGURED: 503,
  STORAGE_PROVIDER_ERROR: 502,
  RATE_LIMITED: 429,
  SETTINGS_READ_ONLY: 409,
  INVALID_STATE: 409,
  SUBSCRIPTION_ACTIVE: 409,
  MEMBER_LIMIT_REACHED: 403,
  // sign-in with identity providers (routers/oauth)
  OAUTH_PROVIDER_NOT_ENABLED: 404,
  OAUTH_STATE_INVALID: 400,
  OAUTH_ACCESS_DENIED: 403,
  OAUTH_SIGN_IN_FAILED: 400,
  OAUTH_EMAIL_REQUIRED: 400,
  OAUTH_PROVIDER_ERROR: 502,
  ACCOUNT_LINK_REQUIRED: 409,
  IDENTITY_ALREADY_LINKED: 409,
  LAST_SIGN_IN_METHOD: 409,
  // idempotency keys of REST POST and PATCH (server/platform/idempotency.ts)
  IDEMPOTENCY_KEY_IN_USE: 409,
  IDEMPOTENCY_KEY_REUSED: 422,
  // two-factor sign-in (routers/auth/mfa.ts)
  MFA_ALREADY_ENABLED: 409,
  MFA_NOT_ENABLED: 409,
  INVALID_MFA_CODE: 400,
  MFA_REQUIRED: 403,
  // Account self-service and the workspace lifecycle
  REAUTHENTICATION_REQUIRED: 403,
  MANAGED_BY_SSO: 403,
  OWNERSHIP_TRANSFER_REQUIRED: 409,
  EXPORT_IN_PROGRESS: 409,
  // Enterprise single sign-on and directory sync
  DOMAIN_NOT_VERIFIED: 409,
  DOMAIN_TAKEN: 409,
  MEMBERSHIP_SUSPENDED: 403,
  SSO_NOT_CONFIGURED: 404,
  SSO_ASSERTION_INVALID: 400,
  SSO_DOMAIN_MISMATCH: 403,
  SSO_REQUIRED: 403,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ApiIssue {
  path: string;
  message: string;
  code: string;
}

export interface ApiError {
  status: number;
  code: string;
  message: string;
  issues?: ApiIssue[];
  /** Sent as `Retry-After` (seconds): when to try again (an outage that should pass, a lock that ends). */
  retryAfterSeconds?: number;
}

/** The database is away (down, restarting, out of connections): 503, to be tried again shortly. */
const databaseUnavailable = (): ApiError => ({ ...httpError(503), retryAfterSeconds: 5 });

/** The headers of an error answer besides its body: `Retry-After` where the error says when. */
export const errorHeaders = (api: ApiError): Record<string, string> =>
  api.retryAfterSeconds === undefined ? {} : { 'Retry-After': String(api.retryAfterSeconds) };

/** The JSON body of every error answer. */
export interface ErrorBody {
  code: string;
  message: string;
  requestId: string;
  issues?: ApiIssue[];
}

/** A failure the caller can act on. The message is shown to the client: never put a secret in it. */
export class AppError extends Error {
  override name = 'AppError';
  readonly status: number;
  /** Sent as `Retry-After` (seconds): when the refused request may succeed (a lock that ends). */
  retryAfterSeconds?: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly issues?: ApiIssue[],
  ) {
    super(message);
    this.status = ERROR_STATUS[code];
  }
}

const FRIENDLY_5XX = 'Something went wrong on our side. Please try again in a moment.';

const DEFAULT_MESSAGES: Partial<Record<ErrorCode, string>> = {
  UNAUTHORIZED: 'Authentication required: send a valid access token.',
  FORBIDDEN: 'You do not have access to this resource.',
  NOT_FOUND: 'Not found.',
  METHOD_NOT_ALLOWED: 'Method not allowed on this route.',
  REQUEST_TIMEOUT: 'The request did not arrive in time.',
  PAYLOAD_TOO_LARGE: 'Request body is too large (limit 1 MiB).',
  UNSUPPORTED_MEDIA_TYPE: 'Send the request body as application/json.',
  REQUEST_HEADER_FIELDS_TOO_LARGE: 'Request headers are too large.',
  TOO_MANY_REQUESTS: 'Too many requests. Please try again later.',
  SERVICE_UNAVAILABLE: 'The service is temporarily unavailable. Please try again in a moment.',
};

const HTTP_CLASS_BY_STATUS: Record<number, ErrorCode> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  408: 'REQUEST_TIMEOUT',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'TOO_MANY_REQUESTS',
  503: 'SERVICE_UNAVAILABLE',
};

const TRPC_STATUS: Partial<Record<TRPCError['code'], number>> = {
  PARSE_ERROR: 400,
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_SUPPORTED: 405,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  TOO_MANY_REQUESTS: 429,
  SERVICE_UNAVAILABLE: 503,
};

/** An error built from a bare status (body-parser, tRPC transport errors), with our code and wording. */
export function httpError(status: number, message?: string): ApiError {
  const code = HTTP_CLASS_BY_STATUS[status];
  if (!code) return { status: 500, code: 'INTERNAL_SERVER_ERROR', message: FRIENDLY_5XX };
  return { status, code, message: message ?? DEFAULT_MESSAGES[code] ?? 'Bad request.' };
}

export function fromAppError(e: AppError): ApiError {
  return {
    status: e.status,
    code: e.code,
    message: e.message,
    ...(e.issues ? { issues: e.issues } : {}),
    ...(e.retryAfterSeconds !== undefined ? { retryAfterSeconds: e.retryAfterSeconds } : {}),
  };
}

/**
 * Zod issues as the client sees them: a dotted path, a message and the Zod code. Never the input value.
 * A refinement can name a domain code (`params: { code: 'WEAK_PASSWORD' }`): when every issue of the
 * request carries the same one, that code is used instead of BAD_REQUEST.
 */
export function fromZodError(e: ZodError): ApiError {
  const issues: ApiIssue[] = e.issues.map((i) => ({
    path: i.path.map(String).join('.'),
    message: i.message,
    code: i.code,
  }));
  const domainCodes = new Set(
    e.issues.map((i) => (i.code === 'custom' && typeof i.params?.code === 'string' ? i.params.code : undefined)),
  );
  const [only] = domainCodes;
  if (domainCodes.size === 1 && only && only in ERROR_STATUS) {
    const code = only as ErrorCode;
    return { status: ERROR_STATUS[code], code, message: issues[0].message, issues };
  }
  const first = issues[0];
  // Zod's own messages may already start with "Invalid input" ("Invalid input: expected string, ..."): said once.
  const detail = first?.message.replace(/^Invalid input:?\s*/i, '');
  const message = first
    ? `Invalid input: ${first.path ? `${first.path}: ` : ''}${detail || 'not valid'}`
    : 'Invalid input.';
  return { status: 400, code: 'BAD_REQUEST', message, issues };
}

interface BodyParserError {
  type?: string;
  status?: number;
  expose?: boolean;
  code?: unknown;
}

/** The body parsers decode gzip, deflate and br (server/platform/request-body.ts). */
const UNDECODABLE_BODY = 'The request body is not valid gzip, deflate or br data, as its Content-Encoding says it is.';
const UNSUPPORTED_ENCODING = 'This Content-Encoding is not accepted: send the body as is, or with gzip, deflate or br.';

/**
 * zlib's own error (`Z_DATA_ERROR`, `Z_BUF_ERROR`, brotli's `ERR__ERROR_FORMAT_...`), which body-parser
 * passes on, made a 400 but without a type, when a body does not decode as its Content-Encoding says.
 */
const isDecodingFailure = (bp: BodyParserError) =>
  bp.type === undefined && bp.status === 400 && typeof bp.code === 'string' && /^(Z_|ERR__)/.test(bp.code);

/** Maps anything thrown to the answer the client gets. Unknown errors become a friendly 500. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof AppError) return fromAppError(err);
  if (err instanceof TRPCError) {
    if (err.cause instanceof AppError) return fromAppError(err.cause);
    if (err.code === 'BAD_REQUEST' && err.cause instanceof ZodError) return fromZodError(err.cause);
    if (err.code === 'PARSE_ERROR') return httpError(400, 'Malformed JSON in request body.');
    if (err.code === 'INTERNAL_SERVER_ERROR')
      return isDatabaseUnavailable(err.cause) ? databaseUnavailable() : httpError(500);
    const status = TRPC_STATUS[err.code];
    if (!status) return httpError(500);
    // Messages of tRPC's own transport errors are safe and specific ("No procedure found ...").
    return httpError(status, status === 404 ? 'Not found.' : err.message);
  }
  if (err instanceof ZodError) return fromZodError(err);
  if (err instanceof UnstorableText) return httpError(400, err.message);
  // Express's router, on a path parameter whose percent-encoding is broken (`/users/%E0%A4%A/avatar`).
  if (err instanceof URIError && (err as URIError & { status?: number }).status === 400)
    return httpError(400, 'Malformed percent-encoding in the URL path.');
  const bp = err as BodyParserError | null;
  if (bp && typeof bp === 'object' && bp.expose && isDecodingFailure(bp)) return httpError(400, UNDECODABLE_BODY);
  if (bp && typeof bp === 'object' && typeof bp.type === 'string' && typeof bp.status === 'number' && bp.expose) {
    // (A body nested thousands deep overflows the stack of the parser's reviver: a RangeError.)
    if (bp.type === 'entity.parse.failed')
      return httpError(
        400,
        err instanceof RangeError ? 'The JSON body is nested too deeply.' : 'Malformed JSON in request body.',
      );
    if (bp.type === 'entity.too.large') return httpError(413);
    if (bp.type === 'encoding.unsupported') return httpError(415, UNSUPPORTED_ENCODING);
    if (bp.type === 'charset.unsupported') return httpError(415, 'Unsupported charset: send the body as UTF-8.');
    return httpError(bp.status);
  }
  return isDatabaseUnavailable(err) ? databaseUnavailable() : httpError(500);
}

/** `error.data` of a `/trpc` error answer: the values of the REST body, typed for the TypeScript client. */
export interface TrpcErrorData {
  code: ErrorCode;
  httpStatus: number;
  requestId: string | undefined;
  path?: string;
  issues?: ApiIssue[];
}

/** `error` of a `/trpc` error answer: tRPC's envelope around TrpcErrorData. */
export interface TrpcErrorShape {
  message: string;
  code: TRPC_ERROR_CODE_NUMBER;
  data: TrpcErrorData;
}

/**
 * An error as `/trpc` answers it, inside tRPC's envelope (`error`): the values of the REST body under
 * `data`, and `code`, tRPC's JSON-RPC number (trpcErrorNumber). The errorFormatter of server/platform/trpc.ts and the
 * answers of what is refused before tRPC has the request (server/platform/http.ts) both build it here.
 */
export function trpcErrorShape(
  api: ApiError,
  code: TRPC_ERROR_CODE_NUMBER,
  requestId: string | undefined,
  path?: string,
): TrpcErrorShape {
  return {
    message: api.message,
    code,
    // Every ApiError's code is a key of ERROR_STATUS (toApiError, httpError and the rate limiter build them).
    data: {
      code: api.code as ErrorCode,
      httpStatus: api.status,
      requestId,
      path,
      ...(api.issues ? { issues: api.issues } : {}),
    },
  };
}

/** tRPC's name of each HTTP status, whose JSON-RPC number is tRPC's own (TRPC_ERROR_CODES_BY_KEY). */
const TRPC_CODE_BY_STATUS: Record<number, TRPC_ERROR_CODE_KEY> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  402: 'PAYMENT_REQUIRED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_SUPPORTED',
  408: 'TIMEOUT',
  409: 'CONFLICT',
  412: 'PRECONDITION_FAILED',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  422: 'UNPROCESSABLE_CONTENT',
  428: 'PRECONDITION_REQUIRED',
  429: 'TOO_MANY_REQUESTS',
  499: 'CLIENT_CLOSED_REQUEST',
  500: 'INTERNAL_SERVER_ERROR',
  501: 'NOT_IMPLEMENTED',
  502: 'BAD_GATEWAY',
  503: 'SERVICE_UNAVAILABLE',
  504: 'GATEWAY_TIMEOUT',
};

/**
 * The JSON-RPC `error.code` of a `/trpc` error: tRPC's number for the class of its HTTP status (401 -32001,
 * 409 -32009, 429 -32029...), so a domain error is not -32603 (internal). tRPC numbers 502, 503 and 504
 * like 500; `error.data.httpStatus` and `error.data.code` tell them apart.
 */
export function trpcErrorNumber(status: number): TRPC_ERROR_CODE_NUMBER {
  const key = TRPC_CODE_BY_STATUS[status] ?? (status >= 400 && status < 500 ? 'BAD_REQUEST' : 'INTERNAL_SERVER_ERROR');
  return TRPC_ERROR_CODES_BY_KEY[key];
}

export function errorBody(error: ApiError, requestId: string): ErrorBody {
  return {
    code: error.code,
    message: error.message,
    requestId,
    ...(error.issues ? { issues: error.issues } : {}),
  };
}
