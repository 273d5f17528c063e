// Inputs and outputs of the analytics routes.
import { z } from 'zod';
import { listInput, listOutput } from '../../server/platform/pagination.js';

const MAX_PROPERTIES_BYTES = 2048;

export const eventInput = z
  .object({
    name: z
      .string()
      .regex(/^[a-z][a-z0-9_.:-]{0,63}$/, {
        error: 'An event name: lower-case letters, digits and _ . : - (at most 64), starting with a letter.',
      })
      .max(64),
    properties: z
      .record(
        z.string().max(64),
        z.union([z.string().max(500), z.number().min(-1e15).max(1e15), z.boolean(), z.null()]),
      )
      .refine((p) => Object.keys(p).length <= 20, { error: 'At most 20 properties.' })
      .refine((p) => Buffer.byteLength(JSON.stringify(p)) <= MAX_PROPERTIES_BYTES, {
        error: `Properties take at most ${MAX_PROPERTIES_BYTES} bytes.`,
      })
      .meta({ maxProperties: 20 })
      .optional(),
    workspaceId: z.uuid().optional(),
  })
  .meta({ examples: [{ name: 'page.viewed', properties: { path: '/dashboard' } }] });
export type EventInput = z.infer<typeof eventInput>;

export const eventsInput = listInput.extend({
  name: z.string().max(64).optional().meta({ description: 'Only events of this name.' }),
});

export const eventOutput = z
  .object({
    id: z.uuid(),
    name: z.string(),
    properties: z.record(z.string(), z.unknown()),
    userId: z.uuid().nullable(),
    workspaceId: z.uuid().nullable(),
    createdAt: z.iso.datetime({ offset: true }),
  })
  .meta({ id: 'AnalyticsEvent' });
export const eventsOutput = listOutput(eventOutput);

export const acceptedOutput = z.object({ accepted: z.literal(true) }).meta({ id: 'Accepted' });

export const summaryOutput = z
  .object({
    since: z.iso.datetime({ offset: true }),
    totals: z.object({ events: z.number().int(), uniqueUsers: z.number().int() }),
    topEvents: z.array(z.object({ name: z.string(), count: z.number().int() })),
    byDay: z.array(z.object({ day: z.string(), count: z.number().int() })),
  })
  .meta({ id: 'AnalyticsSummary' });
