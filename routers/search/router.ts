// GET /search: a workspace's generations, the templates and its members. Workspace-scoped and
// permission-checked.
import { router, workspaceProcedure } from '../../server/platform/trpc.js';
import { searchInput, searchOutput } from './schemas.js';
import { search } from './service.js';

export const searchRouter = router({
  search: workspaceProcedure('workspace.read', { orActiveWorkspace: true })
    .meta({
      openapi: {
        method: 'GET',
        path: '/search',
        description:
          "Searches the workspace's generations, the prompt templates and the workspace's members for the text given.",
        tags: ['Search'],
        summary: "Search a workspace's generations, the templates and its members",
      },
    })
    .input(searchInput)
    .output(searchOutput)
    .query(({ ctx, input }) => search(ctx, { ...input, workspaceId: ctx.workspace.id })),
});
