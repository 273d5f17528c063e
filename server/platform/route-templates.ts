// The REST route a request hits, as its template (`/workspaces/{workspaceId}`), with the procedure that
// serves it: for rate-limit tiers, monitoring and metrics, which must not count raw ids as distinct routes.
// Built once from the routers' OpenAPI meta, in declaration order, like trpc-to-openapi's own matching.
import type { AnyTRPCRouter } from '@trpc/server';
import { tierOf, tierOfOperation, type Meta, type Tier } from './route-meta.js';
import { trpcProcedures } from './trpc-path.js';

export interface RouteTemplate {
  method: string;
  template: string;
  /** The tRPC path of the procedure (e.g. `auth.login`); plain Express routes have none. */
  procedure?: string;
  /** The rate-limit tier that counts its calls (its meta's `rateLimit`); undefined: never limited. */
  tier: Tier | undefined;
  regexp: RegExp;
}

const toRegExp = (template: string) => new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}/?$`, 'i');

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options']);

/** The label of requests that match no route (a raw path could hold ids or tokens, and is unbounded). */
export const UNMATCHED_ROUTE = '(unmatched)';
/** The label of a /trpc call of several procedures at once. */
export const TRPC_BATCH_ROUTE = '/trpc/(batch)';

export class RouteTemplates {
  /** `GET /auth/me` -> its route: templates without parameters, found without a scan. */
  private readonly exact = new Map<string, RouteTemplate>();
  /** Templates with parameters, per method, in declaration order. */
  private readonly byMethod = new Map<string, RouteTemplate[]>();
  private readonly byProcedure = new Map<string, RouteTemplate>();
  /** Each request's match, found once however many middlewares ask. */
  private readonly matched = new WeakMap<object, RouteTemplate | null>();
  /** `auth.login` -> `/trpc/auth.login`, built once so labelling a call allocates nothing. */
  private readonly trpcLabels = new Map<string, string>();
  /** Every procedure's tier, REST route or not. */
  private readonly procedureTiers = new Map<string, Tier | undefined>();

  /**
   * The procedures' REST routes, from their OpenAPI meta, and the plain Express routes, from their OpenAPI
   * path entries (`{ '/storage/upload': { post: ... } }`).
   */
  constructor(router: AnyTRPCRouter, plainPaths: Record<string, object | undefined> = {}) {
    const procedures = router._def.procedures as Record<string, { _def: { meta?: Meta } }>;
    for (const [path, procedure] of Object.entries(procedures)) {
      this.trpcLabels.set(path, `/trpc/${path}`);
      const meta = procedure._def.meta;
      const tier = tierOf(meta?.rateLimit);
      this.procedureTiers.set(path, tier);
      const openapi = meta?.openapi;
      if (openapi)
        this.add({
          method: openapi.method,
          template: openapi.path,
          procedure: path,
          tier,
          regexp: toRegExp(openapi.path),
        });
    }
    for (const [template, operations] of Object.entries(plainPaths) as Array<
      [string, Record<string, unknown> | undefined]
    >) {
      for (const [method, operation] of Object.entries(operations ?? {}).filter(([key]) => HTTP_METHODS.has(key))) {
        this.add({
          method: method.toUpperCase(),
          template,
          tier: tierOfOperation(operation),
          regexp: toRegExp(template),
        });
      }
    }
  }

  private add(route: RouteTemplate) {
    if (route.procedure) this.byProcedure.set(route.procedure, route);
    if (!route.template.includes('{')) {
      const key = `${route.method} ${route.template.toLowerCase()}`;
      if (!this.exact.has(key)) this.exact.set(key, route);
      return;
    }
    const list = this.byMethod.get(route.method) ?? [];
    list.push(route);
    this.byMethod.set(route.method, list);
  }

  /**
   * The route of a REST request (path without query), or undefined. A static template wins over a
   * parameterised one (`/ai/templates` is never `/ai/templates/{templateId}`), as trpc-to-openapi decides;
   * tests/http/openapi.test.ts checks that no parameterised path is declared before a static
   * path it would shadow.
   */
  match(method: string, path: string): RouteTemplate | undefined {
    const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
    return (
      this.exact.get(`${method} ${trimmed.toLowerCase()}`) ??
      this.byMethod.get(method)?.find((r) => r.regexp.test(path))
    );
  }

  /**
   * match() of a request, remembered for the request: the rate limiter, monitoring and the plain-route
   * guard all ask. `path` is the full path (mounted routers strip their prefix from req.path).
   */
  matchRequest(req: { method: string; path: string }, path = req.path): RouteTemplate | undefined {
    let route = this.matched.get(req);
    if (route === undefined) {
      route = this.match(req.method, path) ?? null;
      this.matched.set(req, route);
    }
    return route ?? undefined;
  }

  /**
   * A bounded name for a request, for metrics, monitoring and the request log: the REST template,
   * `/trpc/{procedure}` for a known procedure (TRPC_BATCH_ROUTE for a batch), else UNMATCHED_ROUTE. Never
   * the raw path. `path` is the full path, as for matchRequest().
   */
  labelRequest(req: { method: string; path: string }, path = req.path): string {
    const route = this.matchRequest(req, path);
    if (route) return route.template;
    const procedures = trpcProcedures(path);
    if (!procedures) return UNMATCHED_ROUTE;
    return procedures.length > 1 ? TRPC_BATCH_ROUTE : (this.trpcLabels.get(procedures[0]) ?? UNMATCHED_ROUTE);
  }

  /** The REST route of a /trpc procedure path (e.g. `auth.login`). */
  ofProcedure(procedure: string): RouteTemplate | undefined {
    return this.byProcedure.get(procedure);
  }

  /** The tier of a /trpc procedure path; an unknown one counts in the default tier. */
  tierOfProcedure(procedure: string): Tier | undefined {
    return this.procedureTiers.has(procedure) ? this.procedureTiers.get(procedure) : 'default';
  }
}
