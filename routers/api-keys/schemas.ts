// Inputs and outputs of the API key routes.
import { z } from 'zod';
import { API_KEY_SCOPES } from '../../db/schema.js';
import { displayName, exact } from '../../server/platform/validation.js';

const isoDate = z.iso.datetime({ offset: true });

const scopes = z
  .array(z.enum(API_KEY_SCOPES))
  .min(1, { error: 'Give the key at least one scope.' })
  .max(API_KEY_SCOPES.length)
  .refine((s) => new Set(s).size === s.length, { error: 'Each scope once.' });
const keyName = displayName(100);

export const apiKeyOutput = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    name: z.string(),
    prefix: z.string().meta({ description: 'The first 12 characters of the key, to recognise it.' }),
    scopes: z.array(z.enum(API_KEY_SCOPES)),
    status: z.enum(['ACTIVE', 'EXPIRED', 'REVOKED']),
    expiresAt: isoDate.nullable(),
    lastUsedAt: isoDate.nullable(),
    createdAt: isoDate,
    updatedAt: isoDate,
  })
  .meta({ id: 'ApiKey' });
export const createdKeyOutput = apiKeyOutput
  .extend({
    rawKey: z.string().meta({ description: 'The key itself: shown this once, never again.' }),
  })
  .meta({ id: 'ApiKeyWithSecret' });

export const workspaceInput = z.object({ workspaceId: z.uuid() });
export const keyInput = workspaceInput.extend({ apiKeyId: z.uuid() });

export const createKeyInput = workspaceInput.extend({
  name: keyName,
  scopes,
  expiresAt: isoDate
    .refine((d) => new Date(d).getTime() > Date.now(), { error: 'expiresAt must be in the future.' })
    .optional(),
});

export const updateKeyInput = keyInput
  .extend({ name: keyName.optional(), scopes: scopes.optional() })
  .refine((i) => i.name !== undefined || i.scopes !== undefined, { error: 'Send name, scopes or both.' });

export const rotateKeyInput = keyInput.extend({
  gracePeriodSeconds: exact(
    z
      .number()
      .int()
      .min(0)
      .max(7 * 86_400),
  ).default(0),
});
