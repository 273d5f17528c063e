// Full-text search (Postgres, indexed) over a workspace's generations and the active templates, and a
// name/e-mail match over its members: ten of each at most.
import { sql } from 'kysely';
import { escapeLike } from '../../db/text.js';
import type { AppDeps } from '../../server/platform/context.js';

export async function search({ db }: Pick<AppDeps, 'db'>, { workspaceId, q }: { workspaceId: string; q: string }) {
  const query = sql`plainto_tsquery('simple', ${q})`;
  const like = `%${escapeLike(q)}%`;
  const [generations, templates, members] = await Promise.all([
    db
      .selectFrom('ai_generations')
      .select(['id', 'prompt', 'output'])
      .where('workspace_id', '=', workspaceId)
      .where('is_sample', '=', false)
      .where(sql<boolean>`to_tsvector('simple', prompt || ' ' || output) @@ ${query}`)
      .orderBy('created_at', 'desc')
      .limit(10)
      .execute(),
    db
      .selectFrom('ai_templates')
      .select(['id', 'name', 'description'])
      .where('is_active', '=', true)
      .where(sql<boolean>`to_tsvector('simple', name || ' ' || description || ' ' || body) @@ ${query}`)
      .limit(10)
      .execute(),
    db
      .selectFrom('workspace_members as m')
      .innerJoin('users as u', 'u.id', 'm.user_id')
      .select(['u.id', 'u.name', 'u.email', 'm.role'])
      .where('m.workspace_id', '=', workspaceId)
      .where((eb) => eb.or([eb('u.name', 'ilike', like), eb('u.email', 'ilike', like)]))
      .limit(10)
      .execute(),
  ]);
  return {
    items: [
      ...generations.map((g) => ({
        type: 'generation' as const,
        id: g.id,
        title: g.prompt.slice(0, 80),
        snippet: g.output.slice(0, 200),
      })),
      ...templates.map((t) => ({ type: 'template' as const, id: t.id, title: t.name, snippet: t.description })),
      ...members.map((m) => ({ type: 'member' as const, id: m.id, title: m.name, snippet: `${m.email} (${m.role})` })),
    ],
  };
}
