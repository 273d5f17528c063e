// Input and output of GET /admin/email-logs.
import { z } from 'zod';
import { listInput } from '../../server/platform/pagination.js';

export const emailLogsInput = listInput.extend({
  to: z.email().max(254).optional().meta({ description: 'Only mails to this address.' }),
});

export const emailLogOutput = z
  .object({
    id: z.uuid(),
    to: z.string(),
    subject: z.string(),
    template: z.string(),
    text: z.string(),
    link: z.string().nullable(),
    createdAt: z.iso.datetime({ offset: true }),
  })
  .meta({ id: 'EmailLogEntry' });
