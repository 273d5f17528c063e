// The audit log: everything for platform admins, one workspace's entries for its OWNER and ADMINs.
import { z } from 'zod';
import { adminProcedure, router, workspaceProcedure } from '../../server/platform/trpc.js';
import { auditFiltersInput, auditPageOutput } from './schemas.js';
import { listAudit } from './service.js';

export const auditRouter = router({
  admin: adminProcedure
    .meta({ openapi: { method: 'GET', path: '/admin/audit-logs', tags: ['Admin'], summary: 'The audit log, filtered and paginated' } })
    .input(auditFiltersInput.extend({ workspaceId: z.uuid().optional().meta({ description: 'Only entries of this workspace.' }) }))
    .output(auditPageOutput)
    .query(({ ctx, input: { page, limit, ...filters } }) => listAudit(ctx.db, filters, { page, limit })),

  workspace: workspaceProcedure('audit.view')
    .meta({ openapi: { method: 'GET', path: '/workspaces/{workspaceId}/audit-logs', tags: ['Workspaces'], summary: "A workspace's audit log" } })
    .input(auditFiltersInput.extend({ workspaceId: z.uuid() }))
    .output(auditPageOutput)
    .query(({ ctx, input: { page, limit, workspaceId: _, ...filters } }) =>
      listAudit(ctx.db, { ...filters, workspaceId: ctx.workspace.id }, { page, limit }),
    ),
});
