// The audit log: everything for platform admins, one workspace's entries for its OWNER and ADMINs.
import { adminProcedure, router, workspaceProcedure } from '../../server/platform/trpc.js';
import { adminAuditInput, auditPageOutput, workspaceAuditInput } from './schemas.js';
import { listAudit } from './service.js';

export const auditRouter = router({
  admin: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/audit-logs',
        description:
          'The platform audit log (who did what, when, from where), newest first, filtered by action, actor, workspace or dates and paginated.',
        tags: ['Admin'],
        summary: 'The audit log, filtered and paginated',
      },
    })
    .input(adminAuditInput)
    .output(auditPageOutput)
    .query(({ ctx, input }) => listAudit(ctx, input)),

  workspace: workspaceProcedure('audit.view')
    .meta({
      openapi: {
        method: 'GET',
        path: '/workspaces/{workspaceId}/audit-logs',
        description: "The workspace's audit log, newest first, paginated.",
        tags: ['Workspaces'],
        summary: "A workspace's audit log",
      },
    })
    .input(workspaceAuditInput)
    .output(auditPageOutput)
    .query(({ ctx, input }) => listAudit(ctx, { ...input, workspaceId: ctx.workspace.id })),
});
