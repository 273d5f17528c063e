// GET /search: full-text search (Postgres, indexed) over a workspace's generations and the templates,
// and a name/e-mail match over its members. Workspace-scoped and permission-checked.
import { sql } from 'kysely';
import { z } from 'zod';
import { router, workspaceProcedure } from '../../server/platform/trpc.js';
import { escapeLike } from '../workspaces/service.js';

const resultOutput = z.object({ type: z.enum(['generation', 'template', 'member']), id: z.uuid(), title: z.string(), snippet: z.string() });

export const searchRouter = router({
  search: workspaceProcedure('workspace.read', { orActiveWorkspace: true })
    .meta({ openapi: { method: 'GET', path: '/search', tags: ['Search'], summary: "Search a workspace's generations, the templates and its members" } })
    .input(z.object({ q: z.string().trim().min(2, { error: 'Search for at least 2 characters.' }).max(200), workspaceId: z.uuid().optional() }))
    .output(z.object({ items: z.array(resultOutput) }))
    .query(async ({ ctx, input }) => {
      const query = sql`plainto_tsquery('simple', ${input.q})`;
      const like = `%${escapeLike(input.q)}%`;
      const [generations, templates, members] = await Promise.all([
        ctx.db
          .selectFrom('ai_generations')
          .select(['id', 'prompt', 'output'])
          .where('workspace_id', '=', ctx.workspace.id)
          .where('is_sample', '=', false)
          .where(sql<boolean>`to_tsvector('simple', prompt || ' ' || output) @@ ${query}`)
          .orderBy('created_at', 'desc')
          .limit(10)
          .execute(),
        ctx.db
          .selectFrom('ai_templates')
          .select(['id', 'name', 'description'])
          .where('is_active', '=', true)
          .where(sql<boolean>`to_tsvector('simple', name || ' ' || description || ' ' || body) @@ ${query}`)
          .limit(10)
          .execute(),
        ctx.db
          .selectFrom('workspace_members as m')
          .innerJoin('users as u', 'u.id', 'm.user_id')
          .select(['u.id', 'u.name', 'u.email', 'm.role'])
          .where('m.workspace_id', '=', ctx.workspace.id)
          .where((eb) => eb.or([eb('u.name', 'ilike', like), eb('u.email', 'ilike', like)]))
          .limit(10)
          .execute(),
      ]);
      return {
        items: [
          ...generations.map((g) => ({ type: 'generation' as const, id: g.id, title: g.prompt.slice(0, 80), snippet: g.output.slice(0, 200) })),
          ...templates.map((t) => ({ type: 'template' as const, id: t.id, title: t.name, snippet: t.description })),
          ...members.map((m) => ({ type: 'member' as const, id: m.id, title: m.name, snippet: `${m.email} (${m.role})` })),
        ],
      };
    }),
});
