// Inputs and outputs of the contact and support routes.
import { z } from 'zod';
import { TICKET_PRIORITIES } from '../../db/schema.js';
import { emailSchema } from '../auth/schemas.js';

const isoDate = z.iso.datetime({ offset: true });
const text = (max: number) => z.string().trim().min(1).max(max);

export const contactInput = z
  .object({
    name: text(100),
    email: emailSchema,
    subject: z.string().trim().max(200).optional(),
    message: text(5000),
    topic: z.string().trim().max(50).optional(),
    tier: z.string().trim().max(50).optional(),
  })
  .meta({
    examples: [
      { name: 'Jane Doe', email: 'jane@example.com', subject: 'Pro plan', message: 'Does the Pro plan include SSO?' },
    ],
  });
export type ContactInput = z.infer<typeof contactInput>;

export const ticketInput = z.object({
  subject: text(200),
  message: text(10_000),
  priority: z.enum(TICKET_PRIORITIES).default('NORMAL'),
  workspaceId: z.uuid().optional(),
  // Accepted for forms that send them; the signed-in account is who the ticket is from.
  name: z.string().max(100).optional(),
  email: z.string().max(254).optional(),
});
export type TicketInput = z.infer<typeof ticketInput>;

export const contactOutput = z
  .object({
    id: z.uuid(),
    name: z.string(),
    email: z.string(),
    subject: z.string(),
    message: z.string(),
    topic: z.string().nullable(),
    createdAt: isoDate,
  })
  .meta({ id: 'ContactMessage' });
export const ticketOutput = z
  .object({
    id: z.uuid(),
    userId: z.uuid().nullable(),
    workspaceId: z.uuid().nullable(),
    subject: z.string(),
    message: z.string(),
    priority: z.enum(TICKET_PRIORITIES),
    status: z.enum(['OPEN', 'PENDING', 'CLOSED']),
    createdAt: isoDate,
  })
  .meta({ id: 'SupportTicket' });
