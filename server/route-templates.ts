// The REST route a request hits, as its template (`/workspaces/{workspaceId}`), with the procedure that
// serves it: for rate-limit tiers and for monitoring, which must not count raw ids as distinct routes.
// Built once from the routers' OpenAPI meta, in declaration order, like trpc-to-openapi's own matching.
import type { AnyTRPCRouter } from '@trpc/server';
import type { Meta } from './trpc.js';

export interface RouteTemplate {
  method: string;
  template: string;
  /** The tRPC path of the procedure (e.g. `auth.login`); plain Express routes have none. */
  procedure?: string;
  regexp: RegExp;
}

const toRegExp = (template: string) => new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}/?$`, 'i');

export class RouteTemplates {
  private readonly byMethod = new Map<string, RouteTemplate[]>();
  private readonly byProcedure = new Map<string, RouteTemplate>();

  constructor(router: AnyTRPCRouter, plainRoutes: Array<{ method: string; template: string }> = []) {
    const procedures = router._def.procedures as Record<string, { _def: { meta?: Meta } }>;
    for (const [path, procedure] of Object.entries(procedures)) {
      const openapi = procedure._def.meta?.openapi;
      if (openapi) this.add({ method: openapi.method, template: openapi.path, procedure: path, regexp: toRegExp(openapi.path) });
    }
    for (const r of plainRoutes) this.add({ ...r, regexp: toRegExp(r.template) });
  }

  private add(route: RouteTemplate) {
    const list = this.byMethod.get(route.method) ?? [];
    list.push(route);
    this.byMethod.set(route.method, list);
    if (route.procedure) this.byProcedure.set(route.procedure, route);
  }

  /** The route of a REST request (path without query), or undefined. */
  match(method: string, path: string): RouteTemplate | undefined {
    return this.byMethod.get(method)?.find((r) => r.regexp.test(path));
  }

  /** The REST route of a /trpc procedure path (e.g. `auth.login`). */
  ofProcedure(procedure: string): RouteTemplate | undefined {
    return this.byProcedure.get(procedure);
  }
}
