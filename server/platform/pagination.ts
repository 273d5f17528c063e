// The list conventions (docs/api.md): every list is { items }, paginated ones add page, limit, total and
// totalPages; page starts at 1, limit defaults to 20 and is at most 100.
import { z } from 'zod';

export const paginationInput = z.object({
  page: z.number().int().min(1).default(1).meta({ description: 'Page number, from 1.' }),
  limit: z.number().int().min(1).max(100).default(20).meta({ description: 'Items per page, 1 to 100 (default 20).' }),
});

export type Pagination = z.infer<typeof paginationInput>;

export const pageOutput = <T extends z.ZodType>(item: T) =>
  z.object({
    items: z.array(item),
    page: z.number().int(),
    limit: z.number().int(),
    total: z.number().int(),
    totalPages: z.number().int(),
  });

export const offsetOf = (p: Pagination) => (p.page - 1) * p.limit;

export function pageOf<T>(items: T[], total: number, p: Pagination) {
  return { items, page: p.page, limit: p.limit, total, totalPages: Math.ceil(total / p.limit) };
}
