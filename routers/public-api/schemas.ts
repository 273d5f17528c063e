// Outputs of the public API's routes: the API key making the call, and its workspace (the fields a key
// may read of it).
import { z } from 'zod';
import { API_KEY_SCOPES, EDITIONS, WORKSPACE_STATUSES } from '../../db/schema.js';

export const keyOutput = z.object({
  apiKey: z.object({
    id: z.uuid(),
    name: z.string(),
    prefix: z.string(),
    scopes: z.array(z.enum(API_KEY_SCOPES)),
    expiresAt: z.iso.datetime({ offset: true }).nullable(),
  }),
  workspace: z.object({ id: z.uuid(), name: z.string() }),
});

export const keyWorkspaceOutput = z.object({
  id: z.uuid(),
  name: z.string(),
  status: z.enum(WORKSPACE_STATUSES),
  edition: z.enum(EDITIONS),
  memberCount: z.number().int(),
  createdAt: z.iso.datetime({ offset: true }),
});
