// The list conventions (docs/api.md): every list is { items }, paginated ones add page, limit, total and
// totalPages; page starts at 1, limit defaults to 20 and is at most 100.
import { z } from 'zod';

/** The last page anyone can ask for (a bound on `page`: deep pages are slow, and nobody reads them). */
export const MAX_PAGE = 100_000;

export const paginationInput = z.object({
  page: z.number().int().min(1).max(MAX_PAGE).default(1).meta({ description: 'Page number, from 1.' }),
  limit: z.number().int().min(1).max(100).default(20).meta({ description: 'Items per page, 1 to 100 (default 20).' }),
});

export type Pagination = z.infer<typeof paginationInput>;

/** A page of `item`s; named `<Item>Page` in /openapi.json when the item schema has an id. */
export function pageOutput<T extends z.ZodType>(item: T) {
  const page = z.object({
    items: z.array(item).max(100),
    page: z.number().int().min(1).max(MAX_PAGE),
    limit: z.number().int().min(1).max(100),
    total: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    totalPages: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  });
  const id = z.globalRegistry.get(item)?.id;
  return id ? page.meta({ id: `${id}Page` }) : page;
}

export const offsetOf = (p: Pagination) => (p.page - 1) * p.limit;

export function pageOf<T>(items: T[], total: number, p: Pagination) {
  return { items, page: p.page, limit: p.limit, total, totalPages: Math.ceil(total / p.limit) };
}
