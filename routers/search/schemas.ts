// Input and output of GET /search.
import { z } from 'zod';

export const searchInput = z.object({
  q: z.string().trim().min(2, { error: 'Search for at least 2 characters.' }).max(200),
  workspaceId: z.uuid().optional(),
});

const resultOutput = z
  .object({
    type: z.enum(['generation', 'template', 'member']),
    id: z.uuid(),
    title: z.string(),
    snippet: z.string(),
  })
  .meta({ id: 'SearchResult' });
export const searchOutput = z.object({ items: z.array(resultOutput) });
