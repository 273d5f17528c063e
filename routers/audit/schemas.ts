// Inputs and outputs of the audit log routes.
import { z } from 'zod';
import { listInput, listOutput } from '../../server/platform/pagination.js';

export const auditFiltersInput = listInput.extend({
  actorId: z.uuid().optional().meta({ description: 'Only entries of this acting user.' }),
  action: z.string().max(100).optional().meta({ description: 'Only this action, e.g. user.suspended.' }),
  from: z.iso.datetime({ offset: true }).optional().meta({ description: 'Entries at or after this time.' }),
  to: z.iso.datetime({ offset: true }).optional().meta({ description: 'Entries before this time.' }),
});

export const adminAuditInput = auditFiltersInput.extend({
  workspaceId: z.uuid().optional().meta({ description: 'Only entries of this workspace.' }),
});
export const workspaceAuditInput = auditFiltersInput.extend({ workspaceId: z.uuid() });

export const auditEntryOutput = z
  .object({
    id: z.uuid(),
    action: z.string(),
    actor: z.object({ id: z.uuid().nullable(), email: z.string().nullable() }).nullable(),
    targetType: z.string().nullable(),
    targetId: z.string().nullable(),
    workspaceId: z.uuid().nullable(),
    requestId: z.string().nullable(),
    ip: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()),
    createdAt: z.iso.datetime({ offset: true }),
  })
  .meta({ id: 'AuditLogEntry' });

export const auditPageOutput = listOutput(auditEntryOutput);
