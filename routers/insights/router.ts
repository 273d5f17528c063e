// GET /dashboard/insights: a workspace at a glance. Any member may ask; what each role sees is the
// service's (routers/insights/service.ts).
import { actorOf } from '../../server/platform/actor.js';
import { router, workspaceProcedure } from '../../server/platform/trpc.js';
import { insightsInput, insightsOutput } from './schemas.js';
import { workspaceInsights } from './service.js';

export const insightsRouter = router({
  insights: workspaceProcedure('workspace.read', { orActiveWorkspace: true })
    .meta({
      openapi: {
        method: 'GET',
        path: '/dashboard/insights',
        description:
          "Figures for a workspace's dashboard: members, plan, AI usage, API keys, webhooks and recent activity.",
        tags: ['Dashboard'],
        summary: 'Members, plan, AI usage, API keys, webhooks and recent activity of a workspace',
      },
    })
    .input(insightsInput)
    .output(insightsOutput)
    .query(({ ctx }) => workspaceInsights(ctx, actorOf(ctx), { workspace: ctx.workspace })),
});
