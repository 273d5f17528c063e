// What a route declares about itself, in one place: its procedure's meta (trpc-to-openapi's `openapi` plus
// the fields below). The limiter, the OpenAPI document, the REST handler and the tests read them there.
import type { OpenApiMeta } from 'trpc-to-openapi';
import type { ErrorCode } from './errors.js';
import type { ApiKeyScope } from '../../db/schema.js';

/** The rate-limit tiers (RATE_LIMIT_* settings): each counts its own points per client and window. */
export const TIERS = ['default', 'auth', 'contact', 'upload', 'publicApi', 'webhook', 'scim'] as const;
export type Tier = (typeof TIERS)[number];

export interface RouteMeta {
  /** Success status when it is not 200: 201 for routes that create an addressable record, 202 for intake. */
  successStatus?: 201 | 202;
  /**
   * The error codes the procedure answers besides those every route of its kind can (malformed input, no
   * token, an unknown id in its path, the rate limit: openapi/document.ts), listed in /openapi.json.
   */
  errors?: readonly ErrorCode[];
  /** Who may call it, in a sentence, set by the procedure builders (server/platform/trpc.ts) for /openapi.json. */
  caller?: string;
  /** The errors of the procedure's access check (who may call it), set by the procedure builders (server/platform/trpc.ts). */
  accessErrors?: readonly ErrorCode[];
  /**
   * The rate-limit tier that counts this route's calls (default: 'default'); false: never limited (health
   * checks, status pages). Plain Express routes declare it as `x-rate-limit-tier` in their OpenAPI entry.
   */
  rateLimit?: Tier | false;
  /** Other statuses that answer with the success body (GET /health: 503 while the database is away). */
  sameBodyWith?: Record<number, string>;
  /**
   * The route also answers `Accept: text/event-stream` with a stream of events (the streamed generation):
   * what the events are, in a sentence, for /openapi.json. The stream itself is served beside the procedure.
   */
  eventStream?: string;
  /**
   * Served as an MCP tool at /mcp (routers/mcp), named after the procedure's path with `_` for `.`. Only
   * procedures marked here are tools; a call from /mcp to any other procedure is refused.
   */
  mcp?: McpToolMeta;
}

export interface McpToolMeta {
  /** The credential (API key or OAuth grant) must hold one of these scopes. */
  scopes: readonly ApiKeyScope[];
  /** The tool changes something: an Idempotency-Key runs it once, and it is not annotated read-only. */
  write?: boolean;
}

export type Meta = OpenApiMeta<RouteMeta>;

/** The tier a route's declaration names: 'default' unless it names one; `false`, never limited. */
export const tierOf = (declared: Tier | false | undefined): Tier | undefined =>
  declared === false ? undefined : (declared ?? 'default');

/** The tier a plain route's OpenAPI operation declares (`x-rate-limit-tier`). */
export const tierOfOperation = (operation: unknown): Tier | undefined =>
  tierOf((operation as { 'x-rate-limit-tier'?: Tier | false } | undefined)?.['x-rate-limit-tier']);
