// An HTTP cache in front of public GET routes whose answer is the same for every caller (the plan
// catalog). The procedure stays the only source: the first request runs it and its 200 answer is kept;
// later requests get the kept bytes until the source's version changes or the entry ages out. Answers
// carry an ETag (If-None-Match gets a 304) and Cache-Control. Mounted after request ids, logging and
// security headers, so those apply to every answer.
import crypto from 'node:crypto';
import type { RequestHandler } from 'express';

export interface CachedRoute {
  /** Changes whenever the data behind the route changes (e.g. PlanCatalog.version). */
  version(): number;
  /** Oldest an entry may be, whatever the version says (other instances' changes without Redis). */
  maxAgeMs: number;
}

interface Entry {
  version: number;
  storedAt: number;
  body: Buffer;
  etag: string;
  contentType: string;
}

export function responseCache(routes: Record<string, CachedRoute>): RequestHandler {
  const entries = new Map<string, Entry>();
  return (req, res, next) => {
    const route = req.method === 'GET' ? routes[req.path] : undefined;
    if (!route) return next();
    // Keyed by path alone: these routes take no input, and a query string must not grow the cache.
    const key = req.path;
    const version = route.version();
    const maxAgeSeconds = Math.floor(route.maxAgeMs / 1000);
    const hit = entries.get(key);
    if (hit && hit.version === version && Date.now() - hit.storedAt < route.maxAgeMs) {
      res.setHeader('ETag', hit.etag);
      res.setHeader('Cache-Control', `public, max-age=${maxAgeSeconds}`);
      if (req.headers['if-none-match'] === hit.etag) {
        res.status(304).end();
        return;
      }
      res.status(200).setHeader('Content-Type', hit.contentType);
      res.end(hit.body);
      return;
    }
    // A miss: keep the 200 answer the procedure writes.
    const end = res.end.bind(res) as (...args: unknown[]) => typeof res;
    res.end = ((...args: unknown[]) => {
      const [chunk] = args;
      if (res.statusCode === 200 && (typeof chunk === 'string' || Buffer.isBuffer(chunk))) {
        const body = Buffer.from(chunk);
        const etag = `"${crypto.createHash('sha1').update(body).digest('base64url')}"`;
        entries.set(key, {
          version,
          storedAt: Date.now(),
          body,
          etag,
          contentType: String(res.getHeader('Content-Type') ?? 'application/json'),
        });
        res.setHeader('ETag', etag);
        res.setHeader('Cache-Control', `public, max-age=${maxAgeSeconds}`);
      }
      return end(...args);
    }) as typeof res.end;
    next();
  };
}
